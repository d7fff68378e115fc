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


bool lesson_find_digest(const char *output, uint64_t *digest) {
    /* TODO 11.6: find the last line that starts with "parameter digest: " followed by
     * exactly 16 lowercase hex digits and the end of the line (or of the text), read
     * them as a number (sscanf with "%16llx" into an unsigned long long) into *digest
     * and return true; return false, and leave *digest untouched, when there is no
     * such line. A line where the text appears in the middle ("rank 0 parameter
     * digest: ...") does not count; the text's first line does (no '\n' before it). */
    (void)output, (void)digest;
    TODO_STOP("11.6");
}

DigestVerdict lesson_compare_digests(const char *outside, const char *inside, uint64_t *outside_digest,
                                     uint64_t *inside_digest) {
    /* TODO 11.6: find both digests (lesson_find_digest; look for both even when the
     * first is missing, so that the caller can print what was found), then return
     * DIGESTS_MISSING when either is missing, else DIGESTS_SAME or DIGESTS_DIFFERENT. */
    (void)outside, (void)inside, (void)outside_digest, (void)inside_digest;
    TODO_STOP("11.6");
}
