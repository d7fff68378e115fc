#include "check.h"

#include <errno.h>
#include <float.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/rng.h"
#include "core/timer.h"

static int g_passed, g_failed, g_skipped;

/* Exit statuses of a check's process: it passed; it failed because the code under test
 * hung or crashed in something the check ran (a command, ranks, a child). */
enum { CHILD_PASSED = 42, CHILD_HUNG = 43, CHILD_CRASHED = 44 };

/* ---------------------------------------------------------------- what each TODO did
 * A check's tag names the TODOs it runs ("TODO 4.6", "TODO 4.2-4.6"), check_needs adds
 * others. Once a TODO hung or crashed, the later checks that run it are skipped (each
 * would wait out its own time limit again); once one failed, a later check that runs
 * it and fails says "fix TODO X first" instead of its own hints. Lessons have TODOs
 * N.1 .. N.63: one bit each. */
enum { TODO_FAILED = 1, TODO_HUNG, TODO_CRASHED };
typedef struct {
    int lesson;
    uint64_t todos;
} TodoSet;
static int g_todo_state[64];         /* of the current suite's lesson, by k of N.k */
static char g_todo_by[64][32];       /* the tag of the check that found it */
static int g_lesson = -1;
static struct {
    char tag[32];
    TodoSet needs;
} g_needs[32];
static int g_nneeds;
static bool g_hung, g_crashed;       /* in a check's process: what check_note_* said */
static const char *g_signal_words[65]; /* check_signal_hint, by signal */

/* "4.2-4.6", "4.6", "6.10-6.11", several separated by spaces or commas; the lesson of
 * the first. Returns false on text that is no such list. */
static bool parse_todos(const char *text, TodoSet *set) {
    set->lesson = -1;
    set->todos = 0;
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        int n, a, b, used;
        if (sscanf(p, "%d.%d%n", &n, &a, &used) != 2) return false;
        p += used;
        b = a;
        if (*p == '-') {
            int n2, b2;
            if (sscanf(p + 1, "%d.%d%n", &n2, &b2, &used) == 2) b = b2, p += 1 + used;
            else if (sscanf(p + 1, "%d%n", &b2, &used) == 1) b = b2, p += 1 + used;
            else return false;
        }
        if (set->lesson < 0) set->lesson = n;
        for (int k = a; k <= b && k < 64; k++)
            if (k >= 0 && n == set->lesson) set->todos |= 1ull << k;
    }
    return set->lesson >= 0;
}

/* The TODOs a check with this tag runs: its tag's and check_needs'. */
static TodoSet tag_todos(const char *tag) {
    TodoSet set = {-1, 0};
    if (!tag || strncmp(tag, "TODO ", 5) != 0 || !parse_todos(tag + 5, &set)) return (TodoSet){-1, 0};
    for (int i = 0; i < g_nneeds; i++)
        if (strcmp(g_needs[i].tag, tag) == 0 && g_needs[i].needs.lesson == set.lesson)
            set.todos |= g_needs[i].needs.todos;
    return set;
}

void check_needs(const char *tag, const char *todos) {
    TodoSet set;
    if (g_nneeds == 32 || strlen(tag) >= sizeof g_needs[0].tag || !parse_todos(todos, &set)) {
        fprintf(stderr, "test bug: check_needs(\"%s\", \"%s\")\n", tag, todos);
        exit(2);
    }
    snprintf(g_needs[g_nneeds].tag, sizeof g_needs[0].tag, "%s", tag);
    g_needs[g_nneeds++].needs = set;
}

void check_note_hung(void) { g_hung = true; }
void check_note_crashed(void) { g_crashed = true; }

void check_signal_hint(int sig, const char *words) {
    if (sig > 0 && sig < 65) g_signal_words[sig] = words;
}

/* The first TODO of set (lowest k) in `state`, or -1. */
static int first_in(const TodoSet *set, int state) {
    if (set->lesson != g_lesson) return -1;
    for (int k = 0; k < 64; k++)
        if ((set->todos >> k & 1) && g_todo_state[k] == state) return k;
    return -1;
}

