/* make bench-comm: the bandwidth of lib/dist's collectives against message size, with
 * the definitions of NVIDIA's nccl-tests, so the numbers compare with theirs:
 *   algbw = bytes / time                        (what one rank sees)
 *   busbw = algbw x factor                      (what each link carries in a ring:
 *                                                comparable across rank counts)
 * with factor 2 (n - 1) / n for all-reduce, (n - 1) / n for all-gather and
 * reduce-scatter (bytes: the whole gathered buffer, n blocks), 1 for broadcast and for
 * send/recv (each rank sends to the next and receives from the one before, a ring
 * step). Started as several ranks (mpirun -n 2 bench_comm, or srun in a job). CPU
 * ranks measure the MPI backend (lib/dist: Open MPI's blocking collectives, with
 * lib/dist's watchdog thread watching so that a silent rank times out) and, beside the
 * all-reduce, a plain MPI_Allreduce on MPI_COMM_WORLD with the same buffer and nothing
 * around it (in a build with MPI: HAVE_MPI); --device cuda the NCCL backend on one GPU per rank. Each size: warm-up
 * calls, then the best of --rounds rounds of --iters calls, each round's time the ranks'
 * mean (they start together after a barrier and a collective ends nearly together on
 * all). --collective picks one (default all-reduce) or all five; --check first runs
 * each size once on values whose result is known and compares (make gpu-report). Prints
 * a table per collective; --metrics writes one JSON line per collective and size.
 * --dtype bfloat16 or float16 moves 16-bit values (half the bytes per element; MPI sums
 * them through lib/dist's own 16-bit sum, so without the plain MPI_Allreduce, which has
 * no such type). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/check.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/tensor.h"
#include "core/timer.h"
#include "cuda/device.h"
#include "dist/dist.h"

#ifdef HAVE_MPI
#include <mpi.h>
#endif

typedef struct {
    const char *device, *metrics, *min_bytes, *max_bytes, *dtype, *collective;
    int iters, rounds, ranks, check;
} Config;

typedef enum { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, SEND_RECV, COLLECTIVES } Collective;
static const char *const collective_names[COLLECTIVES] = {"all-reduce", "all-gather", "reduce-scatter",
                                                          "broadcast", "send-recv"};

/* A collective's buffers for one size: `small` [n] on every rank, `big` [W n] for
 * all-gather and reduce-scatter (the gathered / scattered buffer), [n] for send-recv
 * (what it receives), unused by the others. */
typedef struct {
    Collective c;
    Tensor small, big;
    int64_t n;
} Buffers;

/* "256M", "64k", "8": bytes, or a user error. */
static int64_t parse_bytes(const char *s, const char *option) {
    char *end;
    long long v = strtoll(s, &end, 10);
    int64_t unit = *end == 'k' || *end == 'K' ? 1 << 10 : *end == 'M' ? 1 << 20
                 : *end == 'G' ? (int64_t)1 << 30 : 1;
    if (unit > 1) end++;
    if (end == s || *end || v < 1 || v * unit < 4)
        fatal("%s expects a size of at least 4 bytes like 1K or 64M, got '%s'", option, s);
    return (int64_t)v * unit;
}

/* nccl-tests' bus bandwidth factor of a collective on W ranks. */
static double bus_factor(Collective c, int W) {
    switch (c) {
    case ALL_REDUCE: return 2.0 * (W - 1) / W;
    case ALL_GATHER:
    case REDUCE_SCATTER: return (double)(W - 1) / W;
    default: return 1.0;
    }
}

/* One call of the collective on the buffers. */
static void run_once(Dist *d, Buffers *b) {
    const int W = d->world_size, r = d->rank;
    switch (b->c) {
    case ALL_REDUCE: dist_all_reduce(d, &b->small, DIST_SUM); break;
    case ALL_GATHER: dist_all_gather(d, &b->big, &b->small); break;
    case REDUCE_SCATTER: dist_reduce_scatter(d, &b->small, &b->big, DIST_SUM); break;
    case BROADCAST: dist_broadcast(d, &b->small, 0); break;
    case SEND_RECV: {
        dist_sendrecv(d, &b->small, (r + 1) % W, &b->big, (r + W - 1) % W);
        break;
    }
    default: break;
    }
}

