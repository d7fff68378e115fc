/* Numbers from environment variables, read the one way the library reads them: a
 * malformed value is a user error naming the variable. Here in core, below both of
 * their readers: lib/dist's launcher reads a process's place in the job with env_int,
 * the CUDA backend picks its GPU by env_local_rank (and needs nothing of lib/dist). */
#ifndef CORE_ENVVARS_H
#define CORE_ENVVARS_H

#include <stdbool.h>

/* True when the variable is set and not empty. */
bool env_is_set(const char *name);

/* The variable as a number in [lo, hi]; `fallback` when it is not set (or empty). */
int env_int(const char *name, int lo, int hi, int fallback);

/* This process's rank on its node: OMPI_COMM_WORLD_LOCAL_RANK (Open MPI),
 * SLURM_LOCALID (srun), LOCAL_RANK (torchrun style), MPI_LOCALRANKID (MPICH's
 * mpiexec), the first that is set; 0 when none is. A malformed value is a user error. */
int env_local_rank(void);

#endif