/* A check of `set` ended with `state`: a hang or crash marks every TODO it runs (which
 * of them did it is not known), a failure only a check of one TODO's own. */
static void mark_todos(const TodoSet *set, const char *tag, int state) {
    if (set->lesson != g_lesson) return;
    const bool single = (set->todos & (set->todos - 1)) == 0;
    for (int k = 0; k < 64; k++) {
        if (!(set->todos >> k & 1)) continue;
        if (state == TODO_FAILED && !single) continue;
        if (g_todo_state[k] == TODO_HUNG || g_todo_state[k] == TODO_CRASHED) continue;
        if (state == TODO_FAILED && g_todo_state[k] == TODO_FAILED) continue;
        g_todo_state[k] = state;
        snprintf(g_todo_by[k], sizeof g_todo_by[k], "%s", tag + 5);
    }
}

/* Under AddressSanitizer, what the check leaked: LeakSanitizer prints each leak with
 * the stack that allocated it and ends the process with its own status (a failed
 * check). Elsewhere nothing. */
#if CHECK_ASAN
#include <sanitizer/lsan_interface.h>
static void leak_check(void) { __lsan_do_leak_check(); }
#else
static void leak_check(void) {}
#endif

void check_begin(const char *suite) {
    g_passed = g_failed = g_skipped = 0;
    memset(g_todo_state, 0, sizeof g_todo_state);
    g_lesson = -1;
    printf("== %s ==\n", suite);
    const char *only = getenv("CHECK_ONLY");
    if (only && *only) printf("(CHECK_ONLY=%s: only the checks whose name contains one of these run)\n", only);
    fflush(stdout);
}

/* CHECK_ONLY="word,word": only the checks whose name contains one of the words run and
 * are counted, e.g. the attention's alone under a tool too slow for all of check_gpu
 * (compute-sanitizer's racecheck). Unset or empty: every check. */
static bool check_selected(const char *name) {
    const char *only = getenv("CHECK_ONLY");
    if (!only || !*only) return true;
    char words[512];
    snprintf(words, sizeof words, "%s", only);
    char *save = NULL;
    for (char *w = strtok_r(words, ",", &save); w; w = strtok_r(NULL, ",", &save))
        if (*w && strstr(name, w)) return true;
    return false;
}

/* Reads once from fd onto the end of buf, keeping at most cap - 1 bytes (the start
 * of the output says what went wrong); returns what read() returned. */
static ssize_t read_into(int fd, char *buf, size_t cap, size_t *len) {
    char tmp[4096];
    ssize_t n = read(fd, tmp, sizeof tmp);
    if (n > 0) {
        size_t room = cap - 1 - *len;
        size_t take = (size_t)n < room ? (size_t)n : room;
        memcpy(buf + *len, tmp, take);
        *len += take;
    }
    return n;
}

/* Reads the child's output until it exits or the deadline passes. Returns false on
 * timeout. */
static bool collect(int fd, pid_t pid, double deadline, char *buf, size_t cap, size_t *len,
                    int *status) {
    for (;;) {
        double left = deadline - now_seconds();
        if (left <= 0) return false;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, left > 0.1 ? 100 : (int)(left * 1000) + 1);
        if (r > 0 && read_into(fd, buf, cap, len) > 0) continue;
        if (waitpid(pid, status, WNOHANG) == pid) {
            while (read_into(fd, buf, cap, len) > 0) {} /* drain what is left in the pipe */
            return true;
        }
    }
}

/* check_show's lines begin with this byte, which nothing else prints. */
#define SHOW_MARK '\x01'

/* text's lines, indented under the check's line; only check_show's when shown_only
 * (a check that passed), without their mark either way. */
static void print_lines(const char *text, bool shown_only) {
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        const bool shown = *p == SHOW_MARK;
        if (shown || !shown_only) printf("        %.*s\n", len - shown, p + shown);
        p += len + (nl ? 1 : 0);
    }
}

