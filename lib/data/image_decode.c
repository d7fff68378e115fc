#include "data/image_decode.h"

#include <stdio.h>

#include "core/check.h"

#ifndef HAVE_STB

#define NO_STB "built without stb_image: sudo apt-get install libstb-dev (or sudo make deps) and rebuild"

int image_read_shape(const uint8_t *b, size_t n, const char *path, int64_t max_pixels,
                     ImageShape *shape, char *msg, size_t cap) {
    (void)b, (void)n, (void)max_pixels, (void)shape;
    return fail_msg(msg, cap, "%s: cannot read the image: " NO_STB, path);
}

int image_decode(const uint8_t *b, size_t n, const char *path, int64_t max_pixels,
                 const ImageShape *want, const char *first, float *dst, char *msg, size_t cap) {
    (void)b, (void)n, (void)max_pixels, (void)want, (void)first, (void)dst;
    return fail_msg(msg, cap, "%s: cannot read the image: " NO_STB, path);
}

#else

#include <limits.h>

#include "data/image_header.h"
#include "data/jpeg_guard.h"

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

static const char *stb_reason(void) {
    const char *r = stbi_failure_reason();
    return r && r[0] ? r : "unknown reason";
}

static int unreadable(char *msg, size_t cap, const char *path) {
    return fail_msg(msg, cap, "%s: cannot read the image (stb_image: %s): the file is corrupt, "
                "truncated or not an image", path, stb_reason());
}

/* Everything that must hold before stb_image decodes b: the guards, then stb_image's own
 * reading of the header, which must agree with ours. *w, *h, *comp: from stb_image. */
static int checked_info(const uint8_t *b, size_t n, const char *path, int64_t max_pixels,
                        int *w, int *h, int *comp, char *msg, size_t cap) {
    if (n > INT_MAX) return fail_msg(msg, cap, "%s: too large for an image (%zu bytes)", path, n);
    if (jpeg_has_oversized_huffman_table(b, n))
        return fail_msg(msg, cap, "%s: cannot read the image (corrupt JPEG: a Huffman table with "
                    "more than 256 codes): the file is corrupt, truncated or not an image", path);
    ImageHeader head;
    if (image_header_check(b, n, path, max_pixels, &head, msg, cap) != 0) return -1;
    if (!stbi_info_from_memory(b, (int)n, w, h, comp)) return unreadable(msg, cap, path);
    if (*w < 1 || *h < 1) return fail_msg(msg, cap, "%s: the image has no pixels (%dx%d)", path, *w, *h);
    if (head.format != IMAGE_UNKNOWN && (head.width != *w || head.height != *h))
        return fail_msg(msg, cap, "%s: cannot read the image (its %s header reads as %lldx%lld here "
                    "but %dx%d to stb_image): the file is corrupt", path,
                    image_format_name(head.format), (long long)head.width,
                    (long long)head.height, *w, *h);
    if (*w > max_pixels / *h) /* a header this file's checks do not know */
        return fail_msg(msg, cap, "%s: the image is %dx%d pixels (width x height), more than the "
                    "limit of %lld pixels (--max-image-pixels): a corrupt header, or an image "
                    "too large to train on (resize it)", path, *w, *h, (long long)max_pixels);
    return 0;
}

int image_read_shape(const uint8_t *b, size_t n, const char *path, int64_t max_pixels,
                     ImageShape *shape, char *msg, size_t cap) {
    int w, h, comp;
    if (checked_info(b, n, path, max_pixels, &w, &h, &comp, msg, cap) != 0) return -1;
    shape->channels = comp <= 2 ? 1 : 3; /* grey (+ alpha) or colour (+ alpha) */
    shape->width = w;
    shape->height = h;
    return 0;
}

static int wrong_size(char *msg, size_t cap, const char *path, int w, int h, const char *first,
                      const ImageShape *want) {
    return fail_msg(msg, cap, "%s is %dx%d pixels (width x height) but %s, the first image, is %dx%d: "
                "all images must have the same size; resize your images to one size first (for "
                "example with ImageMagick: mogrify -resize %dx%d! FILES)", path, w, h, first,
                want->width, want->height, want->width, want->height);
}

int image_decode(const uint8_t *b, size_t n, const char *path, int64_t max_pixels,
                 const ImageShape *want, const char *first, float *dst, char *msg, size_t cap) {
    int w, h, comp, c = want->channels;
    if (checked_info(b, n, path, max_pixels, &w, &h, &comp, msg, cap) != 0) return -1;
    if (w != want->width || h != want->height) return wrong_size(msg, cap, path, w, h, first, want);
    stbi_uc *px = stbi_load_from_memory(b, (int)n, &w, &h, &comp, c);
    if (!px) return unreadable(msg, cap, path);
    if (w != want->width || h != want->height) { /* stb_image's info and load disagree */
        stbi_image_free(px);
        return wrong_size(msg, cap, path, w, h, first, want);
    }
    size_t plane = (size_t)w * (size_t)h;
    for (int ch = 0; ch < c; ch++) /* interleaved [H, W, C] -> planar [C, H, W] */
        for (size_t p = 0; p < plane; p++)
            dst[(size_t)ch * plane + p] = (float)px[p * (size_t)c + (size_t)ch] / 255.0f;
    stbi_image_free(px);
    return 0;
}

#endif /* HAVE_STB */
