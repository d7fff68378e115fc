/* Grader of lesson 10. TODOs 10.1-10.3 and 10.6 are checked in one process each (a child
 * per check): 10.1 runs your step under a trace and reads the file back; 10.2 and 10.3
 * compare your shares with the library's (core/trace_shares.h), to the nanosecond, on
 * made-up traces (each built to catch one mistake) and on traces recorded from real
 * runs (tests/graders/data10/); 10.6 runs your loader against the plain one and watches
 * when each read starts. The roofline's (10.4-10.5) and mixed precision's (10.7-10.10)
 * checks are in grade10_roofline.h and grade10_precision.h. The program's check trains
 * on 2 ranks, slowed and fixed.
 * Run with `make check-lesson 10` (your code) or `make check-lesson 10 SOLUTION=1`. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/rng.h"
#include "framework/check.h"
#include "graders/ranks.h"
#include "lesson.h"

#ifndef LESSON_PATH /* the lesson's directory, from the Makefile: lessons/... or solutions/... */
#define LESSON_PATH "lessons/10-performance"
#endif
#ifndef COURSE_ROOT
#define COURSE_ROOT "."
#endif
#define DATA10 COURSE_ROOT "/tests/graders/data10/"

/* No TODO may call a library twin (refuse_library.h): 10.2 and 10.3 trace_step_shares and
 * trace_comm_split (below), 10.4 and 10.5 roofline_layer_cost, roofline_point and
 * roofline_mfu (grade10_roofline.h); 10.7-10.10's are grade10_precision.h's. */
static bool lesson_function(const char *name) {
    static const char *const todos[] = {"lesson_step_shares", "lesson_comm_split", "lesson_layer_cost",
                                        "lesson_roofline_point", "lesson_mfu"};
    for (size_t k = 0; k < sizeof todos / sizeof todos[0]; k++)
        if (strcmp(name, todos[k]) == 0) return true;
    return false;
}
#include "graders/refuse_library.h"
WRAP_VALUE(StepShares, trace_step_shares, (const TraceFile *t, int pid), (t, pid))
WRAP_VALUE(CommSplit, trace_comm_split, (const TraceFile *t, int pid), (t, pid))

#include "graders/grade10_precision.h"
#include "graders/grade10_roofline.h"

/* ================================================================ a tiny run for 10.1 and 10.6 */

enum { V = 40, B = 3, T = 6, ROWS = 120 };

/* A made-up split: ROWS rows of B columns of tokens < V. */
static TextBatches made_up_split(void) {
    TextBatches s = {.rows = ROWS, .cols = B, .data = xmalloc((size_t)ROWS * B * sizeof(int))};
    Rng rng;
    rng_seed(&rng, 7, 1);
    for (int64_t i = 0; i < (int64_t)ROWS * B; i++) s.data[i] = (int)(rng_below(&rng, V));
    return s;
}

static int64_t g_rows[16];

static Loader plain_loader(const TextBatches *split, int64_t count) {
    for (int64_t k = 0; k < count; k++) g_rows[k] = k * T;
    Loader l = {.kind = "plain", .rows = g_rows, .count = count, .split = split, .bptt = T, .n = B,
                .file = {.fd = -1}};
    l.own.tokens = xmalloc(B * T * sizeof(int)), l.own.targets = xmalloc(B * T * sizeof(int));
    return l;
}

/* ================================================================ TODO 10.1 */

static char g_dir[256];

/* Two steps of a tiny transformer under a trace (the child's body). */
static void body_steps(void *arg) {
    (void)arg;
    Dist *d = dist_init(&(DistOptions){.backend = "single", .timeout_s = 30});
    TextBatches split = made_up_split();
    Loader loader = plain_loader(&split, 2);
    const TransformerConfig mc = {.vocab = V, .d_model = 16, .heads = 2, .d_ff = 16, .layers = 1,
                                  .max_len = 64, .dropout = 0};
    Transformer lm;
    transformer_init(&lm, &mc, B, T, 1);
    Ddp ddp;
    ddp_init(&ddp, d, &lm.params, 0.001, true);
    Adam adam;
    adamw_init(&adam, &lm.params, 1e-3f, 0.01f);
    int tokens[B * T], targets[B * T];
    Step s = {.lm = &lm, .params = &lm.params, .ddp = &ddp, .adam = &adam, .clip = 0.5f,
              .loader = &loader, .tokens = tokens, .targets = targets};
    char path[400];
    snprintf(path, sizeof path, "%s/step.json", g_dir);
    trace_open(path, &(TraceOptions){.rank = 0, .world_size = 1});
    /* the second step without clipping (--clip 0): a range left open on that path only
     * shows there */
    for (int k = 0; k < 2; k++) {
        s.clip = k == 0 ? 0.5f : 0.0f;
        lesson_step(&s);
    }
    trace_close();
}

static const char *cat_word(TraceCat c) {
    static const char *const words[TRACE_CATS] = {"step", "compute", "comm", "data", "other"};
    return c >= 0 && c < TRACE_CATS ? words[c] : "?";
}

/* e's parent chain holds a range of category cat (the first one's index, or -1). */
static int64_t above(const HostTrack *h, int64_t i, TraceCat cat) {
    for (int64_t p = h->parent[i]; p >= 0; p = h->parent[p])
        if (h->ev[p].cat == cat) return p;
    return -1;
}

/* How often the lesson's file (LESSON_PATH/file) calls trace_end(name), its comments and
 * blanks left out; -1 when it cannot be read. Only to tell two mistakes apart in a hint. */
