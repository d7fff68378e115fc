/* Where a program's time goes: a trace in Chrome's Trace Event Format (the JSON object
 * form, {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}), which
 * chrome://tracing and https://ui.perfetto.dev open, one file per rank.
 *
 *   trace_open("run.rank0.json", &(TraceOptions){.rank = 0, .world_size = 2});
 *   trace_begin("step", TRACE_STEP);
 *   trace_begin("layer 0 forward", TRACE_COMPUTE);  ...  trace_end("layer 0 forward");
 *   trace_end("step");
 *   trace_close();                                   // writes the file
 *
 * (dist/dist_trace.h opens it for every rank of a job, after a barrier; the library's
 * blocks, optimisers, collectives and data loaders open their own ranges once a trace
 * is open: models/block_trace.h, dist/dist.c, train/optim.c, train/loop.c.)
 *
 * What the file holds:
 *   - pid: the rank, named by "process_name" metadata ("rank 0"); tid 0 is the host
 *     thread, tids TRACE_TID_STREAM(k) the CUDA streams, TRACE_TID_COMM(k) the lanes of
 *     communication in flight (non-blocking collectives, start to finish), and
 *     TRACE_TID_LOADER a data loader's thread (its reads), each named by "thread_name"
 *     metadata;
 *   - complete events ("ph": "X", "ts" and "dur" in microseconds since the time origin,
 *     to the nanosecond) with "cat" one of step, compute, comm, data, other;
 *   - counters ("ph": "C", "name": "memory"): the bytes of tensors allocated on each
 *     device (core/tensor.h) and the process's resident set, sampled at a step's end
 *     (at most every 10 ms: a sample costs some 5 us, a range under 0.1 us);
 *   - on a GPU, counters "gpu" from NVML (core/gpu_counters.h): utilisation_pct and
 *     memory_activity_pct (shares of NVML's own sample period, 1/6 s to 1 s, in which a
 *     kernel ran and device memory was busy), memory_used_bytes and memory_total_bytes
 *     (every process's and the driver's), sm_clock_mhz, power_mw, temperature_c
 *     (those NVML does not give are left out), sampled with the memory at most every
 *     100 ms: the cost is NVML's queries (a call into the driver each, not measured
 *     yet); reading a stand-in NVML that answers at once costs 0.01 us;
 *   - otherData: rank, world size, the cap and how many events were dropped beyond it.
 *
 * Rules, checked here so the file always opens:
 *   - ranges on one track nest strictly (Perfetto refuses overlaps): trace_end closes
 *     the innermost open range, and closing another one is an error naming both;
 *     trace_close with a range open is an error naming it;
 *   - only the thread that opened the trace traces (OpenMP workers do not);
 *   - at most max_events events are kept; the rest are dropped and counted (the ranges
 *     still nest: their bookkeeping goes on).
 * A lane of communication in flight holds one operation at a time, so its events never
 * overlap; with every lane busy a new one is dropped (and counted).
 *
 * Where CUDA is built every range is also an NVTX range of the same name (pushed and
 * popped; in-flight communication as start/end ranges), so an `nsys profile` of a run
 * with --trace shows the same names. On a GPU, lib/cuda (trace_gpu.cu) adds each compute
 * range's GPU time on the stream's track: CUDA events around it, placed on the host
 * clock. Its counters come from NVML, loaded at run time (dlopen: no link to the
 * driver): train/run_trace.h and dist/dist_trace.h start them once the trace is open,
 * for the GPU cuda_init picked, named by its PCI bus id (cuda/trace_gpu.h); without
 * NVML, or with NVML failing, one line says why and the trace goes on without them.
 * They have run against a stand-in NVML only (tests/unit/test_core_gpu_counters.c), not
 * on a GPU yet. Lesson 10's node monitor samples nvidia-smi beside the job.
 *
 * Nothing is written while the program runs: the events stay in memory (about 100 bytes
 * each) and trace_close writes them. With no trace open every call returns at once. */
#ifndef CORE_TRACE_H
#define CORE_TRACE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum { TRACE_STEP, TRACE_COMPUTE, TRACE_COMM, TRACE_DATA, TRACE_OTHER, TRACE_CATS } TraceCat;

