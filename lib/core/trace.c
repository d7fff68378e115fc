/* Recording a trace (core/trace.h): ranges on a stack, lanes for what is in flight,
 * counters; trace_write.c writes the file at the end. */
#include "trace.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fs.h"
#include "gpu_counters.h"
#include "memory.h"
#include "tensor.h"
#include "trace_internal.h"

#ifdef HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#define NVTX_PUSH(name) nvtxRangePushA(name)
#define NVTX_POP() nvtxRangePop()
#define NVTX_START(name) nvtxRangeStartA(name)
#define NVTX_END(id) nvtxRangeEnd(id)
#else
#define NVTX_PUSH(name) ((void)0)
#define NVTX_POP() ((void)0)
#define NVTX_START(name) ((uint64_t)0)
#define NVTX_END(id) ((void)(id))
#endif

static Trace *g_trace;
static const TraceGpuOps *g_gpu;

int64_t trace_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The trace when open and called from its thread; NULL when none is open. */
static Trace *active(void) {
    Trace *t = g_trace;
    if (t)
        CHECK(pthread_equal(t->thread, pthread_self()), "trace: a range from another thread than "
              "the one that opened the trace (an OpenMP worker?): only that thread traces");
    return t;
}

static void copy_name(char *dst, const char *name) { snprintf(dst, TRACE_NAME_MAX, "%s", name); }

/* Room for one more event or sample within the cap; false (and counted) beyond it. */
static bool room(Trace *t) {
    if (t->count + t->nsamples + t->ngpu < t->opt.max_events) return true;
    t->dropped++;
    return false;
}

/* *items, holding used of *alloc items of size bytes each, with room for one more. */
static void grow(void **items, int64_t *alloc, int64_t used, size_t size, int64_t first) {
    if (used < *alloc) return;
    const int64_t n = *alloc ? 2 * *alloc : first;
    void *grown = xmalloc((size_t)n * size);
    if (used) memcpy(grown, *items, (size_t)used * size);
    xfree(*items);
    *items = grown, *alloc = n;
}

static void add_event(Trace *t, int tid, const TraceOpen *o, int64_t end_ns) {
    if (!room(t)) return;
    grow((void **)&t->events, &t->alloc, t->count, sizeof *t->events, 4096);
    TraceEvent *e = &t->events[t->count++];
    e->start_ns = o->start_ns, e->dur_ns = end_ns - o->start_ns, e->bytes = o->bytes;
    e->tid = tid, e->cat = o->cat;
    memcpy(e->name, o->name, TRACE_NAME_MAX);
}

static void sample_memory(Trace *t);
static void sample_gpu(Trace *t, int64_t now);

void trace_open(const char *path, const TraceOptions *opt) {
    CHECK(!g_trace, "trace_open while a trace to %s is open (one at a time)", g_trace->path);
    CHECK(path && *path, "trace_open without a path");
    char msg[FS_MSG_MAX];
    FILE *f = fs_fopen_write(path, 0, msg, sizeof msg); /* never through a link (core/fs.h) */
    if (!f) fatal("cannot write the trace: %s", msg);
    Trace *t = xcalloc(1, sizeof *t);
    t->f = f, t->path = xstrdup(path), t->opt = *opt;
    if (t->opt.world_size < 1) t->opt.world_size = 1;
    if (t->opt.max_events <= 0) t->opt.max_events = TRACE_DEFAULT_CAP;
    if (t->opt.origin_ns == 0) t->opt.origin_ns = trace_now_ns();
    t->thread = pthread_self();
    g_trace = t;
    if (g_gpu) g_gpu->start();
}

bool trace_is_open(void) { return g_trace != NULL; }

int64_t trace_close(void) {
    Trace *t = active();
    if (!t) return 0;
    CHECK(t->depth == 0, "trace_close with the range '%s' still open (every trace_begin needs "
          "its trace_end)", t->stack[t->depth - 1].name);
    if (g_gpu) g_gpu->flush();
    for (int k = 0; k < TRACE_COMM_LANES; k++)
        CHECK(!t->lane_busy[k], "trace_close with '%s' still in flight (never waited for)",
              t->lanes[k].name);
    const bool ok = trace_write(t);
    const bool closed = fclose(t->f) == 0;
    if (!ok || !closed) fatal("cannot write the trace %s (disk full?)", t->path);
    const int64_t dropped = t->dropped;
    g_trace = NULL;
    gpu_counters_close(t->gpu);
    xfree(t->events), xfree(t->samples), xfree(t->gpu_samples), xfree(t->path), xfree(t);
    return dropped;
}