static int trace_ends_in_source(const char *file, const char *name) {
    char path[512], want[128];
    snprintf(path, sizeof path, "%s/%s", LESSON_PATH, file);
    snprintf(want, sizeof want, "trace_end(\"%s\")", name);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    static char code[1 << 18];
    size_t n = 0;
    int c, prev = 0;
    enum { CODE, LINE, BLOCK, STR } state = CODE;
    while ((c = fgetc(f)) != EOF && n + 1 < sizeof code) {
        if (state == LINE) {
            if (c == '\n') state = CODE;
        } else if (state == BLOCK) {
            if (prev == '*' && c == '/') state = CODE, c = 0;
        } else if (state == CODE && prev == '/' && (c == '/' || c == '*')) {
            state = c == '/' ? LINE : BLOCK, n--, c = 0;
        } else if (state == STR || !isspace(c)) { /* blanks outside strings dropped */
            code[n++] = (char)c;
            if (c == '"' && prev != '\\') state = state == STR ? CODE : STR;
        }
        prev = c;
    }
    fclose(f);
    code[n] = '\0';
    int count = 0;
    for (const char *at = code; (at = strstr(at, want)); at += strlen(want)) count++;
    return count;
}

/* A step's phases, in its order. */
typedef struct {
    const char *name;
    TraceCat cat;
} Phase;
static const Phase PHASES[] = {{"load batch", TRACE_DATA}, {"forward", TRACE_COMPUTE},
                               {"backward", TRACE_COMPUTE}, {"optimizer", TRACE_COMPUTE}};
enum { NW = sizeof PHASES / sizeof PHASES[0] };

/* The phase that h's event i lies inside, below its step (its index, or -1): "backward"
 * opened before "forward" closed. */
static int64_t inside_phase(const HostTrack *h, int64_t i) {
    for (int64_t p = h->parent[i]; p >= 0 && h->ev[p].cat != TRACE_STEP; p = h->parent[p])
        for (int k = 0; k < NW; k++)
            if (strcmp(h->ev[p].name, PHASES[k].name) == 0) return p;
    return -1;
}

/* The hint for a trace the library stopped (its message in out). */
static void explain_unbalanced(const char *out) {
    char outer[64] = "", inner[64] = "";
    const char *at;
    if ((at = strstr(out, "trace: '")) && strstr(at, "' closed while '") &&
        sscanf(at + strlen("trace: '"), "%63[^']' closed while '%63[^']'", outer, inner) == 2) {
        /* trace_end(outer) with inner still open: inner's trace_end missing, or after outer's */
        const int ends = trace_ends_in_source("ranges.c", inner);
        if (ends == 0)
            printf("hint: '%s' was opened and never closed: ranges.c has no trace_end(\"%s\"), so "
                   "trace_end(\"%s\") found it still open inside (every trace_begin needs its "
                   "trace_end, innermost first)\n", inner, inner, outer);
        else
            printf("hint: '%s' was closed while '%s' was still open inside it: closed in the wrong "
                   "order. Ranges nest like brackets, the innermost closes first: "
                   "trace_end(\"%s\"), then trace_end(\"%s\")\n", outer, inner, inner, outer);
    } else if ((at = strstr(out, "with the range '")) && sscanf(at + strlen("with the range '"), "%63[^']", inner) == 1) {
        printf("hint: '%s' was opened and never closed (an early return? every trace_begin needs "
               "its trace_end, innermost first)\n", inner);
    } else if (strstr(out, "no range is open")) {
        printf("hint: a trace_end without its trace_begin\n");
    }
}

static int check_ranges_in(const char *dir) {
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    ChildResult r;
    run_child(body_steps, NULL, &r);
    if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
        printf("two steps under a trace did not end well:\n%s\n", r.out);
        explain_unbalanced(r.out);
        return CHECK_FAIL;
    }
    char path[400], why[512];
    snprintf(path, sizeof path, "%s/step.json", dir);
    TraceFile t;
    if (!trace_load(path, &t, why, sizeof why)) {
        printf("the trace cannot be read back: %s\n", why);
        return CHECK_FAIL;
    }
    HostTrack h = trace_host_track(&t, 0);
    const Phase *want = PHASES;
    int steps = 0, found[NW] = {0};
    int64_t last_start[NW];
    bool ok = true;
    for (int64_t i = 0; i < h.n && ok; i++) {
        const TraceRecord *e = &h.ev[i];
        const bool in_step = above(&h, i, TRACE_STEP) >= 0;
        if (e->cat == TRACE_STEP && !in_step) steps++;
        for (int k = 0; k < NW; k++)
            if (strcmp(e->name, want[k].name) == 0) {
                const int64_t outer = inside_phase(&h, i);
                if (outer >= 0) {
                    printf("'%s' lies inside '%s': the phases come one after the other in the step, "
                           "each closed before the next opens (trace_end(\"%s\") before "
                           "trace_begin(\"%s\"))\n", e->name, h.ev[outer].name, h.ev[outer].name, e->name);
                    ok = false;
                } else if (e->cat != want[k].cat) {
                    printf("'%s' has the category %s: it is %s\n", e->name, cat_word(e->cat),
                           want[k].cat == TRACE_DATA ? "data (TRACE_DATA)" : "compute (TRACE_COMPUTE)");
                    ok = false;
                } else if (!in_step) {
                    printf("'%s' is not inside a \"step\" range: every phase of a step lies inside it\n", e->name);
                    ok = false;
                }
                found[k]++, last_start[k] = e->ts_ns;
            }
        if (e->cat == TRACE_COMM && above(&h, i, TRACE_COMPUTE) >= 0) {
            printf("the gradients' communication ('%s') lies inside the compute range '%s': a trace "
                   "then shows waiting as computing. Leave step_sync_gradients outside your compute "
                   "ranges (between \"backward\" and \"optimizer\")\n", e->name,
                   h.ev[above(&h, i, TRACE_COMPUTE)].name);
            ok = false;
        }
    }
    if (ok && steps == 0) {
        printf("nothing of category step in the trace: open \"step\" (TRACE_STEP) around the whole step\n");
        ok = false;
    } else if (ok && steps != 2) {
        printf("%d steps in the trace of 2 steps: one \"step\" range per call, not nested\n", steps);
        ok = false;
    }
    for (int k = 0; k < NW && ok; k++)
        if (found[k] != 2) {
            printf("%d ranges named '%s' in 2 steps: one per step, named exactly so\n", found[k], want[k].name);
            ok = false;
        }
    for (int k = 1; k < NW && ok; k++)
        if (last_start[k] < last_start[k - 1]) {
            printf("'%s' starts before '%s': the phases in the step's order\n", want[k].name, want[k - 1].name);
            ok = false;
        }
    if (ok) {
        const StepShares s = trace_step_shares(&t, 0);
        check_show("2 steps: compute %.0f%%, exposed communication %.0f%%, data %.0f%%, idle %.0f%%",
                   100.0 * s.compute_ns / s.step_ns, 100.0 * s.comm_ns / s.step_ns,
                   100.0 * s.data_ns / s.step_ns, 100.0 * s.idle_ns / s.step_ns);
    }
    trace_host_track_free(&h);
    trace_file_free(&t);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_ranges(void) { return with_tmpdir("grade10_ranges", check_ranges_in); }

