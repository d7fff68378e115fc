#include "data/text_utf8.h"

#include "data/text_lower_table.h"

int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    const unsigned char b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    int len;
    uint32_t c, min;
    if (b >= 0xc2 && b <= 0xdf) len = 2, c = b & 0x1f, min = 0x80;
    else if (b >= 0xe0 && b <= 0xef) len = 3, c = b & 0x0f, min = 0x800;
    else if (b >= 0xf0 && b <= 0xf4) len = 4, c = b & 0x07, min = 0x10000;
    else return 0; /* a continuation byte, 0xc0/0xc1 (always overlong), 0xf5 and up */
    if ((size_t)len > n) return 0;
    for (int k = 1; k < len; k++) {
        if ((s[k] & 0xc0) != 0x80) return 0;
        c = c << 6 | (s[k] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    *cp = c;
    return len;
}

int utf8_encode(uint32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xc0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xe0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (unsigned char)(0xf0 | cp >> 18);
    o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

bool utf8_is_space(uint32_t c) {
    if (c < 0x80) return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20);
    return c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
           c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

uint32_t utf8_lower(uint32_t c) {
    if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
    int lo = 0, hi = (int)(sizeof LOWER_RUNS / sizeof LOWER_RUNS[0]) - 1;
    while (lo <= hi) { /* the run whose range holds c, if any */
        const int mid = (lo + hi) / 2;
        const LowerRun *r = &LOWER_RUNS[mid];
        if (c < r->first) hi = mid - 1;
        else if (c > r->last) lo = mid + 1;
        else return (c - r->first) % r->stride == 0 ? (uint32_t)((int32_t)c + r->delta) : c;
    }
    return c;
}
