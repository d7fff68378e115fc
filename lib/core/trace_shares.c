/* The shares of a step and the communication split (core/trace_shares.h), written to
 * give tools/trace/trace_read.py's numbers exactly: the same tree, the same order. */
#include "trace_shares.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct {
    const TraceRecord *e;
    int64_t index;
} Sorted;

static int by_start(const void *a, const void *b) {
    const Sorted *x = a, *y = b;
    if (x->e->ts_ns != y->e->ts_ns) return x->e->ts_ns < y->e->ts_ns ? -1 : 1;
    if (x->e->dur_ns != y->e->dur_ns) return x->e->dur_ns > y->e->dur_ns ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

HostTrack trace_host_track(const TraceFile *t, int pid) {
    int64_t n = 0;
    for (int64_t i = 0; i < t->count; i++) n += t->events[i].pid == pid && t->events[i].tid == TRACE_TID_HOST;
    Sorted *s = xmalloc((size_t)(n ? n : 1) * sizeof *s);
    n = 0;
    for (int64_t i = 0; i < t->count; i++)
        if (t->events[i].pid == pid && t->events[i].tid == TRACE_TID_HOST) s[n] = (Sorted){&t->events[i], n}, n++;
    qsort(s, (size_t)n, sizeof *s, by_start);
    HostTrack h = {.ev = xmalloc((size_t)(n ? n : 1) * sizeof *h.ev),
                   .parent = xmalloc((size_t)(n ? n : 1) * sizeof *h.parent), .n = n};
    int64_t *stack = xmalloc((size_t)(n ? n : 1) * sizeof *stack), depth = 0;
    for (int64_t i = 0; i < n; i++) {
        h.ev[i] = *s[i].e;
        /* close what ended before this one starts (nest() in trace_read.py) */
        while (depth > 0 && h.ev[stack[depth - 1]].ts_ns + h.ev[stack[depth - 1]].dur_ns <= h.ev[i].ts_ns) depth--;
        h.parent[i] = depth > 0 ? stack[depth - 1] : -1;
        stack[depth++] = i;
    }
    xfree(stack), xfree(s);
    return h;
}

void trace_host_track_free(HostTrack *h) {
    xfree(h->ev), xfree(h->parent);
    memset(h, 0, sizeof *h);
}

/* For each event, the step it counts in (the outermost step above it or itself; -1:
 * none), from a track whose parents come before their children. */
static int64_t *steps_of(const HostTrack *h) {
    int64_t *step = xmalloc((size_t)(h->n ? h->n : 1) * sizeof *step);
    for (int64_t i = 0; i < h->n; i++) {
        const int64_t p = h->parent[i];
        step[i] = p >= 0 && step[p] >= 0 ? step[p] : h->ev[i].cat == TRACE_STEP ? i : -1;
    }
    return step;
}

/* The shares; with exposed non-NULL, also the host's own comm time as intervals. */
typedef struct {
    int64_t start, end;
} Span;

static void add_span(Span **spans, int64_t *n, int64_t *room, int64_t start, int64_t end) {
    if (end <= start) return;
    if (*n == *room) {
        *room = *room ? 2 * *room : 64;
        Span *grown = xmalloc((size_t)*room * sizeof *grown);
        if (*n) memcpy(grown, *spans, (size_t)*n * sizeof *grown);
        xfree(*spans);
        *spans = grown;
    }
    (*spans)[(*n)++] = (Span){start, end};
}

static StepShares shares(const HostTrack *h, Span **exposed, int64_t *nexposed) {
    StepShares s = {0};
    int64_t *step = steps_of(h);
    int64_t *children = xcalloc((size_t)(h->n ? h->n : 1), sizeof *children); /* children's durations */
    int64_t *covered = xcalloc((size_t)(h->n ? h->n : 1), sizeof *covered);  /* a step's */
    int64_t *reach = xmalloc((size_t)(h->n ? h->n : 1) * sizeof *reach);     /* where its cover ends */
    /* each event's first child and next sibling (-1: none), in the track's order */
    int64_t *first = xmalloc((size_t)(h->n ? h->n : 1) * sizeof *first);
    int64_t *next = xmalloc((size_t)(h->n ? h->n : 1) * sizeof *next);
    int64_t *last = xmalloc((size_t)(h->n ? h->n : 1) * sizeof *last); /* its last child so far */
    for (int64_t i = 0; i < h->n; i++) {
        first[i] = next[i] = last[i] = -1;
        const int64_t p = h->parent[i];
        if (p < 0) continue;
        if (last[p] < 0) first[p] = i;
        else next[last[p]] = i;
        last[p] = i;
    }
    for (int64_t i = 0; i < h->n; i++) {
        const TraceRecord *e = &h->ev[i];
        reach[i] = e->ts_ns;
        const int64_t p = h->parent[i];
        if (p >= 0) children[p] += e->dur_ns;
        if (step[i] == i) s.steps++, s.step_ns += e->dur_ns;
        if (p >= 0 && step[p] == p) { /* a step's child: what it covers of the step (_covered) */
            const int64_t stop = h->ev[p].ts_ns + h->ev[p].dur_ns;
            const int64_t a = e->ts_ns > reach[p] ? e->ts_ns : reach[p];
            const int64_t b = e->ts_ns + e->dur_ns < stop ? e->ts_ns + e->dur_ns : stop;
            if (b > a) covered[p] += b - a, reach[p] = b;
        }
    }
    int64_t room = 0;
    for (int64_t i = 0; i < h->n; i++) {
        const TraceRecord *e = &h->ev[i];
        if (step[i] < 0) continue;
        if (step[i] == i) {
            s.idle_ns += e->dur_ns - covered[i];
            continue;
        }
        const int64_t own = e->dur_ns - children[i];
        switch (e->cat) {
        case TRACE_COMPUTE: s.compute_ns += own; break;
        case TRACE_COMM: s.comm_ns += own; break;
        case TRACE_DATA: s.data_ns += own; break;
        default: s.idle_ns += own; break;
        }
        if (e->cat != TRACE_COMM || !exposed) continue;
        /* its own time: its span less its children's, in their order (through the
         * sibling links: a walk over all its descendants would make ranges nested
         * 200,000 deep quadratic) */
        const int64_t end = e->ts_ns + e->dur_ns;
        int64_t at = e->ts_ns;
        for (int64_t j = first[i]; j >= 0; j = next[j]) {
            add_span(exposed, nexposed, &room, at, h->ev[j].ts_ns);
            const int64_t c_end = h->ev[j].ts_ns + h->ev[j].dur_ns;
            if (c_end > at) at = c_end < end ? c_end : end;
        }
        add_span(exposed, nexposed, &room, at, end);
    }
    xfree(step), xfree(children), xfree(covered), xfree(reach), xfree(first), xfree(next), xfree(last);
    return s;
}

StepShares trace_step_shares(const TraceFile *t, int pid) {
    HostTrack h = trace_host_track(t, pid);
    const StepShares s = shares(&h, NULL, NULL);
    trace_host_track_free(&h);
    return s;
}

static int by_span(const void *a, const void *b) {
    const Span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* spans[0..n) sorted and merged into disjoint ones; their new count. */
static int64_t merge(Span *spans, int64_t n) {
    qsort(spans, (size_t)n, sizeof *spans, by_span);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (spans[i].end <= spans[i].start) continue;
        if (m > 0 && spans[i].start <= spans[m - 1].end) {
            if (spans[i].end > spans[m - 1].end) spans[m - 1].end = spans[i].end;
        } else {
            spans[m++] = spans[i];
        }
    }
    return m;
}

/* The length of the intersection of two sets of disjoint sorted spans. */
static int64_t overlap(const Span *a, int64_t na, const Span *b, int64_t nb) {
    int64_t sum = 0;
    for (int64_t i = 0, j = 0; i < na && j < nb;) {
        const int64_t lo = a[i].start > b[j].start ? a[i].start : b[j].start;
        const int64_t hi = a[i].end < b[j].end ? a[i].end : b[j].end;
        if (hi > lo) sum += hi - lo;
        if (a[i].end < b[j].end) i++;
        else j++;
    }
    return sum;
}

CommSplit trace_comm_split(const TraceFile *t, int pid) {
    HostTrack h = trace_host_track(t, pid);
    Span *exposed = NULL;
    int64_t nexposed = 0, nlanes = 0, nsteps = 0;
    const StepShares s = shares(&h, &exposed, &nexposed);
    Span *steps = xmalloc((size_t)(s.steps ? s.steps : 1) * sizeof *steps);
    int64_t *step = steps_of(&h);
    for (int64_t i = 0; i < h.n; i++)
        if (step[i] == i) steps[nsteps++] = (Span){h.ev[i].ts_ns, h.ev[i].ts_ns + h.ev[i].dur_ns};
    for (int64_t i = 0; i < t->count; i++) nlanes += t->events[i].pid == pid && trace_tid_is_lane(t->events[i].tid);
    Span *lanes = xmalloc((size_t)(nlanes ? nlanes : 1) * sizeof *lanes);
    nlanes = 0;
    for (int64_t i = 0; i < t->count; i++) {
        const TraceRecord *e = &t->events[i];
        if (e->pid == pid && trace_tid_is_lane(e->tid)) lanes[nlanes++] = (Span){e->ts_ns, e->ts_ns + e->dur_ns};
    }
    nlanes = merge(lanes, nlanes);
    nsteps = merge(steps, nsteps);
    nexposed = merge(exposed, nexposed);
    /* in flight inside the steps, as disjoint spans: lanes x steps */
    Span *inside = xmalloc((size_t)(nlanes + nsteps + 1) * sizeof *inside);
    int64_t ninside = 0;
    for (int64_t i = 0, j = 0; i < nlanes && j < nsteps;) {
        const int64_t lo = lanes[i].start > steps[j].start ? lanes[i].start : steps[j].start;
        const int64_t hi = lanes[i].end < steps[j].end ? lanes[i].end : steps[j].end;
        if (hi > lo) inside[ninside++] = (Span){lo, hi};
        if (lanes[i].end < steps[j].end) i++;
        else j++;
    }
    CommSplit c = {.exposed_ns = s.comm_ns};
    for (int64_t i = 0; i < ninside; i++) c.in_flight_ns += inside[i].end - inside[i].start;
    c.hidden_ns = c.in_flight_ns - overlap(inside, ninside, exposed, nexposed);
    xfree(inside), xfree(lanes), xfree(steps), xfree(step), xfree(exposed);
    trace_host_track_free(&h);
    return c;
}
