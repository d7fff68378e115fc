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

void dataset_load(const char *name, const char *data_dir, Dataset *train, Dataset *test);
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
 * 3) are used for all. dataset_load("folder", dir, ...) calls this with dir or $DATA_DIR. */
void dataset_load_image_folder(const char *root, Dataset *train, Dataset *test);

#endif