static void print_indented(const char *text) { print_lines(text, false); }

void check_show(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    putchar(SHOW_MARK);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static const char *signal_cause_general(int sig) {
    switch (sig) {
    case SIGSEGV: return "memory outside what was allocated: an index out of range, or a pointer "
                         "that may be NULL used without a check";
    case SIGBUS: return "a bad memory access: a mapped file shorter than read, or misaligned data";
    case SIGFPE: return "an integer division by zero (a size or a count of 0?)";
    case SIGABRT: return "abort(): a failed assert, or free() of memory twice or not from malloc";
    case SIGILL: return "an instruction this CPU lacks: a build for another CPU (make ARCH=x86-64-v3)";
    case SIGTERM: return "SIGTERM with no handler installed: its default action ends the program";
    case SIGUSR1: return "SIGUSR1 with no handler installed: its default action ends the program";
    case SIGKILL: return "killed from outside: out of memory, or a time limit";
    default: return "see `man 7 signal`";
    }
}

/* What a signal that ended the code under test usually means, for the hint: the general
 * words, then the lesson's own (check_signal_hint). */
static const char *signal_cause(int sig) {
    static char buf[600];
    const char *own = sig > 0 && sig < 65 ? g_signal_words[sig] : NULL;
    if (!own) return signal_cause_general(sig);
    snprintf(buf, sizeof buf, "%s; in this lesson: %s", signal_cause_general(sig), own);
    return buf;
}

const char *check_signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGILL: return "SIGILL";
    case SIGTERM: return "SIGTERM";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGPIPE: return "SIGPIPE";
    case SIGINT: return "SIGINT";
    default: return "a signal";
    }
}

const char *check_signal_cause(int sig) { return signal_cause(sig); }

/* How a check's process ends: a failure where check_note_hung / _crashed was said is
 * one of those (so that the TODOs it ran are marked). */
static int child_status(int r) {
    if (r == CHECK_PASS) return CHILD_PASSED;
    if (r == CHECK_SKIP) return r;
    return g_hung ? CHILD_HUNG : g_crashed ? CHILD_CRASHED : r;
}

/* Printed under a skipped or failed check whose TODOs went wrong above: "TODO 4.6" or
 * "TODO 4.2-4.6" (the tag of the check that found it). */
static bool said_above(const TodoSet *set, int state, const char *format, char *why, size_t cap) {
    const int k = first_in(set, state);
    if (k < 0) return false;
    char todo[48];
    snprintf(todo, sizeof todo, "TODO %s", g_todo_by[k]);
    snprintf(why, cap, format, todo, todo);
    return true;
}

