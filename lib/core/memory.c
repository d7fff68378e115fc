#include "memory.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* The number in a small file (memory.max: "max" or bytes), or 0 when there is none. */
static uint64_t read_limit_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[64] = "";
    bool got = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    if (!got || !isdigit((unsigned char)buf[0])) return 0; /* "max": no limit */
    return strtoull(buf, NULL, 10);
}

/* The smallest memory limit of the cgroup at `rel` and its parents, under root (v2:
 * memory.max; v1: memory.limit_in_bytes, where "no limit" is a huge number). */
static uint64_t cgroup_limit(const char *root, const char *file, const char *rel) {
    char dir[1024], path[1200];
    if (snprintf(dir, sizeof dir, "%s", rel) >= (int)sizeof dir) return 0;
    uint64_t best = 0;
    for (;;) {
        size_t n = strlen(dir);
        while (n > 0 && dir[n - 1] == '/') dir[--n] = '\0';
        snprintf(path, sizeof path, "%s%s/%s", root, dir, file);
        uint64_t v = read_limit_file(path);
        if (v > 0 && v < ((uint64_t)1 << 62) && (best == 0 || v < best)) best = v;
        char *slash = strrchr(dir, '/');
        if (!slash) break;
        *slash = '\0';
    }
    return best;
}

/* The control group's limit (v2, else v1), or 0. */
static uint64_t cgroup_memory_limit(void) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return 0;
    char line[1200];
    uint64_t limit = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (!b) continue;
        *b = '\0';
        const char *controllers = a + 1, *rel = b + 1;
        uint64_t v = 0;
        if (strncmp(line, "0", 1) == 0 && *controllers == '\0') {
            v = cgroup_limit("/sys/fs/cgroup", "memory.max", rel);
        } else {
            char list[256];
            snprintf(list, sizeof list, ",%s,", controllers);
            if (strstr(list, ",memory,"))
                v = cgroup_limit("/sys/fs/cgroup/memory", "memory.limit_in_bytes", rel);
        }
        if (v > 0 && (limit == 0 || v < limit)) limit = v;
    }
    fclose(f);
    return limit;
}

/* COURSE_MEMORY_LIMIT: bytes, or with a k, M or G suffix (powers of 1024); 0 when unset.
 * A malformed value is a user error naming the variable (as lib/core/envvars.h's). */
static uint64_t env_limit(void) {
    const char *s = getenv("COURSE_MEMORY_LIMIT");
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = *end == 'k' || *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift) end++;
    if (errno || end == s || !isdigit((unsigned char)s[0]) || *end || v == 0 ||
        v > (UINT64_MAX >> shift))
        fatal("COURSE_MEMORY_LIMIT='%s' is not a size: give bytes, or a number with k, M or G "
              "(4G), or unset it", s);
    return (uint64_t)v << shift;
}

uint64_t mem_limit_bytes(char *source, size_t cap) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t limit = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
    const char *what = "this machine's memory";
    uint64_t cg = cgroup_memory_limit();
    if (cg > 0 && cg < limit) limit = cg, what = "the memory limit of this job (its cgroup)";
    uint64_t env = env_limit();
    if (env > 0 && env < limit) limit = env, what = "the memory COURSE_MEMORY_LIMIT allows";
    if (source && cap) snprintf(source, cap, "%s", what);
    return limit;
}

uint64_t mem_resident_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, resident = 0;
    bool ok = f && fscanf(f, "%llu %llu", &size, &resident) == 2;
    if (f) fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return ok && page > 0 ? (uint64_t)resident * (uint64_t)page : 0;
}

const char *mem_format(uint64_t bytes, char *buf, size_t cap) {
    if (bytes < 1000000000ull) snprintf(buf, cap, "%.0f MB", (double)bytes / 1e6);
    else snprintf(buf, cap, "%.1f GB", (double)bytes / 1e9);
    return buf;
}

int mem_check(uint64_t more, const char *what, char *msg, size_t cap) {
    char source[128];
    const uint64_t limit = mem_limit_bytes(source, sizeof source);
    const uint64_t held = mem_resident_bytes();
    const uint64_t need = more > UINT64_MAX - held ? UINT64_MAX : held + more;
    if (need <= limit) return 0;
    char s_more[32], s_held[32], s_need[32], s_limit[32];
    mem_format(more, s_more, sizeof s_more), mem_format(held, s_held, sizeof s_held);
    mem_format(need, s_need, sizeof s_need), mem_format(limit, s_limit, sizeof s_limit);
    return fail_msg(msg, cap, "out of memory (refused before it is taken): %s%s %s; with the %s "
                    "this program holds already that makes %s, more than the %s of %s. Use a "
                    "smaller --batch-size, model or vocabulary, or a node (or --mem) with more memory",
                    what ? what : "allocating", what ? " needs" : "", s_more, s_held, s_need,
                    s_limit, source);
}

void mem_require(uint64_t more, const char *what) {
    char msg[MEM_MSG_MAX + 512];
    if (mem_check(more, what, msg, sizeof msg) != 0) fatal("%s", msg);
}
