/* Which GPU a process uses, and the one message when there is none. Plain host
 * code, in every build. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/check.h"
#include "gpu.h"

int gpu_local_rank(void) {
    /* Open MPI, Slurm's srun, torchrun, then MPICH's Hydra (mpiexec) */
    static const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK",
                                 "MPI_LOCALRANKID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (!v || !*v) continue;
        char *end;
        errno = 0;
        long r = strtol(v, &end, 10);
        if (errno || *end || r < 0 || r > 65535)
            fatal("%s=\"%s\" is not a local rank (a number from 0): unset it or fix the job "
                  "script", vars[i], v);
        return (int)r;
    }
    return 0;
}

int gpu_pick_device(int local_rank, int count) {
    CHECK(count >= 1 && local_rank >= 0, "gpu_pick_device(%d, %d)", local_rank, count);
    return local_rank % count;
}

void gpu_require(void) {
    char why[512];
    if (!gpu_init(why, sizeof why))
        fatal("--device cuda: %s (or run with --device cpu)", why);
}
