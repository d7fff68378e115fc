#include "run_trace.h"

#include <stdio.h>

#include "core/check.h"
#include "core/log.h"
#include "core/trace.h"
#include "cuda/trace_gpu.h"

void run_trace_start(RunTrace *t, const char *path) {
    *t = (RunTrace){0};
    if (!path || !*path) return;
    t->path = path;
    trace_open(path, &(TraceOptions){.rank = 0, .world_size = 1});
    cuda_trace_counters_start(); /* on a GPU: its utilisation, memory and clock too */
}

void run_trace_blocks(RunTrace *t, BlockList *l) {
    if (!t->path) return;
    CHECK(t->count < RUN_TRACE_LISTS, "run_trace_blocks: at most %d block lists", RUN_TRACE_LISTS);
    t->blocks[t->count++] = block_trace_attach(l);
}

void run_trace_finish(RunTrace *t) {
    if (!t->path) return;
    for (int i = 0; i < t->count; i++) block_trace_detach(t->blocks[i]);
    const int64_t dropped = trace_close();
    if (dropped > 0)
        fprintf(stderr, "warning: the trace %s reached its cap: %lld events were dropped (the file "
                "says how many; its shares of a step are short of them)\n", t->path,
                (long long)dropped);
    print0("trace: %s (make trace TRACE=%s)\n", t->path, t->path);
    *t = (RunTrace){0};
}
