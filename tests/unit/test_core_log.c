/* Unit tests of lib/core/log: print0 prints on rank 0 only, and progress() prints
 * nothing into a pipe (a batch job's log). */
#include <stdio.h>
#include <string.h>

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

int main(void) {
    check_begin("core: log");
    check_run(NULL, "log: print0 on rank 0 only, no progress in a pipe", check_log, 10);
    return check_end();
}
