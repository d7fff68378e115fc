// The GPU's side of a trace (core/trace.h): a pair of CUDA events around the device work
// of each compute range, recorded on the compute stream (cuda_stream(), where the
// library launches), read when the step ends and placed on the host clock: an anchor
// event, recorded and waited for when the trace starts and after each flush, is taken to
// have happened at the host time read right after the wait; an event's GPU time is the
// anchor's host time plus cudaEventElapsedTime from it (within a step: float
// milliseconds keep a fraction of a microsecond). Reading the events waits for the step's
// work, which the step's loss has waited for already.
#include <stdio.h>

extern "C" {
#include "core/check.h"
#include "core/trace.h"
}
#include "cuda_check.h"
#include "trace_gpu.h"

namespace {

enum { PAIRS = 2048 };

struct Pair {
    cudaEvent_t begin, end;   // created once, reused
    bool ended;
    char name[TRACE_NAME_MAX];
};

Pair g_pairs[PAIRS];          // in the order they began
int g_used;
int g_open[TRACE_DEPTH_MAX];  // the pairs begun and not ended, innermost last
int g_depth;
cudaEvent_t g_anchor;
int64_t g_anchor_ns;

void make(cudaEvent_t *e) {
    if (!*e) CUDA_CHECK(cudaEventCreate(e));
}

// A new anchor: recorded now, waited for, its host time read.
void anchor() {
    make(&g_anchor);
    CUDA_CHECK(cudaEventRecord(g_anchor, cuda_stream()));
    CUDA_CHECK(cudaEventSynchronize(g_anchor));
    g_anchor_ns = trace_now_ns();
}

int64_t host_ns(cudaEvent_t e) {
    float ms = 0;
    CUDA_CHECK(cudaEventSynchronize(e));
    CUDA_CHECK(cudaEventElapsedTime(&ms, g_anchor, e));
    return g_anchor_ns + (int64_t)((double)ms * 1e6);
}

void start() {
    g_used = g_depth = 0;
    anchor();
}

// The pairs from the first on, up to the first one still open, to the trace; the open
// ones move to the front. Then a new anchor for what follows.
void flush() {
    int done = 0;
    while (done < g_used && g_pairs[done].ended) {
        const Pair &p = g_pairs[done++];
        trace_complete(TRACE_TID_STREAM(0), p.name, TRACE_COMPUTE, host_ns(p.begin), host_ns(p.end));
    }
    if (done == 0) return;
    for (int i = done; i < g_used; i++) { // the open ones first, their events kept
        Pair t = g_pairs[i - done];
        g_pairs[i - done] = g_pairs[i];
        g_pairs[i] = t;
    }
    g_used -= done;
    for (int k = 0; k < g_depth; k++) g_open[k] -= done;
    anchor();
}

void begin(const char *name) {
    if (g_used == PAIRS) flush(); // waits for the GPU: only with very many ranges a step
    CHECK(g_used < PAIRS && g_depth < TRACE_DEPTH_MAX, "trace: %d GPU ranges open at once", g_depth);
    Pair &p = g_pairs[g_used];
    make(&p.begin), make(&p.end);
    snprintf(p.name, sizeof p.name, "%s", name);
    p.ended = false;
    CUDA_CHECK(cudaEventRecord(p.begin, cuda_stream()));
    g_open[g_depth++] = g_used++;
}

void end() {
    CHECK(g_depth > 0, "trace: a GPU range ended that never began");
    Pair &p = g_pairs[g_open[--g_depth]];
    CUDA_CHECK(cudaEventRecord(p.end, cuda_stream()));
    p.ended = true;
}

const TraceGpuOps OPS = {start, begin, end, flush};

} // namespace

extern "C" void cuda_trace_register(void) { trace_set_gpu(&OPS); }
