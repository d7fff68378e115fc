/* node-monitor: what a node is doing while a job runs, once a second, as JSON lines.
 *
 *   node-monitor --out-dir DIR [--interval 1] [--tag JOB] [--duration 0]
 *
 * writes DIR/monitor-TAG-HOST.jsonl, one line per source per interval, each flushed
 * when written (a job killed at its time limit leaves every line but the one being
 * written): the node's CPUs and memory (/proc, core/node_stats.h) and each GPU NVML
 * sees (core/gpu_counters.h; none where there is no NVML, said once on stderr):
 *
 *   {"t": 1.0, "time": "...Z", "host": "n01", "source": "n01 cpu", "util_pct": 93.1,
 *    "user_pct": .., "system_pct": .., "iowait_pct": .., "cpus": 16, "load1": 3.2,
 *    "mem_used_bytes": .., "mem_total_bytes": ..}
 *   {"t": 1.0, "time": "...Z", "host": "n01", "source": "n01 gpu0", "gpu": 0, "util_pct": 97,
 *    "mem_activity_pct": .., "mem_used_bytes": .., "mem_total_bytes": .., "sm_clock_mhz": ..,
 *    "power_w": .., "temperature_c": ..}
 *
 * Flat keys, so that `make plot METRICS=DIR/monitor-*.jsonl` draws utilisation and memory
 * against t, a line per source. A counter NVML does not give (utilisation under MIG,
 * power on some boards) is left out of the line, never written as 0. The CPU figures are
 * the whole node's (every job's and the system's), as top and llview show them.
 * SIGTERM, SIGINT or SIGUSR1 (scancel, Ctrl-C, slurm/lib/job.sh's job_monitor_stop: srun
 * passes SIGUSR1 on to its tasks, while it answers SIGTERM by killing them) ends it
 * between two lines; --duration S ends it after S seconds. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/args.h"
#include "core/check.h"
#include "core/fs.h"
#include "core/gpu_counters.h"
#include "core/metrics.h"
#include "core/node_stats.h"

enum { MAX_GPUS = 64 };

static double seconds(const struct timespec *t) { return (double)t->tv_sec + 1e-9 * (double)t->tv_nsec; }

/* Sleeps until next (CLOCK_MONOTONIC) unless one of the blocked signals in stop comes
 * first, or is already pending: that signal, else 0. The signals stay blocked and are
 * taken here, never by a handler, so one that comes just before the sleep still ends
 * it at once (a flag set by a handler and tested before clock_nanosleep would be missed
 * for a whole interval), and no thread NVML starts can take one. */
static int sleep_until(const struct timespec *next, const sigset_t *stop) {
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double left = seconds(next) - seconds(&now);
        if (left < 0) left = 0;
        const struct timespec wait = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        const int sig = sigtimedwait(stop, NULL, &wait);
        if (sig > 0) return sig;
        if (errno != EAGAIN && errno != EINTR) fatal("node-monitor: sigtimedwait: %s", strerror(errno));
        if (left == 0) return 0;
    }
}

/* Now, as ISO 8601 in UTC with milliseconds: 2026-03-01T12:00:01.250Z */
static void utc_now(char *out, size_t cap) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, cap, "%s.%03ldZ", day, ts.tv_nsec / 1000000);
}

static void line_start(MetricsFile *m, double t, const char *time, const char *host, const char *source) {
    metrics_begin(m);
    metrics_num(m, "t", t);
    metrics_str(m, "time", time);
    metrics_str(m, "host", host);
    metrics_str(m, "source", source);
}

/* An NVML counter, when NVML gave it (>= 0). */
static void gpu_key(MetricsFile *m, const char *key, int64_t v) {
    if (v >= 0) metrics_int(m, key, v);
}

