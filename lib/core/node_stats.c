/* A node's CPU, memory and load from /proc (core/node_stats.h); formats from proc(5). */
#include "node_stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"

static bool fail(char *msg, size_t cap, const char *what) {
    snprintf(msg, cap, "%s", what);
    return false;
}

/* Skips blanks; parses an unsigned decimal number. false at the end of the line. */
static bool next_u64(const char **p, uint64_t *v) {
    while (**p == ' ' || **p == '\t') (*p)++;
    if (**p < '0' || **p > '9') return false;
    char *end;
    *v = strtoull(*p, &end, 10);
    *p = end;
    return true;
}

bool node_stats_parse_stat(const char *text, CpuTimes *out, char *msg, size_t cap) {
    *out = (CpuTimes){0};
    bool found = false;
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (strncmp(line, "cpu", 3) != 0) continue;
        if (line[3] >= '0' && line[3] <= '9') {
            out->cpus++;
            continue;
        }
        if (line[3] != ' ' || found) continue;
        /* user nice system idle iowait irq softirq steal guest guest_nice: the first four
         * since Linux 2.6, the rest added later (absent ones are 0) */
        uint64_t f[10] = {0};
        const char *p = line + 3;
        int n = 0;
        while (n < 10 && next_u64(&p, &f[n])) n++;
        if (n < 4) return fail(msg, cap, "its 'cpu' line has fewer than 4 numbers (user nice system idle)");
        out->user = f[0] - (f[8] <= f[0] ? f[8] : f[0]); /* guest is inside user already */
        out->nice = f[1] - (f[9] <= f[1] ? f[9] : f[1]); /* guest_nice inside nice */
        out->system = f[2], out->idle = f[3], out->iowait = f[4];
        out->irq = f[5], out->softirq = f[6], out->steal = f[7];
        found = true;
    }
    if (!found) return fail(msg, cap, "no 'cpu' line (all CPUs' times) in it");
    if (out->cpus == 0) return fail(msg, cap, "no 'cpuN' lines (one per CPU) in it");
    return true;
}

static uint64_t ticks_total(const CpuTimes *c) {
    return c->user + c->nice + c->system + c->idle + c->iowait + c->irq + c->softirq + c->steal;
}

CpuUse node_stats_cpu_use(const CpuTimes *before, const CpuTimes *after) {
    const uint64_t t0 = ticks_total(before), t1 = ticks_total(after);
    const uint64_t idle0 = before->idle + before->iowait, idle1 = after->idle + after->iowait;
    if (t1 <= t0 || idle1 < idle0 || after->user + after->nice < before->user + before->nice ||
        after->system + after->irq + after->softirq < before->system + before->irq + before->softirq ||
        after->iowait < before->iowait)
        return (CpuUse){-1, -1, -1, -1};
    const double total = (double)(t1 - t0);
    const double busy = total - (double)(idle1 - idle0);
    return (CpuUse){
        .util_pct = 100.0 * busy / total,
        .user_pct = 100.0 * (double)(after->user + after->nice - before->user - before->nice) / total,
        .system_pct = 100.0 * (double)(after->system + after->irq + after->softirq - before->system -
                                       before->irq - before->softirq) / total,
        .iowait_pct = 100.0 * (double)(after->iowait - before->iowait) / total,
    };
}

/* Values of meminfo at most 2^50 kB (1 EiB): three of them added and made bytes fit an
 * int64_t, whatever a file says. */
#define KIB_MAX ((int64_t)1 << 50)

/* The kB value of "Key:   123 kB" in meminfo's text; -1 when the key is absent, -2 when
 * its value is over KIB_MAX. */
static int64_t meminfo_kib(const char *text, const char *key) {
    const size_t n = strlen(key);
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (strncmp(line, key, n) != 0 || line[n] != ':') continue;
        const char *p = line + n + 1;
        uint64_t v;
        if (!next_u64(&p, &v)) return -1;
        return v > (uint64_t)KIB_MAX ? -2 : (int64_t)v;
    }
    return -1;
}