enum {
    TRACE_NAME_MAX = 48,         /* longer names are cut (a range is matched by what is kept) */
    TRACE_DEPTH_MAX = 64,        /* open ranges on the host track */
    TRACE_STREAMS_MAX = 8,       /* CUDA stream tracks */
    TRACE_COMM_LANES = 16,       /* operations in flight at once */
    TRACE_TID_HOST = 0,
};
#define TRACE_TID_STREAM(k) (1 + (k))
#define TRACE_TID_COMM(k) (1 + TRACE_STREAMS_MAX + (k))
/* The "data loader" track: a loader thread's reads (data/prefetch.h), placed by the host
 * thread with trace_complete when it waits for them (only that thread traces). */
#define TRACE_TID_LOADER TRACE_TID_COMM(TRACE_COMM_LANES)
#define TRACE_DEFAULT_CAP 500000 /* events: at most about 50 MB in memory */
#define TRACE_GPU_EVERY_NS 100000000 /* "gpu" counter samples: at most one every 100 ms */

typedef struct {
    int rank, world_size;        /* pid and metadata (world_size 0: taken as 1) */
    int64_t origin_ns;           /* trace_now_ns() at ts 0 (0: now, at trace_open) */
    int64_t max_events;          /* the cap (0: TRACE_DEFAULT_CAP) */
} TraceOptions;

/* The clock of every event: CLOCK_MONOTONIC in nanoseconds. */
int64_t trace_now_ns(void);

/* Starts a trace to be written to path; the file is created now (a path that cannot be
 * written stops the program before it trains: fatal), and filled by trace_close. One
 * trace per process at a time. */
void trace_open(const char *path, const TraceOptions *opt);
bool trace_is_open(void);
/* Writes the file and ends the trace. Returns the events dropped beyond the cap. */
int64_t trace_close(void);

/* A range on the host track; trace_end must name the innermost open one. The _bytes form
 * adds "args": {"bytes": n} (a collective's size). */
void trace_begin(const char *name, TraceCat cat);
void trace_begin_bytes(const char *name, TraceCat cat, int64_t bytes);
void trace_end(const char *name);

/* Something in flight beside the host thread (a non-blocking collective), on a lane of
 * its own: a handle for trace_async_end, which closes it now; -1 (every call does
 * nothing with it) when no trace is open or every lane is busy. */
int trace_async_begin(const char *name, TraceCat cat, int64_t bytes);
void trace_async_end(int handle);

/* An event measured elsewhere (a GPU's, placed on the host clock; a loader thread's read)
 * on track tid (a stream's, TRACE_TID_STREAM(k), or TRACE_TID_LOADER), times from
 * trace_now_ns's clock; the events of one track come in the order they began and
 * nest (an overlap is an error naming both). */
void trace_complete(int tid, const char *name, TraceCat cat, int64_t start_ns, int64_t end_ns);

/* A "memory" counter sample now, and a "gpu" one where the GPU's counters are started
 * and the last is TRACE_GPU_EVERY_NS old (done at the end of a TRACE_STEP range, the
 * memory at most every 10 ms; a program whose loop has no steps calls it itself). */
void trace_sample_counters(void);

/* The GPU's counters into the open trace from now to trace_close: a "gpu" sample at a
 * step's end, at most every TRACE_GPU_EVERY_NS, from NVML (core/gpu_counters.h, which
 * says what pci_bus_id and index pick). Where NVML cannot be used (no driver's library,
 * NVML failing, no such GPU) one line on stderr says why and the trace has no "gpu"
 * counter. Nothing without a trace open, or when they are started already. */
void trace_gpu_counters_start(const char *pci_bus_id, int index);

/* The GPU side (lib/cuda/trace_gpu.cu registers it when the CUDA backend starts):
 * start when a trace opens (or at once, registered while one is open), a range around
 * the device work of each compute range, flush to hand what has finished to
 * trace_complete (at each step's end and at trace_close). */
typedef struct {
    void (*start)(void);
    void (*begin)(const char *name);
    void (*end)(void);
    void (*flush)(void);
} TraceGpuOps;
void trace_set_gpu(const TraceGpuOps *ops);

/* path with ".rankR" before its ".json" (run.json -> run.rank1.json; a path without
 * .json gets ".rankR.json"); -1 when it does not fit in cap. */
int trace_rank_path(char *out, int cap, const char *path, int rank);

#endif
