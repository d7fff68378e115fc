/* TODOs 10.2 and 10.3: where the steps' time went, from the trace.
 *
 * trace_host_track(t, pid) (core/trace_shares.h) gives rank pid's host track (tid 0)
 * as a tree: h.ev[0 .. h.n) sorted by start, h.parent[i] the index of the range that
 * event i lies in (-1: none); a parent always comes before its children. Free it with
 * trace_host_track_free. A step is an event of category TRACE_STEP with no step above
 * it. Each instant of a step belongs to the innermost range open then: */
#include <stdlib.h>

#include "lesson.h"


StepShares lesson_step_shares(const TraceFile *t, int pid) {
    StepShares s = {0};
    /* TODO 10.2: for each step of rank pid (s.steps, s.step_ns: their count and total
     * duration), add each range's OWN time inside it (its duration less its children's:
     * a "layer 0 forward" inside "forward" is compute once) to its category's part:
     * TRACE_COMPUTE -> compute_ns, TRACE_COMM -> comm_ns (the host waiting: exposed),
     * TRACE_DATA -> data_ns, TRACE_OTHER -> idle_ns; and to idle_ns the step's duration
     * less its direct children's (the time no range covers). Ranges outside every step
     * (evaluation, set-up) and other tracks (streams, lanes) do not count. */
    TODO_STOP("10.2");
    return s;
}


CommSplit lesson_comm_split(const TraceFile *t, int pid) {
    CommSplit c = {0};
    /* TODO 10.3: the communication of rank pid's steps.
     *   exposed_ns:   the host's own time in comm ranges inside the steps (10.2's comm);
     *   in_flight_ns: the time some lane of communication in flight (trace_tid_is_lane(tid),
     *                 rank pid's events) was busy, inside the steps: the lanes' union
     *                 (two lanes at once count once), cut to the steps' spans;
     *   hidden_ns:    in-flight time while the host was NOT in a comm range of its own
     *                 (its comm ranges' spans less their children's): what compute hid.
     * Communication in flight beside compute is hidden, not exposed. */
    TODO_STOP("10.3");
    return c;
}
