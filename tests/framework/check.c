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

enum { CHILD_PASSED = 42 }; /* exit status of a check's process that passed */

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
    printf("== %s ==\n", suite);
    fflush(stdout);
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

static void print_indented(const char *text) {
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        printf("        %.*s\n", len, p);
        p += len + (nl ? 1 : 0);
    }
}

/* What a signal that ended the code under test usually means, for the hint. */
static const char *signal_cause(int sig) {
    switch (sig) {
    case SIGSEGV: return "memory outside what was allocated: an index out of range, or a pointer "
                         "that may be NULL (an optional gradient like din) used without a check";
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

void check_run(const char *tag, const char *name, CheckFn fn, int timeout_seconds) {
    fflush(stdout);
    fflush(stderr);
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
        int r = fn();
        fflush(stdout);
        leak_check(); /* _exit skips LeakSanitizer's own check at exit */
        /* A distinct status for "passed": code under test that calls exit(0)
         * before the check has looked at anything must not count as a pass. */
        _exit(r == CHECK_PASS ? CHILD_PASSED : r);
    }
    close(fds[1]);
    static char out[16384];
    size_t len = 0;
    int status = 0;
    bool finished = collect(fds[0], pid, start + timeout_seconds, out, sizeof out, &len, &status);
    out[len] = '\0';
    close(fds[0]);
    const char *verdict;
    char why[320] = "";
    if (!finished) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        verdict = "FAIL";
        snprintf(why, sizeof why, "hung: stopped after %d s (an endless loop, a wait that "
                 "never ends, a huge size?)", timeout_seconds);
    } else if (WIFSIGNALED(status)) {
        verdict = "FAIL";
        snprintf(why, sizeof why, "crashed with signal %d (%s): %s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), signal_cause(WTERMSIG(status)));
    } else if (WEXITSTATUS(status) == CHILD_PASSED) {
        verdict = "PASS";
    } else if (WEXITSTATUS(status) == 0) {
        verdict = "FAIL";
        snprintf(why, sizeof why, "the code under test called exit(0) before the check finished");
    } else if (WEXITSTATUS(status) == CHECK_SKIP) {
        verdict = "SKIP";
    } else {
        verdict = "FAIL";
        /* 3: a TODO stub stopped the program and has said which one */
        if (WEXITSTATUS(status) != CHECK_FAIL && WEXITSTATUS(status) != 3)
            snprintf(why, sizeof why, "stopped with exit status %d", WEXITSTATUS(status));
    }
    double secs = now_seconds() - start;
    if (tag) printf("%s  %-12s %s (%.1f s)\n", verdict, tag, name, secs);
    else printf("%s  %s (%.1f s)\n", verdict, name, secs);
    if (verdict[0] != 'P') {
        if (len) print_indented(out);
        if (why[0]) print_indented(why);
    }
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
            break;
        }
    }
    ssize_t n;
    while ((n = read(fds[0], r->out + len, sizeof r->out - 1 - len)) > 0) len += (size_t)n;
    r->out[len] = '\0';
    close(fds[0]);
    r->seconds = now_seconds() - t0;
}

const char *describe_end(const CommandResult *r, char *buf, size_t cap) {
    if (r->timed_out) snprintf(buf, cap, "hung: killed after %.0f s", r->seconds);
    else if (r->status < 0) snprintf(buf, cap, "could not start");
    else if (WIFSIGNALED(r->status))
        snprintf(buf, cap, "killed by signal %d (%s: %s)", WTERMSIG(r->status),
                 strsignal(WTERMSIG(r->status)), signal_cause(WTERMSIG(r->status)));
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
        int r = body(dir);
        fflush(stdout);
        leak_check();
        _exit(r);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) status = CHECK_FAIL << 8;
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (WIFSIGNALED(status)) {
        printf("crashed with signal %d (%s): %s\n", WTERMSIG(status), strsignal(WTERMSIG(status)),
               signal_cause(WTERMSIG(status)));
        return CHECK_FAIL;
    }
    return WEXITSTATUS(status);
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
