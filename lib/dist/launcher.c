#include "launcher.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/envvars.h"

bool launcher_first_node(const char *list, char *out, int cap) {
    /* the first entry: up to a ',' outside brackets */
    int n = 0, depth = 0;
    for (; list[n] && !(list[n] == ',' && depth == 0); n++) {
        if (list[n] == '[') depth++;
        if (list[n] == ']' && --depth < 0) return false;
    }
    if (n == 0 || depth != 0) return false;
    const char *open = memchr(list, '[', (size_t)n);
    int len;
    if (!open) {
        len = snprintf(out, (size_t)cap, "%.*s", n, list);
    } else { /* prefix, then the first number of the range as written (zero padding kept) */
        const char *d = open + 1;
        int digits = 0;
        while (isdigit((unsigned char)d[digits])) digits++;
        if (digits == 0) return false;
        const char *close = memchr(open, ']', (size_t)(list + n - open));
        len = snprintf(out, (size_t)cap, "%.*s%.*s%.*s", (int)(open - list), list, digits, d,
                       (int)(list + n - close - 1), close + 1);
    }
    return len > 0 && len < cap;
}

/* MASTER_ADDR and MASTER_PORT, else the first node of the job and a port from its id
 * (29500 + job id mod 1000, as many sites' torchrun recipes do, so that two jobs on
 * one node rarely collide). */
static void master(Launch *l) {
    const char *addr = getenv("MASTER_ADDR");
    const char *nodes = getenv("SLURM_STEP_NODELIST");
    if (!nodes || !*nodes) nodes = getenv("SLURM_JOB_NODELIST");
    if (addr && *addr) snprintf(l->master_addr, sizeof l->master_addr, "%s", addr);
    else if (nodes && *nodes && !launcher_first_node(nodes, l->master_addr, sizeof l->master_addr))
        fatal("cannot read the first node of the Slurm node list \"%s\": set MASTER_ADDR", nodes);
    int job = env_int("SLURM_JOB_ID", 0, 2147483647, -1);
    l->master_port = env_int("MASTER_PORT", 1, 65535, job >= 0 ? 29500 + job % 1000 : 0);
}

Launch launcher_read(void) {
    Launch l = {.rank = 0, .world_size = 1, .local_rank = 0};
    snprintf(l.name, sizeof l.name, "none");
    if (env_is_set("OMPI_COMM_WORLD_SIZE")) {
        l.world_size = env_int("OMPI_COMM_WORLD_SIZE", 1, 1 << 20, 1);
        l.rank = env_int("OMPI_COMM_WORLD_RANK", 0, l.world_size - 1, 0);
        l.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0, l.world_size - 1, 0);
        l.local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1, l.world_size, 0);
        l.by_mpi = true;
        snprintf(l.name, sizeof l.name, "mpirun");
    } else if (env_is_set("SLURM_STEP_NUM_TASKS") && env_is_set("SLURM_PROCID")) {
        l.world_size = env_int("SLURM_STEP_NUM_TASKS", 1, 1 << 20, 1);
        l.rank = env_int("SLURM_PROCID", 0, l.world_size - 1, 0);
        l.local_rank = env_int("SLURM_LOCALID", 0, l.world_size - 1, 0);
        l.nodes = env_int("SLURM_STEP_NUM_NODES", 1, l.world_size, 0);
        l.by_mpi = env_is_set("PMIX_RANK") || env_is_set("PMI_RANK");
        snprintf(l.name, sizeof l.name, l.by_mpi ? "srun --mpi=pmix" : "srun");
    } else if (env_is_set("WORLD_SIZE") || env_is_set("RANK")) {
        if (!env_is_set("WORLD_SIZE") || !env_is_set("RANK"))
            fatal("RANK and WORLD_SIZE must be set together (torchrun style), or neither");
        l.world_size = env_int("WORLD_SIZE", 1, 1 << 20, 1);
        l.rank = env_int("RANK", 0, l.world_size - 1, 0);
        l.local_rank = env_int("LOCAL_RANK", 0, l.world_size - 1, 0);
        l.local_size = env_int("LOCAL_WORLD_SIZE", 1, l.world_size, 0);
        snprintf(l.name, sizeof l.name, "torchrun-style");
    }
    master(&l);
    return l;
}
