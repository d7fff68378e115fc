/* Image classification data sets, held in memory as float32 in [0, 1].
 *
 *   Dataset train, test;
 *   dataset_load("fashion-mnist", data_dir, &train, &test);   // or mnist, cifar10, synthetic
 *
 * Files are looked up in data_dir (--data) only, when it is given; otherwise in
 * $DATA_DIR, then datasets/data, then Debian's /usr/share/datasets/<name>
 * (dataset-fashion-mnist). A missing, truncated or
 * corrupt file is a user error: one message naming the file and the fix, exit 1. */
#ifndef DATA_DATASET_H
#define DATA_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

typedef struct {
    char name[32];       /* "fashion-mnist", "mnist", "cifar10", "synthetic" */
    char source[512];    /* where it was read from, for the log */
    int count;           /* number of examples */
    int channels, height, width;
    int num_classes;
    float *images;       /* [count, channels, height, width], values in [0, 1] */
    uint8_t *labels;     /* [count], each < num_classes */
} Dataset;

/* How much a loader accepts beyond each format's own rules. {0}: the defaults. */
typedef struct {
    /* Image folders: the most pixels (width x height) one image may declare; a larger
     * one is refused, naming the file, before anything is allocated for it. 0: the
     * default, DATASET_MAX_IMAGE_PIXELS. */
    int64_t max_image_pixels;
} DatasetOptions;

/* 4096 x 4096: more than any image a CNN here trains on (each is held as 4-byte
 * floats: 192 MiB for one RGB image of this size), far less than a corrupt header can
 * claim (stb_image allows 2^24 on each side). */
#define DATASET_MAX_IMAGE_PIXELS ((int64_t)4096 * 4096)

void dataset_load(const char *name, const char *data_dir, Dataset *train, Dataset *test);
/* dataset_load with options (NULL: the defaults), e.g. from --max-image-pixels. */
void dataset_load_with(const char *name, const char *data_dir, const DatasetOptions *options,
                       Dataset *train, Dataset *test);
void dataset_free(Dataset *d);

/* Keeps the first n examples (n <= 0 or n >= count: keeps all); for short runs. */
void dataset_truncate(Dataset *d, int n);

/* Copies the examples indices[0..n) into images [n, C, H, W] and labels [n]. */
void dataset_gather(const Dataset *d, const int *indices, int n, Tensor *images, int *labels);

/* The individual loaders, for tests and for data in unusual places. */
void dataset_load_idx(const char *images_path, const char *labels_path, Dataset *d);
void dataset_load_cifar10(const char *const *batch_paths, int nbatches, Dataset *d);
void dataset_make_synthetic(int count, int channels, int size, uint64_t seed, Dataset *d);

/* Images in class folders, like torchvision's ImageFolder (needs stb_image, libstb-dev):
 * root/train/<class>/NAME.png (.jpg .jpeg .bmp .pgm .ppm .tga .gif) and root/test/<class>/.
 * Classes are train's subfolders sorted by strcmp (label = index, 2 to 255 of them); test
 * must have the same ones. All images must be the size of the first; its channels (1 or
 * 3) are used for all. A file shorter than the pixels its header declares, or an image
 * of more than options->max_image_pixels pixels, is refused by name. options may be
 * NULL (the defaults). dataset_load("folder", dir, ...) calls this with dir or $DATA_DIR. */
void dataset_load_image_folder(const char *root, const DatasetOptions *options, Dataset *train,
                               Dataset *test);

/* The IDX and CIFAR-10 readers on file contents in memory, as the loaders above use them
 * (and the fuzz targets, tests/fuzz/): IDX bytes plain or gzip-compressed, one CIFAR-10
 * batch. The names are the files' names for the messages. 0 and d filled (dataset_free
 * it), or -1 with the message the loader would stop with in msg, and nothing to free. */
int dataset_parse_idx(const uint8_t *images, size_t images_len, const char *images_name,
                      const uint8_t *labels, size_t labels_len, const char *labels_name,
                      Dataset *d, char *msg, size_t cap);
int dataset_parse_cifar10(const uint8_t *batch, size_t len, const char *name, Dataset *d,
                          char *msg, size_t cap);

#endif
