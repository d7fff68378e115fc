/* For a grader whose checks need several ranks (lessons 06 and 07): the check starts
 *   mpirun -n 2 (and 3) <this grader> --worker NAME ...
 * whose ranks each run one of the lesson's functions and print one line,
 * "WORKER rank R ok ..." or "WORKER rank R FAIL: ...", which the check reads. A check
 * that needs ranks SKIPs where there is no mpirun (never PASSes); the check's time
 * limit turns a deadlock into a failure of that check alone. The grader's main is
 * ranks_main, which runs either a worker or the checks:
 *
 *   #include "graders/ranks.h"
 *   static bool worker(int argc, char **argv) {          // argv[2]: the worker's name
 *       if (strcmp(argv[2], "average") == 0) worker_average();
 *       else return false;
 *       return true;
 *   }
 *   static int check_average(void) { return on_2_and_3("average", "the gradient average", 60); }
 *   static void checks(void) { check_run("TODO 6.4", "...", check_average, 120); }
 *   int main(int argc, char **argv) {
 *       return ranks_main(argc, argv, "lesson 06: ddp", checks, worker, lesson_main);
 *   }
 *
 * The functions are static inline: a grader that uses only some of them compiles clean. */
#ifndef GRADERS_RANKS_H
#define GRADERS_RANKS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/check.h"
#include "dist/dist.h"
#include "framework/check.h"

/* ================================================================ the ranks' side */

static Dist *g_dist; /* the worker's communicator: its rank names the WORKER line */

/* One line per rank: "WORKER rank R ok ..." or "WORKER rank R FAIL: ..." */
static inline void say(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void say(bool ok, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("WORKER rank %d %s%s\n", g_dist ? g_dist->rank : -1,
           ok ? (*msg && *msg != ' ' ? "ok: " : "ok") : "FAIL: ", msg);
    fflush(stdout);
}

/* The library's communicator over the job's ranks (a rank waits 30 s at most). */
static inline Dist *library_dist(void) {
    g_dist = dist_init(&(DistOptions){.backend = "auto", .timeout_s = 30});
    return g_dist;
}

/* ================================================================ the grader's side */

static char g_self[1024]; /* this program, for mpirun (ranks_main sets it) */

static inline bool have_mpirun(void) {
    const char *path = getenv("PATH");
    char buf[4096], try[1200];
    snprintf(buf, sizeof buf, "%s", path ? path : "/usr/bin");
    for (char *dir = strtok(buf, ":"); dir; dir = strtok(NULL, ":")) {
        snprintf(try, sizeof try, "%s/mpirun", dir);
        if (access(try, X_OK) == 0) return true;
    }
    return false;
}

#define REQUIRE_RANKS()                                                                  \
    do {                                                                                 \
        if (!have_mpirun()) {                                                            \
            printf("needs ranks: Open MPI's mpirun is not installed (sudo make deps)\n"); \
            return CHECK_SKIP;                                                           \
        }                                                                                \
    } while (0)

/* mpirun -n ranks <grader> --worker ARGS...; its output and end in *r. */
static inline void run_ranks(int ranks, const char *const *args, double timeout, CommandResult *r) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1); /* CI and containers run as root */
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    char n[16];
    snprintf(n, sizeof n, "%d", ranks);
    const char *argv[48] = {"mpirun", "--oversubscribe", "--mca", "btl", "self,vader,tcp",
                            "-n", n, g_self, "--worker"};
    int k = 9;
    for (int i = 0; args[i] && k < 46; i++) argv[k++] = args[i];
    argv[k] = NULL;
    run_command(argv, timeout, r);
}

/* What the ranks printed, without mpirun's boxes and without repeats: each rank
 * stopping at the same TODO says so once. Returns how many lines it printed. */
static inline int print_ranks_output(const char *out) {
    static const char *noise[] = {"---", "Primary job", "a non-zero exit code", "mpirun ",
                                  "the job to be terminated", "  Process name", "  Exit code",
                                  "MPI_ABORT", "with errorcode", "NOTE: invoking", "You may or may not",
                                  "exactly when", "[", "Set MCA parameter", NULL};
    char seen[64][200];
    int nseen = 0, shown = 0;
    for (const char *line = out; *line && shown < 40;) {
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        bool skip = len == 0;
        for (int i = 0; noise[i] && !skip; i++) skip = strncmp(line, noise[i], strlen(noise[i])) == 0;
        for (int i = 0; i < nseen && !skip; i++) skip = strncmp(seen[i], line, (size_t)len) == 0 && seen[i][len] == '\0';
        if (!skip) {
            printf("%.*s\n", len, line);
            shown++;
            if (nseen < 64 && len < 200) snprintf(seen[nseen++], 200, "%.*s", len, line);
        }
        line = end ? end + 1 : line + len;
    }
    return shown;
}

