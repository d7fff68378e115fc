#include "check.h"
#include "memory.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    fflush(stdout);
    /* one write of the whole line: the ranks of a job share stderr, and a line written
     * in pieces can interleave with another rank's ("error: error: ...") */
    char line[2048];
    int n = snprintf(line, sizeof line, "error: ");
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    line[n] = '\0';
    fputs(line, stderr);
    va_end(ap);
    exit(EXIT_USER_ERROR);
}

void die_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fprintf(stderr, "%s:%d: check failed: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
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
