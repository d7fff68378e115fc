/* The smallest proof that a multi-rank launch works: every rank reports itself,
 * then all ranks sum their rank numbers with MPI_Allreduce and rank 0 checks the
 * result against world_size * (world_size - 1) / 2. Exit 0 only when it matches.
 * Launched by slurm/mpi-check.sbatch with `srun --mpi=pmix`. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, name_len;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &name_len);
    const char *local = getenv("SLURM_LOCALID");
    printf("rank %d of %d on %s (local rank %s)\n", rank, size, host, local ? local : "?");
    fflush(stdout);

    long mine = rank, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    long want = (long)size * (size - 1) / 2;
    int ok = sum == want;
    if (rank == 0)
        printf("all-reduce of the ranks: %ld (expected %ld) %s\n", sum, want, ok ? "ok" : "WRONG");
    MPI_Finalize();
    return ok ? 0 : 1;
}
