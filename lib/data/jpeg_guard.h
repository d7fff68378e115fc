/* A guard for stb_image 2.27 (Debian's libstb-dev 0.0~git20220908): a JPEG whose DHT
 * segment declares more than 256 Huffman codes makes it write past its tables
 * (nothings/stb#1289, fixed upstream by refusing such a segment). A corrupt file must
 * give a message, not corrupt memory, so every file is checked here before stb_image
 * sees it. */
#ifndef DATA_JPEG_GUARD_H
#define DATA_JPEG_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether stb_image would take b[0..n) for a JPEG and meet a Huffman table of more than
 * 256 codes: the segments before the first scan one after the other, as stb_image reads
 * them, then every 0xFF 0xC4 after it (scan data never holds one: there 0xFF is followed
 * by 0 or a restart marker). */
bool jpeg_has_oversized_huffman_table(const uint8_t *b, size_t n);

#endif
