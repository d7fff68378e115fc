#include "check.h"
#include "memory.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Set by dist_init on a job of several ranks: fatal and CHECK say which rank stopped. */
static int g_rank = -1, g_ranks = 0;

void check_set_rank(int rank, int ranks) {
    g_rank = ranks > 1 ? rank : -1;
    g_ranks = ranks;
}

int check_rank(void) { return g_rank; }

/* Ends line (of cap bytes, n used, fmt and ap appended) with " (rank R of W)" on a job of
 * several ranks and a newline, and writes it in one piece: the ranks of a job share
 * stderr, and a line written in pieces can interleave with another rank's. */
static void write_line(char *line, size_t cap, int n, const char *fmt, va_list ap) {
    if (n < 0) n = 0;
    if (n < (int)cap) n += vsnprintf(line + n, cap - (size_t)n, fmt, ap);
    if (g_rank >= 0 && n < (int)cap) n += snprintf(line + n, cap - (size_t)n, " (rank %d of %d)", g_rank, g_ranks);
    if (n > (int)cap - 2) n = (int)cap - 2;
    line[n++] = '\n';
    line[n] = '\0';
    fflush(stdout);
    fputs(line, stderr);
}

int fail_msg(char *msg, size_t cap, const char *fmt, ...) {
    if (msg && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, cap, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char line[2048];
    write_line(line, sizeof line, snprintf(line, sizeof line, "error: "), fmt, ap);
    va_end(ap);
    exit(EXIT_USER_ERROR);
}

void die_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char text[2048];
    write_line(text, sizeof text, snprintf(text, sizeof text, "%s:%d: check failed: ", file, line), fmt, ap);
    va_end(ap);
    exit(EXIT_BUG);
}

void *xmalloc(size_t size) {
    if (size >= MEM_CHECK_FROM) mem_require(size, NULL); /* stop with both numbers, not be killed */
    void *p = NULL;
    size_t rounded = (size + 63) / 64 * 64;
    if (rounded == 0) rounded = 64;
    if (posix_memalign(&p, 64, rounded) != 0)
        fatal("out of memory allocating %zu bytes: use a smaller --batch-size or a node "
              "with more memory", size);
    return p;
}

void *xcalloc(size_t count, size_t size) {
    CHECK(size == 0 || count <= (size_t)-1 / size, "allocation of %zu x %zu bytes overflows",
          count, size);
    void *p = xmalloc(count * size);
    memset(p, 0, count * size);
    return p;
}

void xfree(void *p) { free(p); }

char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}
