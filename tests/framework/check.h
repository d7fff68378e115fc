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

#include <stdbool.h>
#include <stdint.h>

enum { CHECK_PASS = 0, CHECK_FAIL = 1, CHECK_SKIP = 77 };

typedef int (*CheckFn)(void);

void check_begin(const char *suite);
/* tag: "TODO 1.1" for a lesson check, NULL for a library unit test. */
void check_run(const char *tag, const char *name, CheckFn fn, int timeout_seconds);
int check_end(void);

/* Comparison helpers for use inside a check: on a mismatch they print where and by
 * how much (first bad index, both values, the tolerance) and return false. A value
 * passes when |got - want| <= atol + rtol * |want|; NaN never passes. */
bool expect_close(const char *what, const float *got, const float *want, int64_t n,
                  float atol, float rtol);
bool expect_true(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Fills x[0..n) with uniform values in [lo, hi) from a fixed seed. */
void fill_uniform(float *x, int64_t n, uint64_t seed, float lo, float hi);

#endif