void check_run(const char *tag, const char *name, CheckFn fn, int timeout_seconds) {
    if (!check_selected(name)) return;
    fflush(stdout);
    fflush(stderr);
    const TodoSet todos = tag_todos(tag);
    if (g_lesson < 0 && todos.lesson >= 0) g_lesson = todos.lesson;
    char why[400] = "";
    if (said_above(&todos, TODO_HUNG, "skipped: %s hung above (this check runs it and would wait as long)",
                   why, sizeof why) ||
        said_above(&todos, TODO_CRASHED, "skipped: %s crashed above (this check runs it): fix that first",
                   why, sizeof why)) {
        printf("SKIP  %-12s %s (0.0 s)\n", tag, name);
        print_indented(why);
        g_skipped++;
        fflush(stdout);
        return;
    }
    /* A check that runs a TODO whose own check failed above: it would fail too, or wait
     * out its limit, and its hints would blame what it tests: not run, it fails and
     * names that TODO (the stubs' checks all fail, as they must) */
    TodoSet others = todos, own; /* not a check's own TODO: its other checks may fail too */
    if (others.lesson >= 0 && tag && parse_todos(tag + 5, &own) && (own.todos & (own.todos - 1)) == 0)
        others.todos &= ~own.todos;
    if (said_above(&others, TODO_FAILED, "not run: fix %s first: its check failed above, and this check runs "
                   "it (its own hints would blame what it tests)", why, sizeof why)) {
        printf("FAIL  %-12s %s (0.0 s)\n", tag, name);
        print_indented(why);
        g_failed++;
        fflush(stdout);
        return;
    }
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(2);
    }
    double start = now_seconds();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[1]);
        setvbuf(stdout, NULL, _IONBF, 0);
        g_hung = g_crashed = false;
        int r = fn();
        fflush(stdout);
        leak_check(); /* _exit skips LeakSanitizer's own check at exit */
        /* A distinct status for "passed": code under test that calls exit(0)
         * before the check has looked at anything must not count as a pass. */
        _exit(child_status(r));
    }
    close(fds[1]);
    static char out[16384];
    size_t len = 0;
    int status = 0;
    bool finished = collect(fds[0], pid, start + timeout_seconds, out, sizeof out, &len, &status);
    out[len] = '\0';
    close(fds[0]);
    const char *verdict;
    int state = 0; /* what it says of its TODOs */
    if (!finished) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        verdict = "FAIL";
        state = TODO_HUNG;
        snprintf(why, sizeof why, "hung: stopped after %d s (an endless loop, a wait that "
                 "never ends, a huge size?)", timeout_seconds);
    } else if (WIFSIGNALED(status)) {
        verdict = "FAIL";
        state = TODO_CRASHED;
        snprintf(why, sizeof why, "crashed with signal %d (%s, %s): %s", WTERMSIG(status),
                 check_signal_name(WTERMSIG(status)), strsignal(WTERMSIG(status)),
                 signal_cause(WTERMSIG(status)));
    } else if (WEXITSTATUS(status) == CHILD_PASSED) {
        verdict = "PASS";
    } else if (WEXITSTATUS(status) == 0) {
        verdict = "FAIL";
        state = TODO_FAILED;
        snprintf(why, sizeof why, "the code under test called exit(0) before the check finished");
    } else if (WEXITSTATUS(status) == CHECK_SKIP) {
        verdict = "SKIP";
    } else {
        verdict = "FAIL";
        state = WEXITSTATUS(status) == CHILD_HUNG ? TODO_HUNG
                : WEXITSTATUS(status) == CHILD_CRASHED ? TODO_CRASHED : TODO_FAILED;
        /* 3: a TODO stub stopped the program and has said which one */
        if (state == TODO_FAILED && WEXITSTATUS(status) != CHECK_FAIL && WEXITSTATUS(status) != 3)
            snprintf(why, sizeof why, "stopped with exit status %d", WEXITSTATUS(status));
    }
    double secs = now_seconds() - start;
    if (tag) printf("%s  %-12s %s (%.1f s)\n", verdict, tag, name, secs);
    else printf("%s  %s (%.1f s)\n", verdict, name, secs);
    if (verdict[0] == 'P' && len) print_lines(out, true);
    if (verdict[0] != 'P') {
        if (len) print_indented(out);
        if (why[0]) print_indented(why);
        if (state == TODO_HUNG || state == TODO_CRASHED)
            printf("        (the later checks that run %s are skipped)\n", tag ? tag : "it");
    }
    if (state) mark_todos(&todos, tag, state);
    if (verdict[0] == 'P') g_passed++;
    else if (verdict[0] == 'S') g_skipped++;
    else g_failed++;
    fflush(stdout);
}