/* ---------------------------------------------------------------- the host track */

void trace_begin_bytes(const char *name, TraceCat cat, int64_t bytes) {
    Trace *t = active();
    if (!t) return;
    CHECK(t->depth < TRACE_DEPTH_MAX, "trace: more than %d ranges open at once ('%s' inside "
          "'%s'): a trace_end missing in a loop?", TRACE_DEPTH_MAX, name, t->stack[t->depth - 1].name);
    CHECK(cat >= 0 && cat < TRACE_CATS, "trace: range '%s' of category %d", name, (int)cat);
    TraceOpen *o = &t->stack[t->depth++];
    copy_name(o->name, name);
    o->cat = cat, o->bytes = bytes;
    o->start_ns = trace_now_ns(); /* before the GPU's event: that never starts before the host */
    NVTX_PUSH(o->name);
    if (g_gpu && cat == TRACE_COMPUTE) g_gpu->begin(o->name);
}

void trace_begin(const char *name, TraceCat cat) { trace_begin_bytes(name, cat, -1); }

void trace_end(const char *name) {
    Trace *t = active(); /* untraced runs do not read the clock */
    if (!t) return;
    const int64_t now = trace_now_ns();
    CHECK(t->depth > 0, "trace: '%s' closed, but no range is open", name);
    const TraceOpen *o = &t->stack[t->depth - 1];
    CHECK(strncmp(o->name, name, TRACE_NAME_MAX - 1) == 0, "trace: '%s' closed while '%s' is "
          "open inside it (ranges nest: close '%s' first)", name, o->name, o->name);
    t->depth--;
    if (g_gpu && o->cat == TRACE_COMPUTE) g_gpu->end();
    NVTX_POP();
    add_event(t, TRACE_TID_HOST, o, now);
    if (o->cat == TRACE_STEP) {
        /* reading the resident set costs some 5 us: not more often than every 10 ms */
        if (t->nsamples == 0 || now - t->samples[t->nsamples - 1].ts_ns >= 10000000) sample_memory(t);
        sample_gpu(t, now);
        if (g_gpu) g_gpu->flush();
    }
}

/* ---------------------------------------------------------------- lanes in flight */

int trace_async_begin(const char *name, TraceCat cat, int64_t bytes) {
    Trace *t = active();
    if (!t) return -1;
    int k = 0;
    while (k < TRACE_COMM_LANES && t->lane_busy[k]) k++;
    if (k == TRACE_COMM_LANES) {
        t->dropped++;
        return -1;
    }
    TraceOpen *o = &t->lanes[k];
    copy_name(o->name, name);
    o->cat = cat, o->bytes = bytes;
    o->nvtx = NVTX_START(o->name);
    t->lane_busy[k] = t->lane_used[k] = true;
    o->start_ns = trace_now_ns();
    return k;
}

void trace_async_end(int handle) {
    const int64_t now = trace_now_ns();
    Trace *t = active();
    if (!t || handle < 0) return;
    CHECK(handle < TRACE_COMM_LANES && t->lane_busy[handle], "trace_async_end of handle %d, "
          "which is not in flight", handle);
    NVTX_END(t->lanes[handle].nvtx);
    t->lane_busy[handle] = false;
    add_event(t, TRACE_TID_COMM(handle), &t->lanes[handle], now);
}

/* ---------------------------------------------------------------- other tracks */

