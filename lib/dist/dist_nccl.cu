// The NCCL backend: GPU tensors (float32, bfloat16, float16: NCCL's own types), NCCL's
// collectives on a CUDA stream of their own, so that they overlap with the computation
// on the default stream. Compiled where NCCL was found (HAVE_NCCL).
//
// Ordering: an operation first makes its stream wait for everything queued so far on
// the default stream (an event), so it reduces finished gradients; waiting for it
// polls its completion event with the timeout, then the default stream carries on.
#ifdef HAVE_NCCL
#include <nccl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/cuda_check.h"
extern "C" {
#include "core/check.h"
#include "core/timer.h"
#include "cuda/device.h"
#include "dist_backend.h"
#include "rendezvous.h"
}

typedef struct {
    ncclComm_t comm;
    cudaStream_t stream;
    void *scratch;        // device room for host scalars (F64 / I64 collectives)
    size_t scratch_bytes;
    bool owns_mpi;        // the id came over MPI: finalize ends MPI too
} Nccl;

struct DistRequest {
    cudaEvent_t done;
    void *host;           // scalars: copied back here once done
    void *dev;
    size_t bytes;
    const char *what;
};

static Nccl *impl(const Dist *d) { return (Nccl *)d->impl; }

#define NCCL_CHECK(call)                                                                     \
    do {                                                                                     \
        ncclResult_t r_ = (call);                                                            \
        if (r_ != ncclSuccess)                                                               \
            die_at(__FILE__, __LINE__, "NCCL error %d (%s) in %s; NCCL_DEBUG=INFO says more", \
                   (int)r_, ncclGetErrorString(r_), #call);                                 \
    } while (0)

static ncclDataType_t nccl_type(DistType t) {
    switch (t) {
    case DIST_F32: return ncclFloat32;
    case DIST_F64: return ncclFloat64;
    case DIST_I64: return ncclInt64;
    case DIST_BF16: return ncclBfloat16;
    case DIST_F16: return ncclFloat16;
    }
    return ncclFloat32;
}

static ncclRedOp_t nccl_op(DistOp op) {
    return op == DIST_AVG ? ncclAvg : op == DIST_MAX ? ncclMax : ncclSum;
}

// A request whose stream first waits for the default stream's work so far. Host
// scalars (F64, I64) go through the scratch buffer.
static DistRequest *begin(Dist *d, const char *what, void **buf, int64_t n, DistType t,
                          int64_t scratch_n) {
    Nccl *m = impl(d);
    DistRequest *r = (DistRequest *)xcalloc(1, sizeof *r);
    r->what = what;
    r->bytes = (size_t)n * dist_type_size(t);
    if (dist_type_on_host(t) && buf) {
        size_t need = (size_t)scratch_n * dist_type_size(t);
        if (m->scratch_bytes < need) {
            cuda_free(m->scratch);
            m->scratch = cuda_malloc(need);
            m->scratch_bytes = need;
        }
        cuda_copy_to_device(m->scratch, *buf, r->bytes);
        r->host = *buf;
        r->dev = m->scratch;
        *buf = m->scratch;
    }
    cudaEvent_t ready;
    CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(ready, cuda_stream()));
    CUDA_CHECK(cudaStreamWaitEvent(m->stream, ready, 0));
    CUDA_CHECK(cudaEventDestroy(ready));
    return r;
}

