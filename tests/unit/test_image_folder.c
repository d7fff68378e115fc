/* Unit tests of the image-folder data set (lib/data/image_folder.c): small PNG, BMP and
 * TGA files written here with stb_image_write into ROOT/train/<class>/ and
 * ROOT/test/<class>/ under a temporary directory, then read back: counts, labels by
 * sorted class name, file order, exact pixels (byte / 255), the [C, H, W] order of
 * colour images, and the channel rules. Every error (mismatched sizes, a corrupt file,
 * no test/, different class folders, no --data, ...) is checked in a child process:
 * exit status 1 and a message naming the path and the problem.
 *
 * Built without stb_image (no libstb-dev), every check skips except the one that the
 * loader then says how to get it. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef HAVE_STB
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#endif

#include "core/fs.h"
#include "data/dataset.h"
#include "framework/check.h"
#include "fuzz/seed.h"

#define SIDE 20

/* ------------------------------------------------------------ running a loader that must fail */

/* What a loader is called with; job_run calls it in a child (run_child_stderr), which
 * exits 0 if the loader returns. */
typedef struct {
    const char *name, *dir; /* dataset_load(name, dir) */
    const char *root;       /* or dataset_load_image_folder(root, options) */
    const DatasetOptions *options;
    const char *env;        /* $DATA_DIR (NULL: unset) */
} Job;

static void job_run(void *arg) {
    const Job *job = arg;
    Dataset a, b;
    if (job->env) setenv("DATA_DIR", job->env, 1);
    else unsetenv("DATA_DIR");
    if (job->name) dataset_load(job->name, job->dir, &a, &b);
    else dataset_load_image_folder(job->root, job->options, &a, &b);
}

#ifdef HAVE_STB

/* ------------------------------------------------------------ writing images */

/* The pixel bytes of image `i` of class `k`: a pattern that differs by class, image,
 * channel and position, with 0 and 255 in it. Interleaved [H, W, C], as files store. */
static void pattern(uint8_t *px, int w, int h, int comp, int k, int i) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < comp; c++)
                px[(y * w + x) * comp + c] =
                    (uint8_t)((k * 61 + i * 17 + c * 101 + y * 13 + x * 7) % 256);
    px[0] = 0;
    px[comp] = 255;
}

/* Writes dir/sub/name (format by extension) with the pattern of (k, i). */
static bool write_image(const char *dir, const char *sub, const char *name, int w, int h,
                        int comp, int k, int i) {
    char folder[1024], path[1024];
    path_in(folder, sizeof folder, dir, sub);
    path_in(path, sizeof path, folder, name);
    uint8_t *px = malloc((size_t)w * h * comp);
    pattern(px, w, h, comp, k, i);
    const char *ext = strrchr(name, '.');
    int r = 0;
    if (ext && strcasecmp(ext, ".bmp") == 0) r = stbi_write_bmp(path, w, h, comp, px);
    else if (ext && strcasecmp(ext, ".tga") == 0) r = stbi_write_tga(path, w, h, comp, px);
    else r = stbi_write_png(path, w, h, comp, px, w * comp);
    free(px);
    fuzz_seed_save_file("image", path);
    return expect_true(r != 0, "stb_image_write could not write %s", path);
}

static bool write_bytes(const char *dir, const char *name, const void *bytes, size_t len) {
    char path[1024];
    path_in(path, sizeof path, dir, name);
    fuzz_seed_save("image", bytes, len);
    FILE *f = fopen(path, "wb");
    if (!f) return expect_true(false, "cannot write %s: %s", path, strerror(errno));
    bool ok = fwrite(bytes, 1, len, f) == len;
    return expect_true(fclose(f) == 0 && ok, "cannot write %s", path);
}

/* ROOT/train and ROOT/test with the classes named in `classes` (NULL-terminated), each
 * with n_train / n_test 20x20 PNG images of `comp` channels, named img0.png, img1.png... */
static bool write_split(const char *root, const char *split, const char *const *classes,
                        int n, int comp) {
    bool ok = true;
    for (int k = 0; ok && classes[k]; k++) {
        char sub[256], name[64];
        snprintf(sub, sizeof sub, "%s/%s", split, classes[k]);
        make_dirs(root, sub);
        for (int i = 0; ok && i < n; i++) {
            snprintf(name, sizeof name, "img%d.png", i);
            ok = write_image(root, sub, name, SIDE, SIDE, comp, k, i);
        }
    }
    return ok;
}

/* Image `at` of d must hold the pattern (k, i) of a file of comp_in_file channels,
 * read as d->channels channels ([C, H, W], byte / 255). */
static bool expect_image(const Dataset *d, int at, int k, int i, int comp_in_file) {
    int c = d->channels, plane = d->height * d->width;
    uint8_t *px = malloc((size_t)plane * comp_in_file);
    float *want = malloc((size_t)plane * c * sizeof(float));
    pattern(px, d->width, d->height, comp_in_file, k, i);
    for (int ch = 0; ch < c; ch++)
        for (int p = 0; p < plane; p++)
            want[ch * plane + p] = px[p * comp_in_file + ch] / 255.0f; /* first c channels */
    char what[64];
    snprintf(what, sizeof what, "image %d (class %d, file %d)", at, k, i);
    bool ok = expect_close(what, d->images + (size_t)at * c * plane, want, (int64_t)c * plane,
                           0, 0);
    free(px);
    free(want);
    return ok;
}

static bool expect_shape(const Dataset *d, int count, int channels, int classes) {
    return expect_true(d->count == count && d->channels == channels && d->height == SIDE &&
                           d->width == SIDE && d->num_classes == classes,
                       "got %d images of %dx%dx%d, %d classes; expected %d of %dx%dx%d, %d",
                       d->count, d->channels, d->height, d->width, d->num_classes, count,
                       channels, SIDE, SIDE, classes);
}

/* ------------------------------------------------------------ reading */

/* Three classes, created out of order; files of several formats and names; things to
 * ignore (hidden files, other extensions, a folder inside a class, a hidden class). */