/* ================================================================ TODOs 10.2, 10.3 */

/* Made-up traces: events in microseconds (ints) on rank 0. */
typedef struct {
    const char *name;
    TraceCat cat;
    int tid, ts, dur;
} Ev;

static TraceFile made_up(const Ev *ev, int n) {
    TraceFile t = {.events = xmalloc((size_t)n * sizeof(TraceRecord)), .count = n, .pid = 0, .world_size = 1};
    for (int i = 0; i < n; i++) {
        TraceRecord *e = &t.events[i];
        *e = (TraceRecord){.ts_ns = ev[i].ts * 1000LL, .dur_ns = ev[i].dur * 1000LL, .bytes = -1,
                           .pid = 0, .tid = ev[i].tid, .cat = ev[i].cat};
        snprintf(e->name, sizeof e->name, "%s", ev[i].name);
    }
    return t;
}

#define LANE TRACE_TID_COMM(0)
#define LANE2 TRACE_TID_COMM(1)
/* nested: layers inside forward and backward, a wait for an all-reduce, idle at the end */
static const Ev NESTED[] = {
    {"step", TRACE_STEP, 0, 0, 100}, {"load batch", TRACE_DATA, 0, 0, 10},
    {"forward", TRACE_COMPUTE, 0, 10, 30}, {"layer 0 forward", TRACE_COMPUTE, 0, 12, 18},
    {"backward", TRACE_COMPUTE, 0, 40, 40}, {"layer 0 backward", TRACE_COMPUTE, 0, 45, 20},
    {"wait all-reduce", TRACE_COMM, 0, 80, 10}, {"other things", TRACE_OTHER, 0, 92, 3},
    {"step", TRACE_STEP, 0, 100, 50}, {"forward", TRACE_COMPUTE, 0, 100, 40},
    {"evaluate", TRACE_COMPUTE, 0, 200, 100}, {"layer 0 forward", TRACE_COMPUTE, 0, 210, 50},
    {"all-reduce", TRACE_COMM, LANE, 50, 38}, {"kernel", TRACE_COMPUTE, TRACE_TID_STREAM(0), 10, 60},
    {"read batch", TRACE_DATA, TRACE_TID_LOADER, 20, 60}};
/* a lane wholly under the backward: all hidden, nothing exposed */
static const Ev HIDDEN[] = {
    {"step", TRACE_STEP, 0, 0, 100}, {"backward", TRACE_COMPUTE, 0, 10, 80},
    {"all-reduce", TRACE_COMM, LANE, 20, 40}};
/* two lanes at once: in flight is their union, 50, not 70; a wait with a child in it */
static const Ev TWO_LANES[] = {
    {"step", TRACE_STEP, 0, 0, 100}, {"backward", TRACE_COMPUTE, 0, 0, 50},
    {"wait all-reduce", TRACE_COMM, 0, 50, 30}, {"copy", TRACE_COMPUTE, 0, 55, 5},
    {"all-reduce", TRACE_COMM, LANE, 20, 40}, {"all-reduce", TRACE_COMM, LANE2, 40, 30},
    {"all-reduce", TRACE_COMM, LANE, 120, 30}};

/* a step inside a step (a loop that opened "step" twice): not a step of its own */
static const Ev STEP_IN_STEP[] = {
    {"step", TRACE_STEP, 0, 0, 100}, {"forward", TRACE_COMPUTE, 0, 0, 40},
    {"step", TRACE_STEP, 0, 50, 30}, {"backward", TRACE_COMPUTE, 0, 55, 20}};
/* Traces that hold one thing each a share can get wrong, so that a difference names it:
 * ranges inside ranges (host only, all inside the step) */
static const Ev CHILDREN[] = {
    {"step", TRACE_STEP, 0, 0, 100}, {"forward", TRACE_COMPUTE, 0, 10, 40},
    {"layer 0 forward", TRACE_COMPUTE, 0, 12, 30}, {"backward", TRACE_COMPUTE, 0, 50, 40},
    {"layer 0 backward", TRACE_COMPUTE, 0, 55, 20}, {"wait all-reduce", TRACE_COMM, 0, 90, 8}};
/* other tracks inside the step (a lane, a GPU stream, the loader), the host's ranges flat */
static const Ev OTHER_TRACKS[] = {
    {"step", TRACE_STEP, 0, 0, 100}, {"load batch", TRACE_DATA, 0, 0, 10},
    {"forward", TRACE_COMPUTE, 0, 10, 40}, {"wait all-reduce", TRACE_COMM, 0, 60, 20},
    {"all-reduce", TRACE_COMM, LANE, 30, 40}, {"kernel", TRACE_COMPUTE, TRACE_TID_STREAM(0), 5, 40},
    {"read batch", TRACE_DATA, TRACE_TID_LOADER, 10, 50}};