static DistRequest *end(Dist *d, DistRequest *r, size_t host_bytes) {
    CUDA_CHECK(cudaEventCreateWithFlags(&r->done, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(r->done, impl(d)->stream));
    if (r->host) r->bytes = host_bytes; // what comes back
    return r;
}

static DistRequest *broadcast(Dist *d, void *buf, int64_t n, DistType t, int root, bool blocking) {
    (void)blocking; // the wait polls an event either way
    DistRequest *r = begin(d, "broadcast", &buf, n, t, n);
    NCCL_CHECK(ncclBroadcast(buf, buf, (size_t)n, nccl_type(t), root, impl(d)->comm, impl(d)->stream));
    return end(d, r, (size_t)n * dist_type_size(t));
}

static DistRequest *all_reduce(Dist *d, void *buf, int64_t n, DistType t, DistOp op, bool blocking) {
    (void)blocking;
    DistRequest *r = begin(d, "all-reduce", &buf, n, t, n);
    NCCL_CHECK(ncclAllReduce(buf, buf, (size_t)n, nccl_type(t), nccl_op(op), impl(d)->comm,
                             impl(d)->stream));
    return end(d, r, (size_t)n * dist_type_size(t));
}

static DistRequest *all_gather(Dist *d, void *out, const void *in, int64_t n, DistType t,
                               bool blocking) {
    (void)blocking;
    if (!dist_type_on_host(t)) {
        DistRequest *r = begin(d, "all-gather", NULL, n, t, 0);
        NCCL_CHECK(ncclAllGather(in, out, (size_t)n, nccl_type(t), impl(d)->comm, impl(d)->stream));
        return end(d, r, 0);
    }
    // host scalars: the scratch holds [world * n]; this rank's block first goes in place
    const int64_t total = n * d->world_size;
    void *buf = out;
    DistRequest *r = begin(d, "all-gather", &buf, 0, t, total);
    char *dev = (char *)impl(d)->scratch;
    cuda_copy_to_device(dev + (size_t)d->rank * n * dist_type_size(t), in, (size_t)n * dist_type_size(t));
    NCCL_CHECK(ncclAllGather(dev + (size_t)d->rank * n * dist_type_size(t), dev, (size_t)n,
                             nccl_type(t), impl(d)->comm, impl(d)->stream));
    return end(d, r, (size_t)total * dist_type_size(t));
}

static DistRequest *reduce_scatter(Dist *d, void *out, const void *in, int64_t n, DistType t,
                                   DistOp op, bool blocking) {
    (void)blocking;
    CHECK(!dist_type_on_host(t), "reduce-scatter of host scalars is not provided");
    DistRequest *r = begin(d, "reduce-scatter", NULL, n, t, 0);
    NCCL_CHECK(ncclReduceScatter(in, out, (size_t)n, nccl_type(t), nccl_op(op), impl(d)->comm,
                                 impl(d)->stream));
    return end(d, r, 0);
}

static DistRequest *barrier(Dist *d, bool blocking) { // NCCL has none: an all-reduce of one value
    (void)blocking;
    double one = 1;
    void *buf = &one;
    DistRequest *r = begin(d, "barrier", &buf, 1, DIST_F64, 1);
    NCCL_CHECK(ncclAllReduce(buf, buf, 1, ncclFloat64, ncclSum, impl(d)->comm, impl(d)->stream));
    r->host = NULL; // nothing to bring back (and `one` is gone when this returns)
    return end(d, r, 0);
}

// A send and a receive in one NCCL group: they progress together, so two ranks that
// exchange never wait for each other.
static DistRequest *sendrecv(Dist *d, const void *out, int64_t out_n, int to, void *in,
                             int64_t in_n, int from, DistType t, bool blocking) {
    (void)blocking;
    DistRequest *r = begin(d, in ? (out ? "send and receive" : "receive") : "send", NULL,
                           out_n + in_n, t, 0);
    NCCL_CHECK(ncclGroupStart());
    if (out) NCCL_CHECK(ncclSend(out, (size_t)out_n, nccl_type(t), to, impl(d)->comm, impl(d)->stream));
    if (in) NCCL_CHECK(ncclRecv(in, (size_t)in_n, nccl_type(t), from, impl(d)->comm, impl(d)->stream));
    NCCL_CHECK(ncclGroupEnd());
    return end(d, r, 0);
}

static bool test(Dist *d, DistRequest *r) {
    (void)d;
    cudaError_t e = cudaEventQuery(r->done);
    if (e == cudaErrorNotReady) return false;
    CUDA_CHECK(e);
    return true;
}

static void wait(Dist *d, DistRequest *r) {
    const double deadline = now_seconds() + d->timeout_s;
    for (long spins = 0; !test(d, r); spins++) {
        if (spins < 20000) continue;
        sched_yield();
        if (spins % 256 != 0) continue;
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(impl(d)->comm, &async);
        if (async != ncclSuccess && async != ncclInProgress) {
            char why[256];
            snprintf(why, sizeof why, "NCCL reports %s (a peer's connection broke: a rank or "
                     "its node is gone)", ncclGetErrorString(async));
            dist_timed_out(d, r->what, r->bytes, why);
        }
        if (now_seconds() > deadline) dist_timed_out(d, r->what, r->bytes, NULL);
    }
    if (r->host) cuda_copy_to_host(r->host, r->dev, r->bytes);
    CUDA_CHECK(cudaEventDestroy(r->done));
    xfree(r);
}

static const DistBackend *backend(void); // the table, defined after its functions

// Local ranks and nodes from every rank's host name (a hash), gathered over NCCL.
static void describe(Dist *d) {
    ncclCommCount(impl(d)->comm, &d->world_size);
    ncclCommUserRank(impl(d)->comm, &d->rank);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    int64_t mine = 1469598103934665603LL;
    for (const char *p = host; *p; p++) mine = (mine ^ (unsigned char)*p) * 1099511628211LL;
    int64_t *all = (int64_t *)xcalloc((size_t)d->world_size, sizeof *all);
    wait(d, all_gather(d, all, &mine, 1, DIST_I64, true));
    d->local_rank = d->local_size = d->nodes = 0;
    for (int r = 0; r < d->world_size; r++) {
        bool first = true;
        for (int q = 0; q < r; q++) first = first && all[q] != all[r];
        d->nodes += first;
        if (all[r] == mine) d->local_size++, d->local_rank += r < d->rank;
    }
    xfree(all);
}

static Dist *wrap(const Dist *parent, ncclComm_t comm, bool owns_mpi) {
    Dist *d = (Dist *)xcalloc(1, sizeof *d);
    *d = *parent;
    Nccl *m = (Nccl *)xcalloc(1, sizeof *m);
    m->comm = comm;
    m->owns_mpi = owns_mpi;
    CUDA_CHECK(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
    d->impl = m;
    d->ops = backend();
    describe(d);
    return d;
}

static Dist *split(Dist *d, int color, int key) {
    ncclComm_t sub;
    NCCL_CHECK(ncclCommSplit(impl(d)->comm, color, key, &sub, NULL));
    return wrap(d, sub, false);
}

static void finalize(Dist *d) {
    Nccl *m = impl(d);
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
    ncclCommDestroy(m->comm);
    CUDA_CHECK(cudaStreamDestroy(m->stream));
    cuda_free(m->scratch);
#ifdef HAVE_MPI
    if (m->owns_mpi) dist_mpi_end();
#endif
    xfree(m);
}

static __attribute__((noreturn)) void abort_job(Dist *d, int status) {
    fflush(stdout);
    fflush(stderr);
    ncclCommAbort(impl(d)->comm); // the launcher then ends the other ranks
    exit(status);
}

static const DistBackend NCCL_BACKEND = {broadcast, all_reduce, all_gather, reduce_scatter,
                                         barrier,   sendrecv,   test,       wait,
                                         split,     finalize,   abort_job};

static const DistBackend *backend(void) { return &NCCL_BACKEND; }

extern "C" void dist_nccl_init(Dist *d, const Launch *l) {
    cuda_require();
    char why[512];
    int gpus = cuda_device_count(why, sizeof why);
    if (l->local_size > gpus) // NCCL refuses two ranks of one communicator on one GPU
        fatal("%d ranks on this node but %d GPUs visible: two ranks would share a GPU. Start "
              "one task per GPU (--ntasks-per-node=%d) or ask Slurm for more GPUs",
              l->local_size, gpus, gpus);
    ncclUniqueId id;
    if (l->rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    bool over_mpi = false;
#ifdef HAVE_MPI
    over_mpi = l->by_mpi;
    if (over_mpi) dist_mpi_broadcast_bytes(&id, sizeof id);
#endif
    if (!over_mpi && l->world_size > 1) {
        if (!l->master_addr[0] || l->master_port == 0)
            fatal("the nccl backend without MPI needs MASTER_ADDR and MASTER_PORT (torchrun "
                  "style), or a Slurm job (the first node, a port from the job id)");
        if (!rendezvous_share(l->master_addr, l->master_port, l->rank, l->world_size, &id,
                              sizeof id, d->timeout_s, why, sizeof why))
            fatal("%s", why);
    }
    ncclComm_t comm;
    NCCL_CHECK(ncclCommInitRank(&comm, l->world_size, id, l->rank));
    Dist *w = wrap(d, comm, over_mpi);
    *d = *w;
    xfree(w);
}
#endif
