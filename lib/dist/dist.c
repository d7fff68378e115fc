/* The communicator's front: picking a backend from the launch, checking every call's
 * arguments once, and the helpers built on the backends' operations. */
#include "dist.h"

#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/log.h"
#include "core/trace.h"
#include "dist_backend.h"
#include "dist_trace.h"

static bool built(const char *backend) {
    if (strcmp(backend, "single") == 0) return true;
#ifdef HAVE_MPI
    if (strcmp(backend, "mpi") == 0) return true;
#endif
#ifdef HAVE_NCCL
    if (strcmp(backend, "nccl") == 0) return true;
#endif
    return false;
}

const char *dist_choose_backend(const char *asked, const Launch *l, Device device) {
    if (strcmp(asked, "auto") == 0) {
        if (device == DEVICE_CUDA) { /* GPU tensors: NCCL, also on one rank; MPI moves host memory */
            if (built("nccl")) return "nccl";
            if (l->world_size == 1) return "single";
            fatal("%s started %d ranks on GPUs, but this build has no NCCL (make config): GPU "
                  "ranks talk through NCCL; install NVIDIA's NCCL (libnccl-dev, or the HPC SDK) "
                  "and rebuild", l->name, l->world_size);
        }
        if (l->by_mpi && built("mpi")) return "mpi";
        if (l->world_size == 1) return "single";
        if (!built("mpi"))
            fatal("%s started %d ranks, but this build has no MPI (make config: Open MPI not "
                  "found) and the tensors are on the CPU: install Open MPI (sudo make deps) and "
                  "rebuild, or run one process", l->name, l->world_size);
        fatal("%s started %d ranks without MPI: CPU ranks talk through MPI, so launch with "
              "mpirun -n %d or srun --mpi=pmix", l->name, l->world_size, l->world_size);
    }
    if (strcmp(asked, "single") != 0 && strcmp(asked, "mpi") != 0 && strcmp(asked, "nccl") != 0)
        fatal("unknown communication backend '%s' (auto, single, mpi or nccl)", asked);
    if (!built(asked))
        fatal("the %s backend is not in this build (make config shows what was found: %s)",
              asked, strcmp(asked, "mpi") == 0 ? "install Open MPI, sudo make deps, and rebuild"
                                               : "NCCL comes with NVIDIA's CUDA toolkit or HPC SDK");
    if (strcmp(asked, "single") == 0 && l->world_size > 1)
        fatal("the single-process backend, but %s started %d ranks: use --dist auto or mpi",
              l->name, l->world_size);
    if (strcmp(asked, "mpi") == 0 && !l->by_mpi && l->world_size > 1)
        fatal("the mpi backend, but %s started the %d ranks without MPI: launch with mpirun "
              "or srun --mpi=pmix", l->name, l->world_size);
    if (strcmp(asked, "nccl") == 0 && device != DEVICE_CUDA)
        fatal("the nccl backend moves GPU tensors: run with --device cuda, or use --dist mpi");
    if (strcmp(asked, "mpi") == 0 && device == DEVICE_CUDA)
        fatal("the mpi backend moves host memory, and --device cuda puts the tensors on GPUs: "
              "use --dist nccl (or auto)");
    return asked;
}

