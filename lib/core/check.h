/* Errors, in two kinds.
 *
 *   fatal(...)        the user's input is wrong (missing file, bad flag): one clear
 *                     message that says what and how to fix it, then exit status 1.
 *   CHECK(cond, ...)  the program is wrong (shape mismatch, bad index): the message
 *                     names the source file and line, then exit status 2.
 *
 * Neither returns, so callers never continue with garbage. */
#ifndef CORE_CHECK_H
#define CORE_CHECK_H

#include <stddef.h>

#define EXIT_USER_ERROR 1
#define EXIT_BUG 2

_Noreturn void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) die_at(__FILE__, __LINE__, __VA_ARGS__);                \
    } while (0)

/* Allocation that never returns NULL: running out of memory is reported, not
 * dereferenced. Memory is zeroed and 64-byte aligned (one cache line, AVX-512). */
void *xcalloc(size_t count, size_t size);
void *xmalloc(size_t size);
void xfree(void *p);
char *xstrdup(const char *s);

#endif
