/* Unit tests of lib/data: the IDX and CIFAR-10 readers on small files written here in
 * each real format, the search for a data set on disk, the error messages for broken
 * files (each checked in a child process: exit status 1 and a message naming the file),
 * the synthetic set, and gather. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

#include "core/rng.h"
#include "core/tensor.h"
#include "data/dataset.h"
#include "framework/check.h"
#include "fuzz/seed.h"

#define IMAGES_MAGIC 0x00000803u
#define LABELS_MAGIC 0x00000801u
#define CIFAR_RECORD 3073

/* ------------------------------------------------------------ files in each format */

typedef struct {
    uint8_t *bytes;
    size_t len;
} Blob;

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
    p[3] = (uint8_t)v;
}

/* An IDX image file: header, then random pixels (the first two are 0 and 255). */
static Blob idx_images(uint32_t magic, int count, int rows, int cols, uint64_t seed) {
    Blob b;
    b.len = 16 + (size_t)count * rows * cols;
    b.bytes = malloc(b.len);
    put_be32(b.bytes, magic);
    put_be32(b.bytes + 4, (uint32_t)count);
    put_be32(b.bytes + 8, (uint32_t)rows);
    put_be32(b.bytes + 12, (uint32_t)cols);
    Rng rng;
    rng_seed(&rng, seed, 1);
    for (size_t i = 16; i < b.len; i++) b.bytes[i] = (uint8_t)rng_below(&rng, 256);
    if (b.len >= 18) b.bytes[16] = 0, b.bytes[17] = 255;
    return b;
}

/* An IDX label file with labels (i * 7 + seed) % 10. */
static Blob idx_labels(uint32_t magic, int count, uint64_t seed) {
    Blob b;
    b.len = 8 + (size_t)count;
    b.bytes = malloc(b.len);
    put_be32(b.bytes, magic);
    put_be32(b.bytes + 4, (uint32_t)count);
    for (int i = 0; i < count; i++) b.bytes[8 + i] = (uint8_t)((i * 7 + seed) % 10);
    return b;
}

/* A CIFAR-10 batch of count records with random pixels. */
static Blob cifar_batch(int count, uint64_t seed) {
    Blob b;
    b.len = (size_t)count * CIFAR_RECORD;
    b.bytes = malloc(b.len);
    Rng rng;
    rng_seed(&rng, seed, 2);
    for (size_t i = 0; i < b.len; i++) b.bytes[i] = (uint8_t)rng_below(&rng, 256);
    for (int i = 0; i < count; i++) b.bytes[(size_t)i * CIFAR_RECORD] = (uint8_t)((i + seed) % 10);
    return b;
}

static bool write_plain(const char *path, const void *bytes, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return expect_true(false, "cannot write %s: %s", path, strerror(errno));
    bool ok = fwrite(bytes, 1, len, f) == len;
    return expect_true(fclose(f) == 0 && ok, "cannot write %s", path);
}

#ifdef HAVE_ZLIB
static bool write_gz(const char *path, const void *bytes, size_t len) {
    gzFile f = gzopen(path, "wb");
    if (!f) return expect_true(false, "gzopen %s failed", path);
    bool ok = gzwrite(f, bytes, (unsigned)len) == (int)len;
    return expect_true(gzclose(f) == Z_OK && ok, "cannot write %s", path);
}
#endif

/* Writes dir/name (gzip-compressed when name ends in .gz) from a blob, then frees it.
 * With $FUZZ_SEED_DIR set, the file is kept as a seed for the fuzz targets. */
static bool write_blob(const char *dir, const char *name, Blob b) {
    char path[512];
    path_in(path, sizeof path, dir, name);
    size_t n = strlen(name);
    bool ok, cifar = n > 4 && strcmp(name + n - 4, ".bin") == 0;
    if (n > 3 && strcmp(name + n - 3, ".gz") == 0) {
#ifdef HAVE_ZLIB
        ok = write_gz(path, b.bytes, b.len);
#else
        ok = expect_true(false, "test bug: writing %s needs zlib", path);
#endif
    } else {
        ok = write_plain(path, b.bytes, b.len);
    }
    fuzz_seed_save_file(cifar ? "cifar10" : "idx", path);
    if (!cifar) fuzz_seed_save("idx_gz", b.bytes, b.len); /* what fuzz_idx_gz compresses */
    free(b.bytes);
    return ok;
}

/* A complete IDX set (train: ntrain examples, t10k: ntest) in dir; suffix "" or ".gz". */
static bool write_idx_set(const char *dir, int ntrain, int ntest, const char *suffix) {
    char name[128];
    bool ok = true;
    snprintf(name, sizeof name, "train-images-idx3-ubyte%s", suffix);
    ok = ok && write_blob(dir, name, idx_images(IMAGES_MAGIC, ntrain, 28, 28, 11));
    snprintf(name, sizeof name, "train-labels-idx1-ubyte%s", suffix);
    ok = ok && write_blob(dir, name, idx_labels(LABELS_MAGIC, ntrain, 3));
    snprintf(name, sizeof name, "t10k-images-idx3-ubyte%s", suffix);
    ok = ok && write_blob(dir, name, idx_images(IMAGES_MAGIC, ntest, 28, 28, 12));
    snprintf(name, sizeof name, "t10k-labels-idx1-ubyte%s", suffix);
    ok = ok && write_blob(dir, name, idx_labels(LABELS_MAGIC, ntest, 4));
    return ok;
}

/* ------------------------------------------------------------ running a loader that must fail */

/* What a loader is called with; job_run calls it in a child (run_child_stderr), which
 * exits 0 if the loader returns. */