Dist *dist_init(const DistOptions *opt) {
    Launch l = launcher_read();
    Dist *d = xcalloc(1, sizeof *d);
    const char *backend = dist_choose_backend(opt->backend ? opt->backend : "auto", &l, opt->device);
    snprintf(d->backend, sizeof d->backend, "%s", backend);
    snprintf(d->launcher, sizeof d->launcher, "%s", l.name);
    d->timeout_s = opt->timeout_s > 0 ? opt->timeout_s : 300.0;
    d->device = strcmp(backend, "nccl") == 0 ? DEVICE_CUDA : DEVICE_CPU;
    if (strcmp(backend, "single") == 0) dist_single_init(d, &l, opt->device);
#ifdef HAVE_MPI
    if (strcmp(backend, "mpi") == 0) dist_mpi_init(d, &l);
#endif
#ifdef HAVE_NCCL
    if (strcmp(backend, "nccl") == 0) dist_nccl_init(d, &l);
#endif
    log_set_rank(d->rank);
    check_set_rank(d->rank, d->world_size); /* fatal and CHECK name the rank that stopped */
    if (strcmp(l.name, "none") != 0) progress_enable(false);
    if (opt->expect_world > 0 && d->world_size != opt->expect_world) {
        if (d->rank == 0)
            fprintf(stderr, "error: this job has %d rank%s but %d were asked for: the launch "
                    "(%s) does not match the job script (tasks per node x nodes)\n",
                    d->world_size, d->world_size == 1 ? "" : "s", opt->expect_world, d->launcher);
        d->ops->abort_job(d, EXIT_USER_ERROR);
    }
    return d;
}

void dist_describe(const Dist *d, char *out, int cap) {
    int per_node = d->local_size > 0 ? d->local_size : d->world_size;
    snprintf(out, (size_t)cap, "dist: %s backend, %d rank%s on %d node%s (%d per node), "
             "launched by %s", d->backend, d->world_size, d->world_size == 1 ? "" : "s",
             d->nodes, d->nodes == 1 ? "" : "s", per_node, d->launcher);
}

void dist_finalize(Dist *d) {
    if (!d) return;
    d->ops->finalize(d);
    xfree(d);
}

__attribute__((noreturn)) void dist_timed_out(Dist *d, const char *what, size_t bytes,
                                              const char *not_answering) {
    fflush(stdout);
    /* the world rank (check_set_rank), not the rank in a split of it */
    fprintf(stderr, "error: rank %d: %s of %zu bytes did not finish within %.0f s (--timeout): "
            "%s. Ending the whole job.\n", check_rank() >= 0 ? check_rank() : d->rank, what,
            bytes, d->timeout_s,
            not_answering && *not_answering ? not_answering
                                            : "a rank stopped answering (hung, stopped, or its "
                                              "node is gone; the launcher's log names one that died)");
    d->ops->abort_job(d, EXIT_USER_ERROR);
}

/* ---------------------------------------------------------------- argument checks */

static void check_tensor(const Dist *d, const Tensor *t, const char *what) {
    CHECK(t && t->raw, "%s: no tensor", what);
    CHECK(t->dtype < DTYPE_COUNT, "%s: a tensor of dtype %d", what, (int)t->dtype);
    CHECK(t->device == d->device, "%s: a %s tensor, but the %s backend moves %s tensors (tensor_to)",
          what, device_name(t->device), d->backend, device_name(d->device));
}

/* Both tensors of one call of one dtype. */
static void check_same_dtype(const Tensor *a, const Tensor *b, const char *what, const char *na,
                             const char *nb) {
    CHECK(a->dtype == b->dtype, "%s: %s is %s but %s is %s: the tensors of one call have one "
          "dtype (tensor_convert)", what, na, dtype_name(a->dtype), nb, dtype_name(b->dtype));
}

static void check_peer(const Dist *d, int peer, const char *what) {
    CHECK(peer >= 0 && peer < d->world_size && peer != d->rank,
          "%s: peer %d from rank %d of a communicator of %d ranks (the peer must be another "
          "rank of it, 0 to %d)", what, peer, d->rank, d->world_size, d->world_size - 1);
}

/* ---------------------------------------------------------------- counters */

const char *dist_kind_name(DistKind kind) {
    static const char *const NAMES[DIST_KINDS] = {"all-reduce", "broadcast", "all-gather",
                                                  "reduce-scatter", "send", "receive", "barrier"};
    return kind >= 0 && kind < DIST_KINDS ? NAMES[kind] : "unknown kind";
}

