/* The single-process backend, in every build: world size 1, so a broadcast or an
 * all-reduce changes nothing, a gather or scatter is a copy, and nothing can be sent.
 * Its tensors (of any dtype) live on the program's device: host memory, or the GPU
 * with --dist single --device cuda (and --device cuda in a build without NCCL); F64
 * and I64 buffers are host scalars, as for every backend. */
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/tensor.h"
#include "cuda/device.h"
#include "dist_backend.h"

/* Every operation is done when it starts: one request stands for all of them. */
struct DistRequest {
    int unused;
};
static DistRequest g_done;

static DistRequest *nothing_to_do(void) { return &g_done; }

static DistRequest *broadcast(Dist *d, void *buf, int64_t n, DistType t, int root, bool blocking) {
    (void)d, (void)buf, (void)n, (void)t, (void)root, (void)blocking;
    return nothing_to_do();
}

static DistRequest *all_reduce(Dist *d, void *buf, int64_t n, DistType t, DistOp op, bool blocking) {
    (void)d, (void)buf, (void)n, (void)t, (void)op, (void)blocking; /* a sum, maximum or average of one */
    return nothing_to_do();
}

static DistRequest *all_gather(Dist *d, void *out, const void *in, int64_t n, DistType t,
                               bool blocking) {
    (void)blocking;
    const size_t bytes = (size_t)n * dist_type_size(t);
    if (out == in) return nothing_to_do();
    if (d->device == DEVICE_CPU || dist_type_on_host(t)) memmove(out, in, bytes);
    else device_copy(out, d->device, in, d->device, bytes);
    return nothing_to_do();
}

static DistRequest *reduce_scatter(Dist *d, void *out, const void *in, int64_t n, DistType t,
                                   DistOp op, bool blocking) {
    (void)op;
    return all_gather(d, out, in, n, t, blocking);
}

static DistRequest *barrier(Dist *d, bool blocking) {
    (void)d, (void)blocking;
    return nothing_to_do();
}

/* Unreachable: dist.c refuses a peer that is not another rank of the job. */
static DistRequest *sendrecv(Dist *d, const void *out, int64_t out_n, int to, void *in,
                             int64_t in_n, int from, DistType t, bool blocking) {
    (void)d, (void)out, (void)out_n, (void)in, (void)in_n, (void)t, (void)blocking;
    CHECK(false, "a send to %d or receive from %d, but this job is a single process", to, from);
}

static bool test(Dist *d, DistRequest *r) {
    (void)d, (void)r;
    return true;
}

static void wait(Dist *d, DistRequest *r) { (void)d, (void)r; }

static Dist *split(Dist *d, int color, int key) {
    (void)color, (void)key;
    Dist *s = xcalloc(1, sizeof *s);
    *s = *d;
    return s;
}

static void finalize(Dist *d) { (void)d; }

static __attribute__((noreturn)) void abort_job(Dist *d, int status) {
    (void)d;
    exit(status);
}

static const DistBackend SINGLE = {broadcast, all_reduce, all_gather, reduce_scatter, barrier,
                                   sendrecv,  test,       wait,       split,          finalize,
                                   abort_job};

void dist_single_init(Dist *d, const Launch *l, Device device) {
    (void)l;
    if (device == DEVICE_CUDA) cuda_require(); /* the GPU the tensors will live on */
    d->device = device;
    d->rank = 0;
    d->world_size = 1;
    d->local_rank = 0;
    d->local_size = 1;
    d->nodes = 1;
    d->ops = &SINGLE;
}
