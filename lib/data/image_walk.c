#include "data/image_walk.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/check.h"

#define MAX_CLASSES 255 /* labels are uint8_t */
#define MIN_CLASSES 2
#define MAX_IMAGES (INT_MAX / 2)
#define LAYOUT "expected ROOT/train/<class>/*.png and ROOT/test/<class>/*.png, as for " \
               "torchvision's ImageFolder"
#define EXTENSIONS ".png, .jpg, .jpeg, .bmp, .pgm, .ppm, .tga, .gif"

static const char *const IMAGE_EXT[] = {"png", "jpg", "jpeg", "bmp", "pgm", "ppm", "tga", "gif"};

static void names_push(ImageNames *s, const char *name) {
    if (s->n == s->cap) {
        if (s->cap >= MAX_IMAGES) fatal("more than %d entries in one folder: too many", s->cap);
        int cap = s->cap ? 2 * s->cap : 16;
        char **v = xmalloc((size_t)cap * sizeof *v);
        if (s->n) memcpy(v, s->v, (size_t)s->n * sizeof *v);
        xfree(s->v);
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = xstrdup(name);
}

static void names_free(ImageNames *s) {
    for (int i = 0; i < s->n; i++) xfree(s->v[i]);
    xfree(s->v);
    memset(s, 0, sizeof *s);
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_sort(ImageNames *s) {
    if (s->n > 1) qsort(s->v, (size_t)s->n, sizeof *s->v, compare_names);
}

/* "a, b, c" (ending in "..." when it does not fit in cap >= 8 bytes), for messages. */
static void names_join(const ImageNames *s, char *out, size_t cap) {
    size_t used = 0;
    snprintf(out, cap, "%s", s->n ? "" : "none");
    for (int i = 0; i < s->n; i++) {
        const char *sep = i ? ", " : "";
        if (used + strlen(sep) + strlen(s->v[i]) + 6 > cap) {
            snprintf(out + used, cap - used, "%s...", sep);
            return;
        }
        used += (size_t)snprintf(out + used, cap - used, "%s%s", sep, s->v[i]);
    }
}

static bool has_image_ext(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return false;
    for (size_t i = 0; i < sizeof IMAGE_EXT / sizeof *IMAGE_EXT; i++)
        if (strcasecmp(dot + 1, IMAGE_EXT[i]) == 0) return true; /* .PNG too */
    return false;
}

static void need_dir(const char *path, const char *what) {
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT) fatal("%s: no such directory (%s): " LAYOUT, path, what);
        fatal("cannot open %s (%s): %s", path, what, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) fatal("%s is not a directory (%s): " LAYOUT, path, what);
}

/* The entries of dir that are not hidden: subfolders into dirs (names), image files into
 * files (full paths); *others counts the rest. */
static void list_dir(const char *dir, ImageNames *dirs, ImageNames *files, int *others) {
    DIR *d = opendir(dir);
    if (!d) fatal("cannot open the folder %s: %s", dir, strerror(errno));
    char path[FS_PATH_MAX];
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue; /* hidden, and . and .. */
        fs_join_or_die(path, sizeof path, dir, e->d_name);
        struct stat st;
        bool ok = stat(path, &st) == 0; /* a dangling link is one of the others */
        if (ok && S_ISDIR(st.st_mode)) {
            if (dirs) names_push(dirs, e->d_name);
            else (*others)++;
        } else if (ok && S_ISREG(st.st_mode) && has_image_ext(e->d_name)) {
            if (files) names_push(files, path);
            else (*others)++;
        } else {
            (*others)++;
        }
    }
    closedir(d);
    if (dirs) names_sort(dirs);
    if (files) names_sort(files); /* the same prefix on every path: sorted by file name */
}

/* ROOT/<split>/ and its class folder names; for train also the class count limits. */
static void list_classes(const char *root, const char *split, bool is_train, ImageSplit *s) {
    memset(s, 0, sizeof *s);
    fs_join_or_die(s->dir, sizeof s->dir, root, split);
    need_dir(s->dir, is_train ? "the training images, one subfolder per class"
                              : "the test images, one subfolder per class");
    ImageNames loose = {0};
    int others = 0;
    list_dir(s->dir, &s->classes, &loose, &others);
    int nloose = loose.n;
    names_free(&loose);
    if (!is_train) return; /* compared with train's next */
    if (s->classes.n > MAX_CLASSES)
        fatal("%s has %d class folders: too many classes, at most %d are supported (labels are "
              "one byte)", s->dir, s->classes.n, MAX_CLASSES);
    if (s->classes.n < MIN_CLASSES) {
        char list[1024];
        names_join(&s->classes, list, sizeof list);
        fatal("%s has %d class folder%s (%s): a classifier needs at least %d%s", s->dir,
              s->classes.n, s->classes.n == 1 ? "" : "s", list, MIN_CLASSES,
              nloose ? "; put each class's images in a subfolder named after the class, "
                       "ROOT/train/<class>/, not directly in ROOT/train"
                     : "");
    }
}

static _Noreturn void class_mismatch(const ImageSplit *tr, const ImageSplit *te,
                                     const char *name, bool in_train) {
    char a[1024], b[1024];
    names_join(&tr->classes, a, sizeof a);
    names_join(&te->classes, b, sizeof b);
    fatal("class folder \"%s\" is in %s but not in %s: train/ and test/ must have the same "
          "class folders (%s has: %s; %s has: %s)", name, in_train ? tr->dir : te->dir,
          in_train ? te->dir : tr->dir, tr->dir, a, te->dir, b);
}

static void compare_classes(const ImageSplit *tr, const ImageSplit *te) {
    int i = 0, j = 0;
    while (i < tr->classes.n || j < te->classes.n) {
        if (i == tr->classes.n) class_mismatch(tr, te, te->classes.v[j], false);
        if (j == te->classes.n) class_mismatch(tr, te, tr->classes.v[i], true);
        int c = strcmp(tr->classes.v[i], te->classes.v[j]);
        if (c < 0) class_mismatch(tr, te, tr->classes.v[i], true);
        if (c > 0) class_mismatch(tr, te, te->classes.v[j], false);
        i++, j++;
    }
}

/* The image files of each class folder; an empty class folder is an error. */
static void list_files(ImageSplit *s) {
    s->files = xcalloc((size_t)s->classes.n, sizeof *s->files);
    char dir[FS_PATH_MAX];
    for (int k = 0; k < s->classes.n; k++) {
        fs_join_or_die(dir, sizeof dir, s->dir, s->classes.v[k]);
        int others = 0;
        list_dir(dir, NULL, &s->files[k], &others);
        if (s->files[k].n == 0)
            fatal("%s: empty class folder: no images in it (looked for %s; %d other "
                  "entr%s ignored)", dir, EXTENSIONS, others, others == 1 ? "y" : "ies");
        if (s->files[k].n > MAX_IMAGES - s->count)
            fatal("%s: more than %d images: too many", s->dir, MAX_IMAGES);
        s->count += s->files[k].n;
    }
}

void image_walk(const char *root, ImageSplit *train, ImageSplit *test) {
    need_dir(root, "the root of the image folder data set");
    list_classes(root, "train", true, train);
    list_classes(root, "test", false, test);
    compare_classes(train, test);
    list_files(train);
    list_files(test);
}

void image_split_free(ImageSplit *s) {
    for (int k = 0; s->files && k < s->classes.n; k++) names_free(&s->files[k]);
    xfree(s->files);
    names_free(&s->classes);
}
