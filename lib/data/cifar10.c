/* CIFAR-10, binary version (https://www.cs.toronto.edu/~kriz/cifar.html): each batch
 * file is a run of 3073-byte records, one label byte (0..9) and 3x32x32 pixels stored
 * as three channel planes (R, G, B), each row-major. The format has no header, so the
 * file size is the only check that we were handed the right file. */
#include "data/dataset.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fs.h"

#define CIFAR_SIDE 32
#define CIFAR_CHANNELS 3
#define CIFAR_PIXELS (CIFAR_CHANNELS * CIFAR_SIDE * CIFAR_SIDE)
#define CIFAR_RECORD (1 + CIFAR_PIXELS)
#define CIFAR_CLASSES 10
#define CIFAR_MAX_RECORDS 1000000 /* per file: a real batch has 10,000 */
#define CIFAR_MAX_FILES 64
#define CIFAR_MAX_TOTAL 10000000

/* The number of records in a batch file of `size` bytes, after checking the size. */
static int cifar_records(const char *name, long long size, int *records, char *msg, size_t cap) {
    if (size <= 0 || size % CIFAR_RECORD != 0) {
        /* CIFAR-100's records carry two label bytes: a common mix-up. */
        const char *hint = size > 0 && size % (CIFAR_RECORD + 1) == 0
                               ? ": this looks like CIFAR-100, which is not supported"
                               : ": not a CIFAR-10 binary batch, or an incomplete download";
        return fail_msg(msg, cap, "%s: wrong size: %lld bytes is not a positive multiple of %d (1 "
                    "label byte + 3x32x32 pixels per image)%s", name, size, CIFAR_RECORD, hint);
    }
    if (size / CIFAR_RECORD > CIFAR_MAX_RECORDS)
        return fail_msg(msg, cap, "%s: %lld bytes is too large for a CIFAR-10 batch", name, size);
    *records = (int)(size / CIFAR_RECORD);
    return 0;
}

/* n records from b into images/labels (already sized for them). */
static int cifar_decode(const uint8_t *b, int n, const char *name, float *images,
                        uint8_t *labels, char *msg, size_t cap) {
    for (int i = 0; i < n; i++) {
        const uint8_t *rec = b + (size_t)i * CIFAR_RECORD;
        if (rec[0] >= CIFAR_CLASSES)
            return fail_msg(msg, cap, "%s: label %d of record %d is out of range (0..%d): not a "
                        "CIFAR-10 batch, or a corrupt file", name, rec[0], i, CIFAR_CLASSES - 1);
        labels[i] = rec[0];
        float *dst = images + (size_t)i * CIFAR_PIXELS;
        for (int j = 0; j < CIFAR_PIXELS; j++) dst[j] = (float)rec[1 + j] / 255.0f;
    }
    return 0;
}

static void dataset_init(Dataset *d, const char *source, int count) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "cifar10");
    snprintf(d->source, sizeof d->source, "%s", source);
    d->count = count;
    d->channels = CIFAR_CHANNELS;
    d->height = d->width = CIFAR_SIDE;
    d->num_classes = CIFAR_CLASSES;
    d->images = xmalloc((size_t)count * CIFAR_PIXELS * sizeof(float));
    d->labels = xmalloc((size_t)count);
}

int dataset_parse_cifar10(const uint8_t *batch, size_t len, const char *name, Dataset *d,
                          char *msg, size_t cap) {
    memset(d, 0, sizeof *d);
    int n = 0; /* set by cifar_records; a newer gcc cannot see that and warns */
    if (cifar_records(name, (long long)len, &n, msg, cap) != 0) return -1;
    dataset_init(d, name, n);
    if (cifar_decode(batch, n, name, d->images, d->labels, msg, cap) == 0) return 0;
    dataset_free(d);
    return -1;
}

/* The size of a batch file (a regular file: a FIFO is refused, not waited on). */
static long long file_size(const char *path) {
    char msg[FS_MSG_MAX];
    int fd = fs_open_regular(path, msg, sizeof msg);
    if (fd < 0) fatal("%s", msg);
    struct stat st;
    int rc = fstat(fd, &st), e = errno;
    close(fd);
    if (rc != 0) fatal("cannot read %s: %s", path, strerror(e));
    return (long long)st.st_size;
}

void dataset_load_cifar10(const char *const *batch_paths, int nbatches, Dataset *d) {
    CHECK(nbatches > 0 && nbatches <= CIFAR_MAX_FILES,
          "dataset_load_cifar10 takes 1 to %d batch files, got %d", CIFAR_MAX_FILES, nbatches);
    char msg[FS_MSG_MAX];
    int counts[CIFAR_MAX_FILES];
    long long total = 0;
    for (int b = 0; b < nbatches; b++) { /* all sizes first: fail before reading */
        if (cifar_records(batch_paths[b], file_size(batch_paths[b]), &counts[b], msg,
                          sizeof msg) != 0)
            fatal("%s", msg);
        total += counts[b];
    }
    if (total > CIFAR_MAX_TOTAL)
        fatal("%lld CIFAR-10 images in %d files: too many", total, nbatches);

    dataset_init(d, batch_paths[0], (int)total);
    size_t at = 0;
    for (int b = 0; b < nbatches; b++) {
        const size_t want = (size_t)counts[b] * CIFAR_RECORD;
        uint8_t *bytes;
        size_t len;
        if (fs_read_file(batch_paths[b], want, &bytes, &len, msg, sizeof msg) != 0)
            fatal("%s (did it change while being read?)", msg);
        if (len != want)
            fatal("%s: truncated: the file ends inside record %zu of %d (did it change while "
                  "being read?)", batch_paths[b], len / CIFAR_RECORD, counts[b]);
        int rc = cifar_decode(bytes, counts[b], batch_paths[b], d->images + at * CIFAR_PIXELS,
                              d->labels + at, msg, sizeof msg);
        free(bytes);
        if (rc != 0) fatal("%s", msg);
        at += (size_t)counts[b];
    }
}
