/* Traces of a job's ranks, and the collectives' ranges in them (dist/dist_trace.h). */
#include "dist_trace.h"

#include <stdio.h>

#include "core/check.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/trace.h"
#include "cuda/trace_gpu.h"

void dist_trace_start(Dist *d, const char *path) {
    if (!path || !*path) return;
    char mine[FS_PATH_MAX];
    if (trace_rank_path(mine, sizeof mine, path, d->rank) != 0) fatal("--trace %s: path too long", path);
    dist_barrier(d); /* every rank's ts 0: when they left it (a few microseconds apart) */
    trace_open(mine, &(TraceOptions){.rank = d->rank, .world_size = d->world_size,
                                     .origin_ns = trace_now_ns()});
    cuda_trace_counters_start(); /* on a GPU: its utilisation, memory and clock too */
}

void dist_trace_finish(Dist *d, const char *path) {
    if (!trace_is_open()) return;
    char mine[FS_PATH_MAX], last[FS_PATH_MAX];
    trace_rank_path(mine, sizeof mine, path, d->rank);
    const int64_t dropped = trace_close();
    if (dropped > 0)
        fprintf(stderr, "warning: rank %d: the trace %s reached its cap: %lld events were dropped "
                "(the file says how many; its shares of a step are short of them)\n", d->rank,
                mine, (long long)dropped);
    trace_rank_path(mine, sizeof mine, path, 0);
    trace_rank_path(last, sizeof last, path, d->world_size - 1);
    if (d->world_size == 1) print0("trace: %s (make trace TRACE=%s)\n", mine, mine);
    else print0("trace: %s .. %s, one per rank (make trace TRACE=\"%s ...\")\n", mine, last, mine);
}

/* ---------------------------------------------------------------- requests in flight */

enum { IN_FLIGHT_MAX = 256 };
static struct {
    DistRequest *r;
    int lane;       /* trace_async_begin's handle; -1 once seen finished */
    char wait[32];  /* its wait's range: "wait all-reduce" */
} g_flight[IN_FLIGHT_MAX];

static int find(DistRequest *r) {
    for (int i = 0; i < IN_FLIGHT_MAX; i++)
        if (g_flight[i].r == r) return i;
    return -1;
}

void dist_trace_request(DistRequest *r, const char *name, int64_t bytes) {
    if (!trace_is_open() || !r) return;
    const int i = find(NULL); /* a free entry; none: the request is not traced in flight */
    if (i < 0) return;
    g_flight[i].r = r;
    g_flight[i].lane = trace_async_begin(name, TRACE_COMM, bytes);
    snprintf(g_flight[i].wait, sizeof g_flight[i].wait, "wait %s", name);
}

void dist_trace_finished(DistRequest *r) {
    const int i = trace_is_open() && r ? find(r) : -1;
    if (i < 0) return;
    trace_async_end(g_flight[i].lane);
    g_flight[i].lane = -1;
}

static const char *wait_name(DistRequest *r) {
    const int i = find(r);
    return i < 0 ? "wait" : g_flight[i].wait;
}

void dist_trace_wait_begin(DistRequest *r) {
    if (trace_is_open() && r) trace_begin(wait_name(r), TRACE_COMM);
}

void dist_trace_wait_end(DistRequest *r) {
    if (!trace_is_open() || !r) return;
    trace_end(wait_name(r));
    dist_trace_finished(r);
    const int i = find(r);
    if (i >= 0) g_flight[i].r = NULL; /* the request is freed: its address may come again */
}
