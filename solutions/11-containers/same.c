/* TODO 11.6: the same result inside the image as outside.
 *
 * The training is deterministic: the same program, seed and data give the same
 * parameters, bit for bit, and lesson 01 ends with their digest (a hash of every
 * parameter's bytes). If the image changes nothing that matters, the run inside ends
 * with the digest of the run outside. Compiled for another CPU (-march), linked
 * against another BLAS or given other data, it does not: then the digests say so
 * before any accuracy would. */
#include <stdio.h>
#include <string.h>

#include "lesson.h"

static const char DIGEST_LINE[] = "parameter digest: ";

bool lesson_find_digest(const char *output, uint64_t *digest) {
    bool found = false;
    for (const char *p = output; (p = strstr(p, DIGEST_LINE)); p++) {
        if (p != output && p[-1] != '\n') continue; /* only at the start of a line */
        const char *hex = p + strlen(DIGEST_LINE);
        if (strspn(hex, "0123456789abcdef") != 16 || (hex[16] != '\n' && hex[16] != '\0')) continue;
        unsigned long long v;
        if (sscanf(hex, "%16llx", &v) == 1) { /* the last one wins */
            *digest = v;
            found = true;
        }
    }
    return found;
}

DigestVerdict lesson_compare_digests(const char *outside, const char *inside, uint64_t *outside_digest,
                                     uint64_t *inside_digest) {
    const bool a = lesson_find_digest(outside, outside_digest);
    const bool b = lesson_find_digest(inside, inside_digest);
    if (!a || !b) return DIGESTS_MISSING;
    return *outside_digest == *inside_digest ? DIGESTS_SAME : DIGESTS_DIFFERENT;
}
