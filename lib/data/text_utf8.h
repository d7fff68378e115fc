/* UTF-8 as Python reads it, for the text tokenisers (lib/data/text_tokenize.c): decoding
 * as strictly as Python's "utf-8" codec, the whitespace that str.split() splits on, and
 * str.lower() of one code point (from the generated table text_lower_table.h). */
#ifndef DATA_TEXT_UTF8_H
#define DATA_TEXT_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The code point that starts at s[0] (n bytes available): its length in bytes (1-4), or
 * 0 when the bytes are not UTF-8 (a stray continuation byte, an overlong form, a
 * surrogate, beyond U+10FFFF, or cut short). */
int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* Writes cp as UTF-8 into out (4 bytes room); returns the length. */
int utf8_encode(uint32_t cp, char *out);
/* Python's str.isspace(): ASCII \t \n \v \f \r space, \x1c-\x1f, U+0085, U+00A0, U+1680,
 * U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000. */
bool utf8_is_space(uint32_t cp);
/* Python's chr(cp).lower() where it is one code point (all but U+0130). */
uint32_t utf8_lower(uint32_t cp);

#endif
