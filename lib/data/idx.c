/* MNIST / Fashion-MNIST in the IDX format (http://yann.lecun.com/exdb/mnist/):
 *
 *   images: magic 0x00000803, count, rows, cols (big-endian uint32), then count*rows*cols bytes
 *   labels: magic 0x00000801, count, then count bytes
 *
 * With zlib, gzopen reads plain and gzip-compressed files alike, so the Debian package
 * (which ships .gz files) and a gunzipped download both work. Every problem with a file
 * is the user's to fix, so it ends in fatal() naming the file and what was wrong. A file
 * longer than its header says is rejected too: it is not the file we think it is. */
#include "data/dataset.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

#include "core/check.h"

#define IDX_IMAGES_MAGIC 0x00000803u
#define IDX_LABELS_MAGIC 0x00000801u
#define IDX_MAX_SIDE 1024
#define IDX_CLASSES 10
/* Pixel data is read into a buffer that grows up to the size the header promises, so a
 * corrupt count is reported as a truncated file rather than a huge allocation. */
#define IDX_FIRST_CHUNK ((size_t)64 << 20)

typedef struct {
    const char *path;
#ifdef HAVE_ZLIB
    gzFile gz;
#else
    FILE *fp;
#endif
} Reader;

#ifndef HAVE_ZLIB
static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}
#endif

