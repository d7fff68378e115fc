/* make bench-comm: all-reduce bandwidth of lib/dist against message size, with the
 * definitions of NVIDIA's nccl-tests, so the numbers compare with theirs:
 *   algbw = bytes / time                        (what one rank sees)
 *   busbw = algbw * 2 (n - 1) / n               (what each link carries in a ring:
 *                                                comparable across rank counts)
 * Started as several ranks (mpirun -n 2 bench_comm, or srun in a job). CPU ranks
 * measure the MPI backend (dist_all_reduce: Open MPI's blocking MPI_Allreduce, with
 * lib/dist's watchdog thread watching so that a silent rank times out) and, beside it, a
 * plain MPI_Allreduce on MPI_COMM_WORLD with the same buffer and nothing around it (in a
 * build with MPI: HAVE_MPI); --device cuda the NCCL backend on one GPU per rank. Each size: warm-up calls, then the best of --rounds rounds
 * of --iters calls, each round's time the ranks' mean (they start together after a
 * barrier and a collective ends nearly together on all). Prints a table; --metrics
 * writes one JSON line per size. --dtype bfloat16 or float16 sums 16-bit values
 * (half the bytes per element; MPI through lib/dist's own 16-bit sum, so without the
 * plain MPI_Allreduce, which has no such type). */
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
    const char *device, *metrics, *max_bytes, *dtype;
    int iters, rounds, ranks;
} Config;

/* "256M", "64k", "8": bytes, or a user error. */
static int64_t parse_bytes(const char *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    int64_t unit = *end == 'k' || *end == 'K' ? 1 << 10 : *end == 'M' ? 1 << 20
                 : *end == 'G' ? (int64_t)1 << 30 : 1;
    if (unit > 1) end++;
    if (end == s || *end || v < 4) fatal("--max-bytes expects a size of at least 4 like 64M, got '%s'", s);
    return (int64_t)v * unit;
}

/* The ranks' mean seconds for `iters` all-reduces of t: the library's (blocking 0), or
 * a plain MPI_Allreduce (blocking 1). */
static double time_all_reduce(Dist *d, Tensor *t, int iters, int blocking) {
#ifndef HAVE_MPI
    (void)blocking; /* never set without MPI */
#endif
    dist_barrier(d);
    double t0 = now_seconds();
    for (int i = 0; i < iters; i++) {
#ifdef HAVE_MPI
        if (blocking) {
            MPI_Allreduce(MPI_IN_PLACE, t->data, (int)t->size, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            continue;
        }
#endif
        dist_all_reduce(d, t, DIST_SUM);
    }
    if (t->device == DEVICE_CUDA) cuda_sync();
    return dist_sum_double(d, now_seconds() - t0) / d->world_size;
}

int main(int argc, char **argv) {
    Config c = {.device = "cpu", .max_bytes = "256M", .dtype = "float32", .iters = 20, .rounds = 3};
    ArgSpec specs[] = {
        {"device", ARG_CHOICE, &c.device, "cpu: MPI backend; cuda: NCCL, one GPU per rank", "cpu|cuda"},
        {"max-bytes", ARG_STRING, &c.max_bytes, "largest message (8 bytes up to it, x2 each step)", NULL},
        {"dtype", ARG_CHOICE, &c.dtype, "element type of the messages", "float32|bfloat16|float16"},
        {"iters", ARG_INT, &c.iters, "all-reduces per timed round (fewer for large messages)", NULL},
        {"rounds", ARG_INT, &c.rounds, "timed rounds per size; the best counts", NULL},
        {"ranks", ARG_INT, &c.ranks, "stop unless the job has this many ranks (0: any)", NULL},
        {"metrics", ARG_STRING, &c.metrics, "one JSON line per size to this file (rank 0)", NULL},
    };
    args_parse(argc, argv, specs, sizeof specs / sizeof specs[0],
               "all-reduce bandwidth of lib/dist against message size (nccl-tests' algbw, busbw)");
    if (c.iters < 1 || c.rounds < 1) fatal("--iters and --rounds must be at least 1");
    const int64_t max_bytes = parse_bytes(c.max_bytes);
    const Device device = strcmp(c.device, "cuda") == 0 ? DEVICE_CUDA : DEVICE_CPU;
    DType dtype = DTYPE_F32;
    dtype_parse(c.dtype, &dtype); /* one of the choices: args_parse checked */
    const int64_t esize = (int64_t)dtype_size(dtype);
    if (device == DEVICE_CUDA) cuda_require();
    Dist *d = dist_init(&(DistOptions){.device = device, .expect_world = c.ranks});
    const int W = d->world_size;
    char about[256];
    dist_describe(d, about, sizeof about);
    /* the plain MPI_Allreduce beside the library's: MPI ranks on host buffers only */
    const int blocking = d->device == DEVICE_CPU && strcmp(d->backend, "mpi") == 0 &&
                         dtype == DTYPE_F32;
#ifndef HAVE_MPI
    if (blocking) fatal("the mpi backend without HAVE_MPI: rebuild (make bench-comm)");
#endif
    print0("%s\nall-reduce (sum, %s), best of %d rounds, the ranks' mean time; %s\n", about,
           dtype_name(dtype), c.rounds, blocking ? "lib/dist's dist_all_reduce (MPI_Allreduce, "
           "watched); beside it a plain MPI_Allreduce, the two taking turns" : "lib/dist");
    print0("%12s %12s %10s %12s %12s", "bytes", "elements", "time (us)", "algbw GB/s", "busbw GB/s");
    if (blocking) print0(" %12s %14s", "MPI_Allreduce", "busbw GB/s");
    print0("\n");
    MetricsFile *mf = d->rank == 0 ? metrics_open(c.metrics) : NULL;
    for (int64_t bytes = 8; bytes <= max_bytes; bytes *= 2) {
        const int64_t n = bytes / esize;
        Tensor t = tensor_zeros_typed(device, dtype, 1, (int)n);
        /* the same amount of data per round for every size, within limits */
        int iters = c.iters;
        if (bytes > ((int64_t)1 << 20)) iters = (int)(c.iters * ((int64_t)1 << 20) / bytes) + 1;
        double best[2] = {1e30, 1e30}; /* the library's, MPI_Allreduce's */
        for (int which = 0; which <= blocking; which++) /* warm-up: connections, buffers */
            time_all_reduce(d, &t, 2, which);
        for (int r = 0; r < c.rounds; r++)
            for (int which = 0; which <= blocking; which++) {
                double s = time_all_reduce(d, &t, iters, which) / iters;
                if (s < best[which]) best[which] = s;
            }
        const double algbw = (double)bytes / best[0] / 1e9;
        const double busbw = algbw * 2.0 * (W - 1) / W;
        const double mpi_busbw = (double)bytes / best[1] / 1e9 * 2.0 * (W - 1) / W;
        print0("%12lld %12lld %10.1f %12.3f %12.3f", (long long)bytes, (long long)n, best[0] * 1e6,
               algbw, busbw);
        if (blocking) print0(" %10.1f us %14.3f", best[1] * 1e6, mpi_busbw);
        print0("\n");
        metrics_begin(mf);
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
        metrics_end(mf);
        tensor_free(&t);
    }
    metrics_close(mf);
    dist_finalize(d);
    return 0;
}
