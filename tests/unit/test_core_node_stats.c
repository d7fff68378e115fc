/* Unit tests of lib/core/node_stats: the parsers of /proc/stat, /proc/meminfo and
 * /proc/loadavg on fixture text laid out as proc(5) documents it (a 4-CPU node's lines,
 * a kernel older than 3.14 without MemAvailable, guest time inside user time), the CPU
 * shares between two readings against their definition (busy = all ticks but idle and
 * iowait, over all ticks), malformed files refused with a reason, a fixture directory
 * read as /proc, and this machine's /proc read twice with sane values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/node_stats.h"
#include "framework/check.h"

/* Two readings of a 4-CPU node a second apart (USER_HZ 100: 400 ticks in all). Between
 * them: user +200 (of which guest +20), nice +10, system +40, idle +100, iowait +20,
 * irq +10, softirq +10, steal +10; guest_nice +0. */
static const char STAT_A[] =
    "cpu  1000 50 300 8000 100 20 30 5 100 0\n"
    "cpu0 250 12 75 2000 25 5 7 1 25 0\n"
    "cpu1 250 13 75 2000 25 5 8 1 25 0\n"
    "cpu2 250 12 75 2000 25 5 7 2 25 0\n"
    "cpu3 250 13 75 2000 25 5 8 1 25 0\n"
    "intr 123456 0 9 0 0\n"
    "ctxt 987654\n"
    "btime 1700000000\n"
    "processes 4242\n"
    "procs_running 3\n"
    "procs_blocked 0\n";
static const char STAT_B[] =
    "cpu  1200 60 340 8100 120 30 40 15 120 0\n"
    "cpu0 300 15 85 2025 30 8 10 4 30 0\n"
    "cpu1 300 15 85 2025 30 7 10 4 30 0\n"
    "cpu2 300 15 85 2025 30 8 10 3 30 0\n"
    "cpu3 300 15 85 2025 30 7 10 4 30 0\n"
    "intr 123999 0 9 0 0\n";

static const char MEMINFO[] =
    "MemTotal:       16384000 kB\n"
    "MemFree:         2048000 kB\n"
    "MemAvailable:    8192000 kB\n"
    "Buffers:          512000 kB\n"
    "Cached:          4096000 kB\n"
    "SwapCached:            0 kB\n"
    "HugePages_Total:       0\n";
static const char MEMINFO_OLD[] = /* Linux < 3.14: no MemAvailable */
    "MemTotal:        1000000 kB\n"
    "MemFree:          100000 kB\n"
    "Buffers:           20000 kB\n"
    "Cached:           300000 kB\n";

static bool near(const char *what, double got, double want) {
    return expect_true(got > want - 1e-9 && got < want + 1e-9, "%s: %.12g, not %.12g", what, got, want);
}

