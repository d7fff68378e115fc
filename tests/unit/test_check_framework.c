/* Unit tests of the check framework's bookkeeping per TODO (tests/framework/check.h):
 * a TODO that hung or crashed skips the later checks that run it, a failed one makes a
 * later check that runs it say "fix TODO X first", and a crash names its signal with the
 * lesson's words; check_show's lines are shown under a check that passes. Each runs a
 * small suite of its own in a child and reads its output. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/timer.h"
#include "framework/check.h"

static int passes(void) { return CHECK_PASS; }
static int fails(void) {
    printf("the words of the check\n");
    return CHECK_FAIL;
}
static int loops(void) {
    for (;;) pause(); /* until the framework's time limit kills it */
    return CHECK_PASS;
}
static int aborts(void) { /* SIGABRT: AddressSanitizer turns a SIGSEGV into an exit of its own */
    raise(SIGABRT);
    return CHECK_PASS;
}
static int says_hung(void) { /* as a check whose ranks timed out says it */
    check_note_hung();
    return CHECK_FAIL;
}
static int body_crashed(const char *dir) {
    (void)dir;
    check_note_crashed();
    return CHECK_FAIL;
}
static int crashes_in_tmpdir(void) { return with_tmpdir("check_fw", body_crashed); }

/* Whether the line of check `name` is followed (before the next check's line) by `want`. */
static bool under(const char *out, const char *name, const char *want) {
    const char *at = strstr(out, name);
    if (!at) return expect_true(false, "no line for \"%s\" in:\n%s", name, out);
    const char *next = strstr(at, "\n");
    while (next && next[1] == ' ') next = strstr(next + 1, "\n"); /* the indented lines below it */
    const char *w = strstr(at, want);
    return expect_true(w && (!next || w < next), "\"%s\" not under \"%s\" in:\n%s", want, name, out);
}

static void suite_hang(void *arg) {
    (void)arg;
    check_begin("inner");
    check_needs("TODO 9.3", "9.1");
    check_run("TODO 9.1", "first of 9.1 hangs", loops, 1);
    check_run("TODO 9.1", "second of 9.1", passes, 5);
    check_run("TODO 9.2", "one of 9.2", passes, 5);
    check_run("TODO 9.3", "9.3 needs 9.1", passes, 5);
    check_run("TODO 9.1-9.3", "all of them", passes, 5);
    check_run("TODO 9.10-9.11", "two-digit TODOs", says_hung, 5);
    check_run("TODO 9.11", "one of 9.11", passes, 5);
    check_run(NULL, "untagged", passes, 5);
    check_end();
}

static int check_hang_skips(void) {
    ChildResult r;
    const double t0 = now_seconds();
    run_child(suite_hang, NULL, &r);
    const double seconds = now_seconds() - t0;
    bool ok = under(r.out, "first of 9.1 hangs", "hung: stopped after 1 s") &&
              under(r.out, "second of 9.1", "skipped: TODO 9.1 hung above") &&
              expect_true(strstr(r.out, "PASS  TODO 9.2     one of 9.2") != NULL, "9.2 did not run:\n%s", r.out) &&
              under(r.out, "9.3 needs 9.1", "skipped: TODO 9.1 hung above") &&
              under(r.out, "all of them", "skipped: TODO 9.1 hung above") &&
              under(r.out, "one of 9.11", "skipped: TODO 9.10-9.11 hung above") &&
              expect_true(strstr(r.out, "PASS  untagged") != NULL, "the untagged check did not run:\n%s", r.out) &&
              expect_true(strstr(r.out, "2 passed, 2 failed, 4 skipped") != NULL, "the tally:\n%s", r.out);
    /* the hang cost its own limit (1 s), not one per check that runs it */
    return ok && expect_true(seconds < 4, "the suite took %.1f s", seconds) ? CHECK_PASS : CHECK_FAIL;
}

static void suite_fail_crash(void *arg) {
    (void)arg;
    check_begin("inner");
    check_signal_hint(SIGABRT, "the lesson's own words");
    check_run("TODO 9.1", "9.1 fails", fails, 5);
    check_run("TODO 9.1", "9.1 fails again", fails, 5);
    check_run("TODO 9.1-9.2", "a range fails", fails, 5);
    check_run("TODO 9.1-9.3", "a range that would pass", passes, 5); /* not run: it fails */
    check_run("TODO 9.2", "9.2 fails alone", fails, 5);
    check_run("TODO 9.4", "9.4 crashes", aborts, 5);
    check_run("TODO 9.4", "after 9.4's crash", passes, 5);
    check_run("TODO 9.5", "9.5 crashes in a directory", crashes_in_tmpdir, 5);
    check_run("TODO 9.5", "after 9.5's crash", passes, 5);
    check_end();
}

