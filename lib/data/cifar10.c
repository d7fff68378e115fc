/* CIFAR-10, binary version (https://www.cs.toronto.edu/~kriz/cifar.html): each batch
 * file is a run of 3073-byte records, one label byte (0..9) and 3x32x32 pixels stored
 * as three channel planes (R, G, B), each row-major. The format has no header, so the
 * file size is the only check that we were handed the right file. */
#include "data/dataset.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"

#define CIFAR_SIDE 32
#define CIFAR_CHANNELS 3
#define CIFAR_PIXELS (CIFAR_CHANNELS * CIFAR_SIDE * CIFAR_SIDE)
#define CIFAR_RECORD (1 + CIFAR_PIXELS)
#define CIFAR_CLASSES 10

/* Number of records in a batch file, after checking its size. */
static int cifar_records(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) fatal("cannot open %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) fatal("%s: not a regular file", path);
    long long size = (long long)st.st_size;
    if (size <= 0 || size % CIFAR_RECORD != 0) {
        /* CIFAR-100's records carry two label bytes: a common mix-up. */
        const char *hint = size > 0 && size % (CIFAR_RECORD + 1) == 0
                               ? ": this looks like CIFAR-100, which is not supported"
                               : ": not a CIFAR-10 binary batch, or an incomplete download";
        fatal("%s: wrong size: %lld bytes is not a positive multiple of %d (1 label byte + "
              "3x32x32 pixels per image)%s", path, size, CIFAR_RECORD, hint);
    }
    if (size / CIFAR_RECORD > 1000000) fatal("%s: %lld bytes is too large for a CIFAR-10 batch",
                                             path, size);
    return (int)(size / CIFAR_RECORD);
}

/* Reads n records of one file into images/labels (already sized for them). */
static void cifar_read_batch(const char *path, int n, float *images, uint8_t *labels) {
    FILE *f = fopen(path, "rb");
    if (!f) fatal("cannot open %s: %s", path, strerror(errno));
    uint8_t rec[CIFAR_RECORD];
    for (int i = 0; i < n; i++) {
        if (fread(rec, 1, CIFAR_RECORD, f) != CIFAR_RECORD)
            fatal("%s: truncated: the file ends inside record %d of %d (did it change while "
                  "being read?)", path, i, n);
        if (rec[0] >= CIFAR_CLASSES)
            fatal("%s: label %d of record %d is out of range (0..%d): not a CIFAR-10 batch, "
                  "or a corrupt file", path, rec[0], i, CIFAR_CLASSES - 1);
        labels[i] = rec[0];
        float *dst = images + (size_t)i * CIFAR_PIXELS;
        for (int j = 0; j < CIFAR_PIXELS; j++) dst[j] = (float)rec[1 + j] / 255.0f;
    }
    fclose(f);
}

void dataset_load_cifar10(const char *const *batch_paths, int nbatches, Dataset *d) {
    CHECK(nbatches > 0, "dataset_load_cifar10 needs at least one batch file, got %d", nbatches);
    int counts[64];
    CHECK(nbatches <= 64, "at most 64 CIFAR-10 batch files, got %d", nbatches);
    long long total = 0;
    for (int b = 0; b < nbatches; b++) { /* all sizes first: fail before reading */
        counts[b] = cifar_records(batch_paths[b]);
        total += counts[b];
    }
    if (total > 10000000) fatal("%lld CIFAR-10 images in %d files: too many", total, nbatches);

    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "cifar10");
    snprintf(d->source, sizeof d->source, "%s", batch_paths[0]);
    d->count = (int)total;
    d->channels = CIFAR_CHANNELS;
    d->height = d->width = CIFAR_SIDE;
    d->num_classes = CIFAR_CLASSES;
    d->images = xmalloc((size_t)total * CIFAR_PIXELS * sizeof(float));
    d->labels = xmalloc((size_t)total);
    size_t at = 0;
    for (int b = 0; b < nbatches; b++) {
        cifar_read_batch(batch_paths[b], counts[b], d->images + at * CIFAR_PIXELS,
                         d->labels + at);
        at += (size_t)counts[b];
    }
}