/* ranges outside the steps (before, between, after), the host's ranges flat */
static const Ev OUTSIDE[] = {
    {"setup", TRACE_COMPUTE, 0, 0, 20}, {"step", TRACE_STEP, 0, 20, 100},
    {"forward", TRACE_COMPUTE, 0, 30, 40}, {"all-reduce between steps", TRACE_COMM, 0, 125, 10},
    {"load batch", TRACE_DATA, 0, 140, 5}, {"step", TRACE_STEP, 0, 150, 50},
    {"backward", TRACE_COMPUTE, 0, 150, 30}, {"evaluate", TRACE_COMPUTE, 0, 300, 100}};
/* a range of category other inside the step, flat */
static const Ev OTHER_CAT[] = {
    {"step", TRACE_STEP, 0, 0, 100}, {"forward", TRACE_COMPUTE, 0, 0, 40},
    {"other things", TRACE_OTHER, 0, 50, 20}};

/* What a case isolates: the mistake same_shares names when the shares differ on it. */
typedef enum { ISO_ANY, ISO_NESTING, ISO_TRACKS, ISO_OUTSIDE, ISO_OTHER, ISO_STEPS } Isolates;

typedef struct {
    const char *what;
    const Ev *ev;
    int n;
    Isolates isolates;
} Case;
#define CASE(what, ev, isolates) {what, ev, sizeof ev / sizeof ev[0], isolates}
static const Case CASES[] = {
    CASE("a made-up trace: ranges nested in ranges, on the host, inside the step", CHILDREN, ISO_NESTING),
    CASE("a made-up trace: other tracks (a lane, a GPU stream, the loader) beside the host's flat ranges", OTHER_TRACKS, ISO_TRACKS),
    CASE("a made-up trace: ranges before, between and after the steps", OUTSIDE, ISO_OUTSIDE),
    CASE("a made-up trace: a range of category other", OTHER_CAT, ISO_OTHER),
    CASE("a made-up trace: a step inside a step", STEP_IN_STEP, ISO_STEPS),
    CASE("a made-up trace: nested ranges, other tracks, a range outside the steps", NESTED, ISO_ANY),
    CASE("a made-up trace: an all-reduce in flight under the backward", HIDDEN, ISO_ANY),
    CASE("a made-up trace: two lanes in flight at once, a wait with a range inside", TWO_LANES, ISO_ANY)};
static const char *const RECORDED[] = {"06-buckets.rank0.json", "06-buckets.rank1.json", "10-slow.rank0.json",
                                       "10-mine.rank1.json"};

static bool same_shares(const char *what, const TraceFile *t, Isolates isolates) {
    const StepShares y = lesson_step_shares(t, t->pid), l = trace_step_shares(t, t->pid);
    if (memcmp(&y, &l, sizeof y) == 0) return true;
    printf("%s: yours: %lld steps of %lld ns: compute %lld, comm %lld, data %lld, idle %lld;\n"
           "  the library's: %lld steps of %lld ns: compute %lld, comm %lld, data %lld, idle %lld\n", what,
           (long long)y.steps, (long long)y.step_ns, (long long)y.compute_ns, (long long)y.comm_ns,
           (long long)y.data_ns, (long long)y.idle_ns, (long long)l.steps, (long long)l.step_ns,
           (long long)l.compute_ns, (long long)l.comm_ns, (long long)l.data_ns, (long long)l.idle_ns);
    const int64_t yparts = y.compute_ns + y.comm_ns + y.data_ns + y.idle_ns;
    const bool more = y.compute_ns > l.compute_ns || y.data_ns > l.data_ns || y.comm_ns > l.comm_ns;
    /* a trace that holds one thing to get wrong names it (the cases come in that order:
     * a mistake shows first where only it can) */
    if (isolates == ISO_TRACKS && y.steps == l.steps && more) {
        printf("hint: other tracks counted: this trace's host ranges are flat and inside the step, "
               "so the extra time is the lane's, the GPU stream's or the loader's (tid != 0). Only "
               "the host track (trace_host_track, tid 0) makes a step's shares: a lane runs beside "
               "the host, its wait is the host's \"wait all-reduce\"\n");
        return false;
    }
    if (isolates == ISO_OUTSIDE && y.steps == l.steps && more) {
        printf("hint: ranges outside the steps counted (the set-up, an all-reduce between two steps, "
               "the evaluation): only a step's descendants are its parts\n");
        return false;
    }
    if (isolates == ISO_NESTING && y.steps == l.steps && yparts > y.step_ns) {
        printf("hint: children's time counted twice: a range's own time is its duration less its "
               "children's (\"layer 0 forward\" inside \"forward\" is compute once)\n");
        return false;
    }
    if (y.steps != l.steps)
        printf("hint: a step is a range of category step on the host track (tid 0), not inside another step\n");
    else if (yparts > y.step_ns)
        printf("hint: the parts add up to more than the steps: children's time counted twice (a range's own "
               "time is its duration less its children's), or ranges outside the steps counted?\n");
    else if (yparts < y.step_ns)
        printf("hint: the parts add up to less than the steps: idle is the rest, the step's time in no "
               "range of its own\n");
    else if (y.compute_ns > l.compute_ns && y.idle_ns < l.idle_ns)
        printf("hint: \"other\" counted as compute? Category other is idle: nobody said what it was\n");
    else if (y.compute_ns > l.compute_ns || y.data_ns > l.data_ns || y.comm_ns > l.comm_ns)
        printf("hint: ranges outside the steps, or other tracks (streams, lanes, the loader), counted? "
               "Only the host track (tid 0), inside a step\n");
    return false;
}

typedef struct {
    int64_t a, b;
} Span;

static int by_start(const void *x, const void *y) {
    const Span *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a;
}

/* Rank pid's lane time as a mistake in TODO 10.3 counts it: the lanes' spans unioned or
 * summed, cut to the steps' spans or not (unioned and cut is the library's in flight). */
