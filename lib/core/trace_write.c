/* Writing a trace as Chrome's Trace Event Format, JSON object form (core/trace.h):
 * metadata events first (process and track names, sort order), then the complete events,
 * then the counters; times in microseconds with three decimals, exact to the nanosecond,
 * so that a child never ends after its parent by a rounding. */
#include <inttypes.h>
#include <stdio.h>

#include "trace_internal.h"

const char *trace_cat_name(TraceCat cat) {
    static const char *const names[TRACE_CATS] = {"step", "compute", "comm", "data", "other"};
    return cat >= 0 && cat < TRACE_CATS ? names[cat] : "other";
}

void trace_json_string(FILE *f, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
}

/* ns as microseconds: "-1.250", "12.003" */
static void micros(FILE *f, int64_t ns) {
    const char *sign = ns < 0 ? "-" : "";
    const uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    fprintf(f, "%s%" PRIu64 ".%03" PRIu64, sign, a / 1000, a % 1000);
}

static void separator(FILE *f, bool *first) {
    fputs(*first ? "\n" : ",\n", f);
    *first = false;
}

/* "M" events: a name and a sort index for the process or one of its tracks */
static void metadata(FILE *f, bool *first, int pid, int tid, const char *what, const char *name,
                     int sort) {
    const bool process = tid < 0;
    separator(f, first);
    fprintf(f, "{\"name\": \"%s_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": "
            "{\"name\": \"", what, pid, process ? 0 : tid);
    trace_json_string(f, name);
    fputs("\"}},\n", f);
    fprintf(f, "{\"name\": \"%s_sort_index\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": "
            "{\"sort_index\": %d}}", what, pid, process ? 0 : tid, sort);
}

/* A "gpu" counter: the values NVML gave (those it did not are left out). */
static void gpu_sample(FILE *f, bool *first, int pid, const TraceGpuSample *g, int64_t origin_ns) {
    const struct {
        const char *key;
        int64_t value;
    } args[] = {{"utilisation_pct", g->s.utilisation_pct},
                {"memory_activity_pct", g->s.memory_activity_pct},
                {"memory_used_bytes", g->s.memory_used_bytes},
                {"memory_total_bytes", g->s.memory_total_bytes},
                {"sm_clock_mhz", g->s.sm_clock_mhz},
                {"power_mw", g->s.power_mw},
                {"temperature_c", g->s.temperature_c}};
    separator(f, first);
    fprintf(f, "{\"name\": \"gpu\", \"ph\": \"C\", \"pid\": %d, \"tid\": 0, \"ts\": ", pid);
    micros(f, g->ts_ns - origin_ns);
    fputs(", \"args\": {", f);
    const char *sep = "";
    for (size_t k = 0; k < sizeof args / sizeof args[0]; k++)
        if (args[k].value >= 0) {
            fprintf(f, "%s\"%s\": %" PRId64, sep, args[k].key, args[k].value);
            sep = ", ";
        }
    fputs("}}", f);
}

bool trace_write(const Trace *t) {
    FILE *f = t->f;
    const int pid = t->opt.rank;
    bool first = true;
    char name[64];
    fputs("{\"displayTimeUnit\": \"ms\",\n\"traceEvents\": [", f);
    snprintf(name, sizeof name, "rank %d", pid);
    metadata(f, &first, pid, -1, "process", name, pid);
    metadata(f, &first, pid, TRACE_TID_HOST, "thread", "host", TRACE_TID_HOST);
    for (int k = 0; k < TRACE_STREAMS_MAX; k++)
        if (t->stream_used[k]) {
            snprintf(name, sizeof name, k == 0 ? "GPU: CUDA stream %d (compute)" : "GPU: CUDA stream %d", k);
            metadata(f, &first, pid, TRACE_TID_STREAM(k), "thread", name, TRACE_TID_STREAM(k));
        }
    if (t->stream_used[TRACE_STREAMS_MAX])
        metadata(f, &first, pid, TRACE_TID_LOADER, "thread", "data loader", TRACE_TID_LOADER);
    for (int k = 0; k < TRACE_COMM_LANES; k++)
        if (t->lane_used[k]) {
            snprintf(name, sizeof name, "communication in flight %d", k);
            metadata(f, &first, pid, TRACE_TID_COMM(k), "thread", name, TRACE_TID_COMM(k));
        }
    for (int64_t i = 0; i < t->count; i++) {
        const TraceEvent *e = &t->events[i];
        separator(f, &first);
        fputs("{\"name\": \"", f);
        trace_json_string(f, e->name);
        fprintf(f, "\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": ",
                trace_cat_name(e->cat), pid, e->tid);
        micros(f, e->start_ns - t->opt.origin_ns);
        fputs(", \"dur\": ", f);
        micros(f, e->dur_ns);
        if (e->bytes >= 0) fprintf(f, ", \"args\": {\"bytes\": %" PRId64 "}", e->bytes);
        fputc('}', f);
    }
    for (int64_t i = 0; i < t->nsamples; i++) {
        const TraceSample *s = &t->samples[i];
        separator(f, &first);
        fprintf(f, "{\"name\": \"memory\", \"ph\": \"C\", \"pid\": %d, \"tid\": 0, \"ts\": ", pid);
        micros(f, s->ts_ns - t->opt.origin_ns);
        fprintf(f, ", \"args\": {\"tensors on the CPU (bytes)\": %" PRId64 ", \"tensors on the GPU "
                "(bytes)\": %" PRId64 ", \"resident (bytes)\": %" PRId64 "}}",
                s->cpu_bytes, s->cuda_bytes, s->resident_bytes);
    }
    for (int64_t i = 0; i < t->ngpu; i++) gpu_sample(f, &first, pid, &t->gpu_samples[i], t->opt.origin_ns);
    fprintf(f, "\n],\n\"otherData\": {\"format\": \"course trace 1\", \"rank\": %d, \"world_size\": "
            "%d, \"max_events\": %" PRId64 ", \"dropped_events\": %" PRId64 ", \"clock\": "
            "\"CLOCK_MONOTONIC; ts 0: the time origin (dist_trace_start: when the ranks left a "
            "barrier together)\"}}\n",
            pid, t->opt.world_size, t->opt.max_events, t->dropped);
    return !ferror(f);
}
