/* What the launcher (mpirun, srun, torchrun, mpiexec) tells a process about its place
 * in the job, read from the environment. No communication. (The local rank alone, as
 * the CUDA backend reads it to pick its GPU, is core/envvars.h's env_local_rank.) */
#ifndef DIST_LAUNCHER_H
#define DIST_LAUNCHER_H

#include <stdbool.h>

typedef struct {
    int rank, world_size;        /* 0 and 1 when no launcher is seen */
    int local_rank, local_size;  /* on this node (local_size 0: not said) */
    int nodes;                   /* nodes of the job (0: not said) */
    bool by_mpi;                 /* started by an MPI launcher: MPI_Init will work */
    char name[32];               /* "mpirun", "srun --mpi=pmix", "srun", "torchrun-style", "none" */
    char master_addr[256];       /* MASTER_ADDR, else the first node of Slurm's node list */
    int master_port;             /* MASTER_PORT, else a port made from the job id; 0: none */
} Launch;

/* Reads the environment: Open MPI's OMPI_COMM_WORLD_* (mpirun), PMIx (srun --mpi=pmix),
 * Slurm's SLURM_PROCID / SLURM_STEP_NUM_TASKS / SLURM_LOCALID (a job step started by
 * srun; a batch script alone is not a step), torchrun's RANK / WORLD_SIZE / LOCAL_RANK,
 * in that order. A malformed or inconsistent value is a user error naming the variable. */
Launch launcher_read(void);

/* The first host of a Slurm node list ("gpu[003-008,011],cpu01" -> "gpu003"), as
 * `scontrol show hostnames | head -1` gives it. False when the list is malformed. */
bool launcher_first_node(const char *nodelist, char *out, int cap);

#endif
