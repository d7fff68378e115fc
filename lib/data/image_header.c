#include "data/image_header.h"

#include <stdbool.h>
#include <stdio.h>

#include "core/check.h"
#include <string.h>

#define STB_MAX_SIDE ((int64_t)1 << 24) /* stb_image's STBI_MAX_DIMENSIONS */
#define DEFLATE_MAX_RATIO 1032          /* bytes out of one byte in, at most */

/* ------------------------------------------------------------ reading bytes as stb_image does:
 * zeros past the end */

static unsigned u8(const uint8_t *b, size_t n, size_t at) { return at < n ? b[at] : 0; }
static unsigned le16(const uint8_t *b, size_t n, size_t at) {
    return u8(b, n, at) | u8(b, n, at + 1) << 8;
}
static unsigned be16(const uint8_t *b, size_t n, size_t at) {
    return u8(b, n, at) << 8 | u8(b, n, at + 1);
}
static uint32_t le32(const uint8_t *b, size_t n, size_t at) {
    return (uint32_t)le16(b, n, at) | (uint32_t)le16(b, n, at + 2) << 16;
}
static uint32_t be32(const uint8_t *b, size_t n, size_t at) {
    return (uint32_t)be16(b, n, at) << 16 | (uint32_t)be16(b, n, at + 2);
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* Each parser fills h (format, width, height, need, have) and returns 0, or returns -1
 * with *why set to what stb_image would misread. They run only on headers whose magic
 * bytes stb_image would take for their format. */

/* ------------------------------------------------------------ PNG */

static bool is_png(const uint8_t *b, size_t n) {
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    return n >= 8 && memcmp(b, sig, 8) == 0;
}

static int parse_png(const uint8_t *b, size_t n, ImageHeader *h) {
    int channels = 0, depth = 0;
    bool seen_ihdr = false;
    uint64_t idat = 0;
    for (size_t at = 8; at + 8 <= n;) { /* chunks: length, type, data, CRC */
        uint32_t len = be32(b, n, at);
        const uint8_t *type = b + at + 4;
        size_t present = n - (at + 8) < len ? n - (at + 8) : len;
        if (!seen_ihdr && memcmp(type, "IHDR", 4) == 0) {
            seen_ihdr = true;
            h->width = be32(b, n, at + 8);
            h->height = be32(b, n, at + 12);
            depth = (int)u8(b, n, at + 16);
            static const int by_colour[7] = {1, 0, 3, 1, 2, 0, 4}; /* grey, -, RGB, index, ... */
            unsigned colour = u8(b, n, at + 17);
            channels = colour < 7 ? by_colour[colour] : 0;
        } else if (memcmp(type, "IDAT", 4) == 0) {
            idat += present;
        } else if (memcmp(type, "IEND", 4) == 0) {
            break;
        }
        if (len > n) break; /* past the end: no more chunks */
        at += 12 + (size_t)len;
    }
    if (!seen_ihdr) return 0; /* stb_image refuses it: "first not IHDR" */
    h->format = IMAGE_PNG;
    if (channels && (depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16) &&
        h->width <= STB_MAX_SIDE && h->height <= STB_MAX_SIDE) {
        /* the pixels alone, without the filter byte per row: a bound for interlaced too */
        uint64_t bits = (uint64_t)h->width * (uint64_t)h->height * (uint64_t)channels * depth;
        h->need = ceil_div(ceil_div(bits, 8), DEFLATE_MAX_RATIO);
    }
    h->have = idat;
    return 0;
}

/* ------------------------------------------------------------ BMP */

static bool is_bmp(const uint8_t *b, size_t n) {
    uint32_t hsz = le32(b, n, 14);
    return u8(b, n, 0) == 'B' && u8(b, n, 1) == 'M' &&
           (hsz == 12 || hsz == 40 || hsz == 56 || hsz == 108 || hsz == 124);
}

static int parse_bmp(const uint8_t *b, size_t n, ImageHeader *h, const char **why) {
    h->format = IMAGE_BMP;
    uint32_t offset = le32(b, n, 10), hsz = le32(b, n, 14);
    unsigned bpp;
    uint32_t compress = 0;
    if (hsz == 12) {
        h->width = le16(b, n, 18);
        h->height = le16(b, n, 20);
        bpp = le16(b, n, 24);
    } else {
        h->width = (int32_t)le32(b, n, 18);
        int64_t rows = (int32_t)le32(b, n, 22); /* negative: stored top row first */
        h->height = rows < 0 ? -rows : rows;
        bpp = le16(b, n, 28);
        compress = le32(b, n, 30);
    }
    if (compress != 0 && compress != 3) return 0; /* RLE, JPEG, PNG: stb_image refuses them */
    bool masks = compress == 3 && (hsz == 40 || hsz == 56) && (bpp == 16 || bpp == 32);
    uint64_t header_end = 14 + (uint64_t)hsz + (masks ? 12 : 0);
    uint64_t palette_entry = bpp < 16 ? (hsz == 12 ? 3 : 4) : 0;
    if ((uint64_t)offset < header_end + palette_entry) {
        /* stb_image would take the pixels from the header, or skip to the end of the file */
        *why = bpp < 16 ? "its pixel data starts before the end of its header and palette"
                        : "its pixel data starts inside its header";
        return -1;
    }
    if (h->width < 1 || h->height < 1 || h->width > STB_MAX_SIDE || h->height > STB_MAX_SIDE)
        return 0; /* refused below, or by stb_image */
    uint64_t row_bits = (uint64_t)h->width * bpp;
    uint64_t stride = ceil_div(row_bits, 32) * 4; /* rows are padded to 4 bytes */
    /* the last row's padding is not read */
    h->need = offset + stride * (uint64_t)(h->height - 1) + ceil_div(row_bits, 8);
    h->have = n;
    return 0;
}

/* ------------------------------------------------------------ GIF */

static bool is_gif(const uint8_t *b, size_t n) {
    return n >= 6 && memcmp(b, "GIF8", 4) == 0 && (b[4] == '7' || b[4] == '9') && b[5] == 'a';
}

static int parse_gif(const uint8_t *b, size_t n, ImageHeader *h) {
    h->format = IMAGE_GIF;
    h->width = le16(b, n, 6);
    h->height = le16(b, n, 8);
    return 0; /* no bound on LZW: need = have = 0 */
}

/* ------------------------------------------------------------ JPEG */

/* FF (FF...) D8: what stb_image takes for the start of a JPEG. *at: after it. */
static bool is_jpeg(const uint8_t *b, size_t n, size_t *at) {
    size_t i = 0;
    if (u8(b, n, i++) != 0xFF) return false;
    unsigned m;
    while ((m = u8(b, n, i++)) == 0xFF) continue; /* zeros past the end stop it */
    *at = i;
    return m == 0xD8;
}

/* The frame header (SOF0, SOF1 or SOF2: the ones stb_image decodes), found by walking
 * the segments before the first scan as stb_image does. */
static int parse_jpeg(const uint8_t *b, size_t n, size_t at, ImageHeader *h) {
    for (;;) {
        while (at < n && b[at] != 0xFF) at++; /* stb_image skips padding between segments */
        while (at < n && b[at] == 0xFF) at++;
        if (at >= n) return 0;
        unsigned m = b[at++];
        if (m == 0xC0 || m == 0xC1 || m == 0xC2) break;
        if (m == 0xDA || m == 0xD9) return 0; /* a scan or the end before the frame: refused */
        if (m != 0x01 && !(m >= 0xD0 && m <= 0xD8)) at += be16(b, n, at);
    }
    h->format = IMAGE_JPEG;
    h->height = be16(b, n, at + 3); /* after length (2) and precision (1) */
    h->width = be16(b, n, at + 5);
    uint64_t blocks = ceil_div((uint64_t)h->width, 8) * ceil_div((uint64_t)h->height, 8);
    h->need = ceil_div(blocks, 8); /* one bit per block, at least */
    h->have = n;
    return 0;
}

/* ------------------------------------------------------------ PNM (binary P5, P6) */

static bool is_pnm(const uint8_t *b, size_t n) {
    return n >= 2 && b[0] == 'P' && (b[1] == '5' || b[1] == '6');
}

/* stb_image's header reader: c is the current character, *at the next unread byte; the
 * end of the data is reached when *at == n (its "at_eof"). */
typedef struct {
    const uint8_t *b;
    size_t n, at;
    char c;
} PnmCursor;

static void pnm_next(PnmCursor *p) { p->c = (char)(p->at < p->n ? p->b[p->at++] : 0); }
static bool pnm_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static void pnm_skip_space(PnmCursor *p) {
    for (;;) {
        while (p->at < p->n && pnm_space(p->c)) pnm_next(p);
        if (p->at >= p->n || p->c != '#') break;
        while (p->at < p->n && p->c != '\n' && p->c != '\r') pnm_next(p);
    }
}

/* A decimal number; *big when it passes limit (stb_image's int would overflow). */
static int64_t pnm_number(PnmCursor *p, int64_t limit, bool *big) {
    int64_t v = 0;
    while (p->at < p->n && p->c >= '0' && p->c <= '9') {
        if (v <= limit) v = v * 10 + (p->c - '0');
        pnm_next(p);
    }
    if (v > limit) *big = true;
    return v;
}

static int parse_pnm(const uint8_t *b, size_t n, ImageHeader *h, const char **why) {
    h->format = IMAGE_PNM;
    int channels = b[1] == '6' ? 3 : 1;
    PnmCursor p = {b, n, 2, 0};
    pnm_next(&p);
    pnm_skip_space(&p);
    bool big = false;
    h->width = pnm_number(&p, STB_MAX_SIDE, &big);
    pnm_skip_space(&p);
    h->height = pnm_number(&p, STB_MAX_SIDE, &big);
    pnm_skip_space(&p);
    int64_t maxval = pnm_number(&p, 65535, &big);
    if (big) {
        *why = "a number in its header is too large (more than 2^24 pixels on a side, or a "
               "maximum value over 65535)";
        return -1;
    }
    uint64_t sample = maxval > 255 ? 2 : 1;
    h->need = p.at + (uint64_t)h->width * (uint64_t)h->height * (uint64_t)channels * sample;
    h->have = n;
    return 0;
}

/* ------------------------------------------------------------ TGA (no magic: last, as in stb_image) */

static bool tga_bits_ok(unsigned bits) {
    return bits == 8 || bits == 15 || bits == 16 || bits == 24 || bits == 32;
}

/* stb_image's own test, field by field. */
static bool is_tga(const uint8_t *b, size_t n) {
    unsigned colour_map = u8(b, n, 1), type = u8(b, n, 2);
    if (colour_map > 1) return false;
    if (colour_map == 1) {
        if ((type != 1 && type != 9) || !tga_bits_ok(u8(b, n, 7))) return false;
    } else if (type != 2 && type != 3 && type != 10 && type != 11) {
        return false;
    }
    unsigned bits = u8(b, n, 16);
    if (colour_map == 1 && bits != 8 && bits != 16) return false;
    return le16(b, n, 12) >= 1 && le16(b, n, 14) >= 1 && tga_bits_ok(bits);
}

static int parse_tga(const uint8_t *b, size_t n, ImageHeader *h) {
    h->format = IMAGE_TGA;
    bool indexed = u8(b, n, 1) == 1, rle = u8(b, n, 2) >= 8;
    h->width = le16(b, n, 12);
    h->height = le16(b, n, 14);
    uint64_t start = 18 + (uint64_t)u8(b, n, 0); /* header, then the image ID */
    if (indexed) /* stb_image skips "first entry" bytes, then reads the palette */
        start += le16(b, n, 3) + (uint64_t)le16(b, n, 5) * ceil_div(u8(b, n, 7), 8);
    uint64_t pixel = ceil_div(u8(b, n, 16), 8), pixels = (uint64_t)h->width * h->height;
    h->need = start + (rle ? ceil_div(pixels, 128) * (1 + pixel) : pixels * pixel);
    h->have = n;
    return 0;
}

/* ------------------------------------------------------------ the check */

const char *image_format_name(ImageFormat format) {
    static const char *const names[] = {"unknown", "PNG", "BMP", "GIF", "JPEG", "PNM", "TGA"};
    return (unsigned)format < sizeof names / sizeof *names ? names[format] : "unknown";
}

int image_header_check(const uint8_t *b, size_t n, const char *path, int64_t max_pixels,
                       ImageHeader *h, char *msg, size_t cap) {
    memset(h, 0, sizeof *h);
    const char *why = NULL;
    size_t jpeg_at = 0;
    int rc = 0;
    /* stb_image's order; the magic bytes of one format never start another */
    if (is_png(b, n)) rc = parse_png(b, n, h);
    else if (is_bmp(b, n)) rc = parse_bmp(b, n, h, &why);
    else if (is_gif(b, n)) rc = parse_gif(b, n, h);
    else if (is_jpeg(b, n, &jpeg_at)) rc = parse_jpeg(b, n, jpeg_at, h);
    else if (is_pnm(b, n)) rc = parse_pnm(b, n, h, &why);
    else if (is_tga(b, n)) rc = parse_tga(b, n, h);
    const char *format = image_format_name(h->format);
    if (rc != 0)
        return fail_msg(msg, cap, "%s: cannot read the image (corrupt %s: %s): the file is corrupt, "
                    "truncated or not an image", path, format, why);
    if (h->format == IMAGE_UNKNOWN) return 0;
    if (h->width < 1 || h->height < 1)
        return fail_msg(msg, cap, "%s: the image has no pixels (its %s header says %lldx%lld): the "
                    "file is corrupt", path, format, (long long)h->width, (long long)h->height);
    if (h->width > max_pixels / h->height)
        return fail_msg(msg, cap, "%s: the image is %lldx%lld pixels (width x height), more than the "
                    "limit of %lld pixels (--max-image-pixels): a corrupt header, or an image "
                    "too large to train on (resize it)", path, (long long)h->width,
                    (long long)h->height, (long long)max_pixels);
    if (h->have < h->need)
        return fail_msg(msg, cap, "%s: the file is too short for the image its header declares: a "
                    "%lldx%lld %s needs at least %llu bytes%s, the file has %llu: it is "
                    "truncated or corrupt", path, (long long)h->width, (long long)h->height,
                    format, (unsigned long long)h->need,
                    h->format == IMAGE_PNG ? " of compressed pixel data (IDAT)" : "",
                    (unsigned long long)h->have);
    return 0;
}
