/* TODOs 10.2 and 10.3: where the steps' time went, from the trace.
 *
 * trace_host_track(t, pid) (core/trace_shares.h) gives rank pid's host track (tid 0)
 * as a tree: h.ev[0 .. h.n) sorted by start, h.parent[i] the index of the range that
 * event i lies in (-1: none); a parent always comes before its children. Free it with
 * trace_host_track_free. A step is an event of category TRACE_STEP with no step above
 * it. Each instant of a step belongs to the innermost range open then: */
#include <stdlib.h>

#include "lesson.h"

#ifdef SOLUTION
/* The step event i counts in (the outermost step above it, or itself), -1: none. */
static int64_t *steps_of(const HostTrack *h) {
    int64_t *step = xmalloc((size_t)(h->n ? h->n : 1) * sizeof *step);
    for (int64_t i = 0; i < h->n; i++) {
        const int64_t p = h->parent[i];
        step[i] = p >= 0 && step[p] >= 0 ? step[p] : h->ev[i].cat == TRACE_STEP ? i : -1;
    }
    return step;
}
#endif

StepShares lesson_step_shares(const TraceFile *t, int pid) {
    StepShares s = {0};
#ifdef SOLUTION
    HostTrack h = trace_host_track(t, pid);
    int64_t *step = steps_of(&h);
    int64_t *children = xcalloc((size_t)(h.n ? h.n : 1), sizeof *children); /* their durations */
    for (int64_t i = 0; i < h.n; i++)
        if (h.parent[i] >= 0) children[h.parent[i]] += h.ev[i].dur_ns;
    for (int64_t i = 0; i < h.n; i++) {
        const TraceRecord *e = &h.ev[i];
        if (step[i] < 0) continue;            /* outside the steps: not counted */
        if (step[i] == i) {                   /* a step: idle is what its ranges leave */
            s.steps++, s.step_ns += e->dur_ns;
            s.idle_ns += e->dur_ns - children[i];
            continue;
        }
        const int64_t own = e->dur_ns - children[i]; /* less what runs inside it */
        if (e->cat == TRACE_COMPUTE) s.compute_ns += own;
        else if (e->cat == TRACE_COMM) s.comm_ns += own;
        else if (e->cat == TRACE_DATA) s.data_ns += own;
        else s.idle_ns += own;                /* "other", a step in a step: idle */
    }
    xfree(step), xfree(children);
    trace_host_track_free(&h);
#else
    /* TODO 10.2: for each step of rank pid (s.steps, s.step_ns: their count and total
     * duration), add each range's OWN time inside it (its duration less its children's:
     * a "layer 0 forward" inside "forward" is compute once) to its category's part:
     * TRACE_COMPUTE -> compute_ns, TRACE_COMM -> comm_ns (the host waiting: exposed),
     * TRACE_DATA -> data_ns, TRACE_OTHER -> idle_ns; and to idle_ns the step's duration
     * less its direct children's (the time no range covers). Ranges outside every step
     * (evaluation, set-up) and other tracks (streams, lanes) do not count. */
    TODO_STOP("10.2");
#endif
    return s;
}

#ifdef SOLUTION
typedef struct {
    int64_t a, b;
} Span;

static int by_start(const void *x, const void *y) {
    const Span *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a ? 1 : (p->b > q->b) - (p->b < q->b);
}

/* spans[0..n) sorted and merged into disjoint ones; how many are left. */
static int64_t union_of(Span *spans, int64_t n) {
    qsort(spans, (size_t)n, sizeof *spans, by_start);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (spans[i].b <= spans[i].a) continue;
        if (m > 0 && spans[i].a <= spans[m - 1].b) spans[m - 1].b = spans[i].b > spans[m - 1].b ? spans[i].b : spans[m - 1].b;
        else spans[m++] = spans[i];
    }
    return m;
}

