/* The container image a program runs in: what `make image` wrote into the image's
 * /etc/dl-course-image (tools/image/build.sh), read once. Outside such an image there
 * is none, and nothing that records it (a checkpoint's metadata, the first line of a
 * --metrics file) changes.
 *
 *   const ImageInfo *im = image_info();
 *   if (im) printf("image %s, course %s\n", im->digest, im->commit);
 */
#ifndef CORE_IMAGE_INFO_H
#define CORE_IMAGE_INFO_H

#include <stdint.h>

#define IMAGE_INFO_PATH "/etc/dl-course-image"

typedef struct {
    char digest[80];  /* "sha256:<64 hex digits>" (tools/image/digest.sh) */
    char commit[64];  /* the course's git commit it was built from ("+edits" when dirty) */
    uint64_t digest64; /* its first 16 hex digits as a number: a checkpoint's scalar */
} ImageInfo;

/* NULL outside an image. COURSE_IMAGE_INFO, when set, names the file instead of
 * IMAGE_INFO_PATH (tests; an empty value: no image). A file without a well-formed
 * digest line counts as no image. */
const ImageInfo *image_info(void);

#endif
