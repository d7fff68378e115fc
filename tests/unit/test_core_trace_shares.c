/* Unit tests of lib/core/trace_load and trace_shares: a file in the library's layout
 * (as trace_write.c writes it, with times chosen by hand) read back to the nanosecond; files that are not one rank's refused with a reason; the shares
 * and the communication split of made-up traces against their values worked out by
 * hand from the definitions (core/trace_shares.h). tests/trace/run.sh compares the
 * shares with tools/trace/trace_read.py's on real runs' traces. */
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/trace.h"
#include "core/trace_load.h"
#include "core/trace_shares.h"
#include "framework/check.h"

#define META "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"args\": {\"name\": \"rank 1\"}},\n"
#define TAIL "],\n\"otherData\": {\"format\": \"course trace 1\", \"rank\": 1, \"world_size\": 2, \"max_events\": 9, \"dropped_events\": 3}}\n"
#define X(name, cat, tid, ts, dur) \
    "{\"name\": \"" name "\", \"cat\": \"" cat "\", \"ph\": \"X\", \"pid\": 1, \"tid\": " #tid ", \"ts\": " ts ", \"dur\": " dur "}"

static bool parse(const char *text, TraceFile *t, char *why, size_t cap) {
    return trace_parse(text, strlen(text), "test.json", t, why, cap);
}

