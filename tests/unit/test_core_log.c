/* Unit tests of lib/core/log: print0 prints on rank 0 only, progress() prints
 * nothing into a pipe (a batch job's log), and progress_rate's items per second. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "framework/check.h"

static void body_print0(void *arg) {
    log_set_rank(*(int *)arg);
    print0("rank says %d\n", 42);
    progress("a progress line %d", 1); /* stdout is a pipe: prints nothing */
    progress_clear();
}

static int check_log(void) {
    ChildResult o;
    int rank = 0;
    run_child(body_print0, &rank, &o);
    bool ok = expect_exit("print0 on rank 0", &o, 0, "rank says 42", (const char *)NULL);
    ok = ok && expect_true(strstr(o.out, "progress") == NULL && strchr(o.out, '\r') == NULL,
                           "progress() printed into a pipe: \"%s\"", o.out);
    rank = 3;
    run_child(body_print0, &rank, &o);
    ok = ok && expect_exit("print0 on rank 3", &o, 0, (const char *)NULL);
    ok = ok && expect_true(o.out[0] == '\0', "rank 3 printed \"%s\"", o.out);
    log_set_rank(2);
    ok = ok && expect_true(log_rank() == 2, "log_rank() is %d after log_set_rank(2)", log_rank());
    log_set_rank(0);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* 200 items 50 ms after the count's first call: at most 4,000 per second (a sleep only
 * lasts longer), and more than 100 unless the machine stalled for 2 s; the first call
 * of a count gives 0, and a count that does not grow starts again. */
static int check_rate(void) {
    bool ok = expect_true(progress_rate(100) == 0.0, "the first call of a count did not give 0");
    usleep(50000);
    double r = progress_rate(300);
    ok = ok && expect_true(r > 100 && r <= 4000 * 1.001, "200 items in 50 ms: %g per second, "
                           "expected at most 4000 (and more than 100)", r);
    ok = ok && expect_true(progress_rate(300) == 0.0, "the same count again did not start a "
                           "new count");
    ok = ok && expect_true(progress_rate(50) == 0.0, "a smaller count (the next epoch) did not "
                           "start a new count");
    usleep(20000);
    r = progress_rate(150);
    ok = ok && expect_true(r > 50 && r <= 5000 * 1.001, "100 items in 20 ms of the new count: %g "
                           "per second, expected at most 5000", r);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core: log");
    check_run(NULL, "log: print0 on rank 0 only, no progress in a pipe", check_log, 10);
    check_run(NULL, "progress_rate: items per second since a count's first call; a new count restarts", check_rate, 10);
    return check_end();
}
