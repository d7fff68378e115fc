/* Image folders, laid out like torchvision's ImageFolder:
 *
 *   ROOT/train/<class>/NAME.png  (or .jpg .jpeg .bmp .pgm .ppm .tga .gif, any case)
 *   ROOT/test/<class>/...
 *
 * The classes are the subfolders of ROOT/train sorted by strcmp (label = position in
 * that order); ROOT/test must have the same class folders. Files in a class folder are
 * taken in name order, so the data set is the same on every machine. Hidden entries
 * (.name) and files with other extensions are ignored; so are folders inside a class.
 *
 * Images are decoded with stb_image (Debian's libstb-dev). All of them must have the
 * width and height of the first training image; the number of channels is taken from it
 * too (grey or grey + alpha: 1, colour with or without alpha: 3) and every image is
 * converted to it. Pixels become floats in [0, 1], stored [C, H, W] (planar), as the
 * other data sets are. Decoding runs on all OpenMP threads; a broken file is reported
 * the same way whatever the thread count: the first one in data set order.
 *
 * Every problem is the user's to fix: fatal() with the path and what is wrong. */
#include "data/dataset.h"

#include "core/check.h"

#ifndef HAVE_STB

void dataset_load_image_folder(const char *root, Dataset *train, Dataset *test) {
    (void)root, (void)train, (void)test;
    fatal("--dataset folder: built without stb_image: sudo apt-get install libstb-dev (or sudo "
          "make deps) and rebuild");
}

#else

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* Only the formats we accept by extension; the user-facing failure strings. */
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_PNM
#define STBI_ONLY_TGA
#define STBI_ONLY_GIF
#define STBI_FAILURE_USERMSG
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#define PATH_CAP 4096
#define MSG_CAP (3 * PATH_CAP)
#define MAX_CLASSES 255 /* labels are uint8_t */
#define MIN_CLASSES 2
#define MAX_IMAGES (INT_MAX / 2)
#define LAYOUT "expected ROOT/train/<class>/*.png and ROOT/test/<class>/*.png, as for " \
               "torchvision's ImageFolder"
#define EXTENSIONS ".png, .jpg, .jpeg, .bmp, .pgm, .ppm, .tga, .gif"

static const char *const IMAGE_EXT[] = {"png", "jpg", "jpeg", "bmp", "pgm", "ppm", "tga", "gif"};

/* A growing list of strings, each owned by the list. */
typedef struct {
    char **v;
    int n, cap;
} Names;

typedef struct {
    char dir[PATH_CAP]; /* ROOT/train or ROOT/test */
    Names classes;      /* class folder names, sorted */
    Names *files;       /* files[k]: full paths of class k's images, sorted */
    int count;          /* images in all classes */
} Split;

typedef struct {
    int channels, height, width;
    const char *first; /* the image these were taken from, for the error messages */
} Shape;

static void join(char *out, const char *dir, const char *name) {
    int n = snprintf(out, PATH_CAP, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_CAP) fatal("path too long: %s/%s", dir, name);
}