int main(int argc, char **argv) {
    const char *out_dir = NULL, *tag = NULL, *nvml = NULL;
    float interval = 1.0f, duration = 0.0f;
    ArgSpec specs[] = {
        {"out-dir", ARG_STRING, &out_dir, "directory for monitor-TAG-HOST.jsonl (made if missing)", NULL},
        {"interval", ARG_FLOAT, &interval, "seconds between samples (0.1 to 3600)", NULL},
        {"tag", ARG_STRING, &tag, "name in the file's name (default: $SLURM_JOB_ID, else local)", NULL},
        {"duration", ARG_FLOAT, &duration, "stop after this many seconds (0: until a signal)", NULL},
        {"nvml", ARG_STRING, &nvml, "NVML's library (default: libnvidia-ml.so.1, as the loader finds it)", NULL},
    };
    args_parse(argc, argv, specs, ARRAY_LEN(specs),
               "samples this node's CPU, memory and GPUs every --interval seconds into "
               "DIR/monitor-TAG-HOST.jsonl (one JSON line per source) until SIGTERM, SIGINT or SIGUSR1");
    if (!out_dir || !*out_dir) fatal("give --out-dir DIR: where the monitor file goes (see --help)");
    if (!(interval >= 0.1f && interval <= 3600.0f)) fatal("--interval %g: give 0.1 to 3600 seconds", (double)interval);
    if (!(duration >= 0.0f)) fatal("--duration %g: give seconds, 0 or more", (double)duration);
    if (!tag || !*tag) tag = getenv("SLURM_JOB_ID") && *getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "local";
    if (strchr(tag, '/')) fatal("--tag %s: a name for the file, without '/'", tag);

    /* the stop signals blocked before NVML starts any thread (threads inherit the mask);
     * one that comes while starting waits, pending, for the first sleep */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM), sigaddset(&stop, SIGINT), sigaddset(&stop, SIGUSR1);
    CHECK(sigprocmask(SIG_BLOCK, &stop, NULL) == 0, "sigprocmask failed");

    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0]) snprintf(host, sizeof host, "unknown");
    host[strcspn(host, ".")] = '\0'; /* the short name, as Slurm's node names */

    char msg[FS_MSG_MAX], name[512], path[FS_PATH_MAX];
    if (fs_mkdir_p(out_dir, 0755, msg, sizeof msg) != 0) fatal("cannot make --out-dir: %s", msg);
    snprintf(name, sizeof name, "monitor-%s-%s.jsonl", tag, host);
    fs_join_or_die(path, sizeof path, out_dir, name);

    NodeSample before, now;
    if (!node_stats_read("/proc", &before, msg, sizeof msg)) fatal("cannot read this node's counters: %s", msg);

    /* every GPU NVML sees, by NVML's index (node-wide, as nvidia-smi numbers them) */
    GpuCounters *gpus[MAX_GPUS];
    int ngpus = 0;
    const int counted = gpu_counters_count(nvml, msg, sizeof msg);
    if (counted < 0) fprintf(stderr, "node-monitor: no GPU counters: %s\n", msg);
    for (int i = 0; i < counted && ngpus < MAX_GPUS; i++) {
        GpuCounters *g = gpu_counters_open(nvml, NULL, i, msg, sizeof msg);
        if (g) gpus[ngpus++] = g;
        else fprintf(stderr, "node-monitor: GPU %d left out: %s\n", i, msg);
    }

    MetricsFile *m = metrics_open(path);
    fprintf(stderr, "node-monitor: %s, %d CPUs, %d GPU%s, every %g s into %s\n", host, before.cpu.cpus,
            ngpus, ngpus == 1 ? "" : "s", (double)interval, path);

    struct timespec start, next;
    clock_gettime(CLOCK_MONOTONIC, &start);
    next = start;
    long samples = 0;
    int stopped_by = 0; /* the signal that asked to stop, 0: none */
    for (;;) {
        /* the next tick on a fixed grid, so that the lines stay `interval` apart */
        const double at = seconds(&next) + interval;
        next.tv_sec = (time_t)at, next.tv_nsec = (long)((at - (double)(time_t)at) * 1e9);
        if ((stopped_by = sleep_until(&next, &stop)) != 0) break;
        struct timespec tick;
        clock_gettime(CLOCK_MONOTONIC, &tick);
        if (seconds(&tick) > seconds(&next) + interval) next = tick; /* suspended: no catching up */
        const double t = seconds(&tick) - seconds(&start);
        char stamp[48];
        utc_now(stamp, sizeof stamp);

        if (!node_stats_read("/proc", &now, msg, sizeof msg)) fatal("cannot read this node's counters: %s", msg);
        const CpuUse u = node_stats_cpu_use(&before.cpu, &now.cpu);
        char source[300];
        snprintf(source, sizeof source, "%s cpu", host);
        line_start(m, t, stamp, host, source);
        if (u.util_pct >= 0) { /* no tick passed: no share to give */
            metrics_num(m, "util_pct", u.util_pct);
            metrics_num(m, "user_pct", u.user_pct);
            metrics_num(m, "system_pct", u.system_pct);
            metrics_num(m, "iowait_pct", u.iowait_pct);
        }
        metrics_int(m, "cpus", now.cpu.cpus);
        metrics_num(m, "load1", now.load1);
        metrics_int(m, "mem_used_bytes", now.mem.used_bytes);
        metrics_int(m, "mem_total_bytes", now.mem.total_bytes);
        metrics_end(m);
        before = now;

        for (int i = 0; i < ngpus; i++) {
            GpuSample s;
            gpu_counters_read(gpus[i], &s); /* all -1 when NVML said nothing: a line of no values */
            snprintf(source, sizeof source, "%s gpu%d", host, i);
            line_start(m, t, stamp, host, source);
            metrics_int(m, "gpu", i);
            gpu_key(m, "util_pct", s.utilisation_pct);
            gpu_key(m, "mem_activity_pct", s.memory_activity_pct);
            gpu_key(m, "mem_used_bytes", s.memory_used_bytes);
            gpu_key(m, "mem_total_bytes", s.memory_total_bytes);
            gpu_key(m, "sm_clock_mhz", s.sm_clock_mhz);
            if (s.power_mw >= 0) metrics_num(m, "power_w", (double)s.power_mw / 1000.0);
            gpu_key(m, "temperature_c", s.temperature_c);
            metrics_end(m);
        }
        samples++;
        if (duration > 0 && t >= duration - 1e-3) break;
    }
    metrics_close(m);
    for (int i = 0; i < ngpus; i++) gpu_counters_close(gpus[i]);
    const char *why = stopped_by == SIGTERM ? "stopped by SIGTERM" : stopped_by == SIGINT ? "stopped by SIGINT"
                      : stopped_by == SIGUSR1 ? "stopped by SIGUSR1" : "done";
    fprintf(stderr, "node-monitor: %s after %ld sample%s (%s)\n", why, samples, samples == 1 ? "" : "s", path);
    return 0;
}
