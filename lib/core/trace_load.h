/* Reading back one rank's trace file as the library writes it (core/trace.h): its
 * complete events ("ph": "X") with times exact to the nanosecond, for the shares of a
 * step in C (core/trace_shares.h) and for lesson 10.
 *
 *   TraceFile t;
 *   char why[256];
 *   if (!trace_load("run.rank0.json", &t, why, sizeof why)) fatal("%s", why);
 *   for (int64_t i = 0; i < t.count; i++) ... t.events[i] ...
 *   trace_file_free(&t);
 *
 * Only the library's per-rank layout is read: the JSON object form whose otherData says
 * "format": "course trace 1", one pid, categories step, compute, comm, data, other, ts
 * and dur in microseconds with at most three decimals. A merged file (tools/trace), a
 * file of another tool, or anything that is not JSON is refused with one line saying
 * what and where (the byte). Metadata and counters are read past, not kept. */
#ifndef CORE_TRACE_LOAD_H
#define CORE_TRACE_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"

typedef struct {
    int64_t ts_ns, dur_ns;       /* from the trace's time origin */
    int64_t bytes;               /* "args": {"bytes": n}; -1: none */
    int pid, tid;
    TraceCat cat;
    char name[TRACE_NAME_MAX];   /* cut to fit, as trace_begin cuts */
} TraceRecord;

typedef struct {
    TraceRecord *events;         /* [count] the complete events, in the file's order */
    int64_t count;
    int pid;                     /* the rank (-1: a file without events) */
    int world_size;              /* otherData's */
    int64_t dropped_events;      /* otherData's: events the cap left out */
} TraceFile;

/* The file at path into *out (freed with trace_file_free); false, with one line in why
 * (path: what), when it cannot be read or is not the library's per-rank layout. */
bool trace_load(const char *path, TraceFile *out, char *why, size_t cap);
/* The same from text[0..len) (where: the name in messages). */
bool trace_parse(const char *text, size_t len, const char *where, TraceFile *out, char *why, size_t cap);
void trace_file_free(TraceFile *t);

/* Is tid one of the lanes of communication in flight (TRACE_TID_COMM(k))? */
static inline bool trace_tid_is_lane(int tid) {
    return tid >= TRACE_TID_COMM(0) && tid < TRACE_TID_COMM(TRACE_COMM_LANES);
}

#endif
