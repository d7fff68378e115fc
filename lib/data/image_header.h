/* What an image file's header declares, checked before stb_image decodes it.
 *
 * stb_image 2.27 decodes TGA, BMP and PNM files whose pixels are missing without an
 * error (zeros, or memory never written), JPEG scans that end early likewise, and
 * allocates what a header declares before it reads a pixel. So the header of each format
 * it reads is parsed here as stb_image parses it, and refused when it declares no pixels,
 * more than a cap, or more pixels than the file can hold:
 *
 *   TGA   18-byte header, ID, palette, then width x height pixels of ceil(bits / 8)
 *         bytes; run-length encoded: at least one packet (1 byte + 1 pixel) per 128 pixels
 *   BMP   rows of ceil(width x bits / 32) x 4 bytes from the declared pixel offset
 *   PNM   (P5, P6) width x height x channels samples of 1 or 2 bytes after the header
 *   PNG   compressed: deflate makes at most 1032 bytes of one, so the IDAT chunks must
 *         hold 1/1032 of the pixel bytes (stb_image itself refuses pixel data that ends)
 *   JPEG  compressed: every 8x8 block costs at least one bit (its DC code)
 *   GIF   LZW allows no useful bound: the cap only
 *
 * Pure C on bytes in memory: no stb_image, no exit (OpenMP threads call it). */
#ifndef DATA_IMAGE_HEADER_H
#define DATA_IMAGE_HEADER_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    IMAGE_UNKNOWN, /* no header stb_image would take: left to stb_image to refuse */
    IMAGE_PNG,
    IMAGE_BMP,
    IMAGE_GIF,
    IMAGE_JPEG,
    IMAGE_PNM,
    IMAGE_TGA,
} ImageFormat;

typedef struct {
    ImageFormat format;
    int64_t width, height; /* as declared (0 x 0 when unknown) */
    uint64_t need, have;   /* bytes the pixels need at least, bytes there are (PNG: of IDAT) */
} ImageHeader;

const char *image_format_name(ImageFormat format); /* "PNG", ..., "unknown" */

/* Reads the header of b[0..n) and checks it against max_pixels (> 0) and n. 0 with h
 * filled, or -1 with a message naming path: no pixels, more than max_pixels pixels,
 * a file too short for its pixels, or a header stb_image would misread. */
int image_header_check(const uint8_t *b, size_t n, const char *path, int64_t max_pixels,
                       ImageHeader *h, char *msg, size_t cap);

#endif