/* How long x and y (each disjoint, sorted) overlap. */
static int64_t overlap(const Span *x, int64_t nx, const Span *y, int64_t ny) {
    int64_t sum = 0;
    for (int64_t i = 0, j = 0; i < nx && j < ny;) {
        const int64_t a = x[i].a > y[j].a ? x[i].a : y[j].a, b = x[i].b < y[j].b ? x[i].b : y[j].b;
        if (b > a) sum += b - a;
        if (x[i].b < y[j].b) i++;
        else j++;
    }
    return sum;
}
#endif

CommSplit lesson_comm_split(const TraceFile *t, int pid) {
    CommSplit c = {0};
#ifdef SOLUTION
    c.exposed_ns = lesson_step_shares(t, pid).comm_ns; /* the host waiting: exposed */
    HostTrack h = trace_host_track(t, pid);
    int64_t *step = steps_of(&h);
    Span *steps = xmalloc((size_t)(h.n + 1) * sizeof *steps), *waits = xmalloc((size_t)(2 * h.n + 1) * sizeof *waits);
    Span *lanes = xmalloc((size_t)(t->count + 1) * sizeof *lanes);
    int64_t nsteps = 0, nwaits = 0, nlanes = 0;
    for (int64_t i = 0; i < h.n; i++) {
        const TraceRecord *e = &h.ev[i];
        const int64_t end = e->ts_ns + e->dur_ns;
        if (step[i] == i) steps[nsteps++] = (Span){e->ts_ns, end};
        if (step[i] < 0 || step[i] == i || e->cat != TRACE_COMM) continue;
        /* the host's own time in this comm range: its span less its children's */
        int64_t at = e->ts_ns;
        for (int64_t j = i + 1; j < h.n && h.ev[j].ts_ns < end; j++) {
            if (h.parent[j] != i) continue;
            waits[nwaits++] = (Span){at, h.ev[j].ts_ns};
            const int64_t child_end = h.ev[j].ts_ns + h.ev[j].dur_ns;
            if (child_end > at) at = child_end < end ? child_end : end;
        }
        waits[nwaits++] = (Span){at, end};
    }
    for (int64_t i = 0; i < t->count; i++) {
        const TraceRecord *e = &t->events[i];
        if (e->pid == pid && trace_tid_is_lane(e->tid)) lanes[nlanes++] = (Span){e->ts_ns, e->ts_ns + e->dur_ns};
    }
    /* in flight: the time some lane is busy (their union: two at once count once), in the steps */
    nlanes = union_of(lanes, nlanes), nsteps = union_of(steps, nsteps), nwaits = union_of(waits, nwaits);
    Span *inside = xmalloc((size_t)(nlanes + nsteps + 1) * sizeof *inside);
    int64_t ninside = 0;
    for (int64_t i = 0, j = 0; i < nlanes && j < nsteps;) {
        const int64_t a = lanes[i].a > steps[j].a ? lanes[i].a : steps[j].a;
        const int64_t b = lanes[i].b < steps[j].b ? lanes[i].b : steps[j].b;
        if (b > a) inside[ninside++] = (Span){a, b};
        if (lanes[i].b < steps[j].b) i++;
        else j++;
    }
    for (int64_t i = 0; i < ninside; i++) c.in_flight_ns += inside[i].b - inside[i].a;
    /* hidden: in flight while the host was not waiting for it (computing beside it) */
    c.hidden_ns = c.in_flight_ns - overlap(inside, ninside, waits, nwaits);
    xfree(inside), xfree(lanes), xfree(waits), xfree(steps), xfree(step);
    trace_host_track_free(&h);
#else
    /* TODO 10.3: the communication of rank pid's steps.
     *   exposed_ns:   the host's own time in comm ranges inside the steps (10.2's comm);
     *   in_flight_ns: the time some lane of communication in flight (trace_tid_is_lane(tid),
     *                 rank pid's events) was busy, inside the steps: the lanes' union
     *                 (two lanes at once count once), cut to the steps' spans;
     *   hidden_ns:    in-flight time while the host was NOT in a comm range of its own
     *                 (its comm ranges' spans less their children's): what compute hid.
     * Communication in flight beside compute is hidden, not exposed. */
    TODO_STOP("10.3");
#endif
    return c;
}
