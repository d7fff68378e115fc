/* Image folders, laid out like torchvision's ImageFolder (the walk: image_walk.h):
 *
 *   ROOT/train/<class>/NAME.png  (or .jpg .jpeg .bmp .pgm .ppm .tga .gif, any case)
 *   ROOT/test/<class>/...
 *
 * All images must have the width and height of the first training image; the number of
 * channels is taken from it too and every image is converted to it (image_decode.h).
 * Pixels become floats in [0, 1], stored [C, H, W], as the other data sets are. Decoding
 * runs on all OpenMP threads; a broken file is reported the same way whatever the thread
 * count: the first one in data set order.
 *
 * Every problem is the user's to fix: fatal() with the path and what is wrong. */
#include "data/dataset.h"

#include "core/check.h"

#ifndef HAVE_STB

void dataset_load_image_folder(const char *root, const DatasetOptions *options, Dataset *train,
                               Dataset *test) {
    (void)root, (void)options, (void)train, (void)test;
    fatal("--dataset folder: built without stb_image: sudo apt-get install libstb-dev (or sudo "
          "make deps) and rebuild");
}

#else

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fs.h"
#include "data/image_decode.h"
#include "data/image_walk.h"

/* One image file: anything larger is not an image to train a CNN on. */
#define IMAGE_MAX_FILE_BYTES ((size_t)256 << 20)

typedef struct {
    ImageShape shape;
    const char *first; /* the image the shape was taken from, for the messages */
    int64_t max_pixels;
} Layout;

/* The shape of the first training image, which all must have. */
static void read_layout(const char *path, int64_t max_pixels, Layout *lay) {
    char msg[FS_MSG_MAX];
    uint8_t *b;
    size_t len;
    if (fs_read_file(path, IMAGE_MAX_FILE_BYTES, &b, &len, msg, sizeof msg) != 0) fatal("%s", msg);
    int rc = image_read_shape(b, len, path, max_pixels, &lay->shape, msg, sizeof msg);
    free(b);
    if (rc != 0) fatal("%s", msg);
    lay->first = path;
    lay->max_pixels = max_pixels;
}

/* Memory for count images of the layout, or a message that says which images and how
 * much: more than the machine has is refused before the system starts swapping or
 * killing the program. */
static float *alloc_images(const ImageSplit *s, const Layout *lay) {
    const ImageShape *sh = &lay->shape;
    size_t per = (size_t)sh->channels * (size_t)sh->height * (size_t)sh->width;
    if (per > SIZE_MAX / sizeof(float) / (size_t)s->count)
        fatal("%s: %d images of %dx%dx%d are too many to hold in memory", s->dir, s->count,
              sh->channels, sh->height, sh->width);
    size_t bytes = (size_t)s->count * per * sizeof(float);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double gib = (double)bytes / (1 << 30);
    if (pages > 0 && page > 0 && (double)bytes > (double)pages * (double)page)
        fatal("%s: %d images of %dx%dx%d (the size of the first, %s) take %.1f GiB as floats, "
              "more than this machine's %.1f GiB of memory: use smaller images or fewer",
              s->dir, s->count, sh->channels, sh->height, sh->width, lay->first, gib,
              (double)pages * (double)page / (1 << 30));
    void *images = NULL; /* 64-byte aligned, as xmalloc's */
    if (posix_memalign(&images, 64, bytes ? bytes : 64) != 0)
        fatal("out of memory: %s: %d images of %dx%dx%d (the size of the first, %s) take %.1f "
              "GiB as floats: use smaller images or fewer", s->dir, s->count, sh->channels,
              sh->height, sh->width, lay->first, gib);
    return images;
}

/* One image into dst; a message in msg when it cannot be had. */
static int load_one(const char *path, const Layout *lay, float *dst, char *msg, size_t cap) {
    uint8_t *b;
    size_t len;
    if (fs_read_file(path, IMAGE_MAX_FILE_BYTES, &b, &len, msg, cap) != 0) return -1;
    int rc = image_decode(b, len, path, lay->max_pixels, &lay->shape, lay->first, dst, msg, cap);
    free(b);
    return rc;
}

static void load_split(const ImageSplit *s, const Layout *lay, const char *root, Dataset *d) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "folder");
    snprintf(d->source, sizeof d->source, "%s", root);
    d->count = s->count;
    d->channels = lay->shape.channels;
    d->height = lay->shape.height;
    d->width = lay->shape.width;
    d->num_classes = s->classes.n;
    d->images = alloc_images(s, lay);
    d->labels = xmalloc((size_t)s->count);
    const char **paths = xmalloc((size_t)s->count * sizeof *paths);
    int at = 0;
    for (int k = 0; k < s->classes.n; k++)
        for (int i = 0; i < s->files[k].n; i++, at++) {
            paths[at] = s->files[k].v[i];
            d->labels[at] = (uint8_t)k;
        }

    const size_t per = (size_t)d->channels * (size_t)d->height * (size_t)d->width;
    int bad = s->count; /* the first failing image, in data set order */
    char *why = xmalloc(FS_MSG_MAX);
    why[0] = '\0';
    const int count = s->count;
    float *images = d->images;
#pragma omp parallel
    {
        char msg[FS_MSG_MAX];
#pragma omp for schedule(dynamic, 8)
        for (int i = 0; i < count; i++) {
            int first_bad;
#pragma omp atomic read
            first_bad = bad;
            if (i > first_bad) continue; /* a file before this one already failed */
            if (load_one(paths[i], lay, images + (size_t)i * per, msg, sizeof msg) == 0) continue;
#pragma omp critical(image_folder_error)
            {
                if (i < bad) {
                    memcpy(why, msg, sizeof msg);
#pragma omp atomic write
                    bad = i;
                }
            }
        }
    }
    xfree(paths);
    if (bad < count) fatal("%s", why);
    xfree(why);
}

void dataset_load_image_folder(const char *root, const DatasetOptions *options, Dataset *train,
                               Dataset *test) {
    CHECK(root && train && test, "dataset_load_image_folder needs a root and two Datasets");
    int64_t max_pixels = options && options->max_image_pixels ? options->max_image_pixels
                                                              : DATASET_MAX_IMAGE_PIXELS;
    if (max_pixels < 1)
        fatal("the image size limit must be at least 1 pixel, got %lld (--max-image-pixels)",
              (long long)max_pixels);
    char base[FS_PATH_MAX];
    if (snprintf(base, sizeof base, "%s", root) >= (int)sizeof base)
        fatal("path too long: %s", root);
    size_t n = strlen(base);
    while (n > 1 && base[n - 1] == '/') base[--n] = '\0'; /* ROOT/ -> ROOT */
    if (n == 0) fatal("--dataset folder: the root directory is an empty string");

    ImageSplit tr, te;
    image_walk(base, &tr, &te);
    Layout lay;
    read_layout(tr.files[0].v[0], max_pixels, &lay);
    load_split(&tr, &lay, base, train);
    load_split(&te, &lay, base, test);
    image_split_free(&tr);
    image_split_free(&te);
}

#endif /* HAVE_STB */