static int64_t lane_time(const TraceFile *t, int pid, bool unioned, bool cut) {
    HostTrack h = trace_host_track(t, pid);
    Span *lanes = xmalloc((size_t)(t->count + 1) * sizeof *lanes), *steps = xmalloc((size_t)(h.n + 1) * sizeof *steps);
    int64_t nl = 0, ns = 0, sum = 0;
    for (int64_t i = 0; i < t->count; i++) {
        const TraceRecord *e = &t->events[i];
        if (e->pid == pid && trace_tid_is_lane(e->tid) && e->dur_ns > 0)
            lanes[nl++] = (Span){e->ts_ns, e->ts_ns + e->dur_ns};
    }
    for (int64_t i = 0; i < h.n; i++) { /* the steps: inside no other step, so disjoint */
        bool nested = false;
        for (int64_t p = h.parent[i]; p >= 0 && !nested; p = h.parent[p]) nested = h.ev[p].cat == TRACE_STEP;
        if (h.ev[i].cat == TRACE_STEP && !nested) steps[ns++] = (Span){h.ev[i].ts_ns, h.ev[i].ts_ns + h.ev[i].dur_ns};
    }
    qsort(lanes, (size_t)nl, sizeof *lanes, by_start);
    if (unioned) {
        int64_t m = 0;
        for (int64_t i = 0; i < nl; i++)
            if (m > 0 && lanes[i].a <= lanes[m - 1].b) lanes[m - 1].b = lanes[i].b > lanes[m - 1].b ? lanes[i].b : lanes[m - 1].b;
            else lanes[m++] = lanes[i];
        nl = m;
    }
    for (int64_t i = 0; i < nl; i++) {
        if (!cut) {
            sum += lanes[i].b - lanes[i].a;
            continue;
        }
        for (int64_t j = 0; j < ns; j++) {
            const int64_t a = lanes[i].a > steps[j].a ? lanes[i].a : steps[j].a;
            const int64_t b = lanes[i].b < steps[j].b ? lanes[i].b : steps[j].b;
            if (b > a) sum += b - a;
        }
    }
    xfree(lanes), xfree(steps);
    trace_host_track_free(&h);
    return sum;
}

static bool same_split(const char *what, const TraceFile *t, Isolates isolates) {
    (void)isolates; /* the cases for 10.3 (HIDDEN, TWO_LANES) are named by the numbers */
    const CommSplit y = lesson_comm_split(t, t->pid), l = trace_comm_split(t, t->pid);
    if (memcmp(&y, &l, sizeof y) == 0) return true;
    printf("%s: yours: in flight %lld ns, hidden %lld, exposed %lld; the library's: in flight %lld, "
           "hidden %lld, exposed %lld\n", what, (long long)y.in_flight_ns, (long long)y.hidden_ns,
           (long long)y.exposed_ns, (long long)l.in_flight_ns, (long long)l.hidden_ns, (long long)l.exposed_ns);
    if (y.exposed_ns > l.exposed_ns)
        printf("hint: exposed communication counted where it overlaps compute: communication in flight "
               "beside compute is hidden; exposed = the host's own time in comm ranges (waiting)\n");
    else if (y.in_flight_ns > l.in_flight_ns) {
        /* in flight as each mistake counts it: which one gives yours */
        const bool uncut = y.in_flight_ns == lane_time(t, t->pid, true, false);
        const bool summed = y.in_flight_ns == lane_time(t, t->pid, false, true);
        const bool both = y.in_flight_ns == lane_time(t, t->pid, false, false);
        if (uncut)
            printf("hint: the lanes not cut to the steps: a lane's time outside every step (here an "
                   "all-reduce after the last step) is no step's; in flight is the lanes' union "
                   "intersected with the steps' spans\n");
        else if (summed)
            printf("hint: the lanes summed, not unioned: two all-reduces in flight at once are in "
                   "flight once for that time (the union of the lanes' spans, then cut to the steps)\n");
        else if (both)
            printf("hint: the lanes summed, not unioned, and not cut to the steps: in flight is the "
                   "time some lane is busy (two at once count once), inside the steps only\n");
        else
            printf("hint: in flight is the union of the lanes' spans (two at once count once), cut to "
                   "the steps' spans\n");
    }
    else if (y.hidden_ns != l.hidden_ns)
        printf("hint: hidden = in-flight time while the host is not in a comm range of its own (the "
               "range's span less its children's)\n");
    return false;
}

/* The made-up traces, then the recorded ones, up to the first that differs. */
static int check_recorded(bool (*same)(const char *, const TraceFile *, Isolates)) {
    bool ok = true;
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0] && ok; k++) {
        TraceFile t = made_up(CASES[k].ev, CASES[k].n);
        ok = same(CASES[k].what, &t, CASES[k].isolates);
        trace_file_free(&t);
    }
    for (size_t k = 0; k < sizeof RECORDED / sizeof RECORDED[0] && ok; k++) {
        char path[512], why[512], what[600];
        snprintf(path, sizeof path, DATA10 "%s", RECORDED[k]);
        TraceFile t;
        if (!trace_load(path, &t, why, sizeof why)) {
            printf("cannot read a recorded trace: %s\n", why);
            return CHECK_FAIL;
        }
        snprintf(what, sizeof what, "the recorded trace %s", RECORDED[k]);
        ok = same(what, &t, ISO_ANY);
        trace_file_free(&t);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_shares(void) { return check_recorded(same_shares); }
static int check_comm(void) { return check_recorded(same_split); }

/* ================================================================ TODO 10.6 */

static uint64_t digest(const TokenBatch *b) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < B * T; i++) h = (h ^ (uint32_t)b->tokens[i]) * 1099511628211ull;
    for (int i = 0; i < B * T; i++) h = (h ^ (uint32_t)b->targets[i]) * 1099511628211ull;
    return h;
}

