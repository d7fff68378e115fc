/* Finding a data set on disk, and the operations on a loaded one.
 *
 * Compute nodes have no internet, so a data set must already be somewhere on disk; the
 * search below tries the places an instructor or participant is likely to have put it,
 * and when it finds nothing says where it looked and how to get the data. */
#include "data/dataset.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fs.h"

#define PATH_CAP FS_PATH_MAX
#define MAX_PLACES 24
#define SYNTHETIC_TRAIN 6000
#define SYNTHETIC_TEST 1000
#define SYNTHETIC_SIDE 28
#define SYNTHETIC_TRAIN_SEED 1001u
#define SYNTHETIC_TEST_SEED 2002u

typedef struct {
    char path[PATH_CAP];
    const char *why; /* how this directory came to be searched, for the error message */
} Place;

typedef struct {
    Place at[MAX_PLACES];
    int n;
} Places;

static const char *const IDX_FILES[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
static const char *const CIFAR_FILES[6] = {"data_batch_1.bin", "data_batch_2.bin",
                                           "data_batch_3.bin", "data_batch_4.bin",
                                           "data_batch_5.bin", "test_batch.bin"};

static void add_place(Places *p, const char *why, const char *dir, const char *sub) {
    char path[PATH_CAP];
    if (sub) fs_join_or_die(path, sizeof path, dir, sub);
    else snprintf(path, sizeof path, "%s", dir);
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->at[i].path, path) == 0) return; /* e.g. COURSE_ROOT is the cwd */
    CHECK(p->n < MAX_PLACES, "too many data directories to search");
    memcpy(p->at[p->n].path, path, sizeof path);
    p->at[p->n].why = why;
    p->n++;
}

/* A base directory holds a data set in a subdirectory named after it, or directly. */
static void add_base(Places *p, const char *name, const char *why, const char *base) {
    if (!base || !base[0]) return;
    if (strcmp(name, "cifar10") == 0) {
        add_place(p, why, base, "cifar-10-batches-bin"); /* what the tarball unpacks to */
        add_place(p, why, base, "cifar10/cifar-10-batches-bin");
        add_place(p, why, base, "cifar10");
    } else {
        add_place(p, why, base, name);
    }
    add_place(p, why, base, NULL);
}

static void search_places(const char *name, const char *data_dir, Places *p) {
    p->n = 0;
    if (data_dir && data_dir[0]) { /* an explicit choice: no silent fallback elsewhere */
        add_base(p, name, "--data", data_dir);
        return;
    }
    add_base(p, name, "$DATA_DIR", getenv("DATA_DIR"));
    /* absolute, so that the error message says which current directory */
    char here[PATH_CAP];
    if (getcwd(here, sizeof here - 16)) {
        strcat(here, "/datasets/data");
        add_base(p, name, "under the current directory", here);
    } else {
        add_base(p, name, "under the current directory", "datasets/data");
    }
#ifdef COURSE_ROOT
    add_base(p, name, "in the course repository", COURSE_ROOT "/datasets/data");
#endif
    if (strcmp(name, "fashion-mnist") == 0)
        add_place(p, "Debian package dataset-fashion-mnist", "/usr/share/datasets/fashion-mnist",
                  NULL);
    if (strcmp(name, "mnist") == 0)
        add_place(p, "system-wide", "/usr/share/datasets/mnist", NULL);
}

/* dir/file or dir/file.gz, whichever exists (plain first: it needs no zlib). */
static bool find_file(const char *dir, const char *file, bool gz_too, char *out) {
    fs_join_or_die(out, PATH_CAP, dir, file);
    if (fs_is_regular_file(out)) return true;
    if (!gz_too) return false;
    char gz[PATH_CAP];
    int n = snprintf(gz, sizeof gz, "%s.gz", file);
    CHECK(n > 0 && n < PATH_CAP, "file name too long");
    fs_join_or_die(out, PATH_CAP, dir, gz);
    return fs_is_regular_file(out);
}

/* Looks for all nfiles files in one directory. Returns true when every one is there;
 * when only some are, describes the missing ones in note (for the error message). */
static bool find_set(const char *dir, const char *const *files, int nfiles, bool gz_too,
                     char (*paths)[PATH_CAP], char *note, size_t note_cap) {
    int found = 0;
    char missing[1024] = "";
    size_t used = 0;
    for (int i = 0; i < nfiles; i++) {
        if (find_file(dir, files[i], gz_too, paths[i])) {
            found++;
        } else if (used < sizeof missing) {
            int n = snprintf(missing + used, sizeof missing - used, "%s%s%s", used ? ", " : "",
                             files[i], gz_too ? "[.gz]" : "");
            if (n > 0) used += (size_t)n;
        }
    }
    if (found == nfiles) return true;
    if (found > 0 && note[0] == '\0')
        snprintf(note, note_cap, "%s has only part of the set: missing %s", dir, missing);
    return false;
}

typedef struct {
    char *buf;
    size_t cap, len;
} Text;

