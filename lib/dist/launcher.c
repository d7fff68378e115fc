#include "launcher.h"

#include <errno.h>
#include <stdlib.h>

#include "core/check.h"

int launcher_local_rank(void) {
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
