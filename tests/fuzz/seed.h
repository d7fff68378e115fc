/* Seeds for the fuzz targets (make fuzz, mk/fuzz.mk), from the unit tests: when
 * $FUZZ_SEED_DIR is set, the tests keep a copy of each input file they write in
 * $FUZZ_SEED_DIR/<kind>/ (kind: idx, idx_gz, cifar10, image, ckpt, text), named by a hash of its
 * bytes (the same file once). Unset, nothing happens. Failures are silent: seeds are
 * a help, never part of what a test checks. */
#ifndef TESTS_FUZZ_SEED_H
#define TESTS_FUZZ_SEED_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/fs.h"

#define FUZZ_SEED_MAX_BYTES ((size_t)1 << 20) /* larger inputs only slow a fuzzer down */

static inline void fuzz_seed_save(const char *kind, const void *bytes, size_t len) {
    const char *root = getenv("FUZZ_SEED_DIR");
    if (!root || !*root || len > FUZZ_SEED_MAX_BYTES) return;
    char dir[FS_PATH_MAX], name[32], path[FS_PATH_MAX], msg[FS_MSG_MAX];
    if (fs_join(dir, sizeof dir, root, kind) != 0 || fs_mkdir_p(dir, 0755, msg, sizeof msg) != 0)
        return;
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ ((const uint8_t *)bytes)[i]) * 0x100000001b3ULL;
    snprintf(name, sizeof name, "%016llx", (unsigned long long)h);
    if (fs_join(path, sizeof path, dir, name) != 0) return;
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(bytes, 1, len, f);
    fclose(f);
}

/* The same for a file already written. */
static inline void fuzz_seed_save_file(const char *kind, const char *path) {
    if (!getenv("FUZZ_SEED_DIR")) return;
    uint8_t *bytes;
    size_t len;
    char msg[FS_MSG_MAX];
    if (fs_read_file(path, FUZZ_SEED_MAX_BYTES, &bytes, &len, msg, sizeof msg) != 0) return;
    fuzz_seed_save(kind, bytes, len);
    free(bytes);
}

#endif