static void text_add(Text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(Text *t, const char *fmt, ...) {
    if (t->len >= t->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n > 0) t->len += (size_t)n;
}

static _Noreturn void not_found(const char *name, const char *files_desc, const Places *p,
                                const char *note) {
    static char buf[16384];
    Text t = {buf, sizeof buf, 0};
    text_add(&t, "cannot find the %s data set (%s). Looked in:\n", name, files_desc);
    for (int i = 0; i < p->n; i++)
        text_add(&t, "  %s  (%s%s)\n", p->at[i].path, p->at[i].why,
                 fs_is_dir(p->at[i].path) ? "" : "; no such directory");
    if (note[0]) text_add(&t, "Note: %s\n", note);
    text_add(&t, "To fix it: ");
    if (strcmp(name, "fashion-mnist") == 0)
        text_add(&t, "install Debian's dataset-fashion-mnist (sudo make deps), or ");
    text_add(&t, "on a login node with internet run 'make datasets DATASETS=%s' (it fetches into "
                 "datasets/data/%s/; datasets/README.md), or pass --data DIR, or use --dataset "
                 "synthetic", name, name);
    fatal("%s", buf);
}

static void load_idx_set(const char *name, const Places *p, Dataset *train, Dataset *test) {
    char paths[4][PATH_CAP];
    char note[2048] = "";
    for (int i = 0; i < p->n; i++) {
        if (!find_set(p->at[i].path, IDX_FILES, 4, true, paths, note, sizeof note)) continue;
        dataset_load_idx(paths[0], paths[1], train);
        dataset_load_idx(paths[2], paths[3], test);
        if (train->height != test->height || train->width != test->width)
            fatal("%s has %dx%d images but %s has %dx%d: the files are from different data "
                  "sets", paths[0], train->height, train->width, paths[2], test->height,
                  test->width);
        return;
    }
    not_found(name, "train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
                    "t10k-labels-idx1-ubyte, each plain or .gz", p, note);
}

static void load_cifar_set(const Places *p, Dataset *train, Dataset *test) {
    char paths[6][PATH_CAP];
    char note[2048] = "";
    for (int i = 0; i < p->n; i++) {
        if (!find_set(p->at[i].path, CIFAR_FILES, 6, false, paths, note, sizeof note)) continue;
        const char *train_paths[5];
        for (int b = 0; b < 5; b++) train_paths[b] = paths[b];
        const char *test_path = paths[5];
        dataset_load_cifar10(train_paths, 5, train);
        dataset_load_cifar10(&test_path, 1, test);
        snprintf(train->source, sizeof train->source, "%s", p->at[i].path);
        snprintf(test->source, sizeof test->source, "%s", p->at[i].path);
        return;
    }
    not_found("cifar10", "data_batch_1.bin .. data_batch_5.bin and test_batch.bin", p, note);
}

/* An image folder: ROOT is --data, else $DATA_DIR; nothing is searched for. */
static void load_folder(const char *data_dir, const DatasetOptions *options, Dataset *train,
                        Dataset *test) {
    const char *root = data_dir && data_dir[0] ? data_dir : getenv("DATA_DIR");
#ifdef HAVE_STB
    if (!root || !root[0])
        fatal("--dataset folder needs --data DIR with DIR/train/<class>/ and DIR/test/<class>/");
#endif
    dataset_load_image_folder(root, options, train, test); /* without stb_image: says how to get it */
}

void dataset_load(const char *name, const char *data_dir, Dataset *train, Dataset *test) {
    dataset_load_with(name, data_dir, NULL, train, test);
}

void dataset_load_with(const char *name, const char *data_dir, const DatasetOptions *options,
                       Dataset *train, Dataset *test) {
    CHECK(name && train && test, "dataset_load needs a name and two Datasets");
    if (strcmp(name, "synthetic") == 0) {
        dataset_make_synthetic(SYNTHETIC_TRAIN, 1, SYNTHETIC_SIDE, SYNTHETIC_TRAIN_SEED, train);
        dataset_make_synthetic(SYNTHETIC_TEST, 1, SYNTHETIC_SIDE, SYNTHETIC_TEST_SEED, test);
        return;
    }
    if (strcmp(name, "folder") == 0) {
        load_folder(data_dir, options, train, test);
        return;
    }
    bool idx = strcmp(name, "fashion-mnist") == 0 || strcmp(name, "mnist") == 0;
    if (!idx && strcmp(name, "cifar10") != 0)
        fatal("unknown data set '%s': valid names are fashion-mnist, mnist, cifar10, synthetic, "
              "folder (images in DIR/train/<class>/ and DIR/test/<class>/)", name);
    Places *places = xcalloc(1, sizeof *places); /* ~100 KB: not on the stack */
    search_places(name, data_dir, places);
    if (idx) load_idx_set(name, places, train, test);
    else load_cifar_set(places, train, test);
    xfree(places);
    snprintf(train->name, sizeof train->name, "%s", name);
    snprintf(test->name, sizeof test->name, "%s", name);
}

void dataset_free(Dataset *d) {
    if (!d) return;
    xfree(d->images);
    xfree(d->labels);
    memset(d, 0, sizeof *d);
}

void dataset_truncate(Dataset *d, int n) {
    if (n > 0 && n < d->count) d->count = n; /* the memory stays; it is freed with d */
}

void dataset_gather(const Dataset *d, const int *indices, int n, Tensor *images, int *labels) {
    CHECK(images && images->device == DEVICE_CPU, "dataset_gather fills a CPU tensor");
    CHECK_SHAPE(images, n, d->channels, d->height, d->width);
    size_t per = (size_t)d->channels * d->height * d->width;
    for (int i = 0; i < n; i++) {
        int k = indices[i];
        CHECK(k >= 0 && k < d->count, "example index %d (position %d) out of range 0..%d", k, i,
              d->count - 1);
        memcpy(images->data + (size_t)i * per, d->images + (size_t)k * per, per * sizeof(float));
        if (labels) labels[i] = d->labels[k];
    }
}