typedef struct {
    const char *name, *dir;         /* dataset_load */
    const char *images, *labels;    /* dataset_load_idx */
    const char *const *batches;     /* dataset_load_cifar10 */
    int nbatches;
    const char *chdir_to;           /* run from this directory (NULL: stay) */
} Job;

static void job_run(void *arg) {
    const Job *job = arg;
    Dataset a, b;
    if (job->chdir_to && chdir(job->chdir_to) != 0) _exit(90);
    if (job->name) {
        dataset_load(job->name, job->dir, &a, &b);
    } else if (job->images) {
        dataset_load_idx(job->images, job->labels, &a);
    } else {
        dataset_load_cifar10(job->batches, job->nbatches, &a);
    }
}

/* Loads images/labels from dir (names relative to it) in a child; expects exit 1 and a
 * message naming `culprit` (a file in dir) and containing `word`. */
static bool expect_idx_error(const char *dir, const char *images, const char *labels,
                             const char *culprit, const char *word) {
    char ip[512], lp[512], cp[512];
    path_in(ip, sizeof ip, dir, images);
    path_in(lp, sizeof lp, dir, labels);
    path_in(cp, sizeof cp, dir, culprit);
    Job job = {.images = ip, .labels = lp};
    ChildResult o;
    run_child_stderr(job_run, &job, &o);
    return expect_exit("the loader", &o, 1, cp, word, (const char *)NULL);
}

/* ------------------------------------------------------------ IDX reader */

/* Loads dir/images + dir/labels and compares with the bytes that were written. */
static bool expect_idx_contents(const char *dir, const char *images, const char *labels) {
    char ip[512], lp[512];
    path_in(ip, sizeof ip, dir, images);
    path_in(lp, sizeof lp, dir, labels);
    Dataset d;
    dataset_load_idx(ip, lp, &d);
    Blob bi = idx_images(IMAGES_MAGIC, 7, 5, 4, 21), bl = idx_labels(LABELS_MAGIC, 7, 5);
    bool ok = expect_true(d.count == 7 && d.channels == 1 && d.height == 5 && d.width == 4 &&
                              d.num_classes == 10,
                          "got count %d, %dx%dx%d, %d classes; expected 7, 1x5x4, 10", d.count,
                          d.channels, d.height, d.width, d.num_classes);
    float want[140];
    for (int i = 0; i < 140; i++) want[i] = (float)bi.bytes[16 + i] / 255.0f;
    ok = ok && expect_close("pixels", d.images, want, 140, 0, 0);
    ok = ok && expect_true(d.images[0] == 0.0f && d.images[1] == 1.0f,
                           "pixel 0 -> %g, 255 -> %g; expected 0 and 1", d.images[0],
                           d.images[1]);
    for (int i = 0; ok && i < 7; i++)
        ok = expect_true(d.labels[i] == bl.bytes[8 + i], "label %d is %d, expected %d", i,
                         d.labels[i], bl.bytes[8 + i]);
    free(bi.bytes);
    free(bl.bytes);
    dataset_free(&d);
    return ok;
}

static int body_idx_plain(const char *dir) {
    bool ok = write_blob(dir, "img", idx_images(IMAGES_MAGIC, 7, 5, 4, 21)) &&
              write_blob(dir, "lab", idx_labels(LABELS_MAGIC, 7, 5));
    return ok && expect_idx_contents(dir, "img", "lab") ? CHECK_PASS : CHECK_FAIL;
}
static int check_idx_plain(void) { return with_tmpdir("test_data", body_idx_plain); }