static void names_push(Names *s, const char *name) {
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

static void names_free(Names *s) {
    for (int i = 0; i < s->n; i++) xfree(s->v[i]);
    xfree(s->v);
    memset(s, 0, sizeof *s);
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_sort(Names *s) {
    if (s->n > 1) qsort(s->v, (size_t)s->n, sizeof *s->v, compare_names);
}

/* "a, b, c" (ending in "..." when it does not fit in cap >= 8 bytes), for messages. */
static void names_join(const Names *s, char *out, size_t cap) {
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
 * files (full paths); *others counts the rest. Symbolic links are followed. */
static void list_dir(const char *dir, Names *dirs, Names *files, int *others) {
    DIR *d = opendir(dir);
    if (!d) fatal("cannot open the folder %s: %s", dir, strerror(errno));
    char path[PATH_CAP];
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue; /* hidden, and . and .. */
        join(path, dir, e->d_name);
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
static void list_classes(const char *root, const char *split, bool is_train, Split *s) {
    memset(s, 0, sizeof *s);
    join(s->dir, root, split);
    need_dir(s->dir, is_train ? "the training images, one subfolder per class"
                              : "the test images, one subfolder per class");
    Names loose = {0};
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

static _Noreturn void class_mismatch(const Split *tr, const Split *te, const char *name,
                                     bool in_train) {
    char a[1024], b[1024];
    names_join(&tr->classes, a, sizeof a);
    names_join(&te->classes, b, sizeof b);
    fatal("class folder \"%s\" is in %s but not in %s: train/ and test/ must have the same "
          "class folders (%s has: %s; %s has: %s)", name, in_train ? tr->dir : te->dir,
          in_train ? te->dir : tr->dir, tr->dir, a, te->dir, b);
}

static void compare_classes(const Split *tr, const Split *te) {
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
static void list_files(Split *s) {
    s->files = xcalloc((size_t)s->classes.n, sizeof *s->files);
    char dir[PATH_CAP];
    for (int k = 0; k < s->classes.n; k++) {
        join(dir, s->dir, s->classes.v[k]);
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

static void split_free(Split *s) {
    for (int k = 0; s->files && k < s->classes.n; k++) names_free(&s->files[k]);
    xfree(s->files);
    names_free(&s->classes);
}

static const char *stb_reason(void) {
    const char *r = stbi_failure_reason();
    return r && r[0] ? r : "unknown reason";
}

/* ------------------------------------------------------------ a guard for stb_image 2.27
 * A JPEG whose DHT segment declares more than 256 Huffman codes makes stb_image 2.27
 * (Debian's libstb-dev 0.0~git20220908) write past its tables: nothings/stb#1289, fixed
 * upstream by refusing such a segment. A corrupt file must give a message, not corrupt
 * memory, so every DHT segment that stb_image could read is checked before it sees the
 * file: the segments before the first scan one after the other, as stb_image reads them,
 * then every 0xFF 0xC4 after it (scan data never holds one: there 0xFF is followed by 0
 * or a restart marker). */

static unsigned byte_at(const uint8_t *b, size_t n, size_t at) {
    return at < n ? b[at] : 0; /* stb_image reads zeros past the end */
}

/* Whether the DHT segment whose length field is at b[at] declares a table of more than
 * 256 codes; *end: where the segment ends. */
static bool dht_too_many(const uint8_t *b, size_t n, size_t at, size_t *end) {
    long left = (long)(byte_at(b, n, at) << 8 | byte_at(b, n, at + 1)) - 2;
    at += 2;
    while (left > 0) {
        unsigned q = byte_at(b, n, at++);
        if ((q >> 4) > 1 || (q & 15) > 3) break; /* stb_image stops: "bad DHT header" */
        unsigned codes = 0;
        for (int i = 0; i < 16; i++) codes += byte_at(b, n, at++);
        if (codes > 256) return true;
        at += codes;
        left -= 17 + (long)codes;
    }
    *end = at;
    return false;
}

/* Whether stb_image would take b[0..n) for a JPEG and meet a table it cannot hold. */
static bool jpeg_bad_dht(const uint8_t *b, size_t n) {
    size_t at = 0;
    if (byte_at(b, n, at++) != 0xFF) return false;
    unsigned m;
    while ((m = byte_at(b, n, at++)) == 0xFF) continue;
    if (m != 0xD8) return false; /* no SOI: not a JPEG to stb_image */
    for (;;) {                   /* the segments before the first scan */
        while (at < n && b[at] != 0xFF) at++;
        while (at < n && b[at] == 0xFF) at++;
        if (at >= n) return false;
        m = b[at++];
        if (m == 0xDA) break;          /* SOS: the first scan */
        if (m == 0xD9) return false;   /* EOI */
        if (m == 0xC4) {
            if (dht_too_many(b, n, at, &at)) return true;
        } else if (m != 0x01 && !(m >= 0xD0 && m <= 0xD8)) {
            at += byte_at(b, n, at) << 8 | byte_at(b, n, at + 1); /* a segment's length */
        }
    }
    for (size_t end; at + 1 < n; at++)
        if (b[at] == 0xFF && b[at + 1] == 0xC4 && dht_too_many(b, n, at + 2, &end)) return true;
    return false;
}

/* ------------------------------------------------------------ reading images */

/* The bytes of path (free() them), checked by the guard above; NULL with a message in
 * msg when they cannot be had. Called from OpenMP threads, so it must not exit. */
static uint8_t *read_bytes(const char *path, int *len, char *msg, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, cap, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || st.st_size < 0 || st.st_size > INT_MAX) {
        snprintf(msg, cap, "%s: too large for an image (%lld bytes)", path,
                 (long long)st.st_size);
        fclose(f);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *b = malloc(size ? size : 1);
    if (!b) {
        snprintf(msg, cap, "out of memory reading %s (%zu bytes)", path, size);
        fclose(f);
        return NULL;
    }
    size_t got = fread(b, 1, size, f);
    bool error = ferror(f) != 0;
    fclose(f);
    if (got != size || error) {
        snprintf(msg, cap, "cannot read %s: %s", path,
                 error ? strerror(errno) : "the file changed while being read");
        free(b);
        return NULL;
    }
    if (jpeg_bad_dht(b, size)) {
        snprintf(msg, cap, "%s: cannot read the image (corrupt JPEG: a Huffman table with more "
                 "than 256 codes): the file is corrupt, truncated or not an image", path);
        free(b);
        return NULL;
    }
    *len = (int)size;
    return b;
}

/* Width, height and channels of the first training image. */
static void read_shape(const char *path, Shape *sh) {
    char msg[MSG_CAP];
    int len = 0;
    uint8_t *b = read_bytes(path, &len, msg, sizeof msg);
    if (!b) fatal("%s", msg);
    int w = 0, h = 0, comp = 0;
    int ok = stbi_info_from_memory(b, len, &w, &h, &comp);
    free(b);
    if (!ok)
        fatal("%s: cannot read the image (stb_image: %s): the file is corrupt, truncated or not "
              "an image", path, stb_reason());
    if (w < 1 || h < 1) fatal("%s: the image has no pixels (%dx%d)", path, w, h);
    sh->channels = comp <= 2 ? 1 : 3; /* grey (+ alpha) or colour (+ alpha) */
    sh->width = w;
    sh->height = h;
    sh->first = path;
}

/* Decodes one image into dst [C, H, W]; on failure writes the message into msg and
 * returns false (called from OpenMP threads, so it must not exit). */
static bool decode(const char *path, const Shape *sh, float *dst, char *msg, size_t cap) {
    int len = 0;
    uint8_t *b = read_bytes(path, &len, msg, cap);
    if (!b) return false;
    int w = 0, h = 0, comp = 0, c = sh->channels;
    stbi_uc *px = stbi_load_from_memory(b, len, &w, &h, &comp, c);
    free(b);
    if (!px) {
        snprintf(msg, cap, "%s: cannot read the image (stb_image: %s): the file is corrupt, "
                 "truncated or not an image", path, stb_reason());
        return false;
    }
    if (w != sh->width || h != sh->height) {
        stbi_image_free(px);
        snprintf(msg, cap, "%s is %dx%d pixels (width x height) but %s, the first image, is "
                 "%dx%d: all images must have the same size; resize your images to one size "
                 "first (for example with ImageMagick: mogrify -resize %dx%d! FILES)", path, w, h,
                 sh->first, sh->width, sh->height, sh->width, sh->height);
        return false;
    }
    size_t plane = (size_t)w * (size_t)h;
    for (int ch = 0; ch < c; ch++) /* interleaved [H, W, C] -> planar [C, H, W] */
        for (size_t p = 0; p < plane; p++)
            dst[(size_t)ch * plane + p] = (float)px[p * (size_t)c + (size_t)ch] / 255.0f;
    stbi_image_free(px);
    return true;
}

static void load_split(const Split *s, const Shape *sh, const char *root, Dataset *d) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "folder");
    snprintf(d->source, sizeof d->source, "%s", root);
    d->count = s->count;
    d->channels = sh->channels;
    d->height = sh->height;
    d->width = sh->width;
    d->num_classes = s->classes.n;
    size_t per = (size_t)sh->channels * (size_t)sh->height * (size_t)sh->width;
    if (per > SIZE_MAX / sizeof(float) / (size_t)s->count)
        fatal("%s: %d images of %dx%dx%d are too many to hold in memory", s->dir, s->count,
              sh->channels, sh->height, sh->width);
    d->images = xmalloc((size_t)s->count * per * sizeof(float));
    d->labels = xmalloc((size_t)s->count);
    const char **paths = xmalloc((size_t)s->count * sizeof *paths);
    int at = 0;
    for (int k = 0; k < s->classes.n; k++)
        for (int i = 0; i < s->files[k].n; i++, at++) {
            paths[at] = s->files[k].v[i];
            d->labels[at] = (uint8_t)k;
        }

    int bad = s->count; /* the first failing image, in data set order */
    char *why = xmalloc(MSG_CAP);
    why[0] = '\0';
    const int count = s->count;
    float *images = d->images;
#pragma omp parallel
    {
        char msg[MSG_CAP];
#pragma omp for schedule(dynamic, 8)
        for (int i = 0; i < count; i++) {
            int first_bad;
#pragma omp atomic read
            first_bad = bad;
            if (i > first_bad) continue; /* a file before this one already failed */
            if (decode(paths[i], sh, images + (size_t)i * per, msg, sizeof msg)) continue;
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

void dataset_load_image_folder(const char *root, Dataset *train, Dataset *test) {
    CHECK(root && train && test, "dataset_load_image_folder needs a root and two Datasets");
    char base[PATH_CAP];
    if (snprintf(base, sizeof base, "%s", root) >= PATH_CAP) fatal("path too long: %s", root);
    size_t n = strlen(base);
    while (n > 1 && base[n - 1] == '/') base[--n] = '\0'; /* ROOT/ -> ROOT */
    if (n == 0) fatal("--dataset folder: the root directory is an empty string");
    need_dir(base, "the root of the image folder data set");

    Split tr, te;
    list_classes(base, "train", true, &tr);
    list_classes(base, "test", false, &te);
    compare_classes(&tr, &te);
    list_files(&tr);
    list_files(&te);

    Shape sh;
    read_shape(tr.files[0].v[0], &sh);
    load_split(&tr, &sh, base, train);
    load_split(&te, &sh, base, test);
    split_free(&tr);
    split_free(&te);
}

#endif /* HAVE_STB */
