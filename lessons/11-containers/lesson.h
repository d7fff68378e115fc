/* Lesson 11: the course in a container image. Most TODOs are in the recipe
 * (image.conf), the binds (binds.sh) and the batch script (containers.sbatch); this
 * program is the last one: it runs lesson 01 for a few steps outside the image and
 * inside it, and says whether both end with the same parameters. */
#ifndef LESSON11_H
#define LESSON11_H

#include <stdbool.h>
#include <stdint.h>

#include "core/todo.h"

#define LESSON_DIR "lessons/11-containers"
#define TODO_STOP(id) todo_stop(id, LESSON_DIR, __func__)

/* What lesson_compare_digests found. */
typedef enum {
    DIGESTS_SAME = 0,      /* both outputs end with the same parameter digest */
    DIGESTS_DIFFERENT = 1, /* both have one, and they differ */
    DIGESTS_MISSING = 2,   /* one output (or both) has no digest line */
} DigestVerdict;

/* TODO 11.6 (same.c): the digest of the last line "parameter digest: <16 hex digits>"
 * in a program's output, into *digest; false (and *digest untouched) when there is no
 * such line. */
bool lesson_find_digest(const char *output, uint64_t *digest);

/* TODO 11.6 (same.c): the verdict on the two outputs, and the digests found (those not
 * found are left untouched). */
DigestVerdict lesson_compare_digests(const char *outside, const char *inside, uint64_t *outside_digest,
                                     uint64_t *inside_digest);

#endif