/* The ranks' mean seconds for `iters` calls: the library's (blocking 0), or a plain
 * MPI_Allreduce (blocking 1, the all-reduce only). */
static double time_calls(Dist *d, Buffers *b, int iters, int blocking) {
#ifndef HAVE_MPI
    (void)blocking; /* never set without MPI */
#endif
    dist_barrier(d);
    double t0 = now_seconds();
    for (int i = 0; i < iters; i++) {
#ifdef HAVE_MPI
        if (blocking) {
            MPI_Allreduce(MPI_IN_PLACE, b->small.data, (int)b->small.size, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            continue;
        }
#endif
        run_once(d, b);
    }
    if (d->device == DEVICE_CUDA) cuda_sync();
    return dist_sum_double(d, now_seconds() - t0) / d->world_size;
}

/* How many entries of t (n of them, from `start`) differ from `want` by more than tol
 * relative; the first such into *first_got. */
static int64_t count_wrong(const Tensor *t, int64_t start, int64_t n, double want, double tol, double *first_got) {
    Tensor part = tensor_range(t, start, n);
    Tensor host = tensor_to(&part, DEVICE_CPU);
    Tensor f = tensor_zeros_typed(DEVICE_CPU, DTYPE_F32, 1, (int)n);
    tensor_convert(&f, &host);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; i++) {
        const double v = f.data[i];
        if (!(fabs(v - want) <= tol * fabs(want))) {
            if (!wrong) *first_got = v;
            wrong++;
        }
    }
    tensor_free(&f);
    tensor_free(&host);
    return wrong;
}

/* One call on values whose result is known (rank r's entries r + 1; reduce-scatter's
 * block k on rank r: r + k + 1), compared on every rank; returns the job's number of
 * wrong entries and says the first on the rank that saw it. 16-bit sums round at every
 * step: a tolerance of a 16-bit step per rank. */
static int64_t check_once(Dist *d, Buffers *b, DType dtype) {
    const int W = d->world_size, r = d->rank;
    const double tol = dtype == DTYPE_F32 ? 0.0 : W * (dtype == DTYPE_BF16 ? 1.0 / 128 : 1.0 / 1024);
    const double tri = W * (W + 1) / 2.0; /* 1 + 2 + ... + W */
    double got = 0, want = 0;
    int64_t wrong = 0, where = -1;
    tensor_fill(&b->small, (float)(r + 1));
    tensor_fill(&b->big, -1.0f);
    if (b->c == REDUCE_SCATTER)
        for (int k = 0; k < W; k++) {
            Tensor blk = tensor_range(&b->big, (int64_t)k * b->n, b->n);
            tensor_fill(&blk, (float)(r + k + 1));
        }
    run_once(d, b);
    switch (b->c) {
    case ALL_REDUCE: wrong = count_wrong(&b->small, 0, b->n, want = tri, tol, &got); break;
    case BROADCAST: wrong = count_wrong(&b->small, 0, b->n, want = 1, tol, &got); break;
    case REDUCE_SCATTER: /* sum over ranks q of q + r + 1 */
        wrong = count_wrong(&b->small, 0, b->n, want = tri + (double)W * r, tol, &got);
        break;
    case SEND_RECV: wrong = count_wrong(&b->big, 0, b->n, want = (r + W - 1) % W + 1, tol, &got); break;
    case ALL_GATHER:
        for (int k = 0; k < W && !wrong; k++) {
            wrong = count_wrong(&b->big, (int64_t)k * b->n, b->n, want = k + 1, tol, &got);
            where = k;
        }
        break;
    default: break;
    }
    if (wrong) {
        char block[32] = "";
        if (where >= 0) snprintf(block, sizeof block, " in gathered block %d", (int)where);
        fprintf(stderr, "error: rank %d: %s of %lld elements a rank: %lld entries wrong%s (first: %g, "
                "want %g)\n", r, collective_names[b->c], (long long)b->n, (long long)wrong, block, got, want);
    }
    return (int64_t)dist_sum_double(d, (double)wrong);
}

