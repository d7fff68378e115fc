/* Unit tests of lib/core/trace: the file's times to the nanosecond against the events'
 * definition (microseconds since the origin), ranges that do not nest refused by name
 * (on the host's stack and on a stream's track), the cap (events beyond it dropped and
 * counted in the file), names escaped as JSON strings, lanes for what is in flight,
 * memory counters against the tensors allocated, the per-rank file names, and nothing
 * recorded (nor refused) while no trace is open. tests/trace/ checks whole files of
 * real runs against the format's rules (tests/trace/validate.py). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tensor.h"
#include "core/trace.h"
#include "framework/check.h"

/* The whole file (NUL-terminated; NULL when it cannot be read). */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 20];
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static int count(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

static bool has(const char *text, const char *what) {
    return expect_true(text && strstr(text, what), "the trace lacks %s", what);
}

static TraceOptions at_origin(int64_t origin_ns) {
    return (TraceOptions){.rank = 3, .world_size = 4, .origin_ns = origin_ns};
}

/* ---------------------------------------------------------------- times and tracks */

static int body_times(const char *dir) {
    char path[512];
    path_in(path, sizeof path, dir, "t.json");
    const int64_t o = 5000000000; /* the origin: ts 0 */
    TraceOptions opt = at_origin(o);
    trace_open(path, &opt);
    trace_complete(TRACE_TID_STREAM(0), "outer", TRACE_COMPUTE, o + 1234, o + 9999);
    trace_complete(TRACE_TID_STREAM(0), "inner", TRACE_COMPUTE, o + 2000, o + 9999); /* ends with it */
    trace_complete(TRACE_TID_STREAM(0), "next", TRACE_COMPUTE, o + 9999, o + 1000000000); /* starts there */
    trace_complete(TRACE_TID_STREAM(1), "before", TRACE_COMPUTE, o - 1500, o - 1); /* before ts 0 */
    trace_begin("host", TRACE_STEP);
    trace_end("host");
    const int64_t dropped = trace_close();
    const char *t = slurp(path);
    bool ok = expect_true(dropped == 0, "%lld events dropped", (long long)dropped);
    ok = ok && has(t, "\"traceEvents\": [") && has(t, "\"displayTimeUnit\": \"ms\"");
    ok = ok && has(t, "\"name\": \"outer\", \"cat\": \"compute\", \"ph\": \"X\", \"pid\": 3, \"tid\": 1, \"ts\": 1.234, \"dur\": 8.765}");
    ok = ok && has(t, "\"name\": \"inner\", \"cat\": \"compute\", \"ph\": \"X\", \"pid\": 3, \"tid\": 1, \"ts\": 2.000, \"dur\": 7.999}");
    ok = ok && has(t, "\"name\": \"next\", \"cat\": \"compute\", \"ph\": \"X\", \"pid\": 3, \"tid\": 1, \"ts\": 9.999, \"dur\": 999990.001}");
    ok = ok && has(t, "\"tid\": 2, \"ts\": -1.500, \"dur\": 1.499}");
    ok = ok && has(t, "\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 3, \"tid\": 0, \"args\": {\"name\": \"rank 3\"}}");
    ok = ok && has(t, "\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 3, \"tid\": 0, \"args\": {\"name\": \"host\"}}");
    ok = ok && has(t, "\"tid\": 1, \"args\": {\"name\": \"GPU: CUDA stream 0 (compute)\"}}");
    ok = ok && has(t, "\"name\": \"host\", \"cat\": \"step\", \"ph\": \"X\", \"pid\": 3, \"tid\": 0, \"ts\": ");
    ok = ok && has(t, "\"world_size\": 4") && has(t, "\"dropped_events\": 0");
    ok = ok && expect_true(count(t, "\"ph\": \"X\"") == 5, "%d complete events, not 5", count(t, "\"ph\": \"X\""));
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_times(void) { return with_tmpdir("test_trace", body_times); }

/* ---------------------------------------------------------------- nesting refused */

static const char *g_dir;

static void open_in_dir(void) {
    char path[512];
    path_in(path, sizeof path, g_dir, "n.json");
    TraceOptions opt = at_origin(0);
    trace_open(path, &opt);
}

static void body_close_outer(void *arg) {
    (void)arg;
    open_in_dir();
    trace_begin("step", TRACE_STEP);
    trace_begin("layer 0 forward", TRACE_COMPUTE);
    trace_end("step");
}

static void body_close_none(void *arg) {
    (void)arg;
    open_in_dir();
    trace_end("adam step");
}

static void body_left_open(void *arg) {
    (void)arg;
    open_in_dir();
    trace_begin("load batch", TRACE_DATA);
    trace_close();
}

static void body_overlap(void *arg) {
    (void)arg;
    open_in_dir();
    trace_complete(TRACE_TID_STREAM(0), "first", TRACE_COMPUTE, 100, 200);
    trace_complete(TRACE_TID_STREAM(0), "second", TRACE_COMPUTE, 150, 250);
}

static void *begin_elsewhere(void *arg) {
    (void)arg;
    trace_begin("worker", TRACE_COMPUTE);
    return NULL;
}

static void body_other_thread(void *arg) {
    (void)arg;
    open_in_dir();
    pthread_t th;
    pthread_create(&th, NULL, begin_elsewhere, NULL);
    pthread_join(th, NULL);
}

static int body_nesting(const char *dir) {
    g_dir = dir;
    ChildResult r;
    run_child(body_close_outer, NULL, &r);
    bool ok = expect_exit("closing the outer range first", &r, 2, "trace.c",
                          "'step' closed while 'layer 0 forward' is open", (const char *)NULL);
    run_child(body_close_none, NULL, &r);
    ok = expect_exit("closing with none open", &r, 2, "'adam step' closed, but no range is open",
                     (const char *)NULL) && ok;
    run_child(body_left_open, NULL, &r);
    ok = expect_exit("trace_close with a range open", &r, 2, "the range 'load batch' still open",
                     (const char *)NULL) && ok;
    run_child(body_overlap, NULL, &r);
    ok = expect_exit("overlapping events on a stream's track", &r, 2,
                     "'second' on track 1 overlaps 'first'", (const char *)NULL) && ok;
    run_child(body_other_thread, NULL, &r);
    ok = expect_exit("a range from another thread", &r, 2, "another thread", (const char *)NULL) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_nesting(void) { return with_tmpdir("test_trace", body_nesting); }

/* ---------------------------------------------------------------- the cap */

static int body_cap(const char *dir) {
    char path[512];
    path_in(path, sizeof path, dir, "cap.json");
    TraceOptions opt = at_origin(0);
    opt.max_events = 5;
    trace_open(path, &opt);
    trace_begin("outer", TRACE_STEP);       /* kept open across the drops: still nests */
    for (int i = 0; i < 9; i++) {
        trace_begin("inner", TRACE_COMPUTE);
        trace_end("inner");
    }
    trace_end("outer");                     /* the 10th event, and a counter sample: dropped */
    const int64_t dropped = trace_close();
    const char *t = slurp(path);
    bool ok = expect_true(dropped == 6, "trace_close says %lld dropped, not 6 (10 events and a "
                          "counter sample, 5 kept)", (long long)dropped);
    ok = ok && expect_true(count(t, "\"ph\": \"X\"") == 5, "%d events kept, not 5",
                           count(t, "\"ph\": \"X\""));
    ok = ok && has(t, "\"max_events\": 5, \"dropped_events\": 6");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_cap(void) { return with_tmpdir("test_trace", body_cap); }

/* ---------------------------------------------------------------- names as JSON */

static int body_escape(const char *dir) {
    char path[512];
    path_in(path, sizeof path, dir, "esc.json");
    TraceOptions opt = at_origin(0);
    trace_open(path, &opt);
    const char *name = "a \"b\" c\\d\ne\tf\x01g/h \xc3\xa9";
    trace_begin(name, TRACE_OTHER);
    trace_end(name);
    char long_name[100];
    memset(long_name, 'x', 99), long_name[99] = '\0';
    trace_begin(long_name, TRACE_OTHER);    /* cut to TRACE_NAME_MAX - 1, and matched so */
    trace_end(long_name);
    trace_close();
    const char *t = slurp(path);
    bool ok = has(t, "\"name\": \"a \\\"b\\\" c\\\\d\\u000ae\\u0009f\\u0001g/h \xc3\xa9\", \"cat\": \"other\"");
    char cut[80];
    memset(cut, 'x', TRACE_NAME_MAX - 1), cut[TRACE_NAME_MAX - 1] = '\0';
    char want[128];
    snprintf(want, sizeof want, "\"name\": \"%s\", \"cat\"", cut);
    ok = ok && has(t, want);
    for (const unsigned char *p = (const unsigned char *)t; ok && *p; p++)
        ok = expect_true(*p >= 0x20 || *p == '\n', "a raw control character (%d) in the file", *p);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_escape(void) { return with_tmpdir("test_trace", body_escape); }

/* ---------------------------------------------------------------- lanes, counters */

/* The value after "KEY": in the n-th (0-based) "memory" sample. */
static long long sample(const char *t, int n, const char *key) {
    const char *p = t;
    for (int i = 0; i <= n && p; i++) p = strstr(p + 1, "\"name\": \"memory\", \"ph\": \"C\"");
    if (!p || !(p = strstr(p, key))) return -1;
    return atoll(p + strlen(key) + 3); /* past ": " and the closing quote */
}

static int body_lanes_counters(const char *dir) {
    char path[512];
    path_in(path, sizeof path, dir, "lanes.json");
    TraceOptions opt = at_origin(0);
    trace_open(path, &opt);
    const int a = trace_async_begin("all-reduce", TRACE_COMM, 4000);
    const int b = trace_async_begin("all-gather", TRACE_COMM, 8);
    trace_async_end(a);
    const int c = trace_async_begin("reduce-scatter", TRACE_COMM, 16); /* a's lane again */
    trace_async_end(b), trace_async_end(c);
    trace_sample_counters();
    Tensor x = tensor_zeros(2, 10, 100);     /* 4000 bytes more */
    Tensor v = tensor_rows(&x, 3);           /* a view: nothing more */
    (void)v;
    trace_sample_counters();
    tensor_free(&x);
    trace_sample_counters();
    trace_close();
    const char *t = slurp(path);
    bool ok = expect_true(a == 0 && b == 1 && c == 0, "lanes %d, %d, %d: not 0, 1, 0", a, b, c);
    ok = ok && has(t, "\"name\": \"all-reduce\", \"cat\": \"comm\", \"ph\": \"X\", \"pid\": 3, \"tid\": 9, ");
    ok = ok && has(t, "\"name\": \"all-gather\", \"cat\": \"comm\", \"ph\": \"X\", \"pid\": 3, \"tid\": 10, ");
    ok = ok && has(t, "\"name\": \"reduce-scatter\", \"cat\": \"comm\", \"ph\": \"X\", \"pid\": 3, \"tid\": 9, ");
    ok = ok && has(t, "\"args\": {\"bytes\": 4000}");
    ok = ok && has(t, "\"tid\": 10, \"args\": {\"name\": \"communication in flight 1\"}}");
    const char *key = "tensors on the CPU (bytes)";
    const long long s0 = sample(t, 0, key), s1 = sample(t, 1, key), s2 = sample(t, 2, key);
    ok = ok && expect_true(s0 >= 0 && s1 - s0 == 4000 && s2 == s0, "tensor bytes %lld, %lld, %lld: "
                           "not +4000 for a tensor of 1000 floats, then back", s0, s1, s2);
    ok = ok && expect_true(sample(t, 0, "resident (bytes)") > 0, "no resident set in the counters");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_lanes_counters(void) { return with_tmpdir("test_trace", body_lanes_counters); }

/* ---------------------------------------------------------------- off, paths */

static int check_off(void) {
    trace_begin("nothing", TRACE_COMPUTE);
    trace_end("something else"); /* no trace: neither recorded nor refused */
    trace_end("nothing");
    bool ok = expect_true(!trace_is_open() && trace_async_begin("x", TRACE_COMM, 1) == -1,
                          "a trace without trace_open");
    ok = ok && expect_true(trace_close() == 0, "trace_close without a trace");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_unwritable(void *arg) {
    (void)arg;
    TraceOptions opt = at_origin(0);
    trace_open("/nonexistent-dir/run.rank0.json", &opt);
}

static int check_paths(void) {
    static const char *const cases[][2] = {{"run.json", "run.rank12.json"},
                                           {"run", "run.rank12.json"},
                                           {"d.json/run.trace", "d.json/run.trace.rank12.json"},
                                           {".json", ".json.rank12.json"}};
    bool ok = true;
    char out[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ok = expect_true(trace_rank_path(out, sizeof out, cases[i][0], 12) == 0 &&
                         strcmp(out, cases[i][1]) == 0, "%s as rank 12's: %s, not %s", cases[i][0],
                         out, cases[i][1]) && ok;
    ok = expect_true(trace_rank_path(out, 10, "run.json", 1) == -1 && out[0] == '\0',
                     "run.rank1.json in 10 bytes") && ok;
    ChildResult r;
    run_child(body_unwritable, NULL, &r);
    ok = expect_exit("a trace in a missing directory", &r, 1, "cannot write the trace",
                     "/nonexistent-dir/run.rank0.json", (const char *)NULL) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core/trace");
    check_run(NULL, "times in microseconds to the nanosecond, tracks named, events that touch still nest", check_times, 30);
    check_run(NULL, "a range closed out of order, none open, left open, overlapping, from another thread: refused by name", check_nesting, 30);
    check_run(NULL, "the cap: events beyond it dropped, counted in the file, the rest still nesting", check_cap, 30);
    check_run(NULL, "names escaped as JSON strings (quotes, backslashes, control characters), long ones cut", check_escape, 30);
    check_run(NULL, "operations in flight on lanes of their own; memory counters follow the tensors", check_lanes_counters, 30);
    check_run(NULL, "no trace open: nothing recorded, nothing refused", check_off, 30);
    check_run(NULL, "per-rank file names; a file that cannot be written stops at trace_open", check_paths, 30);
    return check_end();
}