#ifdef HAVE_ZLIB
static int body_idx_gz(const char *dir) {
    bool ok = write_blob(dir, "img.gz", idx_images(IMAGES_MAGIC, 7, 5, 4, 21)) &&
              write_blob(dir, "lab.gz", idx_labels(LABELS_MAGIC, 7, 5)) &&
              write_blob(dir, "lab", idx_labels(LABELS_MAGIC, 7, 5));
    ok = ok && expect_idx_contents(dir, "img.gz", "lab.gz");
    ok = ok && expect_idx_contents(dir, "img.gz", "lab"); /* one of each */
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_idx_gz(void) { return with_tmpdir("test_data", body_idx_gz); }

static int body_truncated_gz(const char *dir) {
    char p[512];
    bool ok = write_blob(dir, "img.gz", idx_images(IMAGES_MAGIC, 50, 28, 28, 1)) &&
              write_blob(dir, "lab.gz", idx_labels(LABELS_MAGIC, 50, 2));
    path_in(p, sizeof p, dir, "img.gz");
    struct stat st;
    ok = ok && stat(p, &st) == 0 && truncate(p, st.st_size / 2) == 0;
    ok = ok && expect_idx_error(dir, "img.gz", "lab.gz", "img.gz", "truncated");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_truncated_gz(void) { return with_tmpdir("test_data", body_truncated_gz); }
#else
static int check_idx_gz(void) {
    printf("built without zlib\n");
    return CHECK_SKIP;
}
static int check_truncated_gz(void) { return check_idx_gz(); }
#endif

/* Without zlib a .gz file (by name, or by content) must give the fix, not garbage. */
static int body_gz_without_zlib(const char *dir) {
#ifdef HAVE_ZLIB
    (void)dir;
    printf("built with zlib: .gz files are read\n");
    return CHECK_SKIP;
#else
    static const uint8_t gzip_start[16] = {0x1f, 0x8b, 8, 0};
    char gz[512], plain[512];
    path_in(gz, sizeof gz, dir, "img.gz");
    path_in(plain, sizeof plain, dir, "img");
    bool ok = write_blob(dir, "lab", idx_labels(LABELS_MAGIC, 7, 5)) &&
              write_plain(gz, gzip_start, 16) && write_plain(plain, gzip_start, 16);
    ok = ok && expect_idx_error(dir, "img.gz", "lab", "img.gz", "built without zlib");
    ok = ok && expect_idx_error(dir, "img", "lab", "img", "gzip");
    return ok ? CHECK_PASS : CHECK_FAIL;
#endif
}
static int check_gz_without_zlib(void) { return with_tmpdir("test_data", body_gz_without_zlib); }

/* ------------------------------------------------------------ IDX errors */

static int body_truncated_images(const char *dir) {
    Blob b = idx_images(IMAGES_MAGIC, 7, 5, 4, 21);
    b.len -= 10;
    bool ok = write_blob(dir, "img", b) && write_blob(dir, "lab", idx_labels(LABELS_MAGIC, 7, 5));
    ok = ok && expect_idx_error(dir, "img", "lab", "img", "truncated");
    b = idx_images(IMAGES_MAGIC, 7, 5, 4, 21);
    b.len = 10; /* inside the header */
    ok = ok && write_blob(dir, "img", b);
    ok = ok && expect_idx_error(dir, "img", "lab", "img", "truncated");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_truncated_images(void) { return with_tmpdir("test_data", body_truncated_images); }

static int body_truncated_labels(const char *dir) {
    Blob b = idx_labels(LABELS_MAGIC, 7, 5);
    b.len -= 1;
    bool ok = write_blob(dir, "img", idx_images(IMAGES_MAGIC, 7, 5, 4, 21)) &&
              write_blob(dir, "lab", b);
    ok = ok && expect_idx_error(dir, "img", "lab", "lab", "truncated");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_truncated_labels(void) { return with_tmpdir("test_data", body_truncated_labels); }

static int body_wrong_magic(const char *dir) {
    bool ok = write_blob(dir, "img", idx_images(IMAGES_MAGIC, 7, 5, 4, 21)) &&
              write_blob(dir, "lab", idx_labels(LABELS_MAGIC, 7, 5)) &&
              write_blob(dir, "junk", idx_images(0x12345678u, 7, 5, 4, 21));
    ok = ok && expect_idx_error(dir, "lab", "img", "lab", "magic");   /* swapped */
    ok = ok && expect_idx_error(dir, "lab", "img", "lab", "swapped");
    ok = ok && expect_idx_error(dir, "junk", "lab", "junk", "magic");
    ok = ok && expect_idx_error(dir, "img", "junk", "junk", "magic");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_wrong_magic(void) { return with_tmpdir("test_data", body_wrong_magic); }

static int body_mismatched_counts(const char *dir) {
    bool ok = write_blob(dir, "img", idx_images(IMAGES_MAGIC, 7, 5, 4, 21)) &&
              write_blob(dir, "lab", idx_labels(LABELS_MAGIC, 6, 5));
    ok = ok && expect_idx_error(dir, "img", "lab", "img", "6 labels");
    ok = ok && expect_idx_error(dir, "img", "lab", "lab", "7 images");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_mismatched_counts(void) {
    return with_tmpdir("test_data", body_mismatched_counts);
}

static int body_label_range(const char *dir) {
    Blob b = idx_labels(LABELS_MAGIC, 7, 5);
    b.bytes[8 + 3] = 10;
    bool ok = write_blob(dir, "img", idx_images(IMAGES_MAGIC, 7, 5, 4, 21)) &&
              write_blob(dir, "lab", b);
    ok = ok && expect_idx_error(dir, "img", "lab", "lab", "out of range");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_label_range(void) { return with_tmpdir("test_data", body_label_range); }

static int body_bad_header(const char *dir) {
    bool ok = write_blob(dir, "lab", idx_labels(LABELS_MAGIC, 7, 5)) &&
              write_blob(dir, "rows0", idx_images(IMAGES_MAGIC, 7, 0, 4, 21)) &&
              write_blob(dir, "cols2000", idx_images(IMAGES_MAGIC, 7, 5, 2000, 21)) &&
              write_blob(dir, "count0", idx_images(IMAGES_MAGIC, 0, 5, 4, 21));
    ok = ok && expect_idx_error(dir, "rows0", "lab", "rows0", "pixels");
    ok = ok && expect_idx_error(dir, "cols2000", "lab", "cols2000", "pixels");
    ok = ok && expect_idx_error(dir, "count0", "lab", "count0", "0 images");
    /* a huge count is a truncated file, not an attempt to allocate terabytes */
    Blob b = idx_images(IMAGES_MAGIC, 7, 5, 4, 21);
    put_be32(b.bytes + 4, 0x7fffffffu);
    Blob l = idx_labels(LABELS_MAGIC, 7, 5);
    put_be32(l.bytes + 4, 0x7fffffffu);
    ok = ok && write_blob(dir, "huge", b) && write_blob(dir, "hugelab", l);
    ok = ok && expect_idx_error(dir, "huge", "hugelab", "huge", "truncated");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_bad_header(void) { return with_tmpdir("test_data", body_bad_header); }

/* Trailing bytes mean the file is not what its header says: rejected, consistently. */
static int body_trailing_data(const char *dir) {
    Blob b = idx_images(IMAGES_MAGIC, 7, 5, 4, 21);
    Blob longer = {malloc(b.len + 3), b.len + 3};
    memcpy(longer.bytes, b.bytes, b.len);
    memset(longer.bytes + b.len, 0, 3);
    free(b.bytes);
    Blob l = idx_labels(LABELS_MAGIC, 7, 5);
    Blob llonger = {malloc(l.len + 1), l.len + 1};
    memcpy(llonger.bytes, l.bytes, l.len);
    llonger.bytes[l.len] = 0;
    free(l.bytes);
    bool ok = write_blob(dir, "img", idx_images(IMAGES_MAGIC, 7, 5, 4, 21)) &&
              write_blob(dir, "lab", idx_labels(LABELS_MAGIC, 7, 5)) &&
              write_blob(dir, "imglong", longer) && write_blob(dir, "lablong", llonger);
    ok = ok && expect_idx_error(dir, "imglong", "lab", "imglong", "longer");
    ok = ok && expect_idx_error(dir, "img", "lablong", "lablong", "longer");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_trailing_data(void) { return with_tmpdir("test_data", body_trailing_data); }

/* ------------------------------------------------------------ CIFAR-10 reader */

static int body_cifar_read(const char *dir) {
    bool ok = write_blob(dir, "a.bin", cifar_batch(3, 1)) && write_blob(dir, "b.bin", cifar_batch(2, 2));
    if (!ok) return CHECK_FAIL;
    char pa[512], pb[512];
    path_in(pa, sizeof pa, dir, "a.bin");
    path_in(pb, sizeof pb, dir, "b.bin");
    const char *paths[2] = {pa, pb};
    Dataset d;
    dataset_load_cifar10(paths, 2, &d);
    ok = expect_true(d.count == 5 && d.channels == 3 && d.height == 32 && d.width == 32 &&
                         d.num_classes == 10,
                     "got count %d, %dx%dx%d, %d classes; expected 5, 3x32x32, 10", d.count,
                     d.channels, d.height, d.width, d.num_classes);
    Blob batches[2] = {cifar_batch(3, 1), cifar_batch(2, 2)};
    static float want[5 * 3072];
    uint8_t want_labels[5];
    for (int i = 0; i < 5; i++) {
        const Blob *b = &batches[i < 3 ? 0 : 1];
        const uint8_t *rec = b->bytes + (size_t)(i < 3 ? i : i - 3) * CIFAR_RECORD;
        want_labels[i] = rec[0];
        /* channel planes R, G, B, each 32 rows of 32: the same order as [C, H, W] */
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 32; y++)
                for (int x = 0; x < 32; x++)
                    want[i * 3072 + c * 1024 + y * 32 + x] = rec[1 + c * 1024 + y * 32 + x] / 255.0f;
    }
    ok = ok && expect_close("pixels", d.images, want, 5 * 3072, 0, 0);
    for (int i = 0; ok && i < 5; i++)
        ok = expect_true(d.labels[i] == want_labels[i], "label %d is %d, expected %d", i,
                         d.labels[i], want_labels[i]);
    free(batches[0].bytes);
    free(batches[1].bytes);
    dataset_free(&d);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_cifar_read(void) { return with_tmpdir("test_data", body_cifar_read); }

static bool expect_cifar_error(const char *dir, const char *file, const char *word) {
    char p[512];
    path_in(p, sizeof p, dir, file);
    const char *paths[1] = {p};
    Job job = {.batches = paths, .nbatches = 1};
    ChildResult o;
    run_child_stderr(job_run, &job, &o);
    return expect_exit("the loader", &o, 1, p, word, (const char *)NULL);
}

static int body_cifar_errors(const char *dir) {
    Blob odd = cifar_batch(3, 1);
    odd.len -= 5;
    Blob bad_label = cifar_batch(3, 1);
    bad_label.bytes[CIFAR_RECORD] = 10; /* record 1 */
    Blob empty = {malloc(1), 0};
    bool ok = write_blob(dir, "odd.bin", odd) && write_blob(dir, "label.bin", bad_label) &&
              write_blob(dir, "empty.bin", empty);
    ok = ok && expect_cifar_error(dir, "odd.bin", "3073");
    ok = ok && expect_cifar_error(dir, "empty.bin", "0 bytes");
    ok = ok && expect_cifar_error(dir, "label.bin", "out of range");
    ok = ok && expect_cifar_error(dir, "missing.bin", "No such file");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_cifar_errors(void) { return with_tmpdir("test_data", body_cifar_errors); }

/* A gzip file with bytes after the end of its stream is refused like a plain file with
 * data after its end; gzip members one after the other are one stream (as gunzip reads
 * them), so an IDX file split over two members reads back exactly. */
static int body_gz_trailing(const char *dir) {
#ifndef HAVE_ZLIB
    (void)dir;
    printf("built without zlib\n");
    return CHECK_SKIP;
#else
    Blob img = idx_images(IMAGES_MAGIC, 7, 5, 4, 21);
    char p[512];
    bool ok = write_blob(dir, "lab", idx_labels(LABELS_MAGIC, 7, 5));
    /* junk after the stream: a few bytes, and zeros */
    static const char *const junk[] = {"JUNK", "\0\0\0\0\0\0\0\0"};
    static const size_t junk_len[] = {4, 8};
    for (int j = 0; ok && j < 2; j++) {
        path_in(p, sizeof p, dir, "img.gz");
        gzFile f = gzopen(p, "wb");
        ok = expect_true(f && gzwrite(f, img.bytes, (unsigned)img.len) == (int)img.len &&
                             gzclose(f) == Z_OK, "cannot write %s", p);
        FILE *raw = fopen(p, "ab");
        ok = ok && expect_true(raw && fwrite(junk[j], 1, junk_len[j], raw) == junk_len[j] &&
                                   fclose(raw) == 0, "cannot append to %s", p);
        ok = ok && expect_idx_error(dir, "img.gz", "lab", "img.gz", "after the end of the gzip");
    }
    /* two members: the header and half the pixels, then the rest */
    path_in(p, sizeof p, dir, "img.gz");
    size_t half = 16 + 70;
    for (int m = 0; ok && m < 2; m++) {
        gzFile f = gzopen(p, m == 0 ? "wb" : "ab");
        const uint8_t *from = img.bytes + (m == 0 ? 0 : half);
        unsigned n = (unsigned)(m == 0 ? half : img.len - half);
        ok = expect_true(f && gzwrite(f, from, n) == (int)n && gzclose(f) == Z_OK,
                         "cannot write %s", p);
    }
    ok = ok && expect_idx_contents(dir, "img.gz", "lab");
    /* a second whole copy as another member: longer than the header says */
    gzFile f = gzopen(p, "ab");
    ok = ok && expect_true(f && gzwrite(f, img.bytes, (unsigned)img.len) == (int)img.len &&
                               gzclose(f) == Z_OK, "cannot write %s", p);
    ok = ok && expect_idx_error(dir, "img.gz", "lab", "img.gz", "longer than its header");
    free(img.bytes);
    return ok ? CHECK_PASS : CHECK_FAIL;
#endif
}
static int check_gz_trailing(void) { return with_tmpdir("test_data", body_gz_trailing); }

/* A FIFO or a directory named like a data file is refused at once, never waited on (a
 * FIFO would block an open for reading until a writer came). */
static int body_not_regular(const char *dir) {
    char fifo[512], sub[512];
    path_in(fifo, sizeof fifo, dir, "fifo");
    make_dir_in(sub, sizeof sub, dir, "sub");
    bool ok = expect_true(mkfifo(fifo, 0600) == 0, "mkfifo %s: %s", fifo, strerror(errno));
    ok = ok && write_blob(dir, "img", idx_images(IMAGES_MAGIC, 7, 5, 4, 21)) &&
         write_blob(dir, "lab", idx_labels(LABELS_MAGIC, 7, 5));
    ok = ok && expect_idx_error(dir, "fifo", "lab", "fifo", "not a regular file (a FIFO)");
    ok = ok && expect_idx_error(dir, "img", "fifo", "fifo", "not a regular file (a FIFO)");
    ok = ok && expect_idx_error(dir, "sub", "lab", "sub", "is a directory");
    ok = ok && expect_cifar_error(dir, "fifo", "not a regular file (a FIFO)");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_not_regular(void) { return with_tmpdir("test_data", body_not_regular); }

/* The readers on bytes in memory (what the fuzz targets call): the same data as from
 * files; an error is a message with status -1, never an exit. */
static int check_parse_memory(void) {
    Blob img = idx_images(IMAGES_MAGIC, 7, 5, 4, 21), lab = idx_labels(LABELS_MAGIC, 7, 5);
    Blob cif = cifar_batch(3, 1);
    char msg[1024] = "";
    Dataset d;
    bool ok = expect_true(dataset_parse_idx(img.bytes, img.len, "img", lab.bytes, lab.len, "lab",
                                            &d, msg, sizeof msg) == 0, "IDX: %s", msg);
    ok = ok && expect_true(d.count == 7 && d.height == 5 && d.width == 4 &&
                               d.images[1] == 1.0f && d.labels[6] == lab.bytes[14],
                           "IDX from memory: %d images of %dx%d", d.count, d.height, d.width);
    if (ok) dataset_free(&d);
    ok = ok && expect_true(dataset_parse_idx(img.bytes, img.len - 1, "img", lab.bytes, lab.len,
                                             "lab", &d, msg, sizeof msg) == -1 &&
                               strstr(msg, "img: truncated") && d.images == NULL,
                           "IDX one byte short: \"%s\"", msg);
    ok = ok && expect_true(dataset_parse_cifar10(cif.bytes, cif.len, "b.bin", &d, msg,
                                                 sizeof msg) == 0, "CIFAR-10: %s", msg);
    ok = ok && expect_true(d.count == 3 && d.labels[2] == cif.bytes[2 * CIFAR_RECORD] &&
                               d.images[5] == cif.bytes[6] / 255.0f,
                           "CIFAR-10 from memory: %d images", d.count);
    if (ok) dataset_free(&d);
    ok = ok && expect_true(dataset_parse_cifar10(cif.bytes, cif.len - 1, "b.bin", &d, msg,
                                                 sizeof msg) == -1 &&
                               strstr(msg, "b.bin: wrong size") && d.images == NULL,
                           "CIFAR-10 one byte short: \"%s\"", msg);
    free(img.bytes);
    free(lab.bytes);
    free(cif.bytes);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ finding a data set */

static bool expect_loaded(const char *name, const char *data_dir, int ntrain, int ntest,
                          const char *source_part) {
    Dataset tr, te;
    dataset_load(name, data_dir, &tr, &te);
    bool ok = expect_true(tr.count == ntrain && te.count == ntest,
                          "%s: %d train / %d test examples, expected %d / %d", name, tr.count,
                          te.count, ntrain, ntest);
    ok = ok && expect_true(strcmp(tr.name, name) == 0 && strcmp(te.name, name) == 0,
                           "names \"%s\", \"%s\", expected \"%s\"", tr.name, te.name, name);
    ok = ok && expect_true(strstr(tr.source, source_part) != NULL,
                           "source \"%s\" does not mention %s", tr.source, source_part);
    dataset_free(&tr);
    dataset_free(&te);
    return ok;
}

static int body_load_data_dir(const char *dir) {
    char sub[512], flat[512];
    make_dir_in(sub, sizeof sub, dir, "fashion-mnist");
    make_dir_in(flat, sizeof flat, dir, "flat");
    bool ok = write_idx_set(sub, 6, 3, "") && write_idx_set(flat, 5, 2, "");
    unsetenv("DATA_DIR");
    ok = ok && expect_loaded("fashion-mnist", dir, 6, 3, sub);   /* base/<name>/ */
    ok = ok && expect_loaded("fashion-mnist", flat, 5, 2, flat); /* directly in base */
    ok = ok && expect_loaded("mnist", flat, 5, 2, flat);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_load_data_dir(void) { return with_tmpdir("test_data", body_load_data_dir); }

static int body_load_env(const char *dir) {
    char env[512], arg[512], sub[512];
    make_dir_in(env, sizeof env, dir, "env");
    make_dir_in(arg, sizeof arg, dir, "arg");
    make_dir_in(sub, sizeof sub, env, "mnist");
    bool ok = write_idx_set(sub, 4, 2, "") && write_idx_set(arg, 8, 1, "");
    setenv("DATA_DIR", env, 1);
    ok = ok && expect_loaded("mnist", NULL, 4, 2, sub);
    ok = ok && expect_loaded("mnist", "", 4, 2, sub);
    ok = ok && expect_loaded("mnist", arg, 8, 1, arg); /* --data comes first */
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_load_env(void) { return with_tmpdir("test_data", body_load_env); }

/* datasets/data under the current directory, with gzip files where zlib is there. */
static int body_load_cwd(const char *dir) {
    char sub[512];
    make_dir_in(sub, sizeof sub, dir, "datasets/data/mnist");
#ifdef HAVE_ZLIB
    const char *suffix = ".gz";
#else
    const char *suffix = "";
#endif
    bool ok = write_idx_set(sub, 3, 2, suffix);
    unsetenv("DATA_DIR");
    ok = ok && expect_true(chdir(dir) == 0, "chdir %s", dir);
    ok = ok && expect_loaded("mnist", NULL, 3, 2, "datasets/data/mnist");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_load_cwd(void) { return with_tmpdir("test_data", body_load_cwd); }

static int body_load_cifar(const char *dir) {
    static const char *const names[6] = {"data_batch_1.bin", "data_batch_2.bin",
                                         "data_batch_3.bin", "data_batch_4.bin",
                                         "data_batch_5.bin", "test_batch.bin"};
    char a[512], b[512];
    make_dir_in(a, sizeof a, dir, "cifar-10-batches-bin");
    make_dir_in(b, sizeof b, dir, "other");
    bool ok = true;
    for (int i = 0; i < 6; i++) ok = ok && write_blob(a, names[i], cifar_batch(i < 5 ? 2 : 3, (uint64_t)i));
    char deep[512];
    make_dir_in(deep, sizeof deep, b, "cifar10/cifar-10-batches-bin");
    for (int i = 0; i < 6; i++) ok = ok && write_blob(deep, names[i], cifar_batch(1, (uint64_t)i));
    unsetenv("DATA_DIR");
    ok = ok && expect_loaded("cifar10", dir, 10, 3, a);
    ok = ok && expect_loaded("cifar10", b, 5, 1, deep);
    Dataset tr, te;
    dataset_load("cifar10", dir, &tr, &te);
    ok = ok && expect_true(tr.channels == 3 && tr.height == 32 && te.width == 32,
                           "cifar10 shapes %dx%dx%d", tr.channels, tr.height, tr.width);
    dataset_free(&tr);
    dataset_free(&te);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_load_cifar(void) { return with_tmpdir("test_data", body_load_cifar); }

/* Nothing anywhere: the message lists where it looked and how to fix it. */
static int body_missing(const char *dir) {
    char env[512], arg[512], partial[512];
    make_dir_in(env, sizeof env, dir, "env");
    make_dir_in(arg, sizeof arg, dir, "arg");
    make_dir_in(partial, sizeof partial, dir, "arg/mnist");
    bool ok = write_blob(partial, "train-images-idx3-ubyte", idx_images(IMAGES_MAGIC, 3, 28, 28, 1));
    setenv("DATA_DIR", env, 1);
    Job job = {.name = "mnist", .dir = arg, .chdir_to = dir};
    ChildResult o;
    run_child_stderr(job_run, &job, &o);
    if (ok && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0) {
        printf("mnist was found elsewhere on this machine: cannot test its absence\n");
        return CHECK_SKIP;
    }
    /* --data given: only there, no fallback to $DATA_DIR or elsewhere */
    ok = ok && expect_exit("the loader", &o, 1, partial, "datasets/README.md", "--data DIR",
                           "--dataset synthetic", "missing train-labels-idx1-ubyte",
                           (const char *)NULL);
    ok = ok && expect_true(!strstr(o.out, env), "with --data, $DATA_DIR must not be searched");
    Job nodir = {.name = "mnist", .dir = NULL, .chdir_to = dir};
    run_child_stderr(job_run, &nodir, &o);
    if (ok && !(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0))
        ok = expect_exit("the loader", &o, 1, env, "datasets/data", "datasets/README.md",
                         (const char *)NULL);
    Job cifar = {.name = "cifar10", .dir = arg, .chdir_to = dir};
    run_child_stderr(job_run, &cifar, &o);
    if (ok && !(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0))
        ok = expect_exit("the loader", &o, 1, "cifar-10-batches-bin", arg, "test_batch.bin",
                         "--dataset synthetic", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_missing(void) { return with_tmpdir("test_data", body_missing); }

static int check_unknown_name(void) {
    Job job = {.name = "imagenet"};
    ChildResult o;
    run_child_stderr(job_run, &job, &o);
    return expect_exit("the loader", &o, 1, "imagenet", "fashion-mnist", "mnist", "cifar10",
                       "synthetic", (const char *)NULL)
               ? CHECK_PASS
               : CHECK_FAIL;
}

/* ------------------------------------------------------------ synthetic */

static int check_synthetic_deterministic(void) {
    Dataset a, b, c;
    dataset_make_synthetic(300, 1, 28, 42, &a);
    dataset_make_synthetic(300, 1, 28, 42, &b);
    dataset_make_synthetic(300, 1, 28, 43, &c);
    size_t n = (size_t)300 * 28 * 28;
    bool ok = expect_true(memcmp(a.images, b.images, n * sizeof(float)) == 0 &&
                              memcmp(a.labels, b.labels, 300) == 0,
                          "the same seed gave different data");
    ok = ok && expect_true(memcmp(a.images, c.images, n * sizeof(float)) != 0,
                           "seeds 42 and 43 gave the same images");
    dataset_free(&a);
    dataset_free(&b);
    dataset_free(&c);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static bool expect_valid_synthetic(const Dataset *d) {
    int per_class[10] = {0};
    int64_t n = (int64_t)d->count * d->channels * d->height * d->width;
    for (int64_t i = 0; i < n; i++)
        if (!(d->images[i] >= 0.0f && d->images[i] <= 1.0f))
            return expect_true(false, "value %lld is %g, outside [0, 1]", (long long)i,
                               d->images[i]);
    for (int i = 0; i < d->count; i++) {
        if (d->labels[i] >= 10) return expect_true(false, "label %d is %d", i, d->labels[i]);
        per_class[d->labels[i]]++;
    }
    for (int k = 0; k < 10; k++)
        if (per_class[k] < d->count / 10)
            return expect_true(false, "class %d has %d of %d examples", k, per_class[k],
                               d->count);
    return true;
}

static int check_synthetic_valid(void) {
    Dataset tr, te, rgb;
    dataset_load("synthetic", "/nonexistent", &tr, &te);
    bool ok = expect_true(tr.count == 6000 && te.count == 1000 && tr.channels == 1 &&
                              tr.height == 28 && tr.width == 28 && te.height == 28 &&
                              tr.num_classes == 10 && strcmp(tr.name, "synthetic") == 0,
                          "synthetic: %d / %d examples of %dx%dx%d, name %s", tr.count,
                          te.count, tr.channels, tr.height, tr.width, tr.name);
    ok = ok && expect_valid_synthetic(&tr) && expect_valid_synthetic(&te);
    ok = ok && expect_true(memcmp(tr.images, te.images, 784 * 100 * sizeof(float)) != 0,
                           "train and test sets start with the same images");
    dataset_make_synthetic(50, 3, 32, 7, &rgb);
    ok = ok && expect_valid_synthetic(&rgb);
    dataset_free(&tr);
    dataset_free(&te);
    dataset_free(&rgb);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Learnable (class means already separate most of it) but not given away by a pixel. */
static int check_synthetic_learnable(void) {
    Dataset tr, te;
    dataset_make_synthetic(2000, 1, 28, 5, &tr);
    dataset_make_synthetic(500, 1, 28, 6, &te);
    static double mean[10][784];
    int count[10] = {0};
    for (int i = 0; i < tr.count; i++) {
        count[tr.labels[i]]++;
        for (int p = 0; p < 784; p++) mean[tr.labels[i]][p] += tr.images[i * 784 + p];
    }
    for (int k = 0; k < 10; k++)
        for (int p = 0; p < 784; p++) mean[k][p] /= count[k];
    int right = 0;
    for (int i = 0; i < te.count; i++) {
        int best = 0;
        double best_d = INFINITY;
        for (int k = 0; k < 10; k++) {
            double dist = 0;
            for (int p = 0; p < 784; p++) {
                double t = te.images[i * 784 + p] - mean[k][p];
                dist += t * t;
            }
            if (dist < best_d) best_d = dist, best = k;
        }
        right += best == te.labels[i];
    }
    double centroid = right / (double)te.count;
    /* the best classifier from one pixel: the majority class of each of 10 value bins */
    double best_pixel = 0;
    for (int p = 0; p < 784; p++) {
        int hist[10][10] = {{0}};
        for (int i = 0; i < tr.count; i++) hist[(int)(tr.images[i * 784 + p] * 9.999f)][tr.labels[i]]++;
        int ok_p = 0;
        for (int i = 0; i < te.count; i++) {
            int *h = hist[(int)(te.images[i * 784 + p] * 9.999f)], top = 0;
            for (int k = 1; k < 10; k++) top = h[k] > h[top] ? k : top;
            ok_p += top == te.labels[i];
        }
        if (ok_p / (double)te.count > best_pixel) best_pixel = ok_p / (double)te.count;
    }
    printf("nearest class mean %.3f, best single pixel %.3f\n", centroid, best_pixel);
    bool ok = expect_true(centroid > 0.6, "nearest class mean only %.3f: hardly learnable",
                          centroid);
    ok = ok && expect_true(best_pixel < 0.5, "one pixel alone gives %.3f: too easy", best_pixel);
    dataset_free(&tr);
    dataset_free(&te);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ gather, truncate */

static int check_gather(void) {
    Dataset d;
    dataset_make_synthetic(20, 3, 8, 9, &d);
    int idx[4] = {5, 0, 19, 5}, labels[4];
    Tensor t = tensor_zeros(4, 4, 3, 8, 8);
    dataset_gather(&d, idx, 4, &t, labels);
    bool ok = true;
    for (int i = 0; ok && i < 4; i++) {
        ok = expect_close("gathered image", t.data + i * 192, d.images + idx[i] * 192, 192, 0, 0);
        ok = ok && expect_true(labels[i] == d.labels[idx[i]], "label %d is %d, expected %d", i,
                               labels[i], d.labels[idx[i]]);
    }
    dataset_truncate(&d, 0);
    ok = ok && expect_true(d.count == 20, "truncate(0) left %d of 20", d.count);
    dataset_truncate(&d, 50);
    ok = ok && expect_true(d.count == 20, "truncate(50) left %d of 20", d.count);
    dataset_truncate(&d, 3);
    ok = ok && expect_true(d.count == 3, "truncate(3) left %d", d.count);
    tensor_free(&t);
    dataset_free(&d);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A tensor of the wrong shape is a programmer error: exit status 2, both shapes named. */
static void body_gather_bad_shape(void *arg) {
    (void)arg;
    Dataset d;
    dataset_make_synthetic(10, 1, 28, 1, &d);
    int idx[2] = {0, 1};
    Tensor t = tensor_zeros(4, 2, 1, 28, 27);
    dataset_gather(&d, idx, 2, &t, NULL);
}
static int check_gather_bad_shape(void) {
    ChildResult o;
    run_child_stderr(body_gather_bad_shape, NULL, &o);
    return expect_exit("gather into a [2, 1, 28, 27] tensor for 28x28 images", &o, 2,
                       (const char *)NULL)
               ? CHECK_PASS
               : CHECK_FAIL;
}

/* ------------------------------------------------------------ the real Fashion-MNIST */

static int body_fashion_mnist(const char *dir) {
    if (access("/usr/share/datasets/fashion-mnist", R_OK) != 0) {
        printf("/usr/share/datasets/fashion-mnist is not installed (sudo make deps)\n");
        return CHECK_SKIP;
    }
#ifndef HAVE_ZLIB
    if (access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte", R_OK) != 0) {
        printf("built without zlib: the .gz files there cannot be read\n");
        return CHECK_SKIP;
    }
#endif
    unsetenv("DATA_DIR");
    if (chdir(dir) != 0) return CHECK_FAIL; /* no datasets/data here */
    Dataset tr, te;
    dataset_load("fashion-mnist", NULL, &tr, &te);
    double sum = 0;
    for (int64_t i = 0; i < (int64_t)tr.count * 784; i++) sum += tr.images[i];
    double mean = sum / ((double)tr.count * 784);
    bool ok = expect_true(tr.count == 60000 && te.count == 10000, "%d / %d examples",
                          tr.count, te.count);
    ok = ok && expect_true(tr.channels == 1 && tr.height == 28 && tr.width == 28 &&
                               te.height == 28 && te.width == 28,
                           "images %dx%dx%d", tr.channels, tr.height, tr.width);
    ok = ok && expect_true(tr.labels[0] == 9 && te.labels[0] == 9,
                           "first labels %d (train), %d (test); expected 9 (ankle boot)",
                           tr.labels[0], te.labels[0]);
    ok = ok && expect_true(fabs(mean - 0.2860) < 0.001, "mean pixel %.4f, expected 0.2860",
                           mean);
    ok = ok && expect_true(strstr(tr.source, "fashion-mnist") != NULL, "source %s", tr.source);
    dataset_free(&tr);
    dataset_free(&te);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_fashion_mnist(void) { return with_tmpdir("test_data", body_fashion_mnist); }

int main(void) {
    check_begin("data sets");
    check_run(NULL, "IDX: plain files read back exactly (pixel/255, labels, shape)", check_idx_plain, 30);
    check_run(NULL, "IDX: gzip files read back exactly", check_idx_gz, 30);
    check_run(NULL, "IDX: .gz without zlib says how to fix it", check_gz_without_zlib, 30);
    check_run(NULL, "IDX: truncated image file", check_truncated_images, 30);
    check_run(NULL, "IDX: truncated label file", check_truncated_labels, 30);
    check_run(NULL, "IDX: truncated gzip stream", check_truncated_gz, 30);
    check_run(NULL, "IDX: wrong magic numbers", check_wrong_magic, 30);
    check_run(NULL, "IDX: image and label counts differ", check_mismatched_counts, 30);
    check_run(NULL, "IDX: label out of range", check_label_range, 30);
    check_run(NULL, "IDX: nonsense sizes in the header", check_bad_header, 60);
    check_run(NULL, "IDX: data after the end is rejected", check_trailing_data, 30);
    check_run(NULL, "IDX: gzip with bytes after its stream is refused; two members are one",
              check_gz_trailing, 30);
    check_run(NULL, "CIFAR-10: batches read back exactly (R, G, B planes)", check_cifar_read, 30);
    check_run(NULL, "CIFAR-10: wrong size, bad label, missing file", check_cifar_errors, 30);
    check_run(NULL, "a FIFO or directory named like a data file is refused, not waited on",
              check_not_regular, 30);
    check_run(NULL, "IDX and CIFAR-10 parsed from memory; errors are messages",
              check_parse_memory, 30);
    check_run(NULL, "dataset_load: --data DIR (DIR/name/ and DIR/)", check_load_data_dir, 30);
    check_run(NULL, "dataset_load: $DATA_DIR, after --data", check_load_env, 30);
    check_run(NULL, "dataset_load: datasets/data in the current directory", check_load_cwd, 30);
    check_run(NULL, "dataset_load: cifar10 layouts", check_load_cifar, 30);
    check_run(NULL, "dataset_load: missing data set lists places and fixes", check_missing, 30);
    check_run(NULL, "dataset_load: unknown name lists valid names", check_unknown_name, 30);
    check_run(NULL, "synthetic: same seed, same bytes", check_synthetic_deterministic, 30);
    check_run(NULL, "synthetic: sizes, values in [0, 1], all classes", check_synthetic_valid, 60);
    check_run(NULL, "synthetic: learnable, not given away by one pixel", check_synthetic_learnable, 60);
    check_run(NULL, "gather copies the chosen examples; truncate", check_gather, 30);
    check_run(NULL, "gather into a wrongly shaped tensor stops", check_gather_bad_shape, 30);
    check_run(NULL, "Fashion-MNIST from /usr/share/datasets", check_fashion_mnist, 120);
    return check_end();
}