static int check_stat(void) {
    CpuTimes t;
    char msg[NODE_STATS_MSG_MAX];
    bool ok = expect_true(node_stats_parse_stat(STAT_A, &t, msg, sizeof msg), "refused: %s", msg);
    /* user 1000 holds guest 100: 900 of its own */
    ok = ok && expect_true(t.user == 900 && t.nice == 50 && t.system == 300 && t.idle == 8000 &&
                               t.iowait == 100 && t.irq == 20 && t.softirq == 30 && t.steal == 5,
                           "cpu line read as user %llu nice %llu system %llu idle %llu iowait %llu "
                           "irq %llu softirq %llu steal %llu", (unsigned long long)t.user,
                           (unsigned long long)t.nice, (unsigned long long)t.system,
                           (unsigned long long)t.idle, (unsigned long long)t.iowait,
                           (unsigned long long)t.irq, (unsigned long long)t.softirq,
                           (unsigned long long)t.steal);
    ok = ok && expect_true(t.cpus == 4, "%d CPUs, not 4", t.cpus);
    /* an old kernel's four numbers: the rest 0 */
    ok = ok && expect_true(node_stats_parse_stat("cpu 1 2 3 4\ncpu0 1 2 3 4\n", &t, msg, sizeof msg) &&
                               t.user == 1 && t.idle == 4 && t.iowait == 0 && t.cpus == 1,
                           "four-number cpu line: %s", msg);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_cpu_use(void) {
    CpuTimes a, b;
    char msg[NODE_STATS_MSG_MAX];
    bool ok = expect_true(node_stats_parse_stat(STAT_A, &a, msg, sizeof msg) &&
                              node_stats_parse_stat(STAT_B, &b, msg, sizeof msg), "refused: %s", msg);
    if (!ok) return CHECK_FAIL;
    /* the deltas without guest: user 180, nice 10, system 40, idle 100, iowait 20, irq 10,
     * softirq 10, steal 10: 380 ticks; busy = 380 - 100 - 20 = 260 */
    const double total = 180 + 10 + 40 + 100 + 20 + 10 + 10 + 10;
    const CpuUse u = node_stats_cpu_use(&a, &b);
    ok = near("util_pct", u.util_pct, 100.0 * (total - 120) / total);
    ok = near("user_pct", u.user_pct, 100.0 * 190 / total) && ok;
    ok = near("system_pct", u.system_pct, 100.0 * 60 / total) && ok;
    ok = near("iowait_pct", u.iowait_pct, 100.0 * 20 / total) && ok;
    /* the same reading twice, or backwards (another boot): no share */
    const CpuUse same = node_stats_cpu_use(&a, &a), back = node_stats_cpu_use(&b, &a);
    ok = expect_true(same.util_pct == -1 && back.util_pct == -1 && back.user_pct == -1,
                     "no ticks or backwards: %g and %g, not -1", same.util_pct, back.util_pct) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_meminfo(void) {
    MemInfo m;
    char msg[NODE_STATS_MSG_MAX];
    bool ok = expect_true(node_stats_parse_meminfo(MEMINFO, &m, msg, sizeof msg), "refused: %s", msg);
    ok = ok && expect_true(m.total_bytes == 16384000LL * 1024 && m.available_bytes == 8192000LL * 1024 &&
                               m.used_bytes == (16384000LL - 8192000LL) * 1024,
                           "total %lld available %lld used %lld bytes", (long long)m.total_bytes,
                           (long long)m.available_bytes, (long long)m.used_bytes);
    /* without MemAvailable: free + buffers + cached stand in */
    ok = ok && expect_true(node_stats_parse_meminfo(MEMINFO_OLD, &m, msg, sizeof msg), "old: %s", msg);
    ok = ok && expect_true(m.available_bytes == 420000LL * 1024 && m.used_bytes == 580000LL * 1024,
                           "old kernel: available %lld, used %lld bytes", (long long)m.available_bytes,
                           (long long)m.used_bytes);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_loadavg(void) {
    double l[3];
    char msg[NODE_STATS_MSG_MAX];
    bool ok = expect_true(node_stats_parse_loadavg("3.25 1.50 0.75 4/567 12345\n", l, msg, sizeof msg),
                          "refused: %s", msg);
    ok = ok && near("load1", l[0], 3.25) && near("load5", l[1], 1.5) && near("load15", l[2], 0.75);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static bool refused(const char *what, bool accepted, const char *msg, const char *words) {
    return expect_true(!accepted && strstr(msg, words) != NULL, "%s: %s, message '%s' (expected '%s')",
                       what, accepted ? "accepted" : "refused", msg, words);
}

static int check_malformed(void) {
    CpuTimes t;
    MemInfo m;
    double l[3];
    char msg[NODE_STATS_MSG_MAX] = "";
    bool ok = refused("no cpu line", node_stats_parse_stat("cpu0 1 2 3 4\nintr 5\n", &t, msg, sizeof msg),
                      msg, "no 'cpu' line");
    ok = refused("three numbers", node_stats_parse_stat("cpu  1 2 3\ncpu0 1 2 3\n", &t, msg, sizeof msg),
                 msg, "fewer than 4") && ok;
    ok = refused("no cpuN", node_stats_parse_stat("cpu  1 2 3 4\n", &t, msg, sizeof msg), msg,
                 "no 'cpuN' lines") && ok;
    ok = refused("empty stat", node_stats_parse_stat("", &t, msg, sizeof msg), msg, "no 'cpu' line") && ok;
    ok = refused("no MemTotal", node_stats_parse_meminfo("MemFree: 1 kB\n", &m, msg, sizeof msg), msg,
                 "no MemTotal") && ok;
    ok = refused("no available", node_stats_parse_meminfo("MemTotal: 100 kB\nMemFree: 1 kB\n", &m, msg,
                                                          sizeof msg), msg, "neither MemAvailable") && ok;
    ok = refused("loadavg", node_stats_parse_loadavg("1.0 x", l, msg, sizeof msg), msg, "three load") && ok;
    ok = refused("loadavg nan", node_stats_parse_loadavg("nan 1.0 inf 1/2 3", l, msg, sizeof msg), msg,
                 "three load") && ok;
    /* kB values whose bytes (x 1024) or whose sum would overflow an int64_t */
    ok = refused("huge MemTotal", node_stats_parse_meminfo("MemTotal: 9223372036854775807 kB\n", &m, msg,
                                                           sizeof msg), msg, "over 2^50 kB") && ok;
    ok = refused("huge MemFree", node_stats_parse_meminfo("MemTotal: 100 kB\nMemFree: 9223372036854775807 kB\n"
                                                          "Buffers: 9223372036854775807 kB\nCached: 1 kB\n",
                                                          &m, msg, sizeof msg), msg, "over 2^50 kB") && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static bool write_file(const char *dir, const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(text, f) >= 0;
    return expect_true(f && fclose(f) == 0 && ok, "cannot write %s", path);
}

/* A directory laid out as /proc: read, and a missing or broken file named. */
static int fixture_dir(const char *dir) {
    bool ok = write_file(dir, "stat", STAT_A) && write_file(dir, "meminfo", MEMINFO);
    NodeSample s;
    char msg[NODE_STATS_MSG_MAX];
    ok = ok && refused("no loadavg", node_stats_read(dir, &s, msg, sizeof msg), msg, "loadavg");
    ok = ok && write_file(dir, "loadavg", "0.50 0.25 0.125 1/2 3\n");
    ok = ok && expect_true(node_stats_read(dir, &s, msg, sizeof msg), "fixture refused: %s", msg);
    ok = ok && expect_true(s.cpu.cpus == 4 && s.cpu.idle == 8000 && s.mem.used_bytes == 8192000LL * 1024 &&
                               s.load1 == 0.5 && s.load15 == 0.125,
                           "fixture read as %d CPUs, idle %llu, used %lld, load %g %g", s.cpu.cpus,
                           (unsigned long long)s.cpu.idle, (long long)s.mem.used_bytes, s.load1, s.load15);
    ok = ok && write_file(dir, "meminfo", "MemFree: 1 kB\n");
    ok = ok && refused("bad meminfo", node_stats_read(dir, &s, msg, sizeof msg), msg, "/meminfo: no MemTotal");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_fixture_dir(void) { return with_tmpdir("node_stats", fixture_dir); }

/* This machine's /proc: the parsers accept the real files, and the values are sane. */
static int check_this_machine(void) {
    NodeSample a, b;
    char msg[NODE_STATS_MSG_MAX];
    bool ok = expect_true(node_stats_read("/proc", &a, msg, sizeof msg), "/proc refused: %s", msg);
    usleep(200000);
    ok = ok && expect_true(node_stats_read("/proc", &b, msg, sizeof msg), "/proc refused: %s", msg);
    if (!ok) return CHECK_FAIL;
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    ok = expect_true(a.cpu.cpus == online, "%d cpuN lines, sysconf says %ld CPUs online", a.cpu.cpus, online);
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    ok = expect_true(a.mem.total_bytes == (int64_t)pages * page, "MemTotal %lld bytes, sysconf %lld",
                     (long long)a.mem.total_bytes, (long long)pages * page) && ok;
    ok = expect_true(a.mem.used_bytes > 0 && a.mem.used_bytes < a.mem.total_bytes, "used %lld of %lld",
                     (long long)a.mem.used_bytes, (long long)a.mem.total_bytes) && ok;
    const CpuUse u = node_stats_cpu_use(&a.cpu, &b.cpu);
    ok = expect_true(u.util_pct >= 0 && u.util_pct <= 100 && u.user_pct >= 0 && u.user_pct <= u.util_pct + 1e-9,
                     "0.2 s of this machine: util %g%%, user %g%%", u.util_pct, u.user_pct) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core/node_stats");
    check_run(NULL, "/proc/stat: the all-CPU line without guest time, the CPUs counted", check_stat, 10);
    check_run(NULL, "CPU shares between two readings: busy = all but idle and iowait", check_cpu_use, 10);
    check_run(NULL, "/proc/meminfo: used = total - available; old kernels without MemAvailable", check_meminfo, 10);
    check_run(NULL, "/proc/loadavg: the three averages", check_loadavg, 10);
    check_run(NULL, "malformed files refused with the reason", check_malformed, 10);
    check_run(NULL, "a fixture directory read as /proc; a missing or broken file named", check_fixture_dir, 10);
    check_run(NULL, "this machine's /proc: CPUs, memory and a share in range", check_this_machine, 10);
    return check_end();
}
