/* Communication between the processes (ranks) of a job: one interface, three backends.
 *
 *   Dist *d = dist_init(&(DistOptions){.backend = "auto", .timeout_s = 300});
 *   print0(...);                          // d->rank == 0 prints (core/log.h)
 *   dist_broadcast(d, &model.params.values, 0);      // the same weights everywhere
 *   ...backward...
 *   dist_all_reduce(d, &model.params.grads, DIST_AVG);
 *   dist_finalize(d);
 *
 * The launcher says who is who (dist/launcher.h): mpirun and `srun --mpi=pmix` (MPI),
 * srun without MPI (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the first node of
 * SLURM_JOB_NODELIST as the master), torchrun-style RANK / WORLD_SIZE / LOCAL_RANK /
 * MASTER_ADDR / MASTER_PORT, or nothing: a single process. The backends:
 *
 *   single  every build: world size 1, every collective is the identity; CPU or GPU
 *           tensors (it starts the GPU for DEVICE_CUDA)
 *   mpi     where Open MPI was found (make config): host tensors, MPI's own collectives
 *   nccl    where NCCL was found: GPU tensors, on a CUDA stream of its own; its unique id
 *           goes out over MPI, or over MASTER_ADDR:MASTER_PORT when there is no MPI
 *
 * Tensors are float32 and contiguous, on the backend's device (the CPU for mpi, the
 * GPU for nccl, the program's device for single). A collective that does not finish
 * within timeout_s ends the whole job with a message naming the ranks that stopped
 * answering, never a hang; a rank that dies ends it too (the launcher sees the exit). */
#ifndef DIST_DIST_H
#define DIST_DIST_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

typedef enum { DIST_SUM, DIST_AVG, DIST_MAX } DistOp;

typedef struct {
    const char *backend;  /* "auto" (a GPU job: nccl, or single for one rank without NCCL;
                           * else mpi when launched by MPI, else single), "single", "mpi"
                           * or "nccl" */
    Device device;        /* where the tensors will be */
    double timeout_s;     /* longest wait of one operation; 0: 300 s */
    int expect_world;     /* > 0: stop with a message unless the job has this many ranks */
} DistOptions;

typedef struct DistBackend DistBackend; /* the backend's functions (dist_backend.h) */
typedef struct DistRequest DistRequest; /* a non-blocking operation in flight */

typedef struct Dist {
    int rank, world_size;        /* this process, and how many there are */
    int local_rank, local_size;  /* on this node */
    int nodes;                   /* how many nodes the job spans */
    char backend[16];            /* "single", "mpi", "nccl" */
    char launcher[32];           /* "mpirun", "srun", "torchrun-style", "none" */
    Device device;               /* where its tensors live */
    double timeout_s;
    const DistBackend *ops;
    void *impl;                  /* the backend's own state */
} Dist;

/* Joins the job the launcher started; a wrong launch (the backend asked for is not in
 * this build, MPI sees another world size than Slurm, expect_world not met) is a user
 * error that says how to launch. */
Dist *dist_init(const DistOptions *opt);
/* "dist: mpi backend, 4 ranks on 2 nodes (2 per node), launched by srun" */
void dist_describe(const Dist *d, char *out, int cap);
void dist_finalize(Dist *d);

/* Collectives: every rank calls them in the same order with the same sizes. */
void dist_broadcast(Dist *d, Tensor *t, int root);
void dist_all_reduce(Dist *d, Tensor *t, DistOp op);
/* out [world * n] = the in [n] of every rank, in rank order */
void dist_all_gather(Dist *d, Tensor *out, const Tensor *in);
/* out [n] = this rank's n-element block of the op over every rank's in [world * n] */
void dist_reduce_scatter(Dist *d, Tensor *out, const Tensor *in, DistOp op);
void dist_barrier(Dist *d);

/* Point to point: a matching dist_recv (same size) on `peer`. */
void dist_send(Dist *d, const Tensor *t, int peer);
void dist_recv(Dist *d, Tensor *t, int peer);
/* Sends out to rank `to` while receiving in from rank `from` (either tensor may be
 * NULL; both NULL: nothing happens): the step of a ring or a pipeline. Two blocking calls in a row could wait for
 * each other forever when every rank sends first; this pairs them. */
void dist_sendrecv(Dist *d, const Tensor *out, int to, Tensor *in, int from);

/* Non-blocking forms: started now, finished by dist_wait (which frees the request).
 * Between the two, the tensor must not be touched. */
DistRequest *dist_all_reduce_start(Dist *d, Tensor *t, DistOp op);
DistRequest *dist_send_start(Dist *d, const Tensor *t, int peer);
DistRequest *dist_recv_start(Dist *d, Tensor *t, int peer);
DistRequest *dist_sendrecv_start(Dist *d, const Tensor *out, int to, Tensor *in, int from);
void dist_wait(Dist *d, DistRequest *r);
/* true once r has finished (then dist_wait returns at once) */
bool dist_test(Dist *d, DistRequest *r);

/* Host scalars, for metrics and launch checks (any backend). */
double dist_sum_double(Dist *d, double v);
/* all[r] = rank r's v, on every rank: all has world_size values. */
void dist_all_gather_double(Dist *d, double v, double *all);
/* Stops every rank with a message when the ranks' values differ: "model size 155685 on
 * rank 0 but 155686 on rank 2". */
void dist_check_same(Dist *d, int64_t value, const char *what);

/* A sub-communicator of the ranks with the same color, ordered by key (MPI_Comm_split,
 * ncclCommSplit): the pipeline's stages, the data-parallel groups. */
Dist *dist_split(Dist *d, int color, int key);

#endif
