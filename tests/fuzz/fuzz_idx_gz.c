/* libFuzzer target: the input is the contents of an IDX file; it is gzip-compressed here
 * (so every mutation is a valid gzip stream of fuzzed contents) in one of four ways,
 * chosen by the input's length: one member; two members split in the middle; one
 * member and 3 bytes of junk after it; one member and 4 zero bytes after it. Then as
 * fuzz_idx. Seeds: the uncompressed IDX files the unit tests write. */
#include "fuzz/idx_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifdef HAVE_ZLIB
/* Appends one gzip member of in[0..n) to out (room: cap), returns the new length. */
static size_t gzip_member(const uint8_t *in, size_t n, uint8_t *out, size_t at, size_t cap) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = out + at;
    z.avail_out = (uInt)(cap - at);
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
    at += z.total_out;
    deflateEnd(&z);
    return at;
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
#ifdef HAVE_ZLIB
    if (size > (1u << 24)) return 0;
    size_t cap = 2 * (size_t)compressBound((uLong)size) + 64, len = 0;
    uint8_t *gz = malloc(cap);
    if (!gz) abort();
    int mode = (int)(size % 4);
    if (mode == 1) {
        len = gzip_member(data, size / 2, gz, 0, cap);
        len = gzip_member(data + size / 2, size - size / 2, gz, len, cap);
    } else {
        len = gzip_member(data, size, gz, 0, cap);
        if (mode == 2) memcpy(gz + len, "JNK", 3), len += 3;
        if (mode == 3) memset(gz + len, 0, 4), len += 4;
    }
    fuzz_idx_file(gz, len);
    free(gz);
#else
    (void)data, (void)size;
#endif
    return 0;
}