/* Your loader's calls of the library's loader thread, as they happen: the grader is
 * linked with --wrap for prefetch_start and prefetch_wait (GRADE_WRAPPED_10_PROFILE), so
 * TODO 10.6 is judged by what it asked for and when, not by when a busy machine ran the
 * thread. */
static struct {
    int64_t started;                  /* the row of the last prefetch_start */
    const TokenBatch *waited, *prior; /* what the last prefetch_wait returned, the one before */
    int starts, waits;                /* calls so far */
} g_pf;

void __real_prefetch_start(Prefetch *p, int64_t row);
void __wrap_prefetch_start(Prefetch *p, int64_t row);
void __wrap_prefetch_start(Prefetch *p, int64_t row) {
    g_pf.started = row, g_pf.starts++;
    __real_prefetch_start(p, row);
}
const TokenBatch *__real_prefetch_wait(Prefetch *p);
const TokenBatch *__wrap_prefetch_wait(Prefetch *p);
const TokenBatch *__wrap_prefetch_wait(Prefetch *p) {
    const TokenBatch *b = __real_prefetch_wait(p);
    g_pf.prior = g_pf.waited, g_pf.waited = b, g_pf.waits++;
    return b;
}

enum { STEPS = 6, LATENCY_US = 1000, COMPUTE_US = 6000 };

/* The index k of row among the loader's batches (-1: none of them). */
static int batch_of(const Loader *l, int64_t row) {
    for (int k = 0; k < l->count; k++)
        if (l->rows[k] == row) return k;
    return -1;
}

static int check_prefetch_in(const char *dir) {
    TextBatches split = made_up_split();
    uint64_t want[STEPS];
    Loader plain = plain_loader(&split, STEPS);
    for (int k = 0; k < STEPS; k++) want[k] = digest(loader_next(&plain));
    char path[400], why[512];
    snprintf(path, sizeof path, "%s/tokens.bin", dir);
    Loader l = plain_loader(&split, STEPS);
    l.kind = "mine";
    if (!token_file_write(path, &split, why, sizeof why) || !token_file_open(&l.file, path, LATENCY_US, why, sizeof why)) {
        printf("the token file: %s\n", why);
        return CHECK_FAIL;
    }
    l.prefetch = prefetch_init(&l.file, T, 0, B);
    int hidden = 0; /* reads done before their step asked */
    for (int k = 0; k < STEPS; k++) {
        const int waits = g_pf.waits;
        const int64_t asked = trace_now_ns();
        const TokenBatch *b = loader_next(&l);
        if (!b) {
            printf("step %d: lesson_next_batch returned NULL\n", k + 1);
            return CHECK_FAIL;
        }
        const bool in_flight = prefetch_in_flight(l.prefetch);
        /* the buffer an earlier wait gave is the one the read in flight fills (two buffers) */
        const bool stale = g_pf.waits == waits || (g_pf.prior && b->tokens == g_pf.prior->tokens);
        const uint64_t got = digest(b);
        if (stale || got != want[k]) {
            int same = -1;
            for (int j = 0; j < STEPS; j++)
                if (want[j] == got) same = j;
            printf("step %d got %s", k + 1, got == want[k] ? "its batch" : "the wrong batch");
            if (same >= 0) printf(" (batch %d's)", same + 1);
            printf("%s\n", stale ? ", not from this call's prefetch_wait: from a batch an earlier call "
                   "waited for" : "");
            if (stale || same == k - 1)
                printf("hint: returned the previous batch: wait for this call's read (prefetch_wait) and "
                       "return what it gives; a batch stays valid only until the second prefetch_start "
                       "after its wait%s\n", stale && in_flight ? ", and the read in flight now is filling "
                       "that very buffer while the step trains on it (a race: the batch changes under "
                       "the step)" : "");
            else if (same > k)
                printf("hint: the sampler advanced twice (l->next incremented twice in a call?)\n");
            else
                printf("hint: not one the plain loader hands out in these %d steps: return "
                       "l->rows[l->next]'s batch, read through l->prefetch\n", STEPS);
            return CHECK_FAIL;
        }
        if (l.next != k + 1) {
            printf("after step %d's batch l->next is %lld, not %d: advance it by one a call\n", k + 1,
                   (long long)l.next, k + 1);
            return CHECK_FAIL;
        }
        if (k + 1 < STEPS) { /* the next batch's read must be under way while this step computes */
            if (!in_flight) {
                printf("step %d's batch was returned with no read in flight: batch %d will be read only "
                       "when step %d asks for it, overlapping nothing. hint: start the next batch's read "
                       "before you return this one, and wait for it at the next call (waited right after "
                       "starting?)\n", k + 1, k + 2, k + 2);
                return CHECK_FAIL;
            }
            const int next = batch_of(&l, g_pf.started);
            if (next != k + 1) {
                printf("step %d's batch was returned with the read of row %lld in flight (batch %d); "
                       "expected batch %d's, row %lld\n", k + 1, (long long)g_pf.started, next + 1, k + 2,
                       (long long)l.rows[k + 1]);
                if (next == k)
                    printf("hint: prefetched the current batch again: the read started before returning is "
                           "of l->rows[l->next] after l->next++ (the batch after the one returned)\n");
                else if (next > k + 1)
                    printf("hint: a batch skipped: the next read is of l->rows[l->next] once l->next was "
                           "advanced by one\n");
                else
                    printf("hint: the next read is of l->rows[l->next], after l->next++\n");
                return CHECK_FAIL;
            }
        }
        if (k > 0 && b->read_end_ns <= asked) hidden++; /* shown, not judged: the machine's doing */
        const struct timespec compute = {0, COMPUTE_US * 1000L}; /* the step's compute, standing in */
        nanosleep(&compute, NULL);
        if (digest(b) != got) {
            printf("step %d's batch changed while the step trained on it: a read wrote into it.\n"
                   "hint: a racing prefetch: a batch stays valid only until the second prefetch_start "
                   "after its prefetch_wait; return the batch this call's wait gave, and start one read a "
                   "call\n", k + 1);
            return CHECK_FAIL;
        }
    }
    if (prefetch_in_flight(l.prefetch)) {
        printf("after the last batch a read is still in flight: start one only while l->next < l->count\n");
        return CHECK_FAIL;
    }
    prefetch_free(l.prefetch);
    token_file_close(&l.file);
    check_show("%d batches, the plain loader's in its order; each one's read started during the step "
               "before (%d of %d were read before their step asked)", STEPS, hidden, STEPS - 1);
    return CHECK_PASS;
}

