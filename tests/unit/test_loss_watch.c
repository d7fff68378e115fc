/* Unit tests of lib/train/loss_watch: a language model's loss that diverges without a
 * NaN stops the run (issue 30, fault 10), and one that trains does not. Each series
 * of losses is fed to loss_watch_step in a child process; the child's exit status and
 * message say whether and why it stopped. The series are made here from their
 * definition (ln V, the start, ln V / 2 above the larger of the two, a window of
 * LOSS_WATCH_STEPS), not from the code. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/args.h"
#include "framework/check.h"
#include "train/loss_watch.h"

enum { V = 1000 };

/* The child's command line (NULL: none): what the run set, for the message's advice. */
static const char **g_argv;
static int g_classes; /* 0: V words; else a classifier of this many classes */

static void parse_options(void) {
    float lr = 0.5f, weight_decay = 0.01f, clip = 0.5f;
    const ArgSpec specs[] = {{"lr", ARG_FLOAT, &lr, "learning rate", NULL},
                             {"weight-decay", ARG_FLOAT, &weight_decay, "decay", NULL},
                             {"clip", ARG_FLOAT, &clip, "clip", NULL}};
    int argc = 0;
    while (g_argv[argc]) argc++;
    args_parse(argc, (char **)g_argv, specs, ARRAY_LEN(specs), "a test");
}

/* Feeds losses[0..n) (step 1, 2, ...); returns the step it stopped at (0: it did not)
 * and the message in msg. */
static int run_series(const double *losses, int n, char *msg, size_t cap) {
    char path[] = "/tmp/loss_watch_XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return -1;
    fflush(stdout), fflush(stderr);
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, STDERR_FILENO);
        if (g_argv) parse_options();
        LossWatch w;
        if (g_classes) loss_watch_init_classes(&w, g_classes);
        else loss_watch_init(&w, V);
        for (int i = 0; i < n; i++) {
            dprintf(fd, "step %d\n", i + 1);
            loss_watch_step(&w, losses[i], i + 1, 0.5);
        }
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    FILE *f = fdopen(fd, "r");
    rewind(f);
    int stopped_at = 0;
    char line[1024];
    msg[0] = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "step %d", &stopped_at) == 1) continue;
        snprintf(msg, cap, "%s", line);
    }
    fclose(f);
    unlink(path);
    return WIFEXITED(status) && WEXITSTATUS(status) == 1 ? stopped_at : 0;
}

static double ln_v(void) { return log((double)V); }

/* Training: from ln V down to half of it, with noise of +-0.3 and spikes of +1.5 (no window rises). */
static int check_training(void) {
    double l[400];
    for (int i = 0; i < 400; i++)
        l[i] = ln_v() * (1 - 0.5 * i / 400.0) + 0.3 * sin(i * 1.7) + (i % 37 == 0 ? 1.5 : 0);
    char msg[1024];
    const int at = run_series(l, 400, msg, sizeof msg);
    return expect_true(at == 0, "a falling loss was stopped at step %d: %s", at, msg) ? CHECK_PASS : CHECK_FAIL;
}

/* Far above (a start at ln V: the reference is ln V): ln V for 12 steps, then 1.6 ln V.
 * The window ending at step s >= 20 holds s - 12 steps of 1.6 and 32 - s of 1.0: its
 * mean (1.0 + 0.03 (s - 12)) ln V passes 1.5 ln V first at s - 12 > 16.67, step 29.
 * Spikes far above that average below it (1.0 and 1.9 ln V in turn: 1.45) go on; a loss
 * bouncing far above (1.0 and 2.2 in turn: 1.6) stops at the first full window. */
