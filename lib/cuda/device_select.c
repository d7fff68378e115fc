/* Which GPU a process uses, and the one message when there is none. Plain host
 * code, in every build. */
#include "core/check.h"
#include "device.h"

int cuda_pick_device(int local_rank, int count) {
    CHECK(count >= 1 && local_rank >= 0, "cuda_pick_device(%d, %d)", local_rank, count);
    return local_rank % count;
}

void cuda_require(void) {
    char why[512];
    if (!cuda_init(why, sizeof why))
        fatal("--device cuda: %s (or run with --device cpu)", why);
}