DistCounts dist_counts(const Dist *d, DistKind kind) {
    CHECK(kind >= 0 && kind < DIST_KINDS, "dist_counts of kind %d (a DistKind)", (int)kind);
    return d->counts[kind];
}

void dist_counts_reset(Dist *d) { memset(d->counts, 0, sizeof d->counts); }

static void count(Dist *d, DistKind kind, int64_t sent, int64_t received) {
    d->counts[kind].calls++;
    d->counts[kind].bytes_sent += sent;
    d->counts[kind].bytes_received += received;
}

/* (W - 1) / W of `phases` times `bytes`, rounded down: a ring's share (dist.h). */
static int64_t ring_bytes(const Dist *d, int phases, size_t bytes) {
    const int64_t W = d->world_size;
    return (int64_t)phases * (W - 1) * (int64_t)bytes / W;
}

/* ---------------------------------------------------------------- tracing */

/* A tensor's bytes for a trace's range, before its checks (-1: none to tell). */
static int64_t nbytes(const Tensor *t) {
    return t && t->dtype < DTYPE_COUNT ? (int64_t)tensor_bytes(t) : -1;
}

/* A blocking operation: one range on the host track, from its start to its end (asked
 * first whether a trace is open: trace_end reads the clock before it looks, 30 ns on a
 * VM, against a 1 KB all-reduce's 500). */
#define BLOCKING(d, name, bytes, start)                                       \
    do {                                                                      \
        const bool traced_ = trace_is_open();                                 \
        if (traced_) trace_begin_bytes(name, TRACE_COMM, bytes);              \
        (d)->ops->wait((d), (start));                                         \
        if (traced_) trace_end(name);                                         \
    } while (0)

/* A non-blocking one: in flight on a lane of the trace until seen finished. */
static DistRequest *in_flight(DistRequest *r, const char *name, int64_t bytes) {
    dist_trace_request(r, name, bytes);
    return r;
}

/* ---------------------------------------------------------------- collectives */

static DistRequest *broadcast_start(Dist *d, Tensor *t, int root, bool blocking) {
    check_tensor(d, t, "dist_broadcast");
    CHECK(root >= 0 && root < d->world_size, "dist_broadcast from rank %d of %d", root, d->world_size);
    /* the chain root -> root + 1 -> ... -> root - 1 (dist.h) */
    const int64_t B = d->world_size > 1 ? (int64_t)tensor_bytes(t) : 0;
    const bool last = d->rank == (root + d->world_size - 1) % d->world_size;
    count(d, DIST_KIND_BROADCAST, last ? 0 : B, d->rank == root ? 0 : B);
    return d->ops->broadcast(d, t->raw, t->size, dist_type_of(t->dtype), root, blocking);
}

void dist_broadcast(Dist *d, Tensor *t, int root) {
    BLOCKING(d, "broadcast", nbytes(t), broadcast_start(d, t, root, true));
}

static DistRequest *all_reduce_start(Dist *d, Tensor *t, DistOp op, bool blocking) {
    check_tensor(d, t, "dist_all_reduce");
    const int64_t bytes = ring_bytes(d, 2, tensor_bytes(t));
    count(d, DIST_KIND_ALL_REDUCE, bytes, bytes);
    return d->ops->all_reduce(d, t->raw, t->size, dist_type_of(t->dtype), op, blocking);
}

DistRequest *dist_all_reduce_start(Dist *d, Tensor *t, DistOp op) {
    return in_flight(all_reduce_start(d, t, op, false), "all-reduce", nbytes(t));
}

void dist_all_reduce(Dist *d, Tensor *t, DistOp op) {
    BLOCKING(d, "all-reduce", nbytes(t), all_reduce_start(d, t, op, true));
}

/* The buffers of an all-gather or a reduce-scatter are apart, or exactly in place: the
 * small one is this rank's block of the large one (NCCL's rule). */