static void reader_open(Reader *r, const char *path) {
    struct stat st;
    r->path = path;
    if (stat(path, &st) != 0) fatal("cannot open %s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) fatal("%s is a directory, expected an IDX file", path);
#ifdef HAVE_ZLIB
    errno = 0;
    r->gz = gzopen(path, "rb");
    if (!r->gz)
        fatal("cannot open %s: %s", path, errno ? strerror(errno) : "out of memory in zlib");
#else
    if (ends_with(path, ".gz"))
        fatal("cannot read %s: built without zlib: gunzip the file or install zlib1g-dev and "
              "rebuild", path);
    r->fp = fopen(path, "rb");
    if (!r->fp) fatal("cannot open %s: %s", path, strerror(errno));
#endif
}

static void reader_close(Reader *r) {
#ifdef HAVE_ZLIB
    gzclose(r->gz);
#else
    fclose(r->fp);
#endif
}

#ifdef HAVE_ZLIB
/* Stops with zlib's message, if it has one. */
static void gz_check(Reader *r) {
    int code;
    const char *msg = gzerror(r->gz, &code);
    if (code == Z_OK || code == Z_STREAM_END) return;
    size_t n = strlen(r->path); /* zlib's message starts with the path: no need twice */
    if (strncmp(msg, r->path, n) == 0 && strncmp(msg + n, ": ", 2) == 0) msg += n + 2;
    if (code == Z_ERRNO) fatal("cannot read %s: %s", r->path, msg);
    fatal("%s: %s: truncated or corrupt gzip file (download it again)", r->path, msg);
}
#endif

/* Reads up to n bytes; returns how many (fewer only at the end of the file). */
static size_t reader_read(Reader *r, void *buf, size_t n) {
    size_t done = 0;
    while (done < n) {
        size_t want = n - done;
#ifdef HAVE_ZLIB
        if (want > (1u << 30)) want = 1u << 30; /* gzread takes an unsigned int */
        int got = gzread(r->gz, (char *)buf + done, (unsigned)want);
        /* a gzip stream cut short reports itself only at the end, as an error */
        if (got <= 0) {
            gz_check(r);
            break;
        }
        done += (size_t)got;
#else
        size_t got = fread((char *)buf + done, 1, want, r->fp);
        if (got == 0) {
            if (ferror(r->fp)) fatal("cannot read %s: %s", r->path, strerror(errno));
            break;
        }
        done += got;
#endif
    }
    return done;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Reads the header: the magic number and ndims big-endian sizes into dims. */
static void read_header(Reader *r, uint32_t magic, const char *kind, uint32_t *dims,
                        int ndims) {
    uint8_t head[16];
    size_t len = 4 * (size_t)(1 + ndims);
    size_t got = reader_read(r, head, len);
    if (got < 4)
        fatal("%s: truncated: expected a %zu-byte IDX %s header, the file has only %zu "
              "bytes (download it again)", r->path, len, kind, got);
#ifndef HAVE_ZLIB
    if (head[0] == 0x1f && head[1] == 0x8b)
        fatal("%s: the file is gzip-compressed but this build has no zlib: gunzip the file "
              "or install zlib1g-dev and rebuild", r->path);
#endif
    uint32_t m = be32(head);
    if (m != magic) {
        const char *hint = "";
        if (m == IDX_IMAGES_MAGIC || m == IDX_LABELS_MAGIC)
            hint = m == IDX_IMAGES_MAGIC
                       ? " (that is an image file: are the image and label files swapped?)"
                       : " (that is a label file: are the image and label files swapped?)";
        fatal("%s: bad magic number 0x%08x, expected 0x%08x for an IDX %s file%s", r->path,
              (unsigned)m, (unsigned)magic, kind, hint);
    }
    if (got < len)
        fatal("%s: truncated: expected a %zu-byte IDX %s header, the file has only %zu "
              "bytes (download it again)", r->path, len, kind, got);
    for (int i = 0; i < ndims; i++) dims[i] = be32(head + 4 * (i + 1));
    if (dims[0] == 0 || dims[0] > INT_MAX)
        fatal("%s: the header says %u %s, expected 1..%d (corrupt file?)", r->path,
              (unsigned)dims[0], kind, INT_MAX);
}

/* Fails when there is anything after the data the header described. */
static void expect_end(Reader *r, size_t data_bytes, size_t header_bytes) {
    uint8_t extra;
    if (reader_read(r, &extra, 1) != 0)
        fatal("%s: the file is longer than its header says (%zu bytes of data after the "
              "%zu-byte header, then more): not an IDX file of this data set, or two files "
              "joined", r->path, data_bytes, header_bytes);
}

/* Reads exactly n bytes of data; a shorter file is reported as truncated. Grows the
 * buffer as data arrives so that a corrupt header cannot ask for terabytes up front. */
static uint8_t *read_body(Reader *r, size_t n, size_t header_bytes, const char *what) {
    size_t cap = n < IDX_FIRST_CHUNK ? n : IDX_FIRST_CHUNK;
    uint8_t *buf = xmalloc(cap);
    size_t have = 0;
    for (;;) {
        size_t got = reader_read(r, buf + have, cap - have);
        have += got;
        if (have == n) break;
        if (have < cap)
            fatal("%s: truncated: expected %zu bytes of %s after the %zu-byte header, the "
                  "file ends after %zu (download it again)", r->path, n, what, header_bytes,
                  have);
        size_t bigger = cap > n / 2 ? n : cap * 2;
        uint8_t *grown = xmalloc(bigger);
        memcpy(grown, buf, have);
        xfree(buf);
        buf = grown;
        cap = bigger;
    }
    expect_end(r, n, header_bytes);
    return buf;
}

void dataset_load_idx(const char *images_path, const char *labels_path, Dataset *d) {
    Reader ri, rl;
    uint32_t idims[3], ldims[1];
    reader_open(&ri, images_path);
    read_header(&ri, IDX_IMAGES_MAGIC, "images", idims, 3);
    for (int i = 1; i < 3; i++)
        if (idims[i] < 1 || idims[i] > IDX_MAX_SIDE)
            fatal("%s: the header says images of %u x %u pixels, expected 1..%d on each side "
                  "(corrupt file?)", images_path, (unsigned)idims[1], (unsigned)idims[2],
                  IDX_MAX_SIDE);
    /* Both headers first: a count mismatch is found before megabytes are read. */
    reader_open(&rl, labels_path);
    read_header(&rl, IDX_LABELS_MAGIC, "labels", ldims, 1);
    if (idims[0] != ldims[0])
        fatal("%s has %u images but %s has %u labels: the two files are not from the same "
              "set (train vs t10k?)", images_path, (unsigned)idims[0], labels_path,
              (unsigned)ldims[0]);

    int count = (int)idims[0], rows = (int)idims[1], cols = (int)idims[2];
    size_t npix = (size_t)count * (size_t)rows * (size_t)cols;
    uint8_t *pixels = read_body(&ri, npix, 16, "image data");
    reader_close(&ri);
    uint8_t *labels = read_body(&rl, (size_t)count, 8, "labels");
    reader_close(&rl);
    for (int i = 0; i < count; i++)
        if (labels[i] >= IDX_CLASSES)
            fatal("%s: label %d of example %d is out of range (0..%d): not a 10-class data "
                  "set, or a corrupt file", labels_path, labels[i], i, IDX_CLASSES - 1);

    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "idx");
    snprintf(d->source, sizeof d->source, "%s", images_path);
    d->count = count;
    d->channels = 1;
    d->height = rows;
    d->width = cols;
    d->num_classes = IDX_CLASSES;
    d->images = xmalloc(npix * sizeof(float));
    for (size_t i = 0; i < npix; i++) d->images[i] = (float)pixels[i] / 255.0f;
    d->labels = labels;
    xfree(pixels);
}