/* The bytes a size means (nccl-tests: the whole buffer of all-gather and
 * reduce-scatter) and the per-rank elements n; 0 when a block would be empty. */
static int64_t elements_for(Collective c, int64_t bytes, int64_t esize, int W) {
    return c == ALL_GATHER || c == REDUCE_SCATTER ? bytes / (esize * W) : bytes / esize;
}

static void bench_collective(Dist *d, const Config *c, Collective coll, DType dtype, int64_t min_bytes,
                             int64_t max_bytes, MetricsFile *mf, int64_t *wrong_total) {
    const int W = d->world_size;
    const int64_t esize = (int64_t)dtype_size(dtype);
    const Device device = d->device;
    /* the plain MPI_Allreduce beside the library's: MPI ranks on host buffers only */
    const int blocking = coll == ALL_REDUCE && device == DEVICE_CPU && strcmp(d->backend, "mpi") == 0 &&
                         dtype == DTYPE_F32;
#ifndef HAVE_MPI
    if (blocking) fatal("the mpi backend without HAVE_MPI: rebuild (make bench-comm)");
#endif
    if (coll == SEND_RECV && W < 2) {
        print0("\n%s: needs 2 ranks or more (each sends to the next): not run\n", collective_names[coll]);
        return;
    }
    print0("\n%s (%s%s), best of %d rounds, the ranks' mean time; busbw = algbw x %.3f%s\n",
           collective_names[coll], dtype_name(dtype), coll == ALL_REDUCE || coll == REDUCE_SCATTER ? ", sum" : "",
           c->rounds, bus_factor(coll, W),
           blocking ? "; lib/dist's call is MPI's blocking one, watched; beside it a plain MPI_Allreduce, "
                      "the two taking turns" : "");
    print0("%12s %12s %10s %12s %12s", "bytes", "elements", "time (us)", "algbw GB/s", "busbw GB/s");
    if (blocking) print0(" %12s %14s", "MPI_Allreduce", "busbw GB/s");
    if (c->check) print0(" %8s", "check");
    print0("\n");
    for (int64_t size = min_bytes; size <= max_bytes; size *= 2) {
        Buffers b = {.c = coll, .n = elements_for(coll, size, esize, W)};
        if (b.n < 1) continue;
        const int64_t bytes = coll == ALL_GATHER || coll == REDUCE_SCATTER ? b.n * W * esize : b.n * esize;
        b.small = tensor_zeros_typed(device, dtype, 1, (int)b.n);
        const int64_t big = coll == ALL_GATHER || coll == REDUCE_SCATTER ? b.n * W : coll == SEND_RECV ? b.n : 1;
        b.big = tensor_zeros_typed(device, dtype, 1, (int)big);
        const int64_t wrong = c->check ? check_once(d, &b, dtype) : 0;
        *wrong_total += wrong;
        /* the same amount of data per round for every size, within limits */
        int iters = c->iters;
        if (bytes > ((int64_t)1 << 20)) iters = (int)(c->iters * ((int64_t)1 << 20) / bytes) + 1;
        double best[2] = {1e30, 1e30}; /* the library's, MPI_Allreduce's */
        for (int which = 0; which <= blocking; which++) /* warm-up: connections, buffers */
            time_calls(d, &b, 2, which);
        for (int r = 0; r < c->rounds; r++)
            for (int which = 0; which <= blocking; which++) {
                double s = time_calls(d, &b, iters, which) / iters;
                if (s < best[which]) best[which] = s;
            }
        const double algbw = (double)bytes / best[0] / 1e9;
        const double busbw = algbw * bus_factor(coll, W);
        const double mpi_busbw = (double)bytes / best[1] / 1e9 * bus_factor(coll, W);
        print0("%12lld %12lld %10.1f %12.3f %12.3f", (long long)bytes, (long long)b.n, best[0] * 1e6,
               algbw, busbw);
        if (blocking) print0(" %10.1f us %14.3f", best[1] * 1e6, mpi_busbw);
        if (c->check) print0(" %8s", wrong ? "WRONG" : "ok");
        print0("\n");
        metrics_begin(mf);
        metrics_str(mf, "collective", collective_names[coll]);
        metrics_str(mf, "backend", d->backend);
        metrics_str(mf, "dtype", dtype_name(dtype));
        metrics_int(mf, "ranks", W);
        metrics_int(mf, "nodes", d->nodes);
        metrics_int(mf, "bytes", bytes);
        metrics_num(mf, "time_us", best[0] * 1e6);
        metrics_num(mf, "algbw_GBps", algbw);
        metrics_num(mf, "busbw_GBps", busbw);
        if (blocking) {
            metrics_num(mf, "mpi_allreduce_time_us", best[1] * 1e6);
            metrics_num(mf, "mpi_allreduce_busbw_GBps", mpi_busbw);
        }
        if (c->check) metrics_int(mf, "wrong", wrong);
        metrics_end(mf);
        tensor_free(&b.small);
        tensor_free(&b.big);
    }
}