static int check_fix_first_and_crash(void) {
    ChildResult r;
    run_child(suite_fail_crash, NULL, &r);
    bool ok = under(r.out, "9.1 fails again", "the words of the check") && /* its own TODO: its own words */
              under(r.out, "a range fails", "fix TODO 9.1 first") &&
              under(r.out, "a range that would pass", "not run: fix TODO 9.1 first") &&
              under(r.out, "9.2 fails alone", "the words of the check") &&
              under(r.out, "9.4 crashes", "SIGABRT") && under(r.out, "9.4 crashes", "the lesson's own words") &&
              under(r.out, "after 9.4's crash", "skipped: TODO 9.4 crashed above") &&
              under(r.out, "after 9.5's crash", "skipped: TODO 9.5 crashed above");
    /* the range's own hint is replaced by the TODO that failed first */
    const char *range = strstr(r.out, "a range fails"), *next = range ? strstr(range, "9.2 fails alone") : NULL;
    const char *own = range ? strstr(range, "the words of the check") : NULL;
    ok = ok && expect_true(!own || (next && own > next), "the range's own hint was shown:\n%s", r.out);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void suite_only(void *arg) {
    (void)arg;
    setenv("CHECK_ONLY", "alpha,gamma", 1); /* in the child run_child starts */
    check_begin("inner");
    check_run(NULL, "alpha passes", passes, 5);
    check_run(NULL, "beta fails", fails, 5);
    check_run(NULL, "the gamma one passes", passes, 5);
    check_end();
}

static int check_only(void) {
    ChildResult r;
    run_child(suite_only, NULL, &r);
    bool ok = expect_true(strstr(r.out, "(CHECK_ONLY=alpha,gamma: only") != NULL, "no CHECK_ONLY line:\n%s", r.out) &&
              expect_true(strstr(r.out, "PASS  alpha passes") != NULL, "alpha did not run:\n%s", r.out) &&
              expect_true(strstr(r.out, "PASS  the gamma one passes") != NULL, "gamma did not run:\n%s", r.out) &&
              expect_true(strstr(r.out, "beta") == NULL, "beta ran:\n%s", r.out) &&
              expect_true(strstr(r.out, "\n2 passed, 0 failed\n") != NULL, "the tally:\n%s", r.out);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int passes_showing(void) {
    printf("words only for a failure\n");
    check_show("a number to see: %d", 42);
    return CHECK_PASS;
}
static int fails_showing(void) {
    check_show("shown %s", "too");
    printf("and the failure's words\n");
    return CHECK_FAIL;
}

static void suite_show(void *arg) {
    (void)arg;
    check_begin("inner");
    check_run(NULL, "passes and shows", passes_showing, 5);
    check_run(NULL, "fails and shows", fails_showing, 5);
    check_run(NULL, "last", passes, 5);
    check_end();
}

/* check_show's lines are shown under a check that passes, its other output is not; under
 * a failing one both are, without the mark. */
static int check_show_lines(void) {
    ChildResult r;
    run_child(suite_show, NULL, &r);
    const char *pass = strstr(r.out, "passes and shows"), *fail = strstr(r.out, "fails and shows");
    const char *hidden = strstr(r.out, "words only for a failure");
    bool ok = under(r.out, "passes and shows", "        a number to see: 42\n") &&
              expect_true(!hidden || (fail && hidden > fail), "a passing check's own words were "
                          "shown:\n%s", r.out) &&
              under(r.out, "fails and shows", "        shown too\n") &&
              under(r.out, "fails and shows", "        and the failure's words") &&
              expect_true(pass && !strchr(r.out, '\x01'), "the mark was printed:\n%s", r.out);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("tests: check framework");
    check_run(NULL, "check_show: shown under a passing check, the rest only on failure", check_show_lines, 30);
    check_run(NULL, "a hang skips the later checks of its TODO (and of ranges, needs); costs one limit",
              check_hang_skips, 30);
    check_run(NULL, "fix TODO X first; a crash names its signal and the lesson's words, and skips", check_fix_first_and_crash,
              30);
    check_run(NULL, "CHECK_ONLY=words: only the checks whose name has one of them run and count", check_only, 30);
    return check_end();
}
