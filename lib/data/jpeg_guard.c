#include "data/jpeg_guard.h"

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

bool jpeg_has_oversized_huffman_table(const uint8_t *b, size_t n) {
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
        if (m == 0xDA) break;        /* SOS: the first scan */
        if (m == 0xD9) return false; /* EOI */
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
