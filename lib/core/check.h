/* Errors, in two kinds.
 *
 *   fatal(...)        the user's input is wrong (missing file, bad flag): one clear
 *                     message that says what and how to fix it, then exit status 1.
 *   CHECK(cond, ...)  the program is wrong (shape mismatch, bad index): the message
 *                     names the source file and line, then exit status 2.
 *
 * Neither returns, so callers never continue with garbage. On a job of several ranks
 * (check_set_rank, which dist_init calls) both messages end with " (rank R of W)": the
 * world rank that stopped. */
#ifndef CORE_CHECK_H
#define CORE_CHECK_H

#include <stddef.h>

/* Exit statuses, one meaning each (EXIT_TODO is in todo.h). */
#define EXIT_USER_ERROR 1
#define EXIT_BUG 2
/* A program that stopped early to be requeued (EX_TEMPFAIL of sysexits.h: "try again
 * later"); the sbatch scripts map it to `scontrol requeue`. */
#define EXIT_REQUEUE 75

/* __attribute__((noreturn)), not C11's _Noreturn: the CUDA files (C++) include this too. */
__attribute__((noreturn, format(printf, 1, 2))) void fatal(const char *fmt, ...);
__attribute__((noreturn, format(printf, 3, 4))) void die_at(const char *file, int line,
                                                            const char *fmt, ...);

/* This process's rank in a job of `ranks` (one rank: nothing is added); check_rank: the
 * rank set, -1 when none is. */
void check_set_rank(int rank, int ranks);
int check_rank(void);

/* For functions that report an error instead of exiting (readers that threads and fuzz
 * targets call): fills msg, of cap bytes (when not NULL), printf-style and returns -1,
 * so that they
 * can `return fail_msg(msg, cap, "cannot open %s: %s", path, strerror(errno));`. */
__attribute__((format(printf, 3, 4))) int fail_msg(char *msg, size_t cap, const char *fmt, ...);

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
