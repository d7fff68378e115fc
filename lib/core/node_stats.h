/* What a node is doing, from Linux's /proc: CPU time by kind (/proc/stat), memory
 * (/proc/meminfo) and the load average (/proc/loadavg), node-wide, as top, llview and
 * nvitop show it (not the job's share: that is its cgroup's).
 *
 *   NodeSample a, b;
 *   char why[NODE_STATS_MSG_MAX];
 *   if (!node_stats_read("/proc", &a, why, sizeof why)) ...;
 *   sleep(1);
 *   node_stats_read("/proc", &b, why, sizeof why);
 *   CpuUse u = node_stats_cpu_use(&a.cpu, &b.cpu);   // u.util_pct: busy share of that second
 *
 * The parsers take the files' text, so the tests feed them fixtures (proc(5) documents
 * the formats); node_stats_read takes the directory, "/proc" or a fixture's. */
#ifndef CORE_NODE_STATS_H
#define CORE_NODE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { NODE_STATS_MSG_MAX = 512 };

/* The first line of /proc/stat ("cpu  user nice system idle iowait irq softirq steal
 * guest guest_nice"): every CPU's time together, in clock ticks (USER_HZ, 1/100 s),
 * since boot. user and nice already hold guest and guest_nice, which are left out so
 * that nothing is counted twice. */
typedef struct {
    uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
    int cpus; /* the "cpuN" lines: CPUs online */
} CpuTimes;

/* Shares of the time between two CpuTimes, in percent of all CPUs' time: util_pct is
 * everything but idle and iowait (a CPU waiting for I/O runs nothing); user_pct counts
 * user + nice, system_pct system + irq + softirq. -1 each when no tick passed (or the
 * counters went backwards: not the same boot). */
typedef struct {
    double util_pct, user_pct, system_pct, iowait_pct;
} CpuUse;

/* /proc/meminfo's, in bytes. used = total - available (free(1)'s "used" since
 * procps 4: what cannot be had back without swapping); where the kernel has no
 * MemAvailable (before Linux 3.14), available = MemFree + Buffers + Cached. */
typedef struct {
    int64_t total_bytes, available_bytes, used_bytes;
} MemInfo;

typedef struct {
    CpuTimes cpu;
    MemInfo mem;
    double load1, load5, load15; /* runnable (and uninterruptible) tasks, averaged over 1, 5, 15 min */
} NodeSample;

/* Each parser fills *out from the file's text and returns true, or returns false with
 * the reason in msg (what is missing or malformed). */
bool node_stats_parse_stat(const char *text, CpuTimes *out, char *msg, size_t cap);
bool node_stats_parse_meminfo(const char *text, MemInfo *out, char *msg, size_t cap);
bool node_stats_parse_loadavg(const char *text, double load[3], char *msg, size_t cap);

CpuUse node_stats_cpu_use(const CpuTimes *before, const CpuTimes *after);

/* The three files under proc_dir ("/proc"); false with the file and the reason in msg. */
bool node_stats_read(const char *proc_dir, NodeSample *out, char *msg, size_t cap);

#endif