bool node_stats_parse_meminfo(const char *text, MemInfo *out, char *msg, size_t cap) {
    *out = (MemInfo){0};
    const int64_t total = meminfo_kib(text, "MemTotal");
    if (total == -2) return fail(msg, cap, "a MemTotal over 2^50 kB in it");
    if (total <= 0) return fail(msg, cap, "no MemTotal in it");
    int64_t avail = meminfo_kib(text, "MemAvailable");
    if (avail == -2) avail = total; /* at most total, below */
    if (avail < 0) { /* before Linux 3.14 */
        const int64_t free_ = meminfo_kib(text, "MemFree"), buffers = meminfo_kib(text, "Buffers"),
                      cached = meminfo_kib(text, "Cached");
        if (free_ == -2 || buffers == -2 || cached == -2) return fail(msg, cap, "a value over 2^50 kB in it");
        if (free_ < 0 || buffers < 0 || cached < 0)
            return fail(msg, cap, "neither MemAvailable nor MemFree, Buffers and Cached in it");
        avail = free_ + buffers + cached;
    }
    if (avail > total) avail = total;
    out->total_bytes = total * 1024, out->available_bytes = avail * 1024;
    out->used_bytes = out->total_bytes - out->available_bytes;
    return true;
}

bool node_stats_parse_loadavg(const char *text, double load[3], char *msg, size_t cap) {
    const char *p = text;
    for (int k = 0; k < 3; k++) {
        char *end;
        load[k] = strtod(p, &end);
        if (end == p || !(load[k] >= 0 && load[k] < 1e12)) /* NaN and inf too */
            return fail(msg, cap, "not three load averages at its start");
        p = end;
    }
    return true;
}

/* dir/name's text into buf (NUL-terminated, the start of the file where it is longer:
 * the lines read here come first); false with the reason in msg. /proc's files say
 * size 0, so the file is read to its end, not to its size. */
static bool read_text(const char *dir, const char *name, char *buf, size_t cap_buf, char *msg,
                      size_t cap) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    const int fd = fs_open_regular(path, msg, cap); /* a FIFO planted there would block */
    if (fd < 0) return false;
    size_t got = 0;
    while (got + 1 < cap_buf) {
        const ssize_t n = read(fd, buf + got, cap_buf - 1 - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            snprintf(msg, cap, "cannot read %s: %s", path, strerror(errno));
            close(fd);
            return false;
        }
        if (n == 0) break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return true;
}

bool node_stats_read(const char *proc_dir, NodeSample *out, char *msg, size_t cap) {
    /* /proc/stat: a line per CPU (~100 bytes) before the long interrupt lines; 256 KiB
     * holds the CPU lines of 2,000 CPUs */
    enum { STAT_MAX = 256 << 10 };
    char *buf = malloc(STAT_MAX);
    if (!buf) return fail(msg, cap, "out of memory reading /proc");
    char why[NODE_STATS_MSG_MAX] = "";
    const char *bad = NULL; /* the file whose text did not parse */
    double load[3] = {0};
    *out = (NodeSample){0};
    bool ok = read_text(proc_dir, "stat", buf, STAT_MAX, msg, cap);
    if (ok && !(ok = node_stats_parse_stat(buf, &out->cpu, why, sizeof why))) bad = "stat";
    if (ok) ok = read_text(proc_dir, "meminfo", buf, STAT_MAX, msg, cap);
    if (ok && !(ok = node_stats_parse_meminfo(buf, &out->mem, why, sizeof why))) bad = "meminfo";
    if (ok) ok = read_text(proc_dir, "loadavg", buf, STAT_MAX, msg, cap);
    if (ok && !(ok = node_stats_parse_loadavg(buf, load, why, sizeof why))) bad = "loadavg";
    out->load1 = load[0], out->load5 = load[1], out->load15 = load[2];
    if (bad) snprintf(msg, cap, "%s/%s: %s", proc_dir, bad, why);
    free(buf);
    return ok;
}
