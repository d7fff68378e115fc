/* Unit tests of lib/core/timer: now_seconds() measures a sleep of 20 ms. */
#include <unistd.h>

#include "core/timer.h"
#include "framework/check.h"

static int check_timer(void) {
    double t0 = now_seconds();
    usleep(20000);
    double t1 = now_seconds();
    bool ok = expect_true(t1 - t0 >= 0.019 && t1 - t0 < 1.0, "20 ms measured as %.4f s", t1 - t0);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core: timer");
    check_run(NULL, "timer: a 20 ms sleep measures 20 ms", check_timer, 10);
    return check_end();
}