/* The ranks that died of a signal, as mpirun reports them ("mpirun noticed that process
 * rank 1 with PID 4242 on node n exited on signal 11 (Segmentation fault)."): one line
 * each, "rank 1: SIGSEGV (Segmentation fault): what it usually means", and the
 * check counts as crashed (check_note_crashed). Returns how many. */
static inline int print_rank_signals(const char *out) {
    int found = 0;
    for (const char *at = out; (at = strstr(at, "process rank ")); at++) {
        int rank = -1, sig = -1;
        const char *on = strstr(at, "on signal ");
        const char *eol = strchr(at, '\n');
        if (!on || (eol && on > eol) || sscanf(at, "process rank %d", &rank) != 1 ||
            sscanf(on, "on signal %d", &sig) != 1)
            continue;
        printf("rank %d: %s (%s): %s\n", rank, check_signal_name(sig), strsignal(sig), check_signal_cause(sig));
        found++;
    }
    if (found) check_note_crashed();
    return found;
}

/* After a job that failed: the ranks that died of a signal, then what the ranks said. A
 * job that hung (killed at its time limit, or a rank that said "hung in") counts as hung
 * (check_note_hung), one whose rank died of a signal as crashed. */
static inline void print_job_output(const CommandResult *r) {
    if (r->timed_out || strstr(r->out, "FAIL: hung in ")) check_note_hung();
    print_rank_signals(r->out);
    printf("The ranks said:\n");
    if (print_ranks_output(r->out) == 0)
        printf("%s\n", r->timed_out ? "(nothing: the ranks were still waiting when the check's time ran out: a hang)"
                                    : "(nothing: a rank ended before it could say why)");
}

/* Every rank's worker line says ok: else prints what failed (and the output). A job
 * that hung (killed at its time limit, or a rank that said "hung in") or whose rank died
 * of a signal counts as such (check_note_hung / _crashed): the checks after it that run
 * the same TODO are skipped. */
static inline bool all_ok(int ranks, const CommandResult *r, const char *what) {
    char end[96];
    int ok = 0;
    for (int k = 0; k < ranks; k++) {
        char want[64];
        snprintf(want, sizeof want, "WORKER rank %d ok", k);
        ok += strstr(r->out, want) != NULL;
    }
    if (ok == ranks && !r->timed_out && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0) return true;
    printf("%s with %d ranks: %d of %d ranks ok; the job ended: %s.\n", what, ranks, ok, ranks,
           describe_end(r, end, sizeof end));
    print_job_output(r);
    return false;
}

/* The worker (with no arguments) on 2 ranks, then on 3: every rank ok. */
static inline int on_2_and_3(const char *worker, const char *what, double timeout) {
    REQUIRE_RANKS();
    for (int ranks = 2; ranks <= 3; ranks++) {
        CommandResult r;
        const char *args[] = {worker, NULL};
        run_ranks(ranks, args, timeout, &r);
        if (!all_ok(ranks, &r, what)) return CHECK_FAIL;
    }
    return CHECK_PASS;
}

/* on_2_and_3, and after a failure explain(ranks, &result) adds what the output tells
 * (a library's message, a job that hung at 3 ranks after passing at 2). */
static inline int on_2_and_3_explained(const char *worker, const char *what, double timeout,
                                       void (*explain)(int ranks, const CommandResult *r)) {
    REQUIRE_RANKS();
    for (int ranks = 2; ranks <= 3; ranks++) {
        CommandResult r;
        const char *args[] = {worker, NULL};
        run_ranks(ranks, args, timeout, &r);
        if (!all_ok(ranks, &r, what)) {
            if (explain) explain(ranks, &r);
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* ================================================================ the grader's main */

/* `<grader> --worker main ARGS...`: a rank running the lesson's program (program_main)
 * with ARGS, whose status main returns. `<grader> --worker NAME ...`: a rank running the
 * grader's worker NAME (worker returns false for a name it does not know: a message and
 * exit status 1), after which the worker's communicator is closed. `<grader>` alone:
 * g_self is set (run_ranks starts this program again), then the suite's checks run and
 * the last line is "N passed, M failed[, K skipped]". */
static inline int ranks_main(int argc, char **argv, const char *suite, void (*checks)(void),
                             bool (*worker)(int argc, char **argv),
                             int (*program_main)(int argc, char **argv)) {
    if (argc > 2 && strcmp(argv[1], "--worker") == 0) {
        if (strcmp(argv[2], "main") == 0) {
            argv[2] = argv[0]; /* the program's own options follow */
            return program_main(argc - 2, argv + 2);
        }
        if (!worker(argc, argv)) fatal("unknown worker %s", argv[2]);
        if (g_dist) dist_finalize(g_dist);
        return 0;
    }
    ssize_t len = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    g_self[len > 0 ? len : 0] = '\0';
    check_begin(suite);
    checks();
    return check_end();
}

#endif
