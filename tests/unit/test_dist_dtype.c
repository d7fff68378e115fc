/* Unit tests of lib/dist's dtypes and byte counters that need no second process:
 * 16-bit collectives of the single backend (one rank), the counters of one rank, and,
 * through a stand-in backend that moves nothing, what dist.c counts for every kind on
 * every rank of 2 to 8 ranks, against a simulated ring (all-reduce, all-gather,
 * reduce-scatter) and chain (broadcast), and the refusal of two dtypes in one call.
 * tests/dist/test_collectives.c checks the same with real MPI ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "dist/dist.h"
#include "dist/dist_backend.h"
#include "framework/check.h"

static void clear_launch_env(void) {
    static const char *vars[] = {
        "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID",
        "SLURM_NTASKS", "SLURM_JOB_NODELIST", "SLURM_JOB_ID", "PMIX_RANK", "PMI_RANK", "RANK",
        "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

/* ------------------------------------------------------------ one rank */

/* Every 16-bit pattern (NaNs included) through every collective of one rank: unchanged. */
static int check_single_16_bit(void) {
    clear_launch_env();
    Dist *d = dist_init(&(DistOptions){.backend = "single"});
    bool ok = true;
    for (int k = 1; k < DTYPE_COUNT; k++) {
        const DType dt = (DType)k;
        Tensor t = tensor_zeros_typed(DEVICE_CPU, dt, 1, 65536), g = tensor_zeros_like(&t),
               s = tensor_zeros_like(&t);
        for (int i = 0; i < 65536; i++) t.bits16[i] = (uint16_t)i;
        dist_broadcast(d, &t, 0);
        dist_all_reduce(d, &t, DIST_SUM);
        dist_all_reduce(d, &t, DIST_AVG);
        dist_wait(d, dist_all_reduce_start(d, &t, DIST_MAX));
        dist_all_gather(d, &g, &t);
        dist_reduce_scatter(d, &s, &g, DIST_SUM);
        for (int i = 0; i < 65536 && ok; i++)
            ok = expect_true(t.bits16[i] == i && g.bits16[i] == i && s.bits16[i] == i,
                             "%s pattern 0x%04x: 0x%04x after the collectives, 0x%04x gathered, "
                             "0x%04x reduce-scattered", dtype_name(dt), i, t.bits16[i],
                             g.bits16[i], s.bits16[i]);
        tensor_free(&t), tensor_free(&g), tensor_free(&s);
    }
    dist_finalize(d);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* One rank moves nothing: every call counted, every byte count 0. */
static int check_single_counts(void) {
    clear_launch_env();
    Dist *d = dist_init(&(DistOptions){.backend = "single"});
    Tensor t = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 1, 1000), g = tensor_zeros_like(&t);
    dist_broadcast(d, &t, 0);
    dist_all_reduce(d, &t, DIST_SUM);
    dist_all_reduce(d, &t, DIST_AVG);
    dist_all_gather(d, &g, &t);
    dist_reduce_scatter(d, &t, &g, DIST_SUM);
    dist_barrier(d);
    dist_sum_double(d, 1.0); /* host scalars: not counted */
    const int64_t calls[DIST_KINDS] = {[DIST_KIND_ALL_REDUCE] = 2, [DIST_KIND_BROADCAST] = 1,
                                       [DIST_KIND_ALL_GATHER] = 1, [DIST_KIND_REDUCE_SCATTER] = 1,
                                       [DIST_KIND_BARRIER] = 1};
    bool ok = true;
    for (int k = 0; k < DIST_KINDS; k++) {
        const DistCounts c = dist_counts(d, (DistKind)k);
        ok = expect_true(c.calls == calls[k] && c.bytes_sent == 0 && c.bytes_received == 0,
                         "%s: %lld calls, %lld bytes sent, %lld received; expected %lld calls, 0 "
                         "bytes", dist_kind_name((DistKind)k), (long long)c.calls,
                         (long long)c.bytes_sent, (long long)c.bytes_received,
                         (long long)calls[k]) && ok;
    }
    Dist *sub = dist_split(d, 0, 0);
    ok = expect_true(dist_counts(sub, DIST_KIND_ALL_REDUCE).calls == 0,
                     "a split communicator starts with its parent's counts") && ok;
    dist_all_reduce(sub, &t, DIST_SUM);
    ok = expect_true(dist_counts(d, DIST_KIND_ALL_REDUCE).calls == 2 &&
                         dist_counts(sub, DIST_KIND_ALL_REDUCE).calls == 1,
                     "the split and its parent count together") && ok;
    dist_counts_reset(d);
    for (int k = 0; k < DIST_KINDS; k++)
        ok = expect_true(dist_counts(d, (DistKind)k).calls == 0, "%s not reset",
                         dist_kind_name((DistKind)k)) && ok;
    ok = expect_true(strcmp(dist_kind_name(DIST_KIND_REDUCE_SCATTER), "reduce-scatter") == 0 &&
                         strcmp(dist_kind_name(DIST_KIND_RECV), "receive") == 0,
                     "kind names: %s, %s", dist_kind_name(DIST_KIND_REDUCE_SCATTER),
                     dist_kind_name(DIST_KIND_RECV)) && ok;
    dist_finalize(sub);
    dist_finalize(d);
    tensor_free(&t), tensor_free(&g);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ a stand-in for W ranks */

/* A backend that finishes every operation at once and moves nothing: what dist.c counts
 * for rank r of W, without W processes. */
struct DistRequest {
    int unused;
};
static DistRequest g_done;
static DistRequest *bcast(Dist *d, void *b, int64_t n, DistType t, int root, bool blocking) {
    (void)d, (void)b, (void)n, (void)t, (void)root, (void)blocking;
    return &g_done;
}
static DistRequest *allred(Dist *d, void *b, int64_t n, DistType t, DistOp op, bool blocking) {
    (void)d, (void)b, (void)n, (void)t, (void)op, (void)blocking;
    return &g_done;
}
static DistRequest *gather(Dist *d, void *o, const void *i, int64_t n, DistType t, bool blocking) {
    (void)d, (void)o, (void)i, (void)n, (void)t, (void)blocking;
    return &g_done;
}
static DistRequest *scatter(Dist *d, void *o, const void *i, int64_t n, DistType t, DistOp op,
                            bool blocking) {
    (void)d, (void)o, (void)i, (void)n, (void)t, (void)op, (void)blocking;
    return &g_done;
}
static DistRequest *barrier(Dist *d, bool blocking) {
    (void)d, (void)blocking;
    return &g_done;
}
static DistRequest *sendrecv(Dist *d, const void *o, int64_t on, int to, void *i, int64_t in,
                             int from, DistType t, bool blocking) {
    (void)d, (void)o, (void)on, (void)to, (void)i, (void)in, (void)from, (void)t, (void)blocking;
    return &g_done;
}
static bool done(Dist *d, DistRequest *r) {
    (void)d, (void)r;
    return true;
}
static void wait_done(Dist *d, DistRequest *r) { (void)d, (void)r; }
static const DistBackend STANDIN = {.broadcast = bcast, .all_reduce = allred,
                                    .all_gather = gather, .reduce_scatter = scatter,
                                    .barrier = barrier, .sendrecv = sendrecv, .test = done,
                                    .wait = wait_done};

static Dist standin(int rank, int world) {
    Dist d = {0};
    d.rank = rank, d.world_size = world;
    d.device = DEVICE_CPU;
    d.ops = &STANDIN;
    snprintf(d.backend, sizeof d.backend, "stand-in");
    return d;
}

/* Bytes rank r sends and receives in a ring all-reduce of W chunks of c elements of
 * s bytes: W - 1 steps of reduce-scatter, W - 1 of all-gather, one chunk out to the
 * next rank and one in from the previous at each step. */
static void simulate_ring(int W, int phases, int64_t chunk_bytes, int r, int64_t *sent,
                          int64_t *received) {
    *sent = *received = 0;
    for (int phase = 0; phase < phases; phase++)
        for (int step = 0; step < W - 1; step++) {
            const int to = (r + 1) % W, from = (r + W - 1) % W;
            if (to != r) *sent += chunk_bytes;
            if (from != r) *received += chunk_bytes;
        }
}

/* A pipelined chain from the root around the ring: each rank receives the buffer from
 * its predecessor (the root does not) and passes it on (the last rank does not). */
static void simulate_chain(int W, int root, int64_t bytes, int r, int64_t *sent,
                           int64_t *received) {
    *sent = *received = 0;
    for (int hop = 0; hop < W - 1; hop++) { /* hop: (root + hop) -> (root + hop + 1) */
        const int a = (root + hop) % W, b = (root + hop + 1) % W;
        if (a == r) *sent += bytes;
        if (b == r) *received += bytes;
    }
}

static bool expect_counts(const Dist *d, DistKind k, int64_t calls, int64_t sent,
                          int64_t received, const char *what) {
    const DistCounts c = dist_counts(d, k);
    return expect_true(c.calls == calls && c.bytes_sent == sent && c.bytes_received == received,
                       "rank %d of %d, %s (%s): %lld calls, %lld bytes sent, %lld received; "
                       "expected %lld, %lld, %lld", d->rank, d->world_size, dist_kind_name(k),
                       what, (long long)c.calls, (long long)c.bytes_sent,
                       (long long)c.bytes_received, (long long)calls, (long long)sent,
                       (long long)received);
}

static int check_ring_counts(void) {
    bool ok = true;
    for (int W = 2; W <= 8 && ok; W++) {
        for (int r = 0; r < W && ok; r++) {
            Dist d = standin(r, W);
            for (int k = 0; k < DTYPE_COUNT; k++) {
                const DType dt = (DType)k;
                const int64_t s = (int64_t)dtype_size(dt), n = 840 * 3; /* W divides 840 */
                Tensor t = tensor_zeros_typed(DEVICE_CPU, dt, 1, (int)n);
                Tensor block = tensor_zeros_typed(DEVICE_CPU, dt, 1, (int)(n / W));
                Tensor full = tensor_zeros_typed(DEVICE_CPU, dt, 1, (int)n);
                int64_t sent, received;
                dist_counts_reset(&d);
                dist_all_reduce(&d, &t, DIST_SUM);
                dist_wait(&d, dist_all_reduce_start(&d, &t, DIST_AVG));
                simulate_ring(W, 2, n / W * s, r, &sent, &received);
                ok = expect_counts(&d, DIST_KIND_ALL_REDUCE, 2, 2 * sent, 2 * received,
                                   dtype_name(dt)) && ok;
                dist_all_gather(&d, &full, &block);
                simulate_ring(W, 1, n / W * s, r, &sent, &received);
                ok = expect_counts(&d, DIST_KIND_ALL_GATHER, 1, sent, received, dtype_name(dt)) && ok;
                dist_reduce_scatter(&d, &block, &full, DIST_SUM);
                ok = expect_counts(&d, DIST_KIND_REDUCE_SCATTER, 1, sent, received,
                                   dtype_name(dt)) && ok;
                int64_t bs = 0, br = 0;
                for (int root = 0; root < W; root++) {
                    dist_broadcast(&d, &t, root);
                    simulate_chain(W, root, n * s, r, &sent, &received);
                    bs += sent, br += received;
                }
                ok = expect_counts(&d, DIST_KIND_BROADCAST, W, bs, br, "every root") && ok;
                /* point to point: the tensor's bytes; a sendrecv is one of each */
                dist_send(&d, &t, (r + 1) % W);
                dist_recv(&d, &block, (r + W - 1) % W);
                dist_sendrecv(&d, &block, (r + 1) % W, &block, (r + W - 1) % W);
                dist_barrier(&d);
                ok = expect_counts(&d, DIST_KIND_SEND, 2, n * s + n / W * s, 0, "send") &&
                     expect_counts(&d, DIST_KIND_RECV, 2, 0, 2 * (n / W) * s, "receive") &&
                     expect_counts(&d, DIST_KIND_BARRIER, 1, 0, 0, "barrier") && ok;
                tensor_free(&t), tensor_free(&block), tensor_free(&full);
            }
        }
    }
    /* a size W does not divide: the fraction rounded down (dist.h) */
    Dist d = standin(1, 3);
    Tensor t = tensor_zeros(1, 1001);
    dist_all_reduce(&d, &t, DIST_SUM);
    ok = expect_counts(&d, DIST_KIND_ALL_REDUCE, 1, 2 * 2 * 4004 / 3, 2 * 2 * 4004 / 3,
                       "1001 floats on 3 ranks: 2 x 2/3 x 4004 bytes, rounded down") && ok;
    tensor_free(&t);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ refusals */

static void body_gather_mixed(void *arg) {
    (void)arg;
    Dist d = standin(0, 2);
    Tensor in = tensor_zeros(1, 4), out = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 1, 8);
    dist_all_gather(&d, &out, &in);
}
static void body_scatter_mixed(void *arg) {
    (void)arg;
    Dist d = standin(0, 2);
    Tensor in = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 1, 8), out = tensor_zeros(1, 4);
    dist_reduce_scatter(&d, &out, &in, DIST_SUM);
}
static void body_sendrecv_mixed(void *arg) {
    (void)arg;
    Dist d = standin(0, 2);
    Tensor out = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 1, 4),
           in = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 1, 4);
    dist_sendrecv(&d, &out, 1, &in, 1);
}