static int body_grey(const char *dir) {
    static const char *const train_names[3][4] = {
        {"b.png", "a.PNG", "c.bmp", NULL}, /* class "bird": a, b, c in name order */
        {"x.tga", "10.png", "9.png", NULL},  /* "cat": 10, 9, x (strcmp order) */
        {"only.png", NULL, NULL, NULL},      /* "dog" */
    };
    static const char *const classes[3] = {"bird", "cat", "dog"};
    static const int create_order[3] = {2, 0, 1};
    bool ok = true;
    for (int j = 0; ok && j < 3; j++) {
        int k = create_order[j];
        char sub[64];
        snprintf(sub, sizeof sub, "train/%s", classes[k]);
        make_dirs(dir, sub);
        for (int i = 0; ok && train_names[k][i]; i++)
            ok = write_image(dir, sub, train_names[k][i], SIDE, SIDE, 1, k, i);
        snprintf(sub, sizeof sub, "test/%s", classes[k]);
        make_dirs(dir, sub);
        ok = ok && write_image(dir, sub, "t.png", SIDE, SIDE, 1, k, 7);
    }
    /* ignored: a hidden file of another size, text, an image folder inside a class,
     * hidden class folders, a loose file in train/ */
    make_dirs(dir, "train/cat/nested");
    make_dirs(dir, "train/.cache");
    make_dirs(dir, "test/.cache");
    ok = ok && write_image(dir, "train/bird", ".hidden.png", 7, 9, 3, 0, 0);
    ok = ok && write_image(dir, "train/cat/nested", "deep.png", 7, 9, 1, 0, 0);
    ok = ok && write_image(dir, "train/.cache", "z.png", 7, 9, 1, 0, 0);
    char bird[512];
    path_in(bird, sizeof bird, dir, "train/bird");
    ok = ok && write_bytes(bird, "notes.txt", "not an image", 12);
    ok = ok && write_bytes(bird, "README", "x", 1);
    ok = ok && write_bytes(bird, "image.png.bak", "x", 1);
    if (!ok) return CHECK_FAIL;

    Dataset tr, te;
    dataset_load_image_folder(dir, NULL, &tr, &te);
    ok = expect_shape(&tr, 7, 1, 3) && expect_shape(&te, 3, 1, 3);
    ok = ok && expect_true(strcmp(tr.name, "folder") == 0 && strcmp(te.name, "folder") == 0 &&
                               strcmp(tr.source, dir) == 0,
                           "name \"%s\", source \"%s\"; expected \"folder\", \"%s\"", tr.name,
                           tr.source, dir);
    /* (class, index of the file in train_names) in data set order */
    static const int want[7][2] = {{0, 1}, {0, 0}, {0, 2}, {1, 1}, {1, 2}, {1, 0}, {2, 0}};
    for (int j = 0; ok && j < 7; j++) {
        ok = expect_true(tr.labels[j] == want[j][0], "train label %d is %d, expected %d", j,
                         tr.labels[j], want[j][0]);
        ok = ok && expect_image(&tr, j, want[j][0], want[j][1], 1);
    }
    for (int k = 0; ok && k < 3; k++) {
        ok = expect_true(te.labels[k] == k, "test label %d is %d, expected %d", k, te.labels[k],
                         k);
        ok = ok && expect_image(&te, k, k, 7, 1);
    }
    ok = ok && expect_true(tr.images[0] == 0.0f && tr.images[1] == 1.0f,
                           "byte 0 -> %g, 255 -> %g; expected 0 and 1", tr.images[0],
                           tr.images[1]);
    dataset_free(&tr);
    dataset_free(&te);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_grey(void) { return with_tmpdir("test_image_folder", body_grey); }

/* RGB files: 3 channels, planar [C, H, W]; RGBA in the same set reads as RGB. */
static int body_colour(const char *dir) {
    static const char *const classes[] = {"apple", "banana", NULL};
    bool ok = write_split(dir, "train", classes, 3, 3) && write_split(dir, "test", classes, 2, 3);
    ok = ok && write_image(dir, "test/banana", "z_rgba.png", SIDE, SIDE, 4, 1, 5);
    if (!ok) return CHECK_FAIL;
    Dataset tr, te;
    dataset_load_image_folder(dir, NULL, &tr, &te);
    ok = expect_shape(&tr, 6, 3, 2) && expect_shape(&te, 5, 3, 2);
    for (int j = 0; ok && j < 6; j++)
        ok = expect_image(&tr, j, j / 3, j % 3, 3) &&
             expect_true(tr.labels[j] == j / 3, "label %d is %d", j, tr.labels[j]);
    ok = ok && expect_image(&te, 4, 1, 5, 4); /* alpha dropped */
    /* planar by hand: pixel (y=2, x=3) of image 0, each channel */
    const uint8_t want_r = (uint8_t)((0 + 0 + 0 + 26 + 21) % 256);
    const uint8_t want_g = (uint8_t)((0 + 0 + 101 + 26 + 21) % 256);
    const uint8_t want_b = (uint8_t)((0 + 0 + 202 + 26 + 21) % 256);
    const float *img = tr.images;
    int at = 2 * SIDE + 3, plane = SIDE * SIDE;
    ok = ok && expect_true(img[at] == want_r / 255.0f && img[plane + at] == want_g / 255.0f &&
                               img[2 * plane + at] == want_b / 255.0f,
                           "pixel (2, 3) reads %g %g %g, expected %g %g %g", img[at],
                           img[plane + at], img[2 * plane + at], want_r / 255.0f,
                           want_g / 255.0f, want_b / 255.0f);
    dataset_free(&tr);
    dataset_free(&te);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_colour(void) { return with_tmpdir("test_image_folder", body_colour); }

/* Grey + alpha first: 1 channel (alpha dropped); RGBA first: 3; later images follow. */
static int body_channel_rules(const char *dir) {
    char a[512], b[512];
    make_dir_in(a, sizeof a, dir, "ga");
    make_dir_in(b, sizeof b, dir, "rgba");
    static const char *const classes[] = {"one", "two", NULL};
    bool ok = write_split(a, "train", classes, 2, 2) && write_split(a, "test", classes, 1, 2) &&
              write_split(b, "train", classes, 2, 4) && write_split(b, "test", classes, 1, 4);
    /* a colour image in the grey set and a grey one in the colour set */
    ok = ok && write_image(a, "train/two", "z.png", SIDE, SIDE, 3, 1, 9);
    ok = ok && write_image(b, "train/two", "z.png", SIDE, SIDE, 1, 1, 9);
    if (!ok) return CHECK_FAIL;
    Dataset tr, te;
    dataset_load_image_folder(a, NULL, &tr, &te);
    ok = expect_shape(&tr, 5, 1, 2) && expect_shape(&te, 2, 1, 2);
    ok = ok && expect_image(&tr, 0, 0, 0, 2) && expect_image(&te, 1, 1, 0, 2);
    float lo = 1, hi = 0; /* the colour image became grey: values still in [0, 1] */
    for (int p = 0; p < SIDE * SIDE; p++) {
        float v = tr.images[4 * SIDE * SIDE + p];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    ok = ok && expect_true(lo >= 0 && hi <= 1 && hi > lo, "converted image spans %g..%g", lo, hi);
    dataset_free(&tr);
    dataset_free(&te);
    dataset_load_image_folder(b, NULL, &tr, &te);
    ok = ok && expect_shape(&tr, 5, 3, 2) && expect_shape(&te, 2, 3, 2);
    ok = ok && expect_image(&tr, 1, 0, 1, 4) && expect_image(&te, 0, 0, 0, 4);
    /* grey in a colour set: the grey value in all three planes */
    const float *g = tr.images + (size_t)4 * 3 * SIDE * SIDE;
    for (int p = 0; ok && p < SIDE * SIDE; p++)
        ok = expect_true(g[p] == g[SIDE * SIDE + p] && g[p] == g[2 * SIDE * SIDE + p],
                         "grey image in a colour set: pixel %d is %g %g %g", p, g[p],
                         g[SIDE * SIDE + p], g[2 * SIDE * SIDE + p]);
    dataset_free(&tr);
    dataset_free(&te);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_channel_rules(void) {
    return with_tmpdir("test_image_folder", body_channel_rules);
}

/* dataset_load("folder", ...): --data, then $DATA_DIR. */
static int body_dataset_load(const char *dir) {
    char a[512], b[512];
    make_dir_in(a, sizeof a, dir, "a");
    make_dir_in(b, sizeof b, dir, "b");
    static const char *const classes[] = {"c0", "c1", "c2", NULL};
    bool ok = write_split(a, "train", classes, 2, 1) && write_split(a, "test", classes, 1, 1) &&
              write_split(b, "train", classes, 3, 1) && write_split(b, "test", classes, 2, 1);
    if (!ok) return CHECK_FAIL;
    Dataset tr, te;
    setenv("DATA_DIR", b, 1);
    dataset_load("folder", a, &tr, &te); /* --data first */
    ok = expect_shape(&tr, 6, 1, 3) && expect_shape(&te, 3, 1, 3);
    ok = ok && expect_true(strcmp(tr.name, "folder") == 0 && strcmp(tr.source, a) == 0,
                           "name %s, source %s", tr.name, tr.source);
    dataset_free(&tr);
    dataset_free(&te);
    dataset_load("folder", NULL, &tr, &te);
    ok = ok && expect_shape(&tr, 9, 1, 3) && expect_shape(&te, 6, 1, 3);
    ok = ok && expect_true(strcmp(tr.source, b) == 0, "source %s, expected %s", tr.source, b);
    dataset_free(&tr);
    dataset_free(&te);
    char slash[520];
    snprintf(slash, sizeof slash, "%s/", a); /* a trailing slash is the same folder */
    dataset_load("folder", slash, &tr, &te);
    ok = ok && expect_shape(&tr, 6, 1, 3);
    dataset_free(&tr);
    dataset_free(&te);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_dataset_load(void) { return with_tmpdir("test_image_folder", body_dataset_load); }

/* PGM (P5) or PPM (P6, grey in all three) of the pattern (k, i), written by hand. */
static bool write_pnm(const char *dir, const char *sub, const char *name, int k, int i) {
    char folder[1024], path[1024];
    path_in(folder, sizeof folder, dir, sub);
    path_in(path, sizeof path, folder, name);
    bool colour = strcasestr(name, ".ppm") != NULL;
    uint8_t px[SIDE * SIDE];
    pattern(px, SIDE, SIDE, 1, k, i);
    FILE *f = fopen(path, "wb");
    if (!f) return expect_true(false, "cannot write %s", path);
    fprintf(f, "%s\n# a comment\n%d %d\n255\n", colour ? "P6" : "P5", SIDE, SIDE);
    for (int p = 0; p < SIDE * SIDE; p++)
        for (int c = 0; c < (colour ? 3 : 1); c++) fputc(px[p], f);
    bool ok = expect_true(fclose(f) == 0, "cannot write %s", path);
    fuzz_seed_save_file("image", path);
    return ok;
}

/* A GIF of the pattern (k, i) rounded down to even values (a 128-grey palette), with
 * "uncompressed" LZW: 8-bit codes, a clear code every 100 pixels so the width stays 8. */
static bool write_gif(const char *dir, const char *sub, const char *name, int k, int i) {
    char folder[1024], path[1024];
    path_in(folder, sizeof folder, dir, sub);
    path_in(path, sizeof path, folder, name);
    uint8_t px[SIDE * SIDE], codes[SIDE * SIDE + SIDE * SIDE / 100 + 8];
    pattern(px, SIDE, SIDE, 1, k, i);
    int n = 0;
    for (int p = 0; p < SIDE * SIDE; p++) {
        if (p % 100 == 0) codes[n++] = 128; /* clear */
        codes[n++] = px[p] / 2;
    }
    codes[n++] = 129; /* end of information */
    FILE *f = fopen(path, "wb");
    if (!f) return expect_true(false, "cannot write %s", path);
    const uint8_t head[13] = {'G', 'I', 'F', '8', '9', 'a', SIDE, 0, SIDE, 0, 0xF6, 0, 0};
    fwrite(head, 1, sizeof head, f);
    for (int c = 0; c < 128; c++)
        for (int j = 0; j < 3; j++) fputc(2 * c, f);
    const uint8_t image[11] = {0x2C, 0, 0, 0, 0, SIDE, 0, SIDE, 0, 0, 7};
    fwrite(image, 1, sizeof image, f);
    for (int at = 0; at < n; at += 255) {
        int len = n - at < 255 ? n - at : 255;
        fputc(len, f);
        fwrite(codes + at, 1, (size_t)len, f);
    }
    fputc(0, f);
    fputc(0x3B, f);
    bool ok = expect_true(fclose(f) == 0, "cannot write %s", path);
    fuzz_seed_save_file("image", path);
    return ok;
}

/* A bit writer for JPEG scan data: most significant bit first, 0xFF stuffed with 0. */
typedef struct {
    uint8_t *out;
    size_t n;
    unsigned acc;
    int bits;
} BitWriter;

static void put_bits(BitWriter *w, unsigned value, int count) {
    for (int i = count - 1; i >= 0; i--) {
        w->acc = w->acc << 1 | ((value >> i) & 1);
        if (++w->bits == 8) {
            w->out[w->n++] = (uint8_t)w->acc;
            if (w->acc == 0xFF) w->out[w->n++] = 0;
            w->acc = 0;
            w->bits = 0;
        }
    }
}

/* A baseline JPEG of one grey value (not 128), written by hand (stb_image_write's JPEG
 * writer is not clean under UBSan): one component, quantisation steps of 1, DC only. A
 * flat 8x8 block has DC = 8 (value - 128); the first block codes it, the others a
 * difference of 0; each block ends with an end-of-block code. */
static bool write_jpeg(const char *dir, const char *sub, const char *name, int value) {
    char folder[1024], path[1024];
    path_in(folder, sizeof folder, dir, sub);
    path_in(path, sizeof path, folder, name);
    int dc = 8 * (value - 128), cat = 0;
    for (int a = dc < 0 ? -dc : dc; a; a >>= 1) cat++;
    unsigned extra = (unsigned)(dc >= 0 ? dc : dc + (1 << cat) - 1);
    uint8_t out[1024];
    size_t n = 0;
    static const uint8_t soi_dqt[] = {0xFF, 0xD8, 0xFF, 0xDB, 0x00, 0x43, 0x00};
    memcpy(out + n, soi_dqt, sizeof soi_dqt), n += sizeof soi_dqt;
    memset(out + n, 1, 64), n += 64;
    const uint8_t sof_dht[] = {
        0xFF, 0xC0, 0x00, 0x0B, 8, 0, SIDE, 0, SIDE, 1, 1, 0x11, 0,  /* SOF0: 1 component */
        0xFF, 0xC4, 0x00, 0x15, 0x00, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, (uint8_t)cat,                                              /* DC: "0" 0, "10" cat */
        0xFF, 0xC4, 0x00, 0x14, 0x10, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0x00,                                                         /* AC: "0" end of block */
        0xFF, 0xDA, 0x00, 0x08, 1, 1, 0x00, 0, 63, 0};                /* SOS */
    memcpy(out + n, sof_dht, sizeof sof_dht), n += sizeof sof_dht;
    BitWriter w = {out + n, 0, 0, 0};
    int blocks = ((SIDE + 7) / 8) * ((SIDE + 7) / 8);
    for (int b = 0; b < blocks; b++) {
        if (b == 0) put_bits(&w, 2, 2), put_bits(&w, extra, cat);
        else put_bits(&w, 0, 1);
        put_bits(&w, 0, 1);
    }
    if (w.bits) put_bits(&w, 0xFF, 8 - w.bits); /* pad with ones */
    n += w.n;
    out[n++] = 0xFF, out[n++] = 0xD9;
    return write_bytes(folder, name, out, n);
}

/* Puts an APP1 segment holding the bytes of an oversized Huffman table (as EXIF data
 * might) after the JPEG's SOI: not a table, so the image must still load. */
static bool insert_app_segment(const char *dir, const char *name) {
    static const uint8_t app[] = {0xFF, 0xE1, 0x00, 0x19, 0xFF, 0xC4, 0x10, 0x03, 0x00,
                                  255,  255,  255,  255,  255,  255,  255,  255,
                                  255,  255,  255,  255,  255,  255,  255,  255, 0, 0};
    char path[1024], msg[FS_MSG_MAX];
    path_in(path, sizeof path, dir, name);
    uint8_t *buf;
    size_t n;
    if (fs_read_file(path, 65536, &buf, &n, msg, sizeof msg) != 0)
        return expect_true(false, "%s", msg);
    if (n < 4 || buf[0] != 0xFF || buf[1] != 0xD8) {
        free(buf);
        return expect_true(false, "%s is not the small JPEG expected", path);
    }
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(buf, 1, 2, f) == 2 && fwrite(app, 1, sizeof app, f) == sizeof app &&
              fwrite(buf + 2, 1, n - 2, f) == n - 2;
    free(buf);
    return expect_true(f && fclose(f) == 0 && ok, "cannot rewrite %s", path);
}

static bool expect_flat(const Dataset *d, int at, int value, float tol) {
    int plane = d->height * d->width;
    float want[SIDE * SIDE];
    for (int p = 0; p < plane; p++) want[p] = value / 255.0f;
    char what[64];
    snprintf(what, sizeof what, "JPEG image %d", at);
    return expect_close(what, d->images + (size_t)at * plane, want, plane, tol, 0);
}

/* PGM, PPM (read as grey), GIF exactly; JPEG within 1 level; any case of extension. */
static int body_formats(const char *dir) {
    make_dirs(dir, "train/a");
    make_dirs(dir, "train/b");
    make_dirs(dir, "test/a");
    make_dirs(dir, "test/b");
    bool ok = write_pnm(dir, "train/a", "p.pgm", 0, 0) && write_pnm(dir, "train/a", "q.PPM", 0, 1);
    ok = ok && write_jpeg(dir, "train/b", "j.jpg", 150) && write_gif(dir, "train/b", "k.gif", 1, 0);
    ok = ok && write_jpeg(dir, "test/a", "t.JPEG", 60) && write_gif(dir, "test/b", "u.GIF", 1, 3);
    ok = ok && insert_app_segment(dir, "train/b/j.jpg");
    if (!ok) return CHECK_FAIL;
    Dataset tr, te;
    dataset_load_image_folder(dir, NULL, &tr, &te);
    ok = expect_shape(&tr, 4, 1, 2) && expect_shape(&te, 2, 1, 2);
    ok = ok && expect_image(&tr, 0, 0, 0, 1) && expect_image(&tr, 1, 0, 1, 1);
    ok = ok && expect_flat(&tr, 2, 150, 1 / 255.0f) && expect_flat(&te, 0, 60, 1 / 255.0f);
    uint8_t px[SIDE * SIDE];
    float want[SIDE * SIDE];
    pattern(px, SIDE, SIDE, 1, 1, 0);
    for (int p = 0; p < SIDE * SIDE; p++) want[p] = (px[p] / 2 * 2) / 255.0f;
    ok = ok && expect_close("GIF image", tr.images + 3 * SIDE * SIDE, want, SIDE * SIDE, 0, 0);
    ok = ok && expect_true(tr.labels[2] == 1 && tr.labels[3] == 1 && te.labels[1] == 1,
                           "labels %d %d %d", tr.labels[2], tr.labels[3], te.labels[1]);
    dataset_free(&tr);
    dataset_free(&te);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_formats(void) { return with_tmpdir("test_image_folder", body_formats); }

/* ------------------------------------------------------------ errors */

static bool expect_folder_errorv(const char *root, const DatasetOptions *options, va_list ap) {
    Job job = {.root = root, .options = options};
    ChildResult o;
    run_child_stderr(job_run, &job, &o);
    bool ok = expect_true(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 1,
                          "loading %s: %s %d, expected exit status 1", root,
                          WIFSIGNALED(o.status) ? "signal" : "exit status",
                          WIFSIGNALED(o.status) ? WTERMSIG(o.status) : WEXITSTATUS(o.status));
    ok = ok && expect_true(strncmp(o.out, "error: ", 7) == 0, "the message does not start "
                                                              "with \"error: \"");
    for (const char *want; ok && (want = va_arg(ap, const char *));)
        ok = expect_true(strstr(o.out, want) != NULL, "the message lacks \"%s\"", want);
    if (!ok) printf("its stderr was:\n%s\n", o.out);
    return ok;
}

/* Loading root must stop with exit status 1 and a message holding each string given. */
static bool expect_folder_error(const char *root, ...) {
    va_list ap;
    va_start(ap, root);
    bool ok = expect_folder_errorv(root, NULL, ap);
    va_end(ap);
    return ok;
}

/* The same with options (a pixel limit). */
static bool expect_folder_error_with(const char *root, const DatasetOptions *options, ...) {
    va_list ap;
    va_start(ap, options);
    bool ok = expect_folder_errorv(root, options, ap);
    va_end(ap);
    return ok;
}

static int body_mismatched_sizes(const char *dir) {
    static const char *const classes[] = {"a", "b", NULL};
    bool ok = write_split(dir, "train", classes, 2, 1) && write_split(dir, "test", classes, 1, 1);
    ok = ok && write_image(dir, "train/b", "img1x.png", 24, 18, 1, 0, 0); /* after img1 */
    ok = ok && write_image(dir, "train/b", "img2.png", 30, 30, 1, 0, 0);  /* a later one */
    char bad[512], first[512];
    path_in(bad, sizeof bad, dir, "train/b/img1x.png");
    path_in(first, sizeof first, dir, "train/a/img0.png");
    ok = ok && expect_folder_error(dir, bad, first, "24x18", "20x20",
                                   "resize your images to one size first", (const char *)NULL);
    /* in the test set too */
    path_in(bad, sizeof bad, dir, "train/b/img1x.png");
    ok = ok && remove(bad) == 0;
    path_in(bad, sizeof bad, dir, "train/b/img2.png");
    ok = ok && remove(bad) == 0;
    ok = ok && write_image(dir, "test/a", "small.png", 16, 16, 1, 0, 0);
    path_in(bad, sizeof bad, dir, "test/a/small.png");
    ok = ok && expect_folder_error(dir, bad, "16x16", "20x20", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_mismatched_sizes(void) {
    return with_tmpdir("test_image_folder", body_mismatched_sizes);
}

static int body_corrupt(const char *dir) {
    static const char *const classes[] = {"a", "b", NULL};
    bool ok = write_split(dir, "train", classes, 3, 1) && write_split(dir, "test", classes, 1, 1);
    uint8_t junk[500];
    uint64_t s = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        junk[i] = (uint8_t)(s >> 56);
    }
    char folder[512], bad[512];
    path_in(folder, sizeof folder, dir, "train/b");
    path_in(bad, sizeof bad, folder, "img1.png");
    ok = ok && write_bytes(folder, "img1.png", junk, sizeof junk);
    ok = ok && expect_folder_error(dir, bad, "cannot read the image", "stb_image",
                                   "corrupt", (const char *)NULL);
    /* a real PNG cut in half */
    ok = ok && write_image(dir, "train/b", "img1.png", SIDE, SIDE, 1, 0, 0);
    struct stat st;
    ok = ok && stat(bad, &st) == 0 && truncate(bad, st.st_size / 2) == 0;
    ok = ok && expect_folder_error(dir, bad, "cannot read the image", (const char *)NULL);
    /* the very first image (its size is read first) */
    path_in(bad, sizeof bad, dir, "train/a/img0.png");
    ok = ok && truncate(bad, 10) == 0;
    ok = ok && expect_folder_error(dir, bad, "cannot read the image", (const char *)NULL);
    /* an empty file */
    ok = ok && truncate(bad, 0) == 0;
    ok = ok && expect_folder_error(dir, bad, "cannot read the image", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_corrupt(void) { return with_tmpdir("test_image_folder", body_corrupt); }

/* A JPEG whose Huffman table claims 16 x 255 codes: stb_image 2.27 would write past its
 * tables (nothings/stb#1289), so the loader refuses it first: as a later image, as the
 * first one (whose size is read first), and with the table after the first scan. */
static int body_bad_jpeg(const char *dir) {
    static const char *const classes[] = {"a", "b", NULL};
    bool ok = write_split(dir, "train", classes, 2, 1) && write_split(dir, "test", classes, 1, 1);
    uint8_t bytes[64] = {0xFF, 0xD8, 0xFF, 0xC4, 0x10, 0x03, 0x00};
    for (int i = 7; i < 23; i++) bytes[i] = 255;
    char folder[512], bad[512];
    path_in(folder, sizeof folder, dir, "train/b");
    path_in(bad, sizeof bad, folder, "img1.jpg");
    ok = ok && write_bytes(folder, "img1.jpg", bytes, 23);
    ok = ok && expect_folder_error(dir, bad, "corrupt JPEG", "Huffman", (const char *)NULL);
    ok = ok && remove(bad) == 0;
    path_in(folder, sizeof folder, dir, "train/a");
    path_in(bad, sizeof bad, folder, "0.jpg");
    ok = ok && write_bytes(folder, "0.jpg", bytes, 23);
    ok = ok && expect_folder_error(dir, bad, "corrupt JPEG", "Huffman", (const char *)NULL);
    /* SOI, APP0 holding a fake table (not read: fine), SOS, scan bytes, then the table */
    static const uint8_t later[] = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x08, 0xFF, 0xC4, 0x10, 0x03,
                                    0x00, 0xFF, 0xFF, 0xDA, 0x00, 0x02, 0x12, 0x34, 0xFF, 0x00,
                                    0xFF, 0xC4, 0x10, 0x03, 0x01};
    memcpy(bytes, later, sizeof later);
    for (int i = 0; i < 16; i++) bytes[sizeof later + i] = 255;
    ok = ok && write_bytes(folder, "0.jpg", bytes, sizeof later + 16);
    ok = ok && expect_folder_error(dir, bad, "corrupt JPEG", "Huffman", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_bad_jpeg(void) { return with_tmpdir("test_image_folder", body_bad_jpeg); }

/* ------------------------------------------------------------ declared sizes and limits
 * stb_image 2.27 decodes TGA, BMP and PNM files whose pixels are missing without an error
 * (zeros, or memory never written), and allocates whatever a header declares. */

static void put_le16(uint8_t *p, unsigned v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put_le32(uint8_t *p, uint32_t v) { put_le16(p, v & 0xFFFF), put_le16(p + 2, v >> 16); }
static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* A TGA header: type 2 (colour), 3 (grey), 11 (grey, run-length encoded); top row first. */
static void tga_header(uint8_t *h, int type, int w, int height, int bits) {
    memset(h, 0, 18);
    h[2] = (uint8_t)type;
    put_le16(h + 12, (unsigned)w);
    put_le16(h + 14, (unsigned)height);
    h[16] = (uint8_t)bits;
    h[17] = 0x20;
}

/* A 40-byte-header BMP's first 54 bytes; offset: where its pixels are said to start. */
static void bmp_header(uint8_t *h, int w, int height, int bits, uint32_t offset) {
    memset(h, 0, 54);
    h[0] = 'B', h[1] = 'M';
    put_le32(h + 10, offset);
    put_le32(h + 14, 40);
    put_le32(h + 18, (uint32_t)w);
    put_le32(h + 22, (uint32_t)height);
    put_le16(h + 26, 1);
    put_le16(h + 28, (unsigned)bits);
}

/* A fresh image folder under dir/name with two classes of 20x20 PNGs; root = its path. */
static bool fresh_set(const char *dir, const char *name, char *root, size_t cap) {
    static const char *const classes[] = {"a", "b", NULL};
    make_dir_in(root, cap, dir, name);
    return write_split(root, "train", classes, 2, 1) && write_split(root, "test", classes, 1, 1);
}

/* bytes as the first training image (train/a/0<ext>: its size is read first) and then as
 * a later test image (test/b/z<ext>): refused both times, naming it, with each word. */
static bool expect_refused(const char *dir, const char *name, const char *ext,
                           const uint8_t *bytes, size_t len, const char *word1,
                           const char *word2) {
    char root[512], folder[512], file[64], path[600];
    bool ok = fresh_set(dir, name, root, sizeof root);
    snprintf(file, sizeof file, "0%s", ext);
    path_in(folder, sizeof folder, root, "train/a");
    path_in(path, sizeof path, folder, file);
    ok = ok && write_bytes(folder, file, bytes, len);
    ok = ok && expect_folder_error(root, path, word1, word2, (const char *)NULL);
    ok = ok && remove(path) == 0;
    snprintf(file, sizeof file, "z%s", ext);
    path_in(folder, sizeof folder, root, "test/b");
    path_in(path, sizeof path, folder, file);
    ok = ok && write_bytes(folder, file, bytes, len);
    ok = ok && expect_folder_error(root, path, word1, word2, (const char *)NULL);
    if (!ok) printf("(%s)\n", name);
    return ok;
}

/* Headers without their pixels, of the size of the other images, which stb_image would
 * decode as zeros or leave unwritten: refused as too short for what they declare. */
static int body_short_files(const char *dir) {
    uint8_t b[2048];
    /* TGA: the 18-byte header alone, colour and grey */
    tga_header(b, 2, SIDE, SIDE, 24);
    bool ok = expect_refused(dir, "tga", ".tga", b, 18, "too short", "TGA");
    tga_header(b, 3, SIDE, SIDE, 8);
    memset(b + 18, 7, SIDE * SIDE - 1); /* one pixel short */
    ok = ok && expect_refused(dir, "tga_grey", ".tga", b, 18 + SIDE * SIDE - 1, "too short",
                              "needs at least 418 bytes");
    /* BMP: a 54-byte header alone; pixels said to start inside the header */
    bmp_header(b, SIDE, SIDE, 24, 54);
    ok = ok && expect_refused(dir, "bmp", ".bmp", b, 54, "too short", "BMP");
    bmp_header(b, SIDE, SIDE, 8, 50);
    memset(b + 54, 1, SIDE * SIDE);
    ok = ok && expect_refused(dir, "bmp_offset", ".bmp", b, 54 + SIDE * SIDE, "corrupt BMP",
                              "before the end of its header");
    /* PNM: one sample short; a size that would overflow stb_image's int */
    int n = snprintf((char *)b, sizeof b, "P5\n%d %d\n255\n", SIDE, SIDE);
    memset(b + n, 9, SIDE * SIDE);
    ok = ok && expect_refused(dir, "pgm", ".pgm", b, (size_t)n + SIDE * SIDE - 1, "too short",
                              "PNM");
    n = snprintf((char *)b, sizeof b, "P6\n99999999999 20\n255\n");
    ok = ok && expect_refused(dir, "ppm_big", ".ppm", b, (size_t)n + 64, "corrupt PNM",
                              "too large");
    /* PNG: 96 bytes that declare 55304x255 grey (14 MB of pixels need 13.7 kB of IDAT) */
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    memset(b, 0, 96);
    memcpy(b, sig, 8);
    put_be32(b + 8, 13);
    memcpy(b + 12, "IHDR", 4);
    put_be32(b + 16, 55304);
    put_be32(b + 20, 255);
    b[24] = 8;
    put_be32(b + 33, 39);
    memcpy(b + 37, "IDAT", 4);
    memcpy(b + 88, "IEND", 4);
    ok = ok && expect_refused(dir, "png", ".png", b, 96, "too short", "IDAT");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_short_files(void) { return with_tmpdir("test_image_folder", body_short_files); }

/* What is at least that long still loads: a run-length encoded TGA of four 100-pixel runs
 * (8 bytes of pixel data: the least 400 pixels can take); one byte less is refused, and
 * so is a JPEG that declares more 8x8 blocks than it has bits. (The refusals first: a
 * child forked after this process ran OpenMP threads could hang.) */
static int body_short_but_complete(const char *dir) {
    char root[512], folder[512], path[600];
    bool ok = fresh_set(dir, "rle", root, sizeof root);
    uint8_t b[64];
    tga_header(b, 11, SIDE, SIDE, 8);
    for (int k = 0; k < 4; k++) b[18 + 2 * k] = 0x80 | 99, b[19 + 2 * k] = (uint8_t)(60 * k);
    path_in(folder, sizeof folder, root, "train/b");
    path_in(path, sizeof path, folder, "z.tga");
    ok = ok && write_bytes(folder, "z.tga", b, 25); /* the last run's value missing */
    ok = ok && expect_folder_error(root, path, "too short", "TGA", (const char *)NULL);
    /* a 20x20 JPEG whose frame header is changed to 4000x4000: 250,000 blocks need at
     * least 31,250 bytes; stb_image would decode them from nothing */
    ok = ok && remove(path) == 0 && write_jpeg(root, "train/b", "z.jpg", 100);
    path_in(path, sizeof path, folder, "z.jpg");
    char msg[FS_MSG_MAX];
    uint8_t *jpeg = NULL;
    size_t len;
    ok = ok && expect_true(fs_read_file(path, 4096, &jpeg, &len, msg, sizeof msg) == 0, "%s", msg);
    ok = ok && expect_true(jpeg[71] == 0xFF && jpeg[72] == 0xC0, "test bug: no SOF0 at byte 71");
    if (!ok) return CHECK_FAIL;
    jpeg[76] = 0x0F, jpeg[77] = 0xA0, jpeg[78] = 0x0F, jpeg[79] = 0xA0;
    ok = write_bytes(folder, "z.jpg", jpeg, len);
    free(jpeg);
    ok = ok && expect_folder_error(root, path, "too short", "4000x4000 JPEG", "31250 bytes",
                                   (const char *)NULL);
    ok = ok && remove(path) == 0 && write_bytes(folder, "z.tga", b, 26);
    if (!ok) return CHECK_FAIL;
    Dataset tr, te;
    dataset_load_image_folder(root, NULL, &tr, &te);
    const float *img = tr.images + 4 * SIDE * SIDE; /* a: img0, img1; b: img0, img1, z */
    for (int p = 0; ok && p < SIDE * SIDE; p++)
        ok = expect_true(img[p] == (float)(60 * (p / 100)) / 255.0f,
                         "run-length TGA pixel %d reads %g", p, img[p]);
    dataset_free(&tr);
    dataset_free(&te);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_short_but_complete(void) {
    return with_tmpdir("test_image_folder", body_short_but_complete);
}

/* The pixel limit: a GIF header of 65535x65535 (4.3 G pixels) under the default; the
 * option, exactly at and just under the images' 400 pixels. */
static int body_pixel_limit(const char *dir) {
    static const uint8_t gif[16] = {'G', 'I', 'F', '8', '9', 'a', 0xFF, 0xFF, 0xFF, 0xFF};
    bool ok = expect_refused(dir, "gif", ".gif", gif, sizeof gif, "65535x65535",
                             "--max-image-pixels");
    char root[512], first[600];
    ok = ok && fresh_set(dir, "limit", root, sizeof root);
    path_in(first, sizeof first, root, "train/a/img0.png");
    DatasetOptions under = {.max_image_pixels = SIDE * SIDE - 1};
    ok = ok && expect_folder_error_with(root, &under, first, "20x20", "limit of 399 pixels",
                                        (const char *)NULL);
    DatasetOptions at = {.max_image_pixels = SIDE * SIDE};
    Dataset tr, te;
    if (ok) {
        dataset_load_image_folder(root, &at, &tr, &te);
        ok = expect_shape(&tr, 4, 1, 2);
        dataset_free(&tr);
        dataset_free(&te);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_pixel_limit(void) { return with_tmpdir("test_image_folder", body_pixel_limit); }

/* A 4096x4096 grey PNG of zeros (a 16 M pixel image in about 17 kB) as dir/train/a/0.png
 * and `copies` hard links to it in train/a; one image in train/b and in test/a, test/b. */
static bool write_big_set(const char *dir, long copies) {
    enum { BIG = 4096 };
    make_dirs(dir, "train/a");
    uint8_t *px = calloc((size_t)BIG * BIG, 1);
    char path[512], link_path[600];
    path_in(path, sizeof path, dir, "train/a/0.png");
    bool ok = px && stbi_write_png(path, BIG, BIG, 1, px, BIG) != 0;
    free(px);
    for (long i = 1; ok && i <= copies; i++) {
        snprintf(link_path, sizeof link_path, "%s/train/a/%ld.png", dir, i);
        ok = expect_true(link(path, link_path) == 0, "link %s: %s", link_path, strerror(errno));
    }
    static const char *const subs[] = {"train/b", "test/a", "test/b"};
    for (int i = 0; ok && i < 3; i++) {
        char sub[512];
        make_dir_in(sub, sizeof sub, dir, subs[i]);
        path_in(link_path, sizeof link_path, sub, "x.png");
        ok = expect_true(link(path, link_path) == 0, "link %s: %s", link_path, strerror(errno));
    }
    return expect_true(ok, "cannot write the big image set in %s", dir);
}

/* Larger than the machine's memory: refused before anything is allocated, naming the
 * first image and the sizes (never an out-of-memory kill after the system swapped). */
static int body_memory_limit(const char *dir) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) {
        printf("the machine's memory size is unknown here\n");
        return CHECK_SKIP;
    }
    double per_image = 4096.0 * 4096.0 * sizeof(float);
    long copies = (long)((double)pages * (double)page / per_image) + 1;
    char first[512];
    path_in(first, sizeof first, dir, "train/a/0.png");
    bool ok = write_big_set(dir, copies);
    ok = ok && expect_folder_error(dir, first, "1x4096x4096", "more than this machine's",
                                   "use smaller images or fewer", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_memory_limit(void) { return with_tmpdir("test_image_folder", body_memory_limit); }

/* An allocation that fails (address space limited in the child) names the images it was
 * for. AddressSanitizer reserves terabytes of address space: skipped under it. */
#if !CHECK_ASAN
static void load_limited(void *arg) {
    long vm_pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld", &vm_pages) != 1) _exit(91);
    fclose(f);
    rlim_t now = (rlim_t)vm_pages * (rlim_t)sysconf(_SC_PAGESIZE);
    struct rlimit lim = {now + ((rlim_t)512 << 20), now + ((rlim_t)512 << 20)};
    if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(92);
    Dataset tr, te;
    dataset_load_image_folder(arg, NULL, &tr, &te);
}
#endif

static int body_out_of_memory(const char *dir) {
#if CHECK_ASAN
    (void)dir;
    printf("under AddressSanitizer: an address-space limit would stop the sanitizer itself\n");
    return CHECK_SKIP;
#else
    char first[512];
    path_in(first, sizeof first, dir, "train/a/0.png");
    bool ok = write_big_set(dir, 15); /* 16 x 64 MiB of floats: 1 GiB, over the limit */
    ChildResult o;
    if (ok) run_child_stderr(load_limited, (void *)dir, &o);
    ok = ok && expect_exit("the loader under a 512 MiB limit", &o, 1, "out of memory", first,
                           "1x4096x4096", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
#endif
}
static int check_out_of_memory(void) { return with_tmpdir("test_image_folder", body_out_of_memory); }

/* An unreadable file (as root, permissions do not stop reading: skipped). */
static int body_unreadable(const char *dir) {
    static const char *const classes[] = {"a", "b", NULL};
    bool ok = write_split(dir, "train", classes, 2, 1) && write_split(dir, "test", classes, 1, 1);
    char bad[512];
    path_in(bad, sizeof bad, dir, "test/b/img0.png");
    ok = ok && chmod(bad, 0) == 0;
    if (ok && access(bad, R_OK) == 0) {
        printf("running as root: a file without read permission is still readable\n");
        return CHECK_SKIP;
    }
    ok = ok && expect_folder_error(dir, bad, "Permission denied", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_unreadable(void) { return with_tmpdir("test_image_folder", body_unreadable); }

static int body_missing_dirs(const char *dir) {
    static const char *const classes[] = {"a", "b", NULL};
    char root[512], path[512];
    path_in(root, sizeof root, dir, "nothere");
    bool ok = expect_folder_error(root, root, "no such directory", (const char *)NULL);
    ok = ok && write_split(dir, "train", classes, 2, 1);
    path_in(path, sizeof path, dir, "test");
    ok = ok && expect_folder_error(dir, path, "no such directory", "test/<class>",
                                   (const char *)NULL);
    ok = ok && write_bytes(dir, "test", "x", 1); /* test is a file */
    ok = ok && expect_folder_error(dir, path, "not a directory", (const char *)NULL);
    /* no train/, only test/ */
    char other[512];
    make_dir_in(other, sizeof other, dir, "other");
    ok = ok && write_split(other, "test", classes, 1, 1);
    path_in(path, sizeof path, other, "train");
    ok = ok && expect_folder_error(other, path, "no such directory", "train/<class>",
                                   (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_missing_dirs(void) { return with_tmpdir("test_image_folder", body_missing_dirs); }

static int body_class_mismatch(const char *dir) {
    static const char *const tr[] = {"cat", "dog", "emu", NULL};
    static const char *const te[] = {"cat", "dog", "fox", NULL};
    static const char *const fewer[] = {"cat", "dog", NULL};
    char other[512], a[512], b[512];
    bool ok = write_split(dir, "train", tr, 2, 1) && write_split(dir, "test", te, 1, 1);
    path_in(a, sizeof a, dir, "train");
    path_in(b, sizeof b, dir, "test");
    ok = ok && expect_folder_error(dir, "\"emu\"", a, b, "fox", "same class folders",
                                   (const char *)NULL);
    make_dir_in(other, sizeof other, dir, "other");
    ok = ok && write_split(other, "train", fewer, 2, 1) && write_split(other, "test", tr, 1, 1);
    ok = ok && expect_folder_error(other, "\"emu\"", "same class folders", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_class_mismatch(void) {
    return with_tmpdir("test_image_folder", body_class_mismatch);
}

static int body_class_counts(const char *dir) {
    char root[512], path[512];
    /* an empty class folder, in train and in test */
    static const char *const classes[] = {"a", "b", NULL};
    bool ok = write_split(dir, "train", classes, 2, 1) && write_split(dir, "test", classes, 1, 1);
    make_dirs(dir, "train/c");
    make_dirs(dir, "test/c");
    ok = ok && write_image(dir, "test/c", "x.png", SIDE, SIDE, 1, 0, 0);
    char folder[512];
    path_in(folder, sizeof folder, dir, "train/c");
    ok = ok && write_bytes(folder, "notes.txt", "x", 1);
    ok = ok && expect_folder_error(dir, folder, "empty class folder", ".png", (const char *)NULL);
    ok = ok && write_image(dir, "train/c", "x.png", SIDE, SIDE, 1, 0, 0);
    path_in(folder, sizeof folder, dir, "test/b/img0.png");
    ok = ok && remove(folder) == 0;
    path_in(folder, sizeof folder, dir, "test/b");
    ok = ok && expect_folder_error(dir, folder, "empty class folder", (const char *)NULL);

    /* one class only; no class folders but images loose in train/ */
    static const char *const one[] = {"only", NULL};
    make_dir_in(root, sizeof root, dir, "one");
    ok = ok && write_split(root, "train", one, 2, 1) && write_split(root, "test", one, 1, 1);
    ok = ok && expect_folder_error(root, "1 class folder", "at least 2", (const char *)NULL);
    make_dirs(dir, "loose/train");
    make_dirs(dir, "loose/test");
    path_in(root, sizeof root, dir, "loose");
    ok = ok && write_image(root, "train", "x.png", SIDE, SIDE, 1, 0, 0);
    ok = ok && expect_folder_error(root, "0 class folders", "subfolder named after the class",
                                   (const char *)NULL);

    /* 256 classes: too many for uint8 labels */
    make_dirs(dir, "many/test");
    path_in(root, sizeof root, dir, "many");
    for (int k = 0; ok && k < 256; k++) {
        char sub[64];
        snprintf(sub, sizeof sub, "train/c%03d", k);
        make_dirs(root, sub);
    }
    path_in(path, sizeof path, root, "train");
    ok = ok && expect_folder_error(root, path, "256 class folders", "too many classes", "255",
                                   (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_class_counts(void) { return with_tmpdir("test_image_folder", body_class_counts); }

/* 255 classes is the limit, and it works (one 20x20 image per class). */
static int body_max_classes(const char *dir) {
    bool ok = true;
    for (int k = 0; ok && k < 255; k++) {
        char sub[64];
        snprintf(sub, sizeof sub, "train/k%03d", k);
        make_dirs(dir, sub);
        ok = write_image(dir, sub, "a.png", SIDE, SIDE, 1, k, 0);
        snprintf(sub, sizeof sub, "test/k%03d", k);
        make_dirs(dir, sub);
        ok = ok && write_image(dir, sub, "a.png", SIDE, SIDE, 1, k, 1);
    }
    if (!ok) return CHECK_FAIL;
    Dataset tr, te;
    dataset_load_image_folder(dir, NULL, &tr, &te);
    ok = expect_shape(&tr, 255, 1, 255) && expect_shape(&te, 255, 1, 255);
    for (int k = 0; ok && k < 255; k++)
        ok = expect_true(tr.labels[k] == k && te.labels[k] == k, "labels %d, %d at %d",
                         tr.labels[k], te.labels[k], k);
    ok = ok && expect_image(&tr, 254, 254, 0, 1) && expect_image(&te, 100, 100, 1, 1);
    dataset_free(&tr);
    dataset_free(&te);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_max_classes(void) { return with_tmpdir("test_image_folder", body_max_classes); }

static int check_no_data_dir(void) {
    Job job = {.name = "folder", .dir = NULL, .env = NULL};
    ChildResult o;
    run_child_stderr(job_run, &job, &o);
    bool ok = expect_exit("the loader", &o, 1, "--dataset folder needs --data DIR",
                          "DIR/train/<class>/", "DIR/test/<class>/", (const char *)NULL);
    Job empty = {.name = "folder", .dir = "", .env = ""};
    run_child_stderr(job_run, &empty, &o);
    ok = ok && expect_exit("the loader", &o, 1, "--dataset folder needs --data DIR",
                           (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_without_stb(void) {
    printf("built with stb_image: --dataset folder works\n");
    return CHECK_SKIP;
}

#else /* !HAVE_STB */

static int skip(void) {
    printf("built without stb_image (sudo apt-get install libstb-dev, or sudo make deps)\n");
    return CHECK_SKIP;
}
static int check_grey(void) { return skip(); }
static int check_colour(void) { return skip(); }
static int check_channel_rules(void) { return skip(); }
static int check_dataset_load(void) { return skip(); }
static int check_mismatched_sizes(void) { return skip(); }
static int check_corrupt(void) { return skip(); }
static int check_formats(void) { return skip(); }
static int check_bad_jpeg(void) { return skip(); }
static int check_short_files(void) { return skip(); }
static int check_short_but_complete(void) { return skip(); }
static int check_pixel_limit(void) { return skip(); }
static int check_memory_limit(void) { return skip(); }
static int check_out_of_memory(void) { return skip(); }
static int check_unreadable(void) { return skip(); }
static int check_missing_dirs(void) { return skip(); }
static int check_class_mismatch(void) { return skip(); }
static int check_class_counts(void) { return skip(); }
static int check_max_classes(void) { return skip(); }
static int check_no_data_dir(void) { return skip(); }

/* Without stb_image, --dataset folder says how to get it, with or without --data. */
static int body_without_stb(const char *dir) {
    Job job = {.name = "folder", .dir = dir};
    ChildResult o;
    run_child_stderr(job_run, &job, &o);
    bool ok = expect_exit("the loader", &o, 1, "built without stb_image", "libstb-dev",
                          "make deps", "rebuild", (const char *)NULL);
    Job none = {.name = "folder"};
    run_child_stderr(job_run, &none, &o);
    ok = ok && expect_exit("the loader", &o, 1, "built without stb_image", (const char *)NULL);
    Job direct = {.root = dir};
    run_child_stderr(job_run, &direct, &o);
    ok = ok && expect_exit("the loader", &o, 1, "libstb-dev", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_without_stb(void) { return with_tmpdir("test_image_folder", body_without_stb); }

#endif

/* The unknown-name message lists folder among the valid names. */
static int check_unknown_name(void) {
    Job job = {.name = "imagenet"};
    ChildResult o;
    run_child_stderr(job_run, &job, &o);
    return expect_exit("the loader", &o, 1, "imagenet", "synthetic", "folder", (const char *)NULL)
               ? CHECK_PASS
               : CHECK_FAIL;
}

int main(void) {
    check_begin("image folders");
    check_run(NULL, "grey PNG/BMP/TGA: counts, labels by sorted class, file order, exact pixels",
              check_grey, 30);
    check_run(NULL, "colour: 3 channels in [C, H, W] order, RGBA read as RGB", check_colour, 30);
    check_run(NULL, "channels from the first image (grey+alpha -> 1, RGBA -> 3)",
              check_channel_rules, 30);
    check_run(NULL, "PGM, PPM, GIF exactly; JPEG within 1 level", check_formats, 30);
    check_run(NULL, "dataset_load(\"folder\"): --data, then $DATA_DIR", check_dataset_load, 30);
    check_run(NULL, "255 classes read; labels up to 254", check_max_classes, 60);
    check_run(NULL, "images of different sizes: names the file and both sizes",
              check_mismatched_sizes, 30);
    check_run(NULL, "corrupt, truncated and empty image files", check_corrupt, 30);
    check_run(NULL, "JPEG with an oversized Huffman table is refused (stb_image 2.27 bug)",
              check_bad_jpeg, 30);
    check_run(NULL, "TGA, BMP, PNM, PNG headers without their pixels: too short, named",
              check_short_files, 30);
    check_run(NULL, "run-length TGA at its least length loads; one byte less, or a JPEG of "
              "more blocks than bits, is refused", check_short_but_complete, 30);
    check_run(NULL, "pixel limit: 65535x65535 GIF by default; the option, at and under",
              check_pixel_limit, 30);
    check_run(NULL, "a set larger than the machine's memory is refused, naming the first image",
              check_memory_limit, 60);
    check_run(NULL, "out of memory names the first image and the sizes", check_out_of_memory, 60);
    check_run(NULL, "unreadable image file", check_unreadable, 30);
    check_run(NULL, "missing root, train/ or test/", check_missing_dirs, 30);
    check_run(NULL, "class folders differ between train/ and test/", check_class_mismatch, 30);
    check_run(NULL, "empty class folder, one class, 256 classes", check_class_counts, 30);
    check_run(NULL, "--dataset folder without --data", check_no_data_dir, 30);
    check_run(NULL, "built without stb_image: says how to get it", check_without_stb, 30);
    check_run(NULL, "unknown data set name lists folder", check_unknown_name, 30);
    return check_end();
}
