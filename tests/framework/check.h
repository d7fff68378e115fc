/* The small check framework used by the unit tests and the lesson graders.
 *
 * Each check is a function returning CHECK_PASS, CHECK_FAIL or CHECK_SKIP. It runs
 * in a child process of its own, with a time limit, so participant code that
 * crashes, exits or loops forever fails that one check and the others still run.
 * What the check prints is shown under its line (indented) when it does not pass.
 *
 *   int main(void) {
 *       check_begin("lesson 01");
 *       check_run("TODO 1.1", "conv2d forward matches the reference", check_conv, 20);
 *       return check_end();           // prints "N passed, M failed[, K skipped]"
 *   }
 */
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CHECK_ASAN: 1 in a build with AddressSanitizer (GCC says so with __SANITIZE_ADDRESS__,
 * clang through __has_feature), else 0. */
#if defined(__SANITIZE_ADDRESS__)
#define CHECK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHECK_ASAN 1
#endif
#endif
#ifndef CHECK_ASAN
#define CHECK_ASAN 0
#endif

enum { CHECK_PASS = 0, CHECK_FAIL = 1, CHECK_SKIP = 77 };

typedef int (*CheckFn)(void);

void check_begin(const char *suite);
/* tag: "TODO 1.1" for a lesson check, NULL for a library unit test. With CHECK_ONLY set
 * ("word,word"), only the checks whose name contains one of the words run and count. */
void check_run(const char *tag, const char *name, CheckFn fn, int timeout_seconds);
int check_end(void);

/* The TODOs a check runs are its tag's ("TODO 4.7": 4.7; "TODO 4.2-4.6": 4.2 to 4.6)
 * and those check_needs adds to every check of that tag:
 *   check_needs("TODO 4.7", "4.2-4.6");   // before the check_run calls
 * A check that would run a TODO that hung or crashed in an earlier check is skipped
 * ("skipped: TODO 4.6 hung above"), so that one endless loop costs one time limit, not
 * one per check. A check that would run a TODO (not its own) whose check failed above
 * is not run: it fails at once and says "fix TODO X first", naming that TODO. */
void check_needs(const char *tag, const char *todos);
/* Inside a check: the code under test hung, or crashed, in something the check ran (a
 * command, ranks, a child): when the check fails it counts as hung or crashed.
 * run_command, expect_exit and with_tmpdir say so themselves where they see it. */
void check_note_hung(void);
void check_note_crashed(void);
/* Words of this lesson added to what a signal usually means in a crash's hint, e.g.
 * check_signal_hint(SIGSEGV, "an optional gradient like din used without a check"). */
void check_signal_hint(int sig, const char *words);
/* "SIGSEGV" and what it usually means (with the lesson's words). */
const char *check_signal_name(int sig);
const char *check_signal_cause(int sig);

/* Comparison helpers for use inside a check: on a mismatch they print where and by
 * how much (first bad index, both values, the tolerance) and return false. A value
 * passes when |got - want| <= atol + rtol * |want|; NaN never passes. */
bool expect_close(const char *what, const float *got, const float *want, int64_t n,
                  float atol, float rtol);
bool expect_true(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Inside a check: one line (printf-style, no newline needed) shown under the check's
 * line even when it passes, for the numbers a reader should see (what a check prints
 * otherwise is shown only when it does not pass). */
void check_show(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A float32 sum against its value in double: got[i] passes within
 * roundings * FLT_EPSILON * mag[i], mag[i] the sum of its terms' magnitudes. The
 * caller says how many roundings its sums may carry (terms + 2 for any order at
 * worst; fewer where that would hide a missing term). */
bool expect_sums_close(const char *what, const float *got, const double *want, const double *mag,
                       int64_t n, double roundings);

/* Fills x[0..n) with uniform values in [lo, hi) from a fixed seed. */
void fill_uniform(float *x, int64_t n, uint64_t seed, float lo, float hi);

/* Running code that must stop the program (exit with a message) inside a check: it
 * runs in a child process of its own and the check looks at how that ended.
 *
 *   ChildResult r;
 *   run_child(body_view_bad, NULL, &r);
 *   ok = ok && expect_exit("view of 12 elements as 15", &r, 2, "tensor.c", "[3, 4]",
 *                          (const char *)NULL);
 */
typedef struct {
    int status;      /* from waitpid; -1 when no child could be started */
    char out[16384]; /* what the child wrote to the captured streams, in order (the rest
                      * is dropped), NUL-terminated */
} ChildResult;

/* Runs fn(arg) in a child with its stdout and stderr into one pipe and waits for it; the
 * child exits 0 when fn returns. */
void run_child(void (*fn)(void *), void *arg, ChildResult *r);
/* The same, capturing only stderr: stdout stays where it was. */
void run_child_stderr(void (*fn)(void *), void *arg, ChildResult *r);

/* Runs a program (argv[0] looked up in PATH) with stdout and stderr into r->out, for at
 * most timeout_s seconds: then it and its children (its process group) are killed and
 * r->timed_out says so; r->seconds is how long it ran. */
typedef struct {
    int status;        /* from waitpid; -1 when it could not start */
    bool timed_out;
    double seconds;
    char out[65536];   /* stdout and stderr, in order (the rest dropped), NUL-terminated */
} CommandResult;
void run_command(const char *const *argv, double timeout_s, CommandResult *r);
/* "exit status 3", "killed by signal 9 (Killed)", "hung: killed after 30 s" */
const char *describe_end(const CommandResult *r, char *buf, size_t cap);

/* The child must have exited with status `code` (not died of a signal), and its output
 * must contain each of the NULL-terminated strings that follow. On a mismatch it prints
 * what: the problem, then the child's output, and returns false. */
bool expect_exit(const char *what, const ChildResult *r, int code, ...);
/* expect_exit with the strings as a va_list (for helpers that take them on). */
bool expect_exitv(const char *what, const ChildResult *r, int code, va_list words);

/* Temporary directories for checks that write files. */

/* Runs body(dir) in a fresh directory /tmp/<prefix>_XXXXXX and removes it (and all in
 * it) afterwards. body runs in a child of its own, so the directory goes even when the
 * code under test calls exit. Returns body's result (CHECK_FAIL if it crashed). */
int with_tmpdir(const char *prefix, int (*body)(const char *dir));
/* out = dir/name; a path longer than cap is a bug in the test: exits CHECK_FAIL. */
void path_in(char *out, size_t cap, const char *dir, const char *name);
/* mkdir -p of dir/sub (sub relative, with slashes); errors are left to what follows. */
void make_dirs(const char *dir, const char *sub);
/* make_dirs, then out = dir/sub (as path_in). */
void make_dir_in(char *out, size_t cap, const char *dir, const char *sub);

#endif