static void check_in_place(const Dist *d, const Tensor *small, const Tensor *large, const char *what) {
    const char *s = small->raw, *l = large->raw;
    const size_t bytes = tensor_bytes(small);
    if (s + bytes <= l || l + tensor_bytes(large) <= s) return;
    CHECK(s == l + (size_t)d->rank * bytes, "%s: the two tensors overlap, but the smaller one is "
          "not this rank's block of the larger one (the only overlap allowed: in place)", what);
}

static DistRequest *all_gather_start(Dist *d, Tensor *out, const Tensor *in, bool blocking) {
    check_tensor(d, out, "dist_all_gather (out)");
    check_tensor(d, in, "dist_all_gather (in)");
    check_same_dtype(out, in, "dist_all_gather", "out", "in");
    CHECK(out->size == in->size * d->world_size, "dist_all_gather: out has %lld values, in %lld "
          "on each of %d ranks", (long long)out->size, (long long)in->size, d->world_size);
    check_in_place(d, in, out, "dist_all_gather");
    const int64_t bytes = ring_bytes(d, 1, tensor_bytes(out));
    count(d, DIST_KIND_ALL_GATHER, bytes, bytes);
    return d->ops->all_gather(d, out->raw, in->raw, in->size, dist_type_of(in->dtype), blocking);
}

DistRequest *dist_all_gather_start(Dist *d, Tensor *out, const Tensor *in) {
    return in_flight(all_gather_start(d, out, in, false), "all-gather", nbytes(out));
}

void dist_all_gather(Dist *d, Tensor *out, const Tensor *in) {
    BLOCKING(d, "all-gather", nbytes(out), all_gather_start(d, out, in, true));
}

static DistRequest *reduce_scatter_start(Dist *d, Tensor *out, const Tensor *in, DistOp op,
                                         bool blocking) {
    check_tensor(d, out, "dist_reduce_scatter (out)");
    check_tensor(d, in, "dist_reduce_scatter (in)");
    check_same_dtype(out, in, "dist_reduce_scatter", "out", "in");
    CHECK(in->size == out->size * d->world_size, "dist_reduce_scatter: in has %lld values, out "
          "%lld on each of %d ranks", (long long)in->size, (long long)out->size, d->world_size);
    check_in_place(d, out, in, "dist_reduce_scatter");
    const int64_t bytes = ring_bytes(d, 1, tensor_bytes(in));
    count(d, DIST_KIND_REDUCE_SCATTER, bytes, bytes);
    return d->ops->reduce_scatter(d, out->raw, in->raw, out->size, dist_type_of(in->dtype), op,
                                  blocking);
}

DistRequest *dist_reduce_scatter_start(Dist *d, Tensor *out, const Tensor *in, DistOp op) {
    return in_flight(reduce_scatter_start(d, out, in, op, false), "reduce-scatter", nbytes(in));
}

void dist_reduce_scatter(Dist *d, Tensor *out, const Tensor *in, DistOp op) {
    BLOCKING(d, "reduce-scatter", nbytes(in), reduce_scatter_start(d, out, in, op, true));
}

void dist_barrier(Dist *d) {
    count(d, DIST_KIND_BARRIER, 0, 0);
    BLOCKING(d, "barrier", -1, d->ops->barrier(d, true));
}

static const char *sendrecv_name(const Tensor *out, const Tensor *in) {
    return out && in ? "send+receive" : out ? "send" : "receive";
}

static int64_t sendrecv_bytes(const Tensor *out, const Tensor *in) {
    return (out ? nbytes(out) : 0) + (in ? nbytes(in) : 0);
}

static DistRequest *sendrecv_start(Dist *d, const Tensor *out, int to, Tensor *in, int from,
                                   bool blocking) {
    CHECK(out || in, "dist_sendrecv with nothing to send or receive");
    if (out) check_tensor(d, out, "dist_send"), check_peer(d, to, "dist_send");
    if (in) check_tensor(d, in, "dist_recv"), check_peer(d, from, "dist_recv");
    if (out && in) check_same_dtype(out, in, "dist_sendrecv", "out", "in");
    if (out) count(d, DIST_KIND_SEND, (int64_t)tensor_bytes(out), 0);
    if (in) count(d, DIST_KIND_RECV, 0, (int64_t)tensor_bytes(in));
    return d->ops->sendrecv(d, out ? out->raw : NULL, out ? out->size : 0, to,
                            in ? in->raw : NULL, in ? in->size : 0, from,
                            dist_type_of(out ? out->dtype : in->dtype), blocking);
}