int main(int argc, char **argv) {
    Config c = {.device = "cpu", .min_bytes = "8", .max_bytes = "256M", .dtype = "float32",
                .collective = "all-reduce", .iters = 20, .rounds = 3};
    ArgSpec specs[] = {
        {"device", ARG_CHOICE, &c.device, "cpu: MPI backend; cuda: NCCL, one GPU per rank", "cpu|cuda"},
        {"collective", ARG_CHOICE, &c.collective, "which to time (all: the five, one table each)",
         "all-reduce|all-gather|reduce-scatter|broadcast|send-recv|all"},
        {"min-bytes", ARG_STRING, &c.min_bytes, "smallest message (x2 each step up to --max-bytes)", NULL},
        {"max-bytes", ARG_STRING, &c.max_bytes, "largest message", NULL},
        {"dtype", ARG_CHOICE, &c.dtype, "element type of the messages", "float32|bfloat16|float16"},
        {"iters", ARG_INT, &c.iters, "calls per timed round (fewer for large messages)", NULL},
        {"rounds", ARG_INT, &c.rounds, "timed rounds per size; the best counts", NULL},
        {"ranks", ARG_INT, &c.ranks, "stop unless the job has this many ranks (0: any)", NULL},
        {"check", ARG_FLAG, &c.check, "first one call per size on known values, compared on every rank; exit 1 on a wrong one", NULL},
        {"metrics", ARG_STRING, &c.metrics, "one JSON line per collective and size to this file (rank 0)", NULL},
    };
    args_parse(argc, argv, specs, sizeof specs / sizeof specs[0],
               "bandwidth of lib/dist's collectives against message size (nccl-tests' algbw, busbw)");
    if (c.iters < 1 || c.rounds < 1) fatal("--iters and --rounds must be at least 1");
    const int64_t min_bytes = parse_bytes(c.min_bytes, "--min-bytes");
    const int64_t max_bytes = parse_bytes(c.max_bytes, "--max-bytes");
    if (min_bytes > max_bytes) fatal("--min-bytes %s is above --max-bytes %s", c.min_bytes, c.max_bytes);
    const Device device = strcmp(c.device, "cuda") == 0 ? DEVICE_CUDA : DEVICE_CPU;
    DType dtype = DTYPE_F32;
    dtype_parse(c.dtype, &dtype); /* one of the choices: args_parse checked */
    if (device == DEVICE_CUDA) cuda_require();
    Dist *d = dist_init(&(DistOptions){.device = device, .expect_world = c.ranks});
    char about[256];
    dist_describe(d, about, sizeof about);
    print0("%s\n", about);
    MetricsFile *mf = d->rank == 0 ? metrics_open(c.metrics) : NULL;
    int64_t wrong = 0;
    for (int k = 0; k < COLLECTIVES; k++)
        if (strcmp(c.collective, "all") == 0 || strcmp(c.collective, collective_names[k]) == 0)
            bench_collective(d, &c, (Collective)k, dtype, min_bytes, max_bytes, mf, &wrong);
    metrics_close(mf);
    if (c.check) print0("\ncheck: %s\n", wrong ? "some results were WRONG (the messages above say where)"
                                                : "every result as expected");
    dist_finalize(d);
    return wrong ? 1 : 0;
}
