/* Where a rank's steps went, from its trace (core/trace_load.h): the C twin of
 * tools/trace/trace_read.py's shares, equal to it to the nanosecond.
 *
 * A step is an event of category "step" on the rank's host track (tid 0) inside no other
 * step. Each instant of it belongs to the innermost host range open then: its category
 * says what the rank did (compute; comm: the host waiting for communication, so
 * exposed; data); an instant inside no range but the step is idle, and so is a range
 * of category "other" (or a step inside the step). So a range's own time is its
 * duration less its children's, and idle is the step less what its ranges cover.
 *
 * Communication in flight (the lanes, TRACE_TID_COMM(k)) runs beside the host and is no
 * part of the shares; trace_comm_split says how much of it the host hid:
 *   in flight: the time some lane was busy, inside the steps (the lanes' union);
 *   exposed:   the host's own time in comm ranges (the shares' comm part);
 *   hidden:    in-flight time while the host was not in a comm range (computing). */
#ifndef CORE_TRACE_SHARES_H
#define CORE_TRACE_SHARES_H

#include <stdint.h>

#include "trace_load.h"

typedef struct {
    int64_t steps;
    int64_t step_ns;             /* the steps' durations, summed */
    int64_t compute_ns, comm_ns, data_ns, idle_ns; /* their parts, summed over the steps */
} StepShares;

typedef struct {
    int64_t exposed_ns, in_flight_ns, hidden_ns; /* summed over the steps */
} CommSplit;

StepShares trace_step_shares(const TraceFile *t, int pid);
CommSplit trace_comm_split(const TraceFile *t, int pid);

/* The host track of rank pid, nested: its events sorted by start (the longer first at a
 * tie, then in the file's order), each with its parent (the innermost event it starts
 * in; -1: none), as trace_read.py's nest() builds the tree. */
typedef struct {
    TraceRecord *ev;             /* [n] */
    int64_t *parent;             /* [n] index into ev, or -1 */
    int64_t n;
} HostTrack;
HostTrack trace_host_track(const TraceFile *t, int pid);
void trace_host_track_free(HostTrack *h);

#endif