int check_end(void) {
    if (g_skipped) printf("%d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
    else printf("%d passed, %d failed\n", g_passed, g_failed);
    fflush(stdout);
    return g_failed ? 1 : 0;
}

bool expect_close(const char *what, const float *got, const float *want, int64_t n, float atol,
                  float rtol) {
    int64_t bad = 0, first = -1;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double diff = fabs((double)got[i] - (double)want[i]);
        double tol = atol + rtol * fabs((double)want[i]);
        if (!(diff <= tol)) { /* also catches NaN */
            if (first < 0) first = i;
            bad++;
            if (diff > worst || isnan(diff)) worst = diff;
        }
    }
    if (!bad) return true;
    printf("%s: %lld of %lld values differ; first at index %lld: got %.7g, expected %.7g "
           "(tolerance %.1e + %.1e * |expected|); largest difference %.3g\n",
           what, (long long)bad, (long long)n, (long long)first, (double)got[first],
           (double)want[first], (double)atol, (double)rtol, worst);
    return false;
}

bool expect_sums_close(const char *what, const float *got, const double *want, const double *mag,
                       int64_t n, double roundings) {
    for (int64_t i = 0; i < n; i++) {
        const double tol = roundings * (double)FLT_EPSILON * mag[i];
        if (!(fabs(got[i] - want[i]) <= tol))
            return expect_true(false, "%s[%lld] = %.9g, expected %.9g (tolerance %.3g)", what,
                               (long long)i, got[i], want[i], tol);
    }
    return true;
}

bool expect_true(bool cond, const char *fmt, ...) {
    if (cond) return true;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    return false;
}

void fill_uniform(float *x, int64_t n, uint64_t seed, float lo, float hi) {
    Rng rng;
    rng_seed(&rng, seed, 7);
    for (int64_t i = 0; i < n; i++) x[i] = rng_uniform_range(&rng, lo, hi);
}

/* ---------------------------------------------------------------- code that must stop */

static void run_child_into(void (*fn)(void *), void *arg, bool with_stdout, ChildResult *r) {
    int fds[2];
    memset(r, 0, sizeof *r);
    if (pipe(fds) != 0) {
        r->status = -1;
        return;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        r->status = -1;
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        if (with_stdout) dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[1]);
        fn(arg);
        fflush(stdout);
        fflush(stderr);
        _exit(0);
    }
    close(fds[1]);
    size_t len = 0;
    while (read_into(fds[0], r->out, sizeof r->out, &len) > 0) {}
    r->out[len] = '\0';
    close(fds[0]);
    waitpid(pid, &r->status, 0);
}

void run_command(const char *const *argv, double timeout_s, CommandResult *r) {
    memset(r, 0, sizeof *r);
    int fds[2];
    if (pipe(fds) != 0) {
        r->status = -1;
        return;
    }
    fflush(stdout);
    fflush(stderr);
    const double t0 = now_seconds();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        r->status = -1;
        return;
    }
    if (pid == 0) {
        setpgid(0, 0); /* its own group: a timeout kills mpirun and every rank */
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[1]);
        execvp(argv[0], (char *const *)argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    size_t len = 0;
    for (;;) {
        struct pollfd p = {fds[0], POLLIN, 0};
        poll(&p, 1, 50);
        ssize_t n;
        while ((n = read(fds[0], r->out + len, sizeof r->out - 1 - len)) > 0) len += (size_t)n;
        if (len == sizeof r->out - 1) { /* full: drain the rest so the writer never blocks */
            char sink[4096];
            while (read(fds[0], sink, sizeof sink) > 0) {}
        }
        if (waitpid(pid, &r->status, WNOHANG) == pid) break;
        if (now_seconds() - t0 > timeout_s) {
            kill(-pid, SIGKILL);
            waitpid(pid, &r->status, 0);
            r->timed_out = true;
            g_hung = true; /* counts where the check fails */
            break;
        }
    }
    ssize_t n;
    while ((n = read(fds[0], r->out + len, sizeof r->out - 1 - len)) > 0) len += (size_t)n;
    r->out[len] = '\0';
    close(fds[0]);
    r->seconds = now_seconds() - t0;
    if (r->status >= 0 && WIFSIGNALED(r->status) && !r->timed_out) g_crashed = true;
}

