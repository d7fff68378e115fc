/* Unit tests of lib/core/gpu_counters (NVML loaded at run time) and of the trace's "gpu"
 * counters (core/trace.h), against a stand-in NVML whose answers are scripted
 * (tests/trace/fake_nvml.c, built beside this test as fake-nvml/libnvidia-ml.so.1; its
 * header says what it answers, and the values expected here follow from that script):
 * every counter of the GPU named by its PCI bus id, a bus id NVML does not know (the
 * index instead, with a note, or a refusal), queries a GPU does not support, NVML absent,
 * not NVML, or failing to start (a reason, never a crash, NVML shut down again), and in
 * a trace: the stand-in's values at steps' ends, at most one sample per 100 ms, and a
 * trace that goes on without them, saying why in one line, when NVML fails.
 *
 * A trace loads "libnvidia-ml.so.1" by name. The trace checks load the stand-in by its
 * path first: the dynamic loader then answers that name with the library already loaded
 * whose soname it is (the stand-in's), before it searches any directory. */
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/gpu_counters.h"
#include "core/trace.h"
#include "framework/check.h"

#define GIB (1LL << 30)
enum { MAX_SAMPLES = 16, MAX_STEPS = 16 };

static char g_fake[1024]; /* the stand-in's path */
static void *g_held;      /* the stand-in, loaded by its path: its counts can be read */

/* The stand-in's path, beside this test's binary, and the stand-in loaded (and kept);
 * false (said why) when it is not built. */
static bool find_fake(void) {
    char exe[900];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return expect_true(false, "cannot read /proc/self/exe");
    exe[n] = '\0';
    snprintf(g_fake, sizeof g_fake, "%s/fake-nvml/libnvidia-ml.so.1", dirname(exe));
    if (!expect_true(access(g_fake, R_OK) == 0, "the stand-in NVML %s is not built (make it: "
                     "make %s)", g_fake, g_fake))
        return false;
    g_held = dlopen(g_fake, RTLD_NOW);
    return expect_true(g_held != NULL, "cannot load %s: %s", g_fake, dlerror());
}

/* fake_nvml_calls(name) of the stand-in; -1 when unknown. */
static int fake_calls(const char *name) {
    int (*calls)(const char *) = (int (*)(const char *))dlsym(g_held, "fake_nvml_calls");
    return calls ? calls(name) : -1;
}

static bool has(const char *text, const char *what) {
    return expect_true(strstr(text, what) != NULL, "'%s' lacks '%s'", text, what);
}

/* The stand-in's n-th answers (from 1) for its GPU 0, by its script. */
static GpuSample scripted(int n) {
    return (GpuSample){.utilisation_pct = 10 * n, .memory_activity_pct = n, .memory_used_bytes = n * GIB,
                       .memory_total_bytes = 80 * GIB, .sm_clock_mhz = 1000 + 10 * n,
                       .power_mw = 100000 + n, .temperature_c = 40 + n};
}

static bool same_sample(const char *what, const GpuSample *got, const GpuSample *want) {
    const int64_t *g = &got->utilisation_pct, *w = &want->utilisation_pct;
    static const char *const names[] = {"utilisation_pct", "memory_activity_pct", "memory_used_bytes",
                                        "memory_total_bytes", "sm_clock_mhz", "power_mw", "temperature_c"};
    for (int k = 0; k < 7; k++)
        if (!expect_true(g[k] == w[k], "%s: %s %lld, not %lld", what, names[k], (long long)g[k],
                         (long long)w[k]))
            return false;
    return true;
}

/* ---------------------------------------------------------------- the module */