DistRequest *dist_sendrecv_start(Dist *d, const Tensor *out, int to, Tensor *in, int from) {
    return in_flight(sendrecv_start(d, out, to, in, from, false), sendrecv_name(out, in),
                     sendrecv_bytes(out, in));
}

DistRequest *dist_send_start(Dist *d, const Tensor *t, int peer) {
    check_tensor(d, t, "dist_send"); /* named here: the caller never called dist_sendrecv */
    return dist_sendrecv_start(d, t, peer, NULL, -1);
}

DistRequest *dist_recv_start(Dist *d, Tensor *t, int peer) {
    check_tensor(d, t, "dist_recv");
    return dist_sendrecv_start(d, NULL, -1, t, peer);
}

void dist_send(Dist *d, const Tensor *t, int peer) {
    check_tensor(d, t, "dist_send");
    BLOCKING(d, "send", nbytes(t), sendrecv_start(d, t, peer, NULL, -1, true));
}

void dist_recv(Dist *d, Tensor *t, int peer) {
    check_tensor(d, t, "dist_recv");
    BLOCKING(d, "receive", nbytes(t), sendrecv_start(d, NULL, -1, t, peer, true));
}

void dist_sendrecv(Dist *d, const Tensor *out, int to, Tensor *in, int from) {
    if (!out && !in) return; /* an empty step of a ring: nothing to do */
    BLOCKING(d, sendrecv_name(out, in), sendrecv_bytes(out, in),
             sendrecv_start(d, out, to, in, from, true));
}

void dist_wait(Dist *d, DistRequest *r) {
    dist_trace_wait_begin(r);
    d->ops->wait(d, r);
    dist_trace_wait_end(r);
}

bool dist_test(Dist *d, DistRequest *r) {
    const bool done = d->ops->test(d, r);
    if (done) dist_trace_finished(r);
    return done;
}

/* ---------------------------------------------------------------- host scalars */

double dist_sum_double(Dist *d, double v) {
    BLOCKING(d, "all-reduce (scalars)", 8, d->ops->all_reduce(d, &v, 1, DIST_F64, DIST_SUM, true));
    return v;
}

void dist_all_gather_double(Dist *d, double v, double *all) {
    BLOCKING(d, "all-gather (scalars)", 8 * (int64_t)d->world_size,
             d->ops->all_gather(d, all, &v, 1, DIST_F64, true));
}

void dist_check_same(Dist *d, int64_t value, const char *what) {
    int64_t *all = xcalloc((size_t)d->world_size, sizeof *all);
    BLOCKING(d, "all-gather (scalars)", 8 * (int64_t)d->world_size,
             d->ops->all_gather(d, all, &value, 1, DIST_I64, true));
    for (int r = 1; r < d->world_size; r++)
        if (all[r] != all[0]) {
            if (d->rank == 0)
                fprintf(stderr, "error: the ranks disagree: %s is %lld on rank 0 but %lld on "
                        "rank %d. Every rank must run the same program with the same options "
                        "and data\n", what, (long long)all[0], (long long)all[r], r);
            xfree(all);
            d->ops->abort_job(d, EXIT_USER_ERROR);
        }
    xfree(all);
}

Dist *dist_split(Dist *d, int color, int key) {
    CHECK(color >= 0, "dist_split: color %d (0 or more)", color);
    Dist *s = d->ops->split(d, color, key);
    dist_counts_reset(s); /* the backends copy the parent: its counts are not this one's */
    return s;
}
