/* What trace.c records and trace_write.c writes (core/trace.h). */
#ifndef CORE_TRACE_INTERNAL_H
#define CORE_TRACE_INTERNAL_H

#include <pthread.h>
#include <stdio.h>

#include "gpu_counters.h"
#include "trace.h"

typedef struct {
    int64_t start_ns, dur_ns;
    int64_t bytes;              /* "args": {"bytes": n}; < 0: no args */
    int tid;
    TraceCat cat;
    char name[TRACE_NAME_MAX];
} TraceEvent;

typedef struct {
    int64_t ts_ns;
    int64_t cpu_bytes, cuda_bytes, resident_bytes;
} TraceSample;

typedef struct {
    int64_t ts_ns;
    GpuSample s;
} TraceGpuSample;

/* A range begun and not ended yet: on the host's stack, a lane, a stream's stack. */
typedef struct {
    int64_t start_ns, bytes;
    TraceCat cat;
    uint64_t nvtx;              /* a lane's NVTX range id */
    char name[TRACE_NAME_MAX];
} TraceOpen;

typedef struct {
    FILE *f;
    char *path;
    TraceOptions opt;
    pthread_t thread;           /* the one that traces */
    TraceEvent *events;         /* [count], room for alloc */
    int64_t count, alloc;
    TraceSample *samples;       /* [nsamples], room for samples_alloc */
    int64_t nsamples, samples_alloc;
    TraceGpuSample *gpu_samples; /* [ngpu], room for gpu_alloc: the "gpu" counter */
    int64_t ngpu, gpu_alloc;
    GpuCounters *gpu;           /* NULL: no GPU counters (trace_gpu_counters_start) */
    int64_t gpu_tried_ns;       /* when they were last read */
    int64_t dropped;            /* events and samples beyond opt.max_events */
    TraceOpen stack[TRACE_DEPTH_MAX];
    int depth;
    TraceOpen lanes[TRACE_COMM_LANES];
    bool lane_busy[TRACE_COMM_LANES], lane_used[TRACE_COMM_LANES];
    /* the other tracks: the streams', then the loader's (index TRACE_STREAMS_MAX) */
    TraceOpen streams[TRACE_STREAMS_MAX + 1][TRACE_DEPTH_MAX]; /* their ends in start_ns */
    int stream_depth[TRACE_STREAMS_MAX + 1];
    bool stream_used[TRACE_STREAMS_MAX + 1];
} Trace;

/* JSON object form of t into t->f; false when it could not be written. */
bool trace_write(const Trace *t);
/* s as the body of a JSON string (quotes, backslashes and control characters escaped). */
void trace_json_string(FILE *f, const char *s);
/* "CAT" of a category. */
const char *trace_cat_name(TraceCat cat);

#endif
