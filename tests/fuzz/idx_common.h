/* What fuzz_idx and fuzz_idx_gz do with one IDX file (plain or gzip-compressed): parse it
 * as an image file and as a label file (dataset_parse_idx), each beside a partner file
 * made to match the count in its header, so the parser gets past the count comparison
 * into the data. Static functions for the two targets. */
#ifndef TESTS_FUZZ_IDX_COMMON_H
#define TESTS_FUZZ_IDX_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

#include "core/fs.h"
#include "data/dataset.h"

#define PARTNER_MAX 65536 /* data bytes in a partner file: the parser stops at them */

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* The first n bytes of the file's contents (inflated when it is gzip); how many there are. */
static size_t peek(const uint8_t *file, size_t len, uint8_t *out, size_t n) {
#ifdef HAVE_ZLIB
    if (len >= 2 && file[0] == 0x1f && file[1] == 0x8b) {
        z_stream z;
        memset(&z, 0, sizeof z);
        if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return 0;
        z.next_in = (Bytef *)(uintptr_t)file;
        z.avail_in = len > (1u << 30) ? (1u << 30) : (uInt)len;
        z.next_out = out;
        z.avail_out = (uInt)n;
        inflate(&z, Z_SYNC_FLUSH);
        size_t got = n - z.avail_out;
        inflateEnd(&z);
        return got;
    }
#endif
    size_t got = len < n ? len : n;
    memcpy(out, file, got);
    return got;
}

/* An IDX file of `count` examples: labels (magic 0x801), or 1x1 images (0x803). */
static uint8_t *partner(uint32_t count, int images, size_t *len) {
    size_t head = images ? 16 : 8, data = count < PARTNER_MAX ? count : PARTNER_MAX;
    uint8_t *b = malloc(head + data);
    if (!b) abort();
    put_be32(b, images ? 0x803 : 0x801);
    put_be32(b + 4, count);
    if (images) put_be32(b + 8, 1), put_be32(b + 12, 1);
    for (size_t i = 0; i < data; i++) b[head + i] = (uint8_t)(i % 10);
    *len = head + data;
    return b;
}

static void fuzz_idx_file(const uint8_t *file, size_t len) {
    uint8_t head[8];
    uint32_t count = 1;
    if (peek(file, len, head, 8) == 8)
        count = (uint32_t)head[4] << 24 | (uint32_t)head[5] << 16 | (uint32_t)head[6] << 8 | head[7];
    char msg[FS_MSG_MAX];
    Dataset d;
    for (int as_images = 0; as_images < 2; as_images++) {
        size_t plen;
        uint8_t *other = partner(count, !as_images, &plen);
        int rc = as_images ? dataset_parse_idx(file, len, "fuzz-images", other, plen, "partner",
                                               &d, msg, sizeof msg)
                           : dataset_parse_idx(other, plen, "partner", file, len, "fuzz-labels",
                                               &d, msg, sizeof msg);
        if (rc == 0) dataset_free(&d);
        else if (!msg[0]) abort(); /* an error must say what */
        free(other);
    }
}

#endif