static int check_far_above(void) {
    double l[60];
    char msg[1024];
    for (int i = 0; i < 60; i++) l[i] = (i < 12 ? 1.0 : 1.6) * ln_v();
    int at = run_series(l, 60, msg, sizeof msg);
    bool ok = expect_true(at == 29, "1.6 ln V from step 13: stopped at step %d, expected 29", at) &&
              expect_true(strstr(msg, "far above where it started") && strstr(msg, "--lr 0.5"), "message: %s", msg);
    for (int i = 0; i < 60; i++) l[i] = (i % 2 ? 1.9 : 1.0) * ln_v();
    at = run_series(l, 60, msg, sizeof msg);
    ok = expect_true(at == 0, "1.0 and 1.9 ln V in turn (mean 1.45 ln V) were stopped at step %d: %s", at, msg) && ok;
    for (int i = 0; i < 60; i++) l[i] = (i % 2 ? 2.2 : 1.0) * ln_v();
    at = run_series(l, 60, msg, sizeof msg);
    ok = expect_true(at == LOSS_WATCH_STEPS, "1.0 and 2.2 ln V in turn (mean 1.6 ln V): stopped at step %d, "
                     "expected %d", at, LOSS_WATCH_STEPS) && ok;
    /* a wide model starts above ln V: 1.7 ln V at step 1, falling to ln V by step 40
     * goes on; the same start and then 2.3 ln V (its start + 0.6 ln V) stops at step 10 */
    for (int i = 0; i < 60; i++) l[i] = fmax(1.7 - 0.7 * i / 39.0, 1.0) * ln_v();
    at = run_series(l, 60, msg, sizeof msg);
    ok = expect_true(at == 0, "a start at 1.7 ln V, falling, was stopped at step %d: %s", at, msg) && ok;
    for (int i = 0; i < 60; i++) l[i] = (i ? 2.3 : 1.7) * ln_v();
    at = run_series(l, 60, msg, sizeof msg);
    ok = expect_true(at == LOSS_WATCH_STEPS, "a start at 1.7 ln V, then 2.3 ln V: stopped at step %d, expected %d",
                     at, LOSS_WATCH_STEPS) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Rising, its window's mean below 1.5 ln V: from 0.5 ln V up by 0.03 ln V a step. The
 * window ending at step s >= 20 has the mean (0.5 + 0.03 (s - 10.5)) ln V; the lowest is
 * the first (s = 20); a mean ln V / 2 above it first at 0.03 (s - 20) > 0.5, s > 36.67:
 * step 37 (its mean 1.295 ln V). */
static int check_rising(void) {
    double l[60];
    for (int i = 0; i < 60; i++) l[i] = (0.5 + 0.03 * i) * ln_v();
    char msg[1024];
    const int at = run_series(l, 60, msg, sizeof msg);
    return expect_true(at == 37, "stopped at step %d, expected 37", at) &&
                   expect_true(strstr(msg, "keeps rising") != NULL, "message: %s", msg)
               ? CHECK_PASS : CHECK_FAIL;
}

static int check_not_finite(void) {
    const double l[3] = {ln_v(), NAN, ln_v()};
    char msg[1024];
    const int at = run_series(l, 3, msg, sizeof msg);
    return expect_true(at == 2 && strstr(msg, "step 2 is nan"), "stopped at step %d: %s", at, msg)
               ? CHECK_PASS : CHECK_FAIL;
}

/* The message names what the command line set that can make a run diverge (a weight
 * decay of 1e30 is not the learning rate's fault), and --lr when it set nothing else. */
static int check_advice(void) {
    const double l[3] = {ln_v(), NAN, ln_v()};
    char msg[1024];
    bool ok = true;
    const char *none[] = {"prog", NULL};
    g_argv = none;
    run_series(l, 3, msg, sizeof msg);
    ok = expect_true(strstr(msg, "The learning rate (--lr 0.5) is probably too large") != NULL,
                     "nothing set: %s", msg) && ok;
    const char *decay[] = {"prog", "--weight-decay", "1e30", "--lr", "0.5", NULL}; /* --lr as its default */
    g_argv = decay;
    run_series(l, 3, msg, sizeof msg);
    ok = expect_true(strstr(msg, "This run set --weight-decay 1e+30, which can make a run diverge") &&
                     !strstr(msg, "--lr") && !strstr(msg, "learning rate"), "--weight-decay 1e30: %s", msg) && ok;
    const char *two[] = {"prog", "--lr=2", "--clip", "0", NULL};
    g_argv = two;
    run_series(l, 3, msg, sizeof msg);
    ok = expect_true(strstr(msg, "This run set --clip 0 and --lr 2,") && strstr(msg, "one of them"),
                     "--lr 2 --clip 0: %s", msg) && ok;
    const char *only_lr[] = {"prog", "--lr", "200", NULL};
    g_argv = only_lr;
    run_series(l, 3, msg, sizeof msg);
    ok = expect_true(strstr(msg, "The learning rate (--lr 0.5)") != NULL, "--lr set alone: the rate the "
                     "run used is named as before: %s", msg) && ok;
    g_argv = NULL;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A classifier's watch says classes, not words. */
static int check_classes(void) {
    double l[40];
    for (int i = 0; i < 40; i++) l[i] = i < 5 ? log(10.0) : 100.0;
    char msg[1024];
    g_classes = 10;
    const int at = run_series(l, 40, msg, sizeof msg);
    g_classes = 0;
    return expect_true(at > 0 && strstr(msg, "the V = 10 classes") && !strstr(msg, "words"),
                       "stopped at %d: %s", at, msg) ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("lib/train loss_watch");
    check_run(NULL, "a loss that falls (with noise and spikes) goes on", check_training, 20);
    check_run(NULL, "a loss whose mean over a window is ln V / 2 above its start stops the run; spikes do not", check_far_above, 20);
    check_run(NULL, "a loss that keeps rising (its mean below 1.5 ln V) stops the run", check_rising, 20);
    check_run(NULL, "a loss that is not finite stops the run at its step", check_not_finite, 20);
    check_run(NULL, "the message names the options set that can cause it (--weight-decay), else --lr", check_advice, 20);
    check_run(NULL, "a classifier's watch (V classes) says classes", check_classes, 20);
    return check_end();
}