static int check_prefetch(void) { return with_tmpdir("grade10_prefetch", check_prefetch_in); }

/* ================================================================ the program */

static const char *TEXT = "/usr/share/common-licenses/GPL-3"; /* Debian's base-files */

/* Whose code this grades: make check-lesson 10 SOLUTION=1 builds it for solutions/. */
static const char *whose(void) { return strncmp(LESSON_PATH, "solutions/", 10) == 0 ? "the solution's" : "your"; }

/* One run on 2 ranks; its output in r; false (said) when it failed. */
static bool run_program(const char *loader, int latency_us, const char *trace, CommandResult *r) {
    char lat[16];
    snprintf(lat, sizeof lat, "%d", latency_us);
    const char *args[] = {"main", "--dataset", "text", "--data", TEXT, "--d-model", "64", "--heads", "2",
                          "--d-hid", "128", "--layers", "2", "--bptt", "32", "--batch-size", "8",
                          "--max-steps", "16", "--dropout", "0", "--loader", loader, "--read-latency-us", lat,
                          trace ? "--trace" : NULL, trace, NULL};
    run_ranks(2, args, 120, r);
    char end[96];
    if (r->timed_out || !WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0) {
        printf("the program, --loader %s on 2 ranks, ended: %s. It said:\n", loader, describe_end(r, end, sizeof end));
        print_ranks_output(r->out);
        return false;
    }
    return true;
}

static double step_ms(const CommandResult *r) {
    const char *at = strstr(r->out, "a step took ");
    double ms = -1;
    if (at) sscanf(at + strlen("a step took "), "%lf", &ms);
    return ms;
}

/* rank R's shares line: yours and the library's data share; false if missing. */
static bool shares_of(const CommandResult *r, int rank, double *yours, double *library, char *line, size_t cap) {
    char key[32];
    snprintf(key, sizeof key, "rank %d, steps", rank);
    const char *at = strstr(r->out, key);
    if (!at) return false;
    const char *data = strstr(at, " data ");
    const char *eol = strchr(at, '\n');
    snprintf(line, cap, "%.*s", (int)(eol ? eol - at : (long)strlen(at)), at);
    return data && sscanf(data, " data %lf/%lf%%", yours, library) == 2;
}

/* How much of rank r's reads (the loader track's "read batch", each paired with the host's
 * "wait batch" that took it, in order) ran before the host asked for them, from the run's
 * own trace: the first read (nothing runs before it) left out. false (said) when the
 * trace cannot be read or holds no reads. */
typedef struct {
    int reads;
    double read_ms, hidden_ms; /* summed over the reads after the first */
} Hidden;

static bool hidden_reads(const char *trace, int rank, Hidden *out) {
    char path[512], why[512];
    snprintf(path, sizeof path, "%.*s.rank%d.json", (int)(strlen(trace) - strlen(".json")), trace, rank);
    TraceFile t;
    if (!trace_load(path, &t, why, sizeof why)) {
        printf("the fixed run's trace cannot be read: %s\n", why);
        return false;
    }
    int64_t *read_start = xmalloc((size_t)(t.count + 1) * sizeof *read_start);
    int64_t *read_end = xmalloc((size_t)(t.count + 1) * sizeof *read_end);
    int64_t *wait_start = xmalloc((size_t)(t.count + 1) * sizeof *wait_start);
    int nr = 0, nw = 0;
    for (int64_t i = 0; i < t.count; i++) { /* the file's order is the order they happened */
        const TraceRecord *e = &t.events[i];
        if (e->tid == TRACE_TID_LOADER && strcmp(e->name, "read batch") == 0)
            read_start[nr] = e->ts_ns, read_end[nr++] = e->ts_ns + e->dur_ns;
        else if (e->tid == TRACE_TID_HOST && strcmp(e->name, "wait batch") == 0)
            wait_start[nw++] = e->ts_ns;
    }
    *out = (Hidden){.reads = nr};
    for (int k = 1; k < nr && k < nw; k++) {
        const int64_t until = read_end[k] < wait_start[k] ? read_end[k] : wait_start[k];
        out->read_ms += (double)(read_end[k] - read_start[k]) / 1e6;
        if (until > read_start[k]) out->hidden_ms += (double)(until - read_start[k]) / 1e6;
    }
    xfree(read_start), xfree(read_end), xfree(wait_start);
    trace_file_free(&t);
    if (nr < 2 || nw != nr) {
        printf("rank %d's trace of --loader mine holds %d reads on the \"data loader\" track and %d waits "
               "for them (\"wait batch\"): does lesson_next_batch read through l->prefetch "
               "(prefetch_start, prefetch_wait)?\n", rank, nr, nw);
        return false;
    }
    return true;
}

/* The load average and the cores, and whether that is a busy machine. */
static bool machine_busy(double *load, long *cores) {
    *load = -1;
    *cores = sysconf(_SC_NPROCESSORS_ONLN);
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", load) != 1) *load = -1;
        fclose(f);
    }
    return *cores > 0 && *load > (double)*cores;
}

