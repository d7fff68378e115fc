#include "envvars.h"

#include <errno.h>
#include <stdlib.h>

#include "check.h"

bool env_is_set(const char *name) {
    const char *v = getenv(name);
    return v && *v;
}

int env_int(const char *name, int lo, int hi, int fallback) {
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end;
    errno = 0;
    long r = strtol(v, &end, 10);
    if (errno || *end || r < lo || r > hi)
        fatal("%s=\"%s\" is not a number from %d to %d: unset it or fix the job script", name, v,
              lo, hi);
    return (int)r;
}

int env_local_rank(void) {
    static const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK",
                                 "MPI_LOCALRANKID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (env_is_set(vars[i])) return env_int(vars[i], 0, 65535, 0);
    return 0;
}
