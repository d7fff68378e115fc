/* The files of an image-folder data set (lib/data/image_folder.c), found on disk:
 *
 *   ROOT/train/<class>/NAME.png  (or .jpg .jpeg .bmp .pgm .ppm .tga .gif, any case)
 *   ROOT/test/<class>/...
 *
 * The classes are the subfolders of ROOT/train sorted by strcmp (label = position in
 * that order); ROOT/test must have the same class folders. Files in a class folder are
 * taken in name order, so the data set is the same on every machine. Hidden entries
 * (.name) and files with other extensions are ignored; so are folders inside a class.
 * Symbolic links are followed. Every problem is the user's: fatal() naming the path. */
#ifndef DATA_IMAGE_WALK_H
#define DATA_IMAGE_WALK_H

#include "core/fs.h"

/* A growing list of strings, each owned by the list. */
typedef struct {
    char **v;
    int n, cap;
} ImageNames;

typedef struct {
    char dir[FS_PATH_MAX]; /* ROOT/train or ROOT/test */
    ImageNames classes;    /* class folder names, sorted */
    ImageNames *files;     /* files[k]: full paths of class k's images, sorted */
    int count;             /* images in all classes */
} ImageSplit;

/* Lists ROOT/train and ROOT/test (root without a trailing '/'); free with image_split_free. */
void image_walk(const char *root, ImageSplit *train, ImageSplit *test);
void image_split_free(ImageSplit *s);

#endif