static int check_load(void) {
    const char *text = "{\"displayTimeUnit\": \"ms\",\n\"traceEvents\": [" META
        X("step", "step", 0, "0.000", "100.001") ",\n"
        "{\"name\": \"all-reduce\", \"cat\": \"comm\", \"ph\": \"X\", \"pid\": 1, \"tid\": 9, \"ts\": 12.5, \"dur\": 3, \"args\": {\"bytes\": 4096}},\n"
        X("a \\\"quoted\\\" \\u00e9 name", "compute", 0, "1.234", "0.001") ",\n"
        "{\"name\": \"memory\", \"ph\": \"C\", \"pid\": 1, \"tid\": 0, \"ts\": 5.000, \"args\": {\"resident (bytes)\": 1.5e9}}\n" TAIL;
    TraceFile t;
    char why[256];
    bool ok = expect_true(parse(text, &t, why, sizeof why), "the library's layout refused: %s", why);
    if (!ok) return CHECK_FAIL;
    ok = expect_true(t.count == 3 && t.pid == 1 && t.world_size == 2 && t.dropped_events == 3,
                     "%lld events of pid %d, world %d, dropped %lld: want 3, 1, 2, 3", (long long)t.count, t.pid,
                     t.world_size, (long long)t.dropped_events);
    ok = ok && expect_true(t.events[0].ts_ns == 0 && t.events[0].dur_ns == 100001 && t.events[0].cat == TRACE_STEP &&
                               t.events[0].bytes == -1, "the step: %lld + %lld ns", (long long)t.events[0].ts_ns,
                           (long long)t.events[0].dur_ns);
    ok = ok && expect_true(t.events[1].ts_ns == 12500 && t.events[1].dur_ns == 3000 && t.events[1].tid == 9 &&
                               t.events[1].bytes == 4096 && t.events[1].cat == TRACE_COMM,
                           "the all-reduce: %lld + %lld ns, %lld bytes", (long long)t.events[1].ts_ns,
                           (long long)t.events[1].dur_ns, (long long)t.events[1].bytes);
    ok = ok && expect_true(strcmp(t.events[2].name, "a \"quoted\" \xc3\xa9 name") == 0 && t.events[2].ts_ns == 1234 &&
                               t.events[2].dur_ns == 1, "the escaped name: '%s'", t.events[2].name);
    trace_file_free(&t);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Each file must be refused, the reason naming `want`. */
static int check_refused(void) {
    static const struct { const char *text, *want; } bad[] = {
        {"{\"traceEvents\": [" X("a", "compute", 0, "1", "1") "," "{\"name\": \"b\", \"cat\": \"compute\", \"ph\": \"X\", \"pid\": 2, \"tid\": 0, \"ts\": 1, \"dur\": 1}" TAIL, "a merged file?"},
        {"{\"traceEvents\": [" X("a", "compute", 0, "1", "1") "], \"otherData\": {\"ranks\": []}}", "course trace 1"},
        {"[" X("a", "compute", 0, "1", "1") "]", "array form"},
        {"{\"traceEvents\": [" X("a", "gpu", 0, "1", "1") TAIL, "category 'gpu'"},
        {"{\"traceEvents\": [" X("a", "compute", 0, "1.0001", "1") TAIL, "more than 3 decimals"},
        {"{\"traceEvents\": [" X("a", "compute", 0, "1e3", "1") TAIL, "exponent"},
        {"{\"traceEvents\": [{\"name\": \"a\", \"cat\": \"compute\", \"ph\": \"X\", \"pid\": 1, \"tid\": 0, \"ts\": 1}" TAIL, "without \"dur\""},
        {"{\"traceEvents\": [" X("a", "compute", 0, "1", "-1") TAIL, "less than nothing"},
        /* ends past INT64_MAX ns, or durations whose sum is: the shares would overflow */
        {"{\"traceEvents\": [" X("a", "step", 0, "9000000000000000", "9000000000000000") TAIL, "beyond 2^60 ns"},
        {"{\"traceEvents\": [" X("a", "step", 0, "0", "1000000000000000") "," X("b", "compute", 0, "0", "1000000000000000") ","
         X("c", "compute", 0, "0", "1000000000000000") TAIL, "beyond 2^60 ns"},
        {"{\"traceEvents\": [" X("a", "compute", 0, "1", "1") ",", "expected"},
        {"{\"traceEvents\": [" X("a", "compute", 0, "1", "1") TAIL "x", "more after"},
        {"{\"otherData\": {\"format\": \"course trace 1\"}}", "no traceEvents"},
        {"", "expected"}};
    bool ok = true;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        TraceFile t;
        char why[256];
        if (parse(bad[k].text, &t, why, sizeof why)) {
            ok = expect_true(false, "file %zu accepted (should fail with '%s')", k, bad[k].want);
            trace_file_free(&t);
        } else {
            ok = expect_true(strstr(why, bad[k].want) && strncmp(why, "test.json: byte ", 16) == 0,
                             "file %zu refused as '%s', want '%s'", k, why, bad[k].want) && ok;
        }
    }
    char why[256];
    TraceFile t;
    ok = expect_true(!trace_load("/no/such/trace.json", &t, why, sizeof why) && strstr(why, "/no/such/trace.json"),
                     "a missing file: '%s'", why) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A made-up trace in microseconds (ints). */
typedef struct {
    TraceCat cat;
    int tid, ts, dur;
} Ev;

static TraceFile made_up(const Ev *ev, int n) {
    TraceFile t = {.events = xmalloc((size_t)n * sizeof(TraceRecord)), .count = n, .pid = 0};
    for (int i = 0; i < n; i++)
        t.events[i] = (TraceRecord){.ts_ns = ev[i].ts * 1000LL, .dur_ns = ev[i].dur * 1000LL, .bytes = -1,
                                    .tid = ev[i].tid, .cat = ev[i].cat};
    return t;
}

static int check_shares(void) {
    const int L = TRACE_TID_COMM(0), L2 = TRACE_TID_COMM(3);
    /* step 1 [0,100): load [0,10) data; forward [10,40) with a layer [12,30); backward
     * [40,80) with a layer [45,65); a wait [80,90) with a copy [82,84) in it; other
     * [92,95); the rest idle. Step 2 [100,150): forward [100,140). Outside: evaluate
     * [200,300). Not the host: a stream's kernel, the loader's read, lanes [50,88) and
     * [60,70) (at once: in flight once), [86,120) (its part past the step counts in step
     * 2 while it runs there), [160,170) (outside the steps). */
    const Ev ev[] = {{TRACE_COMPUTE, 0, 10, 30}, {TRACE_STEP, 0, 0, 100}, {TRACE_DATA, 0, 0, 10},
                     {TRACE_COMPUTE, 0, 12, 18}, {TRACE_COMPUTE, 0, 40, 40}, {TRACE_COMPUTE, 0, 45, 20},
                     {TRACE_COMM, 0, 80, 10}, {TRACE_COMPUTE, 0, 82, 2}, {TRACE_OTHER, 0, 92, 3},
                     {TRACE_STEP, 0, 100, 50}, {TRACE_COMPUTE, 0, 100, 40}, {TRACE_COMPUTE, 0, 200, 100},
                     {TRACE_COMPUTE, TRACE_TID_STREAM(0), 10, 60}, {TRACE_DATA, TRACE_TID_LOADER, 20, 60},
                     {TRACE_COMM, L, 50, 38}, {TRACE_COMM, L2, 60, 10}, {TRACE_COMM, L2, 86, 34},
                     {TRACE_COMM, L, 160, 10}};
    TraceFile t = made_up(ev, sizeof ev / sizeof ev[0]);
    const StepShares s = trace_step_shares(&t, 0);
    /* by hand: compute 30 + 40 + 2 + 40 = 112 (a layer inside forward counts once);
     * comm 10 - 2 = 8; data 10; idle (100 - 90) + 3 (other, inside the 10) ... : the step
     * less what its children cover (10 + 30 + 40 + 10 + 3 = 93 of 100: 7) + other's 3,
     * and step 2's 10: 20 */
    bool ok = expect_true(s.steps == 2 && s.step_ns == 150000 && s.compute_ns == 112000 && s.comm_ns == 8000 &&
                              s.data_ns == 10000 && s.idle_ns == 20000,
                          "shares: %lld steps %lld ns: compute %lld comm %lld data %lld idle %lld; want 2, 150000, "
                          "112000, 8000, 10000, 20000", (long long)s.steps, (long long)s.step_ns,
                          (long long)s.compute_ns, (long long)s.comm_ns, (long long)s.data_ns, (long long)s.idle_ns);
    ok = expect_true(s.compute_ns + s.comm_ns + s.data_ns + s.idle_ns == s.step_ns, "the parts do not add up") && ok;
    const CommSplit c = trace_comm_split(&t, 0);
    /* in flight inside the steps: [50,120) = 70; the host's own comm time [80,82) and
     * [84,90): 8 of it waited, so hidden 62; exposed = comm 8 */
    ok = expect_true(c.in_flight_ns == 70000 && c.hidden_ns == 62000 && c.exposed_ns == 8000,
                     "split: in flight %lld, hidden %lld, exposed %lld; want 70000, 62000, 8000",
                     (long long)c.in_flight_ns, (long long)c.hidden_ns, (long long)c.exposed_ns) && ok;
    const StepShares none = trace_step_shares(&t, 5);
    ok = expect_true(none.steps == 0 && none.step_ns == 0, "another rank's shares: %lld steps", (long long)none.steps) && ok;
    trace_file_free(&t);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core: trace_load, trace_shares");
    check_run(NULL, "one rank's file read back to the ns: events, bytes, escapes, otherData", check_load, 10);
    check_run(NULL, "merged, foreign, broken files refused, saying why and where", check_refused, 10);
    check_run(NULL, "shares and the communication split of a made-up trace = by hand", check_shares, 10);
    return check_end();
}