static int check_mixed_refused(void) {
    ChildResult r;
    run_child(body_gather_mixed, NULL, &r);
    bool ok = expect_exit("all-gather of float32 into bfloat16", &r, 2, "dist_all_gather",
                          "out is bfloat16 but in is float32", (const char *)NULL);
    run_child(body_scatter_mixed, NULL, &r);
    ok = expect_exit("reduce-scatter of float16 into float32", &r, 2, "dist_reduce_scatter",
                     "out is float32 but in is float16", (const char *)NULL) && ok;
    run_child(body_sendrecv_mixed, NULL, &r);
    ok = expect_exit("sendrecv of bfloat16 out and float16 in", &r, 2, "dist_sendrecv",
                     "out is bfloat16 but in is float16", (const char *)NULL) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("lib/dist: dtypes and byte counters");
    check_run(NULL, "single backend: bfloat16 and float16 collectives of one rank keep every pattern", check_single_16_bit, 10);
    check_run(NULL, "counters of one rank: calls counted, 0 bytes, host scalars not; reset; a split counts on its own", check_single_counts, 10);
    check_run(NULL, "counters of every rank of 2-8 ranks, every dtype: a simulated ring and chain", check_ring_counts, 20);
    check_run(NULL, "two dtypes in one all-gather, reduce-scatter or sendrecv: refused by name", check_mixed_refused, 10);
    return check_end();
}
