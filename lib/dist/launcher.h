/* What the launcher (mpirun, srun, torchrun, mpiexec) tells a process about its place
 * in the job, read from the environment. No communication: any part of the library
 * may ask (the CUDA backend picks its GPU by the local rank). */
#ifndef DIST_LAUNCHER_H
#define DIST_LAUNCHER_H

/* This process's rank on its node: OMPI_COMM_WORLD_LOCAL_RANK (Open MPI),
 * SLURM_LOCALID (srun), LOCAL_RANK (torchrun style), MPI_LOCALRANKID (MPICH's
 * mpiexec), the first that is set; 0 when none is. A malformed value is a user error. */
int launcher_local_rank(void);

#endif