static int check_program_in(const char *dir) {
    if (access(TEXT, R_OK) != 0) {
        printf("needs a text: %s is not there\n", TEXT);
        return CHECK_SKIP;
    }
    /* the step's compute, from a slowed run's trace (a plain run's ranks compete for the
     * cores more: none of them ever sleeps) */
    CommandResult r;
    char probe[400];
    snprintf(probe, sizeof probe, "%s/probe.json", dir);
    if (!run_program("slow", 100, probe, &r)) return CHECK_FAIL;
    const char *at = strstr(r.out, "rank 0, steps");
    double each = -1, share = -1;
    if (at && (at = strstr(at, ", ")) && (at = strstr(at + 2, ", "))) sscanf(at + 2, "%lf", &each);
    if (at && (at = strstr(at, "compute "))) sscanf(at, "compute %lf", &share);
    const double compute = each * share / 100;
    if (!(compute > 0)) {
        printf("no line \"rank 0, steps 2-N, X ms each (yours / library's): compute a/b%% ...\" from the "
               "traced run:\n");
        print_ranks_output(r.out);
        return CHECK_FAIL;
    }
    /* reads of half the step's compute (4 sequences a rank): the slowed step waits for
     * them, the fixed one can hide them all */
    int latency = (int)(0.5 * compute * 1000 / 4);
    if (latency < 20) latency = 20;
    char slow_trace[400], mine_trace[400], line[512];
    snprintf(slow_trace, sizeof slow_trace, "%s/slow.json", dir);
    snprintf(mine_trace, sizeof mine_trace, "%s/mine.json", dir);
    if (!run_program("slow", latency, slow_trace, &r)) return CHECK_FAIL;
    const double slow = step_ms(&r);
    double ys, ls, ym, lm;
    if (!shares_of(&r, 1, &ys, &ls, line, sizeof line) || !shares_of(&r, 0, &ys, &ls, line, sizeof line)) {
        printf("no line \"rank 0, ... data a/b%% ...\" and rank 1's from the traced run:\n");
        print_ranks_output(r.out);
        return CHECK_FAIL;
    }
    check_show("slowed (%d us a read): a step %.2f ms; %s", latency, slow, line);
    /* The fixed run is judged by what it measured itself: of each rank's reads, the share
     * that ran before the host asked for the batch (read and wait, on the trace's clock).
     * Waited for at once, a read is hidden 0 %; prefetched, as much of it as the step
     * before took to compute. No time is compared with another run's (on a loaded
     * machine two runs' steps differ by more than the fix), and a run that misses is run
     * again, up to 3 times; your shares must equal the library's in every run. */
    enum { TRIES = 3 };
    char seen[TRIES][160];
    for (int k = 0; k < TRIES; k++) {
        if (!run_program("mine", latency, mine_trace, &r)) return CHECK_FAIL;
        const double mine = step_ms(&r);
        const bool found = shares_of(&r, 0, &ym, &lm, line, sizeof line);
        check_show("fixed (%s prefetch): a step %.2f ms (%.2f x the slowed's); %s", whose(), mine, mine / slow, line);
        if (!found || !(ym == lm && ys == ls)) {
            printf("your shares (%.1f%%, %.1f%%) differ from the library's (%.1f%%, %.1f%%)\n", ys, ym, ls, lm);
            return CHECK_FAIL;
        }
        Hidden h[2];
        if (!hidden_reads(mine_trace, 0, &h[0]) || !hidden_reads(mine_trace, 1, &h[1])) return CHECK_FAIL;
        const double least = fmin(h[0].hidden_ms / h[0].read_ms, h[1].hidden_ms / h[1].read_ms);
        snprintf(seen[k], sizeof seen[k], "rank 0 %.2f of %.2f ms of reads hidden, rank 1 %.2f of %.2f ms "
                 "(at least half wanted)", h[0].hidden_ms, h[0].read_ms, h[1].hidden_ms, h[1].read_ms);
        check_show("its own trace: %s", seen[k]);
        if (least >= 0.5) return CHECK_PASS;
    }
    double load;
    long cores;
    const bool busy = machine_busy(&load, &cores);
    if (busy)
        printf("the machine was busy (load average %.1f on %ld cores): there the loader's thread can start "
               "its reads late, whatever your code asked; if TODO 10.6's check passed, run this one again "
               "when it is quieter. What was seen:\n", load, cores);
    printf("with --loader mine, in %d runs, the reads ran while the host waited for them:\n", TRIES);
    for (int k = 0; k < TRIES; k++) printf("  %s\n", seen[k]);
    printf("hint: the batch's read must be started a step ahead: lesson_next_batch starts the next "
           "batch's read before it returns and waits for it only at the next call (TODO 10.6's check "
           "says what your loader asked for)%s\n", busy ? "" : "; the machine was not busy (load average "
           "below its cores)");
    return CHECK_FAIL;
}

static int check_program(void) {
    REQUIRE_RANKS();
    return with_tmpdir("grade10_program", check_program_in);
}

static bool worker(int argc, char **argv) {
    (void)argc, (void)argv;
    return false;
}

static void checks(void) {
    check_needs("TODO 10.3", "10.2");
    check_run("TODO 10.1", "ranges: step, load batch, forward, backward, optimizer; closed, in order, comm outside compute", check_ranges, 60);
    check_run("TODO 10.2", "shares of a step: = the library's to the ns (made-up and recorded traces)", check_shares, 30);
    check_run("TODO 10.3", "communication in flight, hidden, exposed: = the library's to the ns", check_comm, 30);
    grade10_roofline_checks();
    check_run("TODO 10.6", "prefetch: the plain loader's batches in order, each read started during the step before", check_prefetch, 60);
    grade10_precision_checks();
    check_run("TODO 10.1-10.6", "the program on 2 ranks: slowed, then fixed: its own trace shows the reads hidden under the steps", check_program, 300);
}

int main(int argc, char **argv) {
    return ranks_main(argc, argv, "lesson 10: performance", checks, worker, lesson_main);
}
