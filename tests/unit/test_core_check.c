/* Unit tests of lib/core/check: fatal() (the user's error: exit status 1, "error: "),
 * CHECK (the program's: exit status 2, file and line), both ending with the rank on a
 * job of several ranks, and the allocation helpers (overflow caught, zeroed, 64-byte
 * aligned). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "framework/check.h"

static void body_fatal(void *arg) {
    (void)arg;
    fatal("cannot open '%s': try --data DIR", "x.bin");
}
static void body_check(void *arg) {
    (void)arg;
    int i = 7;
    CHECK(i < 5, "index %d outside 0..4", i);
}
static void body_overflow(void *arg) {
    (void)arg;
    xcalloc((size_t)1 << 62, 16);
}

static int check_errors(void) {
    ChildResult o;
    run_child(body_fatal, NULL, &o);
    bool ok = expect_exit("fatal", &o, 1, "error: cannot open 'x.bin': try --data DIR",
                          (const char *)NULL);
    run_child(body_check, NULL, &o);
    ok = ok && expect_exit("CHECK", &o, 2, "test_core_check.c:", "index 7 outside 0..4",
                           (const char *)NULL);
    run_child(body_overflow, NULL, &o);
    ok = ok && expect_exit("xcalloc overflow", &o, 2, "overflows", (const char *)NULL);
    char *s = xstrdup("conv1.weight");
    ok = ok && expect_true(strcmp(s, "conv1.weight") == 0, "xstrdup");
    xfree(s);
    float *p = xcalloc(1000, sizeof(float));
    for (int i = 0; ok && i < 1000; i++) ok = expect_true(p[i] == 0.0f, "xcalloc not zeroed");
    ok = ok && expect_true(((uintptr_t)p & 63) == 0, "xcalloc not 64-byte aligned");
    xfree(p);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_fatal_on_rank(void *arg) {
    (void)arg;
    check_set_rank(2, 4);
    fatal("--tp 3 does not divide the model's 2 heads");
}
static void body_check_on_rank(void *arg) {
    (void)arg;
    check_set_rank(1, 3);
    CHECK(1 < 0, "block %d of %d", 5, 4);
}
static void body_fatal_one_rank(void *arg) {
    (void)arg;
    check_set_rank(0, 1);
    fatal("no rank to name");
}

/* On a job of several ranks (dist_init calls check_set_rank) both name the world rank
 * that stopped; on one rank nothing is added. */
static int check_rank_suffix(void) {
    ChildResult o;
    run_child(body_fatal_on_rank, NULL, &o);
    bool ok = expect_exit("fatal on rank 2 of 4", &o, 1,
                          "error: --tp 3 does not divide the model's 2 heads (rank 2 of 4)\n", (const char *)NULL);
    run_child(body_check_on_rank, NULL, &o);
    ok = expect_exit("CHECK on rank 1 of 3", &o, 2, "check failed: block 5 of 4 (rank 1 of 3)\n",
                     (const char *)NULL) && ok;
    run_child(body_fatal_one_rank, NULL, &o);
    ok = expect_exit("fatal on a job of one rank", &o, 1, "error: no rank to name\n", (const char *)NULL) && ok;
    ok = expect_true(strstr(o.out, "(rank") == NULL, "one rank: no rank named: %s", o.out) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core: check");
    check_run(NULL, "fatal (status 1), CHECK (status 2), x-allocation", check_errors, 10);
    check_run(NULL, "fatal and CHECK name the rank on a job of several ranks", check_rank_suffix, 10);
    return check_end();
}