const char *describe_end(const CommandResult *r, char *buf, size_t cap) {
    if (r->timed_out) snprintf(buf, cap, "hung: killed after %.0f s", r->seconds);
    else if (r->status < 0) snprintf(buf, cap, "could not start");
    else if (WIFSIGNALED(r->status))
        snprintf(buf, cap, "killed by signal %d (%s, %s: %s)", WTERMSIG(r->status),
                 check_signal_name(WTERMSIG(r->status)), strsignal(WTERMSIG(r->status)),
                 signal_cause(WTERMSIG(r->status)));
    else snprintf(buf, cap, "exit status %d", WEXITSTATUS(r->status));
    return buf;
}

void run_child(void (*fn)(void *), void *arg, ChildResult *r) {
    run_child_into(fn, arg, true, r);
}

void run_child_stderr(void (*fn)(void *), void *arg, ChildResult *r) {
    run_child_into(fn, arg, false, r);
}

bool expect_exitv(const char *what, const ChildResult *r, int code, va_list words) {
    if (WIFSIGNALED(r->status)) g_crashed = true;
    bool ok = expect_true(WIFEXITED(r->status), "%s: did not exit normally (%s)", what,
                          WIFSIGNALED(r->status) ? strsignal(WTERMSIG(r->status)) : "?");
    ok = ok && expect_true(WEXITSTATUS(r->status) == code, "%s: exit status %d, expected %d",
                           what, WEXITSTATUS(r->status), code);
    for (const char *want; ok && (want = va_arg(words, const char *));)
        ok = expect_true(strstr(r->out, want) != NULL, "%s: the message lacks \"%s\"", what,
                         want);
    if (!ok) printf("its output was:\n%s\n", r->out);
    return ok;
}

bool expect_exit(const char *what, const ChildResult *r, int code, ...) {
    va_list ap;
    va_start(ap, code);
    bool ok = expect_exitv(what, r, code, ap);
    va_end(ap);
    return ok;
}

/* ---------------------------------------------------------------- temporary directories */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int with_tmpdir(const char *prefix, int (*body)(const char *dir)) {
    char dir[256];
    int len = snprintf(dir, sizeof dir, "/tmp/%s_XXXXXX", prefix);
    if (len < 0 || (size_t)len >= sizeof dir) {
        printf("test bug: temporary directory prefix %s too long\n", prefix);
        return CHECK_FAIL;
    }
    if (!mkdtemp(dir)) {
        printf("mkdtemp: %s\n", strerror(errno));
        return CHECK_FAIL;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        g_hung = g_crashed = false;
        int r = body(dir);
        fflush(stdout);
        leak_check();
        _exit(child_status(r) == CHILD_PASSED ? CHECK_PASS : child_status(r));
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) status = CHECK_FAIL << 8;
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (WIFSIGNALED(status)) {
        printf("crashed with signal %d (%s, %s): %s\n", WTERMSIG(status), check_signal_name(WTERMSIG(status)),
               strsignal(WTERMSIG(status)), signal_cause(WTERMSIG(status)));
        g_crashed = true;
        return CHECK_FAIL;
    }
    if (WEXITSTATUS(status) == CHILD_HUNG) g_hung = true;
    if (WEXITSTATUS(status) == CHILD_CRASHED) g_crashed = true;
    return g_hung || g_crashed ? CHECK_FAIL : WEXITSTATUS(status);
}

void path_in(char *out, size_t cap, const char *dir, const char *name) {
    if (fs_join(out, cap, dir, name) != 0) {
        printf("test bug: path %s/%s too long\n", dir, name);
        exit(CHECK_FAIL);
    }
}

void make_dirs(const char *dir, const char *sub) {
    char p[FS_PATH_MAX], msg[FS_MSG_MAX];
    path_in(p, sizeof p, dir, sub);
    (void)fs_mkdir_p(p, 0700, msg, sizeof msg); /* errors are left to what follows */
}

void make_dir_in(char *out, size_t cap, const char *dir, const char *sub) {
    path_in(out, cap, dir, sub);
    make_dirs(dir, sub);
}
