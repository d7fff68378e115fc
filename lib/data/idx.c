/* MNIST / Fashion-MNIST in the IDX format (http://yann.lecun.com/exdb/mnist/):
 *
 *   images: magic 0x00000803, count, rows, cols (big-endian uint32), then count*rows*cols bytes
 *   labels: magic 0x00000801, count, then count bytes
 *
 * Each file is read whole, then parsed from memory, plain or gzip-compressed (with zlib;
 * Debian's package ships .gz files): gzip members one after the other are one stream,
 * as gunzip reads them. Every problem with a file is the user's to fix: a message that
 * names the file and what is wrong. A file longer than its header says is refused, plain
 * or gzip-compressed (data after the last gzip member too): it is not the file we think. */
#include "data/dataset.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

#include "core/check.h"
#include "core/fs.h"

#define IDX_IMAGES_MAGIC 0x00000803u
#define IDX_LABELS_MAGIC 0x00000801u
#define IDX_MAX_SIDE 1024
#define IDX_CLASSES 10
/* The largest file read: 4 GiB of pixels are 16 GiB of floats, more than a workshop
 * machine holds. */
#define IDX_MAX_FILE_BYTES ((size_t)4 << 30)
/* Pixel data is read into a buffer that grows up to the size the header promises, so a
 * corrupt count is reported as a truncated file rather than a huge allocation. */
#define IDX_FIRST_CHUNK ((size_t)64 << 20)
/* What zlib is handed at once (its sizes are unsigned int). */
#define IDX_ZLIB_STEP ((size_t)1 << 30)

/* One file's bytes, read in order: as they are, or inflated. Errors go to msg. */
typedef struct {
    const char *name;
    const uint8_t *in;
    size_t len, at; /* at: the next byte of `in` not yet read (plain) or handed to zlib */
    bool gz, ended; /* ended: the last gzip member is complete */
#ifdef HAVE_ZLIB
    z_stream z;
    bool z_live;
#endif
    char *msg;
    size_t cap;
} Source;

static int fail(Source *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(Source *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->msg, s->cap, fmt, ap);
    va_end(ap);
    return -1;
}

static bool gzip_magic(const uint8_t *b, size_t n) { return n >= 2 && b[0] == 0x1f && b[1] == 0x8b; }

static int source_open(Source *s, const char *name, const uint8_t *in, size_t len, char *msg,
                       size_t cap) {
    memset(s, 0, sizeof *s);
    s->name = name, s->in = in, s->len = len, s->msg = msg, s->cap = cap;
    s->gz = gzip_magic(in, len);
    if (!s->gz) return 0;
#ifdef HAVE_ZLIB
    if (inflateInit2(&s->z, 16 + MAX_WBITS) != Z_OK) /* 16: a gzip wrapper, checked */
        return fail(s, "%s: cannot start zlib: out of memory", name);
    s->z_live = true;
    return 0;
#else
    return fail(s, "%s: the file is gzip-compressed but this build has no zlib: gunzip the file "
                "or install zlib1g-dev and rebuild (built without zlib)", name);
#endif
}

static void source_close(Source *s) {
#ifdef HAVE_ZLIB
    if (s->z_live) inflateEnd(&s->z);
    s->z_live = false;
#else
    (void)s;
#endif
}

#ifdef HAVE_ZLIB
/* Inflates up to n bytes into out; *got: how many (fewer only at the end of the data). */
static int inflate_some(Source *s, uint8_t *out, size_t n, size_t *got) {
    *got = 0;
    while (*got < n && !s->ended) {
        if (s->z.avail_in == 0 && s->at < s->len) { /* hand zlib the next part */
            size_t step = s->len - s->at < IDX_ZLIB_STEP ? s->len - s->at : IDX_ZLIB_STEP;
            s->z.next_in = (Bytef *)(uintptr_t)(s->in + s->at);
            s->z.avail_in = (uInt)step;
            s->at += step;
        }
        size_t want = n - *got < IDX_ZLIB_STEP ? n - *got : IDX_ZLIB_STEP;
        s->z.next_out = out + *got;
        s->z.avail_out = (uInt)want;
        int rc = inflate(&s->z, Z_NO_FLUSH);
        *got += want - s->z.avail_out;
        if (rc == Z_STREAM_END) {
            size_t rest = s->z.avail_in + (s->len - s->at);
            if (rest == 0) {
                s->ended = true;
            } else if (s->z.avail_in ? gzip_magic(s->z.next_in, s->z.avail_in)
                                     : gzip_magic(s->in + s->at, s->len - s->at)) {
                inflateReset(&s->z); /* the next gzip member */
            } else {
                return fail(s, "%s: %zu bytes after the end of the gzip data are not gzip data: "
                            "not one gzip file (two files joined, or a damaged download); "
                            "download it again", s->name, rest);
            }
        } else if (rc == Z_BUF_ERROR && s->z.avail_in == 0 && s->at == s->len) {
            return fail(s, "%s: truncated gzip file: the compressed data ends early (download "
                        "it again)", s->name);
        } else if (rc != Z_OK) {
            return fail(s, "%s: corrupt gzip data (zlib: %s): truncated or damaged download; "
                        "download it again", s->name, s->z.msg ? s->z.msg : "unknown error");
        }
    }
    return 0;
}
#endif