void trace_complete(int tid, const char *name, TraceCat cat, int64_t start_ns, int64_t end_ns) {
    Trace *t = active();
    if (!t) return;
    const int k = tid == TRACE_TID_LOADER ? TRACE_STREAMS_MAX : tid - TRACE_TID_STREAM(0);
    CHECK(k >= 0 && k <= TRACE_STREAMS_MAX, "trace_complete on track %d: streams are tracks %d "
          "to %d, the data loader %d", tid, TRACE_TID_STREAM(0), TRACE_TID_STREAM(TRACE_STREAMS_MAX - 1),
          TRACE_TID_LOADER);
    CHECK(end_ns >= start_ns, "trace: '%s' ends before it starts", name);
    /* the ranges still open on this track at start_ns: those ending after it */
    TraceOpen *open = t->streams[k];
    int *depth = &t->stream_depth[k];
    while (*depth > 0 && open[*depth - 1].start_ns <= start_ns) (*depth)--;
    CHECK(*depth == 0 || end_ns <= open[*depth - 1].start_ns, "trace: '%s' on track %d overlaps "
          "'%s' without nesting in it (events of one track nest)", name, tid, open[*depth - 1].name);
    CHECK(*depth < TRACE_DEPTH_MAX, "trace: more than %d nested events on track %d", TRACE_DEPTH_MAX, tid);
    TraceOpen *o = &open[(*depth)++];
    copy_name(o->name, name);
    o->start_ns = end_ns; /* kept: where it ends */
    TraceOpen e = {.start_ns = start_ns, .bytes = -1, .cat = cat};
    memcpy(e.name, o->name, TRACE_NAME_MAX);
    t->stream_used[k] = true;
    add_event(t, tid, &e, end_ns);
}

/* A "memory" counter sample now. */
static void sample_memory(Trace *t) {
    if (!room(t)) return;
    grow((void **)&t->samples, &t->samples_alloc, t->nsamples, sizeof *t->samples, 1024);
    t->samples[t->nsamples++] = (TraceSample){
        .ts_ns = trace_now_ns(), .cpu_bytes = tensor_allocated_bytes(DEVICE_CPU),
        .cuda_bytes = tensor_allocated_bytes(DEVICE_CUDA), .resident_bytes = (int64_t)mem_resident_bytes()};
}

/* A "gpu" counter sample, when the GPU's counters are started, the last try is
 * TRACE_GPU_EVERY_NS old at `now` (NVML's queries cost more than the resident set, and its
 * utilisation is a share of its own sample period, 1/6 s to 1 s), and NVML says anything. */
static void sample_gpu(Trace *t, int64_t now) {
    if (!t->gpu || (t->gpu_tried_ns != 0 && now - t->gpu_tried_ns < TRACE_GPU_EVERY_NS)) return;
    t->gpu_tried_ns = trace_now_ns();
    GpuSample s;
    if (!gpu_counters_read(t->gpu, &s) || !room(t)) return;
    grow((void **)&t->gpu_samples, &t->gpu_alloc, t->ngpu, sizeof *t->gpu_samples, 256);
    t->gpu_samples[t->ngpu++] = (TraceGpuSample){.ts_ns = t->gpu_tried_ns, .s = s};
}

void trace_sample_counters(void) {
    Trace *t = active();
    if (!t) return;
    sample_memory(t);
    sample_gpu(t, trace_now_ns());
}

void trace_gpu_counters_start(const char *pci_bus_id, int index) {
    Trace *t = active();
    if (!t || t->gpu) return;
    char msg[GPU_COUNTERS_MSG_MAX];
    t->gpu = gpu_counters_open(NULL, pci_bus_id, index, msg, sizeof msg);
    if (!t->gpu) fprintf(stderr, "note: the trace %s has no GPU counters: %s\n", t->path, msg);
    else if (msg[0]) fprintf(stderr, "note: the trace %s: %s\n", t->path, msg);
}

void trace_set_gpu(const TraceGpuOps *ops) {
    g_gpu = ops;
    if (ops && g_trace) ops->start();
}

int trace_rank_path(char *out, int cap, const char *path, int rank) {
    const size_t n = strlen(path);
    const bool json = n > 5 && strcmp(path + n - 5, ".json") == 0;
    const int len = json ? snprintf(out, (size_t)cap, "%.*s.rank%d.json", (int)(n - 5), path, rank)
                         : snprintf(out, (size_t)cap, "%s.rank%d.json", path, rank);
    if (len < 0 || len >= cap) {
        if (cap > 0) out[0] = '\0';
        return -1;
    }
    return 0;
}