static int check_absent(void) {
    char msg[GPU_COUNTERS_MSG_MAX];
    GpuCounters *g = gpu_counters_open("/nonexistent/libnvidia-ml.so.1", "0000:3B:00.0", 0, msg, sizeof msg);
    bool ok = expect_true(g == NULL, "NVML opened from a file that is not there");
    ok = ok && has(msg, "NVML (/nonexistent/libnvidia-ml.so.1, from the NVIDIA driver) cannot be loaded: ");
    /* a library that is not NVML: the C library's maths */
    g = gpu_counters_open("libm.so.6", "0000:3B:00.0", 0, msg, sizeof msg);
    ok = ok && expect_true(g == NULL, "libm.so.6 taken for NVML");
    ok = ok && has(msg, "libm.so.6 has no nvmlInit_v2");
    gpu_counters_close(NULL); /* allowed */
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_by_bus_id(void) {
    if (!find_fake()) return CHECK_FAIL;
    char msg[GPU_COUNTERS_MSG_MAX];
    GpuCounters *g = gpu_counters_open(g_fake, "0000:3b:00.0", -1, msg, sizeof msg);
    bool ok = expect_true(g != NULL, "NVML did not open: %s", msg);
    ok = ok && expect_true(msg[0] == '\0', "a note where the bus id was found: %s", msg);
    for (int n = 1; n <= 3 && ok; n++) {
        GpuSample s, want = scripted(n);
        char what[32];
        snprintf(what, sizeof what, "reading %d", n);
        ok = expect_true(gpu_counters_read(g, &s), "%s: nothing read", what) && same_sample(what, &s, &want);
    }
    /* the timing: one reading, every query once (the stand-in answers in nanoseconds:
     * what NVML's own queries cost on a GPU is not measured here) */
    enum { READS = 20000 };
    GpuSample s;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < READS; i++) gpu_counters_read(g, &s);
    clock_gettime(CLOCK_MONOTONIC, &b);
    const double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / READS / 1e3;
    check_show("one reading of the 7 counters from the stand-in: %.3f us", us);
    gpu_counters_close(g);
    ok = ok && expect_true(fake_calls("nvmlInit_v2") == 1 && fake_calls("nvmlShutdown") == 1,
                           "nvmlInit_v2 called %d times, nvmlShutdown %d: not once each",
                           fake_calls("nvmlInit_v2"), fake_calls("nvmlShutdown"));
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_other_gpu(void) {
    if (!find_fake()) return CHECK_FAIL;
    char msg[GPU_COUNTERS_MSG_MAX];
    /* GPU 1 by its bus id, though index 0 is offered: the bus id decides */
    GpuCounters *g = gpu_counters_open(g_fake, "0000:86:00.0", 0, msg, sizeof msg);
    bool ok = expect_true(g != NULL, "NVML did not open: %s", msg);
    GpuSample s;
    ok = ok && expect_true(gpu_counters_read(g, &s), "nothing read from GPU 1");
    /* utilisation and power "Not Supported": -1; the rest as scripted */
    const GpuSample want = {.utilisation_pct = -1, .memory_activity_pct = -1, .memory_used_bytes = GIB,
                            .memory_total_bytes = 40 * GIB, .sm_clock_mhz = 1010, .power_mw = -1,
                            .temperature_c = 41};
    ok = ok && same_sample("GPU 1", &s, &want);
    gpu_counters_close(g);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_unknown_bus_id(void) {
    if (!find_fake()) return CHECK_FAIL;
    char msg[GPU_COUNTERS_MSG_MAX];
    GpuCounters *g = gpu_counters_open(g_fake, "0000:99:00.0", 1, msg, sizeof msg);
    bool ok = expect_true(g != NULL, "no fallback to the index: %s", msg);
    ok = ok && has(msg, "NVML finds no GPU at PCI bus id 0000:99:00.0 (Not Found, code 6): NVML's device 1 by index");
    GpuSample s;
    ok = ok && expect_true(gpu_counters_read(g, &s) && s.memory_total_bytes == 40 * GIB,
                           "the fallback read %lld bytes in all, not GPU 1's 40 GiB",
                           (long long)s.memory_total_bytes);
    gpu_counters_close(g);
    g = gpu_counters_open(g_fake, "0000:99:00.0", -1, msg, sizeof msg);
    ok = ok && expect_true(g == NULL, "an unknown bus id and no index accepted");
    ok = ok && has(msg, "NVML finds no GPU at PCI bus id 0000:99:00.0 (Not Found, code 6)");
    g = gpu_counters_open(g_fake, "0000:99:00.0", 7, msg, sizeof msg);
    ok = ok && expect_true(g == NULL, "an unknown bus id and an index beyond the GPUs accepted");
    ok = ok && has(msg, "nor a device 7 (Invalid Argument, code 2)");
    g = gpu_counters_open(g_fake, "", 0, msg, sizeof msg); /* no bus id at all: the index */
    ok = ok && expect_true(g != NULL, "no bus id and index 0 refused: %s", msg);
    ok = ok && has(msg, "no PCI bus id given: NVML's device 0 by index instead");
    gpu_counters_close(g);
    ok = ok && expect_true(fake_calls("nvmlInit_v2") == 4 && fake_calls("nvmlShutdown") == 4,
                           "nvmlInit_v2 called %d times, nvmlShutdown %d: not 4 each (NVML left "
                           "started after a refusal?)", fake_calls("nvmlInit_v2"), fake_calls("nvmlShutdown"));
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_init_fails(void) {
    if (!find_fake()) return CHECK_FAIL;
    setenv("FAKE_NVML_INIT", "fail", 1);
    char msg[GPU_COUNTERS_MSG_MAX];
    GpuCounters *g = gpu_counters_open(g_fake, "0000:3B:00.0", 0, msg, sizeof msg);
    bool ok = expect_true(g == NULL, "NVML opened though nvmlInit_v2 failed");
    ok = ok && has(msg, "NVML did not start: nvmlInit_v2 failed (Driver Not Loaded, code 9)");
    ok = ok && expect_true(fake_calls("nvmlShutdown") == 0, "nvmlShutdown after a failed nvmlInit_v2");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* gpu_counters_count: the stand-in's 2 GPUs, NVML shut down again; absent or failing
 * NVML: -1 and the reason. Then both GPUs open at once (a node monitor's way): NVML
 * counts its starts, so closing one leaves the other readable. */
static int check_count(void) {
    if (!find_fake()) return CHECK_FAIL;
    char msg[GPU_COUNTERS_MSG_MAX] = "x";
    const int n = gpu_counters_count(g_fake, msg, sizeof msg);
    bool ok = expect_true(n == 2 && msg[0] == '\0', "%d GPUs counted (the stand-in has 2), msg '%s'", n, msg);
    ok = ok && expect_true(fake_calls("nvmlInit_v2") == 1 && fake_calls("nvmlShutdown") == 1,
                           "counting: nvmlInit_v2 called %d times, nvmlShutdown %d: not once each",
                           fake_calls("nvmlInit_v2"), fake_calls("nvmlShutdown"));
    ok = ok && expect_true(gpu_counters_count("/nonexistent/libnvidia-ml.so.1", msg, sizeof msg) == -1,
                           "a count from a library that is not there");
    ok = ok && has(msg, "cannot be loaded");
    GpuCounters *g0 = gpu_counters_open(g_fake, NULL, 0, msg, sizeof msg);
    GpuCounters *g1 = gpu_counters_open(g_fake, NULL, 1, msg, sizeof msg);
    ok = ok && expect_true(g0 && g1, "GPUs 0 and 1 by index: %s", msg);
    if (!ok) return CHECK_FAIL;
    GpuSample s0, s1;
    ok = expect_true(gpu_counters_read(g0, &s0) && gpu_counters_read(g1, &s1), "nothing read");
    /* the memory query's answers are counted over both GPUs: 1 GiB, then 2 GiB */
    ok = ok && expect_true(s0.utilisation_pct == 10 && s0.memory_used_bytes == GIB &&
                               s1.utilisation_pct == -1 && s1.memory_used_bytes == 2 * GIB,
                           "GPU 0: %lld %%, %lld bytes; GPU 1: %lld %%, %lld bytes",
                           (long long)s0.utilisation_pct, (long long)s0.memory_used_bytes,
                           (long long)s1.utilisation_pct, (long long)s1.memory_used_bytes);
    gpu_counters_close(g0);
    ok = ok && expect_true(gpu_counters_read(g1, &s1) && s1.memory_used_bytes == 3 * GIB,
                           "GPU 1 after GPU 0 was closed: %lld bytes, not the third answer (3 GiB)",
                           (long long)s1.memory_used_bytes);
    gpu_counters_close(g1);
    setenv("FAKE_NVML_INIT", "fail", 1);
    ok = ok && expect_true(gpu_counters_count(g_fake, msg, sizeof msg) == -1, "counted though nvmlInit_v2 failed");
    ok = ok && has(msg, "NVML did not start");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- in a trace */

/* "123.456" (microseconds, three decimals, as the trace writes them) in nanoseconds. */
static long long ns_of(const char *p) {
    long long us = 0, frac = 0;
    if (sscanf(p, "%lld.%3lld", &us, &frac) != 2) return -1;
    return us * 1000 + frac;
}

/* The value after "KEY": in text (up to the end of its line); -1 when not there. */
static long long value_of(const char *text, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *end = strchr(text, '\n'), *p = strstr(text, pat);
    return p && (!end || p < end) ? atoll(p + strlen(pat)) : -1;
}

typedef struct {
    long long start_ns, end_ns;
} Span;

/* The steps' spans and the "gpu" samples (their ts, and each's line) of a trace file. */
static bool read_trace(const char *path, Span *steps, int *nsteps, long long *gpu_ns,
                       const char **gpu_line, int *ngpu) {
    static char text[1 << 20];
    FILE *f = fopen(path, "r");
    const size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    *nsteps = *ngpu = 0;
    const char *step = "{\"name\": \"step\", \"cat\": \"step\", \"ph\": \"X\", \"pid\": 3, \"tid\": 0, \"ts\": ";
    const char *gpu = "{\"name\": \"gpu\", \"ph\": \"C\", \"pid\": 3, \"tid\": 0, \"ts\": ";
    for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, step, strlen(step)) == 0 && *nsteps < MAX_STEPS) {
            const char *p = line + strlen(step), *d = strstr(p, "\"dur\": ");
            if (!d) return false;
            steps[*nsteps].start_ns = ns_of(p);
            steps[*nsteps].end_ns = steps[*nsteps].start_ns + ns_of(d + 7);
            (*nsteps)++;
        } else if (strncmp(line, gpu, strlen(gpu)) == 0 && *ngpu < MAX_SAMPLES) {
            gpu_ns[*ngpu] = ns_of(line + strlen(gpu));
            gpu_line[(*ngpu)++] = line;
        }
    }
    return n > 0;
}

static void step(void) {
    trace_begin("step", TRACE_STEP);
    trace_end("step");
}

static void pause_ms(int ms) {
    struct timespec t = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000};
    nanosleep(&t, NULL);
}

static int body_trace(const char *dir) {
    if (!find_fake()) return CHECK_FAIL; /* loaded: the trace's "libnvidia-ml.so.1" */
    char path[512];
    path_in(path, sizeof path, dir, "gpu.json");
    trace_open(path, &(TraceOptions){.rank = 3, .world_size = 4});
    trace_gpu_counters_start("0000:3B:00.0", -1);
    trace_gpu_counters_start("0000:86:00.0", -1); /* started already: no second NVML */
    /* bursts of steps 120 ms apart: at most one sample per burst is expected, and the
     * expectation below is computed from the steps' own times in the file */
    for (int burst = 0; burst < 3; burst++) {
        for (int i = 0; i < 4; i++) step();
        pause_ms(120);
    }
    step();
    trace_close();
    Span steps[MAX_STEPS];
    long long gpu_ns[MAX_SAMPLES];
    const char *line[MAX_SAMPLES];
    int nsteps, ngpu;
    const bool read = read_trace(path, steps, &nsteps, gpu_ns, line, &ngpu);
    bool ok = expect_true(read && nsteps == 13, "%d steps in the trace, not 13", nsteps);
    /* the rule: a step's end takes a sample when none was taken yet or the last one is
     * 100 ms old or more; the sample's ts is then after that end and before the next step */
    int want = 0;
    long long last = -1;
    for (int i = 0; i < nsteps && ok; i++) {
        if (last >= 0 && steps[i].end_ns - last < 100000000) continue;
        ok = expect_true(want < ngpu, "no gpu sample after step %d (ending at %lld ns; the last "
                         "at %lld ns)", i, steps[i].end_ns, last);
        if (!ok) break;
        const long long next = i + 1 < nsteps ? steps[i + 1].start_ns : gpu_ns[want] + 1;
        ok = expect_true(gpu_ns[want] >= steps[i].end_ns && gpu_ns[want] < next, "gpu sample %d at "
                         "%lld ns, not between step %d's end (%lld) and the next step (%lld)", want,
                         gpu_ns[want], i, steps[i].end_ns, next);
        last = gpu_ns[want++];
    }
    ok = ok && expect_true(ngpu == want && want >= 4, "%d gpu samples, %d expected (at least 4: the "
                           "first step's, and one after each pause of 120 ms)", ngpu, want);
    for (int k = 0; k < ngpu && ok; k++) {
        const GpuSample s = scripted(k + 1); /* one reading per sample, in order */
        ok = expect_true(value_of(line[k], "utilisation_pct") == s.utilisation_pct &&
                         value_of(line[k], "memory_activity_pct") == s.memory_activity_pct &&
                         value_of(line[k], "memory_used_bytes") == s.memory_used_bytes &&
                         value_of(line[k], "memory_total_bytes") == s.memory_total_bytes &&
                         value_of(line[k], "sm_clock_mhz") == s.sm_clock_mhz &&
                         value_of(line[k], "power_mw") == s.power_mw &&
                         value_of(line[k], "temperature_c") == s.temperature_c,
                         "gpu sample %d is not the stand-in's answer %d (utilisation %lld %%, "
                         "used %lld B, ...): %.200s", k, k + 1, (long long)s.utilisation_pct,
                         (long long)s.memory_used_bytes, line[k]);
    }
    ok = ok && expect_true(fake_calls("nvmlInit_v2") == 1 && fake_calls("nvmlShutdown") == 1,
                           "nvmlInit_v2 called %d times, nvmlShutdown %d: not once each (at "
                           "trace_close)", fake_calls("nvmlInit_v2"), fake_calls("nvmlShutdown"));
    if (ok) check_show("%d steps, %d gpu samples, at the steps the 100 ms rule picks", nsteps, ngpu);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_trace(void) { return with_tmpdir("test_gpu_counters", body_trace); }

/* The ts of the n-th (from 0) counter `name` in text, in ns; -1 when there is none. */
static long long counter_ns(const char *text, const char *name, int n) {
    char pat[96];
    snprintf(pat, sizeof pat, "{\"name\": \"%s\", \"ph\": \"C\", \"pid\": 3, \"tid\": 0, \"ts\": ", name);
    const char *p = text;
    for (int i = 0; i <= n && p; i++) p = strstr(i ? p + 1 : p, pat);
    return p ? ns_of(p + strlen(pat)) : -1;
}

/* trace_sample_counters (a loop without steps calls it): the memory every time, the GPU's
 * at most every 100 ms. */
static int body_explicit(const char *dir) {
    if (!find_fake()) return CHECK_FAIL;
    char path[512];
    path_in(path, sizeof path, dir, "explicit.json");
    trace_open(path, &(TraceOptions){.rank = 3, .world_size = 4});
    trace_gpu_counters_start("0000:3B:00.0", -1);
    trace_sample_counters();
    trace_sample_counters();
    pause_ms(120);
    trace_sample_counters();
    step(); /* a trace needs a range */
    trace_close();
    static char text[1 << 16];
    FILE *f = fopen(path, "r");
    const size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    const long long m1 = counter_ns(text, "memory", 1), g0 = counter_ns(text, "gpu", 0);
    const bool second = m1 - g0 >= 100000000; /* the second call came 100 ms late: rare */
    const int want = second ? 3 : 2;
    bool ok = expect_true(counter_ns(text, "memory", 2) >= 0 && counter_ns(text, "memory", 3) < 0,
                          "not 3 memory samples for 3 calls");
    ok = ok && expect_true(counter_ns(text, "gpu", want - 1) >= 0 && counter_ns(text, "gpu", want) < 0,
                           "not %d gpu samples for 3 calls, the second %.3f ms after the first",
                           want, (double)(m1 - g0) / 1e6);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_explicit(void) { return with_tmpdir("test_gpu_counters", body_explicit); }

static const char *g_path;

static void trace_with_failing_nvml(void *arg) {
    (void)arg;
    setenv("FAKE_NVML_INIT", "fail", 1);
    trace_open(g_path, &(TraceOptions){.rank = 3, .world_size = 4});
    trace_gpu_counters_start("0000:3B:00.0", 0);
    step();
    trace_close();
}

/* A trace that ran without GPU counters: the program said one line, and the file holds
 * its one step and no gpu sample. */
static bool note_only(const ChildResult *r, const char *path) {
    const char *nl = strchr(r->out, '\n');
    bool ok = expect_true(nl && nl[1] == '\0', "more than the one line of the note: %s", r->out);
    Span steps[MAX_STEPS];
    long long gpu_ns[MAX_SAMPLES];
    const char *line[MAX_SAMPLES];
    int nsteps, ngpu;
    const bool read = read_trace(path, steps, &nsteps, gpu_ns, line, &ngpu);
    return expect_true(read && nsteps == 1 && ngpu == 0, "%d steps and %d gpu samples, not 1 "
                       "and 0", nsteps, ngpu) && ok;
}

static int body_failing(const char *dir) {
    if (!find_fake()) return CHECK_FAIL;
    char path[512];
    path_in(path, sizeof path, dir, "nogpu.json");
    g_path = path;
    ChildResult r;
    run_child(trace_with_failing_nvml, NULL, &r);
    bool ok = expect_exit("a trace whose NVML fails to start", &r, 0, "note: the trace ", "nogpu.json has "
                          "no GPU counters: NVML did not start: nvmlInit_v2 failed (Driver Not "
                          "Loaded, code 9)\n", (const char *)NULL);
    return ok && note_only(&r, path) ? CHECK_PASS : CHECK_FAIL;
}

static int check_failing(void) { return with_tmpdir("test_gpu_counters", body_failing); }

static void trace_without_nvml(void *arg) {
    (void)arg;
    trace_open(g_path, &(TraceOptions){.rank = 3, .world_size = 4});
    trace_gpu_counters_start("0000:3B:00.0", 0);
    step();
    trace_close();
}

static int body_absent(const char *dir) {
    void *real = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (real) {
        printf("skipped: this machine has an NVML (libnvidia-ml.so.1): not a machine without one\n");
        return CHECK_SKIP;
    }
    char path[512];
    path_in(path, sizeof path, dir, "nonvml.json");
    g_path = path;
    ChildResult r;
    run_child(trace_without_nvml, NULL, &r);
    bool ok = expect_exit("a trace without NVML", &r, 0, "nonvml.json has no GPU counters: NVML "
                          "(libnvidia-ml.so.1, from the NVIDIA driver) cannot be loaded: ", (const char *)NULL);
    return ok && note_only(&r, path) ? CHECK_PASS : CHECK_FAIL;
}

static int check_trace_absent(void) { return with_tmpdir("test_gpu_counters", body_absent); }

int main(void) {
    check_begin("core/gpu_counters");
    check_run(NULL, "NVML absent, or a library that is not NVML: no counters, the reason said", check_absent, 30);
    check_run(NULL, "the GPU at its PCI bus id: every counter as the stand-in answers, reading after reading; NVML shut down", check_by_bus_id, 60);
    check_run(NULL, "the bus id picks the GPU, not the index; queries it does not support read -1", check_other_gpu, 30);
    check_run(NULL, "a bus id NVML does not know: the index instead, with a note; no index or a bad one: refused, naming both", check_unknown_bus_id, 30);
    check_run(NULL, "nvmlInit_v2 failing: refused with NVML's words, no shutdown", check_init_fails, 30);
    check_run(NULL, "gpu_counters_count: NVML's GPUs, NVML shut down again; two GPUs open at once, one closed", check_count, 30);
    check_run(NULL, "a trace's gpu counters: the stand-in's values at steps' ends, at most one per 100 ms", check_trace, 60);
    check_run(NULL, "trace_sample_counters: the memory at every call, the GPU's at most every 100 ms", check_explicit, 30);
    check_run(NULL, "a trace whose NVML fails: one line says why, the trace has no gpu counter", check_failing, 30);
    check_run(NULL, "a trace on a machine without NVML: one line says so, the trace has no gpu counter", check_trace_absent, 30);
    return check_end();
}