/* Reads up to n bytes into out; *got < n only at the end of the data. */
static int source_read(Source *s, void *out, size_t n, size_t *got) {
#ifdef HAVE_ZLIB
    if (s->gz) return inflate_some(s, out, n, got);
#endif
    *got = s->len - s->at < n ? s->len - s->at : n;
    memcpy(out, s->in + s->at, *got);
    s->at += *got;
    return 0;
}

/* The most data bytes the rest of the source can still give: a bound on what a header
 * may promise (deflate makes at most 1032 bytes of one). */
static size_t source_bound(const Source *s) {
    size_t rest = s->len - s->at;
#ifdef HAVE_ZLIB
    if (s->gz) {
        rest += s->z.avail_in;
        return rest > SIZE_MAX / 1032 ? SIZE_MAX : rest * 1032;
    }
#endif
    return rest;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Reads the header: the magic number and ndims big-endian sizes into dims. */
static int read_header(Source *s, uint32_t magic, const char *kind, uint32_t *dims, int ndims) {
    uint8_t head[16];
    size_t len = 4 * (size_t)(1 + ndims), got;
    if (source_read(s, head, len, &got) != 0) return -1;
    if (got < 4)
        return fail(s, "%s: truncated: expected a %zu-byte IDX %s header, the file has only %zu "
                    "bytes (download it again)", s->name, len, kind, got);
    uint32_t m = be32(head);
    if (m != magic) {
        const char *hint = "";
        if (m == IDX_IMAGES_MAGIC || m == IDX_LABELS_MAGIC)
            hint = m == IDX_IMAGES_MAGIC
                       ? " (that is an image file: are the image and label files swapped?)"
                       : " (that is a label file: are the image and label files swapped?)";
        return fail(s, "%s: bad magic number 0x%08x, expected 0x%08x for an IDX %s file%s",
                    s->name, (unsigned)m, (unsigned)magic, kind, hint);
    }
    if (got < len)
        return fail(s, "%s: truncated: expected a %zu-byte IDX %s header, the file has only %zu "
                    "bytes (download it again)", s->name, len, kind, got);
    for (int i = 0; i < ndims; i++) dims[i] = be32(head + 4 * (i + 1));
    if (dims[0] == 0 || dims[0] > INT_MAX)
        return fail(s, "%s: the header says %u %s, expected 1..%d (corrupt file?)", s->name,
                    (unsigned)dims[0], kind, INT_MAX);
    return 0;
}

/* Fails when there is anything after the data the header described. */
static int expect_end(Source *s, size_t data_bytes, size_t header_bytes) {
    uint8_t extra;
    size_t got;
    if (source_read(s, &extra, 1, &got) != 0) return -1;
    if (got != 0)
        return fail(s, "%s: the file is longer than its header says (%zu bytes of data after "
                    "the %zu-byte header, then more): not an IDX file of this data set, or two "
                    "files joined", s->name, data_bytes, header_bytes);
    return 0;
}

static int truncated(Source *s, size_t n, size_t header_bytes, const char *what, size_t have) {
    return fail(s, "%s: truncated: expected %zu bytes of %s after the %zu-byte header, the file "
                "ends after %zu (download it again)", s->name, n, what, header_bytes, have);
}

/* Reads exactly n bytes of data into *out (malloc'ed), then expects the end. The buffer
 * grows as data arrives, so a corrupt header cannot ask for terabytes up front. */
static int read_body(Source *s, size_t n, size_t header_bytes, const char *what, uint8_t **out) {
    *out = NULL;
    size_t bound = source_bound(s);
    if (n > bound && s->gz)
        return fail(s, "%s: truncated or corrupt: the header promises %zu bytes of %s, more than "
                    "the rest of this gzip file can hold (download it again)", s->name, n, what);
    if (n > bound) return truncated(s, n, header_bytes, what, bound);
    size_t cap = n < IDX_FIRST_CHUNK ? n : IDX_FIRST_CHUNK;
    uint8_t *buf = xmalloc(cap);
    size_t have = 0;
    for (;;) {
        size_t got;
        if (source_read(s, buf + have, cap - have, &got) != 0) goto fail;
        have += got;
        if (have == n) break;
        if (have < cap) {
            truncated(s, n, header_bytes, what, have);
            goto fail;
        }
        size_t bigger = cap > n / 2 ? n : cap * 2;
        uint8_t *grown = xmalloc(bigger);
        memcpy(grown, buf, have);
        xfree(buf);
        buf = grown;
        cap = bigger;
    }
    if (expect_end(s, n, header_bytes) != 0) goto fail;
    *out = buf;
    return 0;
fail:
    xfree(buf);
    return -1;
}

int dataset_parse_idx(const uint8_t *images, size_t images_len, const char *images_name,
                      const uint8_t *labels, size_t labels_len, const char *labels_name,
                      Dataset *d, char *msg, size_t cap) {
    Source si, sl;
    uint32_t idims[3] = {0}, ldims[1] = {0};
    uint8_t *pixels = NULL, *labs = NULL;
    int rc = -1;
    memset(d, 0, sizeof *d);
    bool si_open = source_open(&si, images_name, images, images_len, msg, cap) == 0;
    bool sl_open = si_open && source_open(&sl, labels_name, labels, labels_len, msg, cap) == 0;
    if (!sl_open) goto out;
    if (read_header(&si, IDX_IMAGES_MAGIC, "images", idims, 3) != 0) goto out;
    for (int i = 1; i < 3; i++)
        if (idims[i] < 1 || idims[i] > IDX_MAX_SIDE) {
            fail(&si, "%s: the header says images of %u x %u pixels, expected 1..%d on each side "
                 "(corrupt file?)", images_name, (unsigned)idims[1], (unsigned)idims[2],
                 IDX_MAX_SIDE);
            goto out;
        }
    /* Both headers first: a count mismatch is found before megabytes are inflated. */
    if (read_header(&sl, IDX_LABELS_MAGIC, "labels", ldims, 1) != 0) goto out;
    if (idims[0] != ldims[0]) {
        fail(&si, "%s has %u images but %s has %u labels: the two files are not from the same "
             "set (train vs t10k?)", images_name, (unsigned)idims[0], labels_name,
             (unsigned)ldims[0]);
        goto out;
    }
    int count = (int)idims[0], rows = (int)idims[1], cols = (int)idims[2];
    size_t npix = (size_t)count * (size_t)rows * (size_t)cols;
    if (read_body(&si, npix, 16, "image data", &pixels) != 0) goto out;
    if (read_body(&sl, (size_t)count, 8, "labels", &labs) != 0) goto out;
    for (int i = 0; i < count; i++)
        if (labs[i] >= IDX_CLASSES) {
            fail(&sl, "%s: label %d of example %d is out of range (0..%d): not a 10-class data "
                 "set, or a corrupt file", labels_name, labs[i], i, IDX_CLASSES - 1);
            goto out;
        }
    snprintf(d->name, sizeof d->name, "idx");
    snprintf(d->source, sizeof d->source, "%s", images_name);
    d->count = count;
    d->channels = 1;
    d->height = rows;
    d->width = cols;
    d->num_classes = IDX_CLASSES;
    d->images = xmalloc(npix * sizeof(float));
    for (size_t i = 0; i < npix; i++) d->images[i] = (float)pixels[i] / 255.0f;
    d->labels = labs;
    labs = NULL;
    rc = 0;
out:
    if (si_open) source_close(&si);
    if (sl_open) source_close(&sl);
    xfree(pixels);
    xfree(labs);
    return rc;
}

#ifndef HAVE_ZLIB
static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}
#endif

static uint8_t *read_idx_file(const char *path, size_t *len) {
#ifndef HAVE_ZLIB
    if (ends_with(path, ".gz"))
        fatal("cannot read %s: built without zlib: gunzip the file or install zlib1g-dev and "
              "rebuild", path);
#endif
    uint8_t *bytes;
    char msg[FS_MSG_MAX];
    if (fs_read_file(path, IDX_MAX_FILE_BYTES, &bytes, len, msg, sizeof msg) != 0)
        fatal("%s", msg);
    return bytes;
}

void dataset_load_idx(const char *images_path, const char *labels_path, Dataset *d) {
    size_t ilen, llen;
    uint8_t *images = read_idx_file(images_path, &ilen);
    uint8_t *labels = read_idx_file(labels_path, &llen);
    char msg[FS_MSG_MAX];
    int rc = dataset_parse_idx(images, ilen, images_path, labels, llen, labels_path, d, msg,
                               sizeof msg);
    free(images);
    free(labels);
    if (rc != 0) fatal("%s", msg);
}
