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
 * Tensors are contiguous, on the backend's device (the CPU for mpi, the GPU for nccl,
 * the program's device for single), of any dtype: float32, bfloat16 or float16 (all
 * tensors of one call the same; sizes count elements of that dtype). A sum of 16-bit
 * values is rounded back to 16 bits at every step that adds (NCCL's ncclBfloat16 and
 * ncclFloat16; MPI moves them as MPI_UINT16_T and adds with an operation of its own
 * that converts to float32, adds and rounds back), so it can differ from a float32 sum
 * rounded once, and between backends. A collective that does not finish within
 * timeout_s ends the whole job with a message naming the ranks that stopped answering,
 * never a hang; a rank that dies ends it too (the launcher sees the exit). The mpi
 * backend says more, by world rank and group: which ranks are missing from a collective
 * and what they do instead (another collective of that number: one skipped; finished;
 * their own code), which rank did not send what a receive waits for; and when the
 * ranks it waits for can never come (a collective another rank numbers differently, a
 * rank that finished, every rank waiting for another: a deadlock), it ends the job
 * before the timeout. It runs MPI's blocking calls with a watchdog thread of its own
 * (MPI_THREAD_MULTIPLE); without it (or with COURSE_DIST_POLL=1 in the environment) the
 * waiting thread polls MPI_Test and watches itself, which is slower.
 *
 * Every Dist counts its calls and the bytes this rank sent and received, per kind of
 * operation (dist_counts), the same way on every backend: the bytes a
 * bandwidth-optimal ring moves, whatever algorithm the backend really runs, so that
 * a lesson can check a strategy's communication against its formula. With W ranks and
 * a buffer of B bytes (n elements of s bytes):
 *   all-reduce of n           sent = received = 2 (W - 1) / W x B   (B = n s; a
 *                             reduce-scatter then an all-gather)
 *   all-gather into W n,      sent = received = (W - 1) / W x B     (B = W n s: the
 *   reduce-scatter from W n   full buffer; each rank sends its block to W - 1 others)
 *   broadcast of n            a pipelined chain from the root around the ring: the
 *                             root sends B and receives nothing, the rank just before
 *                             it receives B and sends nothing, every other rank
 *                             receives and sends B (each receives B once: the least)
 *   send, receive             the tensor's bytes, exactly
 *   barrier                   calls only
 * (nccl-tests' bus bandwidth uses the same factors: 2 (W - 1) / W, (W - 1) / W, 1.)
 * Fractions are rounded down to whole bytes. On one rank every count of bytes is 0.
 * Counted when the operation starts; the host scalars of dist_sum_double,
 * dist_all_gather_double and dist_check_same are not counted (the checks that read
 * the counters use them). A dist_split communicator counts from zero on its own. */
#ifndef DIST_DIST_H
#define DIST_DIST_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

typedef enum { DIST_SUM, DIST_AVG, DIST_MAX } DistOp;

/* The kinds of operation the counters tell apart. */
typedef enum {
    DIST_KIND_ALL_REDUCE,
    DIST_KIND_BROADCAST,
    DIST_KIND_ALL_GATHER,
    DIST_KIND_REDUCE_SCATTER,
    DIST_KIND_SEND,
    DIST_KIND_RECV,
    DIST_KIND_BARRIER,
    DIST_KINDS
} DistKind;

typedef struct {
    int64_t calls;
    int64_t bytes_sent, bytes_received; /* by this rank, by the rule above */
} DistCounts;

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
    DistCounts counts[DIST_KINDS]; /* dist_counts */
} Dist;

/* Joins the job the launcher started; a wrong launch (the backend asked for is not in
 * this build, MPI sees another world size than Slurm, expect_world not met) is a user
 * error that says how to launch. */
Dist *dist_init(const DistOptions *opt);
/* "dist: mpi backend, 4 ranks on 2 nodes (2 per node), launched by srun", written into
 * out (cap bytes with its NUL; 256 always hold it) */
void dist_describe(const Dist *d, char *out, int cap);
void dist_finalize(Dist *d);

/* This rank's counts of one kind (the rule at the top), and their names for messages
 * ("all-reduce", "broadcast", "all-gather", "reduce-scatter", "send", "receive",
 * "barrier"); dist_counts_reset sets every kind back to zero. */
DistCounts dist_counts(const Dist *d, DistKind kind);
const char *dist_kind_name(DistKind kind);
void dist_counts_reset(Dist *d);

/* Collectives: every rank calls them in the same order with the same sizes and
 * dtypes. */
void dist_broadcast(Dist *d, Tensor *t, int root);
void dist_all_reduce(Dist *d, Tensor *t, DistOp op);
/* out [world * n] = the in [n] of every rank, in rank order */
void dist_all_gather(Dist *d, Tensor *out, const Tensor *in);
/* out [n] = this rank's n-element block of the op over every rank's in [world * n]
 * Both may run in place, NCCL's way: in (all-gather) or out (reduce-scatter) is this
 * rank's block of the other, a view at rank * n; after an in-place reduce-scatter the
 * rest of `in` holds anything. Any other overlap is refused. */
void dist_reduce_scatter(Dist *d, Tensor *out, const Tensor *in, DistOp op);
void dist_barrier(Dist *d);

/* Point to point: a matching dist_recv (same size and dtype) on `peer`. */
void dist_send(Dist *d, const Tensor *t, int peer);
void dist_recv(Dist *d, Tensor *t, int peer);
/* Sends out to rank `to` while receiving in from rank `from` (either tensor may be
 * NULL; both NULL: nothing happens; both: of one dtype): the step of a ring or a
 * pipeline. Two blocking calls in a row could wait for each other forever when every
 * rank sends first; this pairs them. Counted as a send and a receive. */
void dist_sendrecv(Dist *d, const Tensor *out, int to, Tensor *in, int from);

/* Non-blocking forms: started now, finished by dist_wait (which frees the request).
 * Between the two, the tensor must not be touched. */
DistRequest *dist_all_reduce_start(Dist *d, Tensor *t, DistOp op);
DistRequest *dist_all_gather_start(Dist *d, Tensor *out, const Tensor *in);
DistRequest *dist_reduce_scatter_start(Dist *d, Tensor *out, const Tensor *in, DistOp op);
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
