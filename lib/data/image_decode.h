/* One image file's bytes to floats, with stb_image (Debian's libstb-dev), after the checks
 * that stb_image 2.27 needs in front of it: the JPEG Huffman-table guard (jpeg_guard.h)
 * and the declared size against the file's length and a pixel cap (image_header.h).
 *
 *   ImageShape shape;
 *   if (image_read_shape(bytes, len, path, max_pixels, &shape, msg, cap) != 0) ...
 *   float *dst = ...;                  // [shape.channels, shape.height, shape.width]
 *   if (image_decode(bytes, len, path, max_pixels, &shape, path, dst, msg, cap) != 0) ...
 *
 * Pixels become floats in [0, 1], planar [C, H, W]; grey or grey + alpha is 1 channel,
 * colour with or without alpha 3. Errors are messages naming the file, never exits:
 * OpenMP threads and fuzz targets call these. Built without stb_image, both say so. */
#ifndef DATA_IMAGE_DECODE_H
#define DATA_IMAGE_DECODE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int channels, height, width;
} ImageShape;

/* The shape of the image in b[0..n) (nothing decoded). 0, or -1 and msg. */
int image_read_shape(const uint8_t *b, size_t n, const char *path, int64_t max_pixels,
                     ImageShape *shape, char *msg, size_t cap);

/* Decodes b[0..n) into dst as want->channels channels; the image must be want's width
 * and height (checked before decoding; `first`, the image want came from, is named when
 * it is not). 0, or -1 and msg. */
int image_decode(const uint8_t *b, size_t n, const char *path, int64_t max_pixels,
                 const ImageShape *want, const char *first, float *dst, char *msg, size_t cap);

#endif
