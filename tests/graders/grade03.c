/* Grader of lesson 03: each TODO against the library's checkpoint module, then the
 * whole program (lesson_main, in child processes) stopped, signalled, killed in the
 * middle of a write and resumed, against a run that never stopped: the final
 * parameters must be bit for bit the same. No number here is typed in; every
 * expected value comes from a reference run or from the library.
 * Run with `make check-lesson 3` (your code) or `make check-lesson 3 SOLUTION=1`. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/timer.h"
#include "framework/check.h"
#include "lesson.h"

/* ---------------------------------------------------------------- a small run */

/* A run without data: a CNN on 16x16 images, Adam, a sampler over 50 examples, its
 * store in dir (written by the library, so that checks of TODO 3.3 need no 3.2). */
static Run *lite_new(const char *dir) {
    Run *r = xcalloc(1, sizeof *r);
    Rng init;
    rng_seed(&init, 5, 0);
    cnn_init(&r->model, 1, 16, 16, 10, 2, &init);
    adam_init(&r->opt, &r->model.params, 1e-3f);
    sampler_init(&r->sampler, 50, true, 9);
    sampler_set_epoch(&r->sampler, 1);
    rng_seed(&r->rng, 9, 1);
    r->ts = (TrainState){.epoch = 1, .best_metric = -INFINITY};
    if (dir) {
        ckpt_store_init(&r->store, dir, 2);
        r->store.write = ckpt_write_atomic;
    }
    return r;
}

/* The library's answer to TODO 3.1. */
static void ref_describe(Checkpoint *c, Run *r) {
    ckpt_add_params(c, "model", &r->model.params);
    ckpt_add_adam(c, &r->opt, &r->model.params);
    ckpt_add_train_state(c, &r->ts);
}

static void ref_capture(Run *r) {
    r->ts.rng_state = r->rng.state;
    r->ts.rng_inc = r->rng.inc;
    r->ts.sampler_seed = r->sampler.seed;
    r->ts.sampler_epoch = r->sampler.epoch;
    r->ts.sampler_position = r->sampler.position;
    r->ts.sampler_count = r->sampler.count;
}

/* Puts the run in a state made from seed: parameters, moments, counters, sampler, Rng. */
static void scramble(Run *r, uint64_t seed) {
    const int64_t n = r->model.params.total;
    fill_uniform(r->model.params.values.data, n, seed, -1, 1);
    fill_uniform(r->opt.m.data, n, seed + 100, -1, 1);
    fill_uniform(r->opt.v.data, n, seed + 200, 0, 1);
    r->opt.step = (int64_t)seed;
    r->ts = (TrainState){.epoch = (int64_t)seed % 7 + 1, .step = (int64_t)seed % 5,
                         .global_step = (int64_t)seed, .loss_sum = seed * 0.25,
                         .examples = (int64_t)seed * 3, .best_metric = seed * 0.01,
                         .best_epoch = (int64_t)seed % 3};
    r->sampler.seed = seed;
    sampler_restore(&r->sampler, (int)(seed % 4) + 1, (int)(seed % 50));
    rng_seed(&r->rng, seed, 1);
    for (uint64_t k = 0; k < seed % 13; k++) rng_u32(&r->rng);
}

/* A hash of everything a resume must bring back. */
static uint64_t state_hash(Run *r) {
    Checkpoint c = {0};
    ref_describe(&c, r);
    ref_capture(r);
    uint8_t *buf;
    size_t len;
    ckpt_encode(&c, &buf, &len);
    uint64_t h = ckpt_hash64(buf, len, 0);
    xfree(buf);
    return h;
}

/* The run's state in five parts, each hashed alone, so that a check can say which
 * part a resume got wrong. */
enum { PART_PARAMS, PART_ADAM, PART_TRAIN, PART_SAMPLER, PART_RNG, PARTS };
static const char *const PART_NAMES[PARTS] = {
    "the parameters", "Adam's moments or step count",
    "the training state (epoch, step, loss sums, best accuracy)",
    "the sampler (seed, epoch, position)", "the Rng (state, increment)"};

static void state_parts(const Run *r, uint64_t part[PARTS]) {
    const TrainState *t = &r->ts;
    const int64_t n = r->model.params.total;
    part[PART_PARAMS] = ckpt_hash64(r->model.params.values.data, sizeof(float) * (size_t)n, 0);
    part[PART_ADAM] = ckpt_hash64(r->opt.m.data, sizeof(float) * (size_t)n, 0) ^
                      ckpt_hash64(r->opt.v.data, sizeof(float) * (size_t)n, 1) ^
                      ckpt_hash64(&r->opt.step, sizeof r->opt.step, 2);
    const int64_t train[] = {t->epoch, t->step, t->global_step, t->examples, t->best_epoch};
    part[PART_TRAIN] = ckpt_hash64(train, sizeof train, 0) ^
                       ckpt_hash64(&t->loss_sum, sizeof t->loss_sum, 1) ^
                       ckpt_hash64(&t->best_metric, sizeof t->best_metric, 2);
    const int64_t sampler[] = {(int64_t)r->sampler.seed, r->sampler.epoch, r->sampler.position,
                               r->sampler.count};
    part[PART_SAMPLER] = ckpt_hash64(sampler, sizeof sampler, 0);
    const uint64_t rng[] = {r->rng.state, r->rng.inc};
    part[PART_RNG] = ckpt_hash64(rng, sizeof rng, 0);
}

static uint64_t file_hash(const char *path) {
    uint8_t *buf;
    size_t len;
    CkptError err;
    if (ckpt_read_file(path, &buf, &len, &err) != 0) return 0;
    uint64_t h = ckpt_hash64(buf, len, 1);
    xfree(buf);
    return h;
}

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static bool write_bytes(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    if (f) ok = fclose(f) == 0 && ok;
    return ok;
}

static void flip_byte(const char *path, long offset) {
    FILE *f = fopen(path, "r+b");
    if (!f) return;
    fseek(f, offset, SEEK_SET);
    int c = fgetc(f);
    fseek(f, offset, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
}

/* ---------------------------------------------------------------- TODO 3.1 */

static int check_describe(void) {
    Run *r = lite_new(NULL);
    Checkpoint mine = {0}, ref = {0};
    lesson_describe_checkpoint(&mine, r);
    ref_describe(&ref, r);
    bool ok = true;
    for (int i = 0; i < ref.ntensors && ok; i++) {
        const CkptTensor *want = &ref.tensors[i];
        int j = 0;
        while (j < mine.ntensors && strcmp(mine.tensors[j].name, want->name) != 0) j++;
        ok = expect_true(j < mine.ntensors, "your checkpoint lacks tensor '%s'%s", want->name,
                         strncmp(want->name, "adam.", 5) == 0
                             ? ": without Adam's moments the resumed run takes different steps "
                               "(ckpt_add_adam)" : " (ckpt_add_params)") &&
             expect_true(mine.tensors[j].tensor.data == want->tensor.data,
                         "'%s' does not point at the run's own tensor", want->name);
    }
    for (int i = 0; i < ref.nscalars && ok; i++) {
        int j = 0;
        while (j < mine.nscalars && strcmp(mine.scalars[j].name, ref.scalars[i].name) != 0) j++;
        ok = expect_true(j < mine.nscalars, "your checkpoint lacks '%s' (%s)", ref.scalars[i].name,
                         strcmp(ref.scalars[i].name, "adam.step") == 0
                             ? "Adam's t: its bias correction depends on it"
                             : "the training state: ckpt_add_train_state(c, &run->ts)") &&
             expect_true(mine.scalars[j].value == ref.scalars[i].value,
                         "'%s' does not point at the run's own variable", ref.scalars[i].name);
    }
    ok = ok && expect_true(mine.ntensors == ref.ntensors && mine.nscalars == ref.nscalars,
                           "your checkpoint has %d tensors and %d scalars, expected %d and %d: "
                           "the gradients and activations do not belong in it", mine.ntensors,
                           mine.nscalars, ref.ntensors, ref.nscalars);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_capture(void) {
    Run *r = lite_new(NULL);
    scramble(r, 23);
    int idx[8];
    sampler_next(&r->sampler, idx, 8); /* somewhere into the epoch */
    rng_u32(&r->rng);
    Run *want = lite_new(NULL);
    *want = *r;
    ref_capture(want);
    lesson_capture_state(r);
    const TrainState *a = &r->ts, *b = &want->ts;
    bool ok = expect_true(a->rng_state == b->rng_state && a->rng_inc == b->rng_inc,
                          "rng_state/rng_inc are %llx/%llx, the Rng's are %llx/%llx",
                          (unsigned long long)a->rng_state, (unsigned long long)a->rng_inc,
                          (unsigned long long)b->rng_state, (unsigned long long)b->rng_inc) &&
              expect_true(a->sampler_seed == b->sampler_seed && a->sampler_epoch == b->sampler_epoch &&
                              a->sampler_position == b->sampler_position &&
                              a->sampler_count == b->sampler_count,
                          "sampler seed/epoch/position/count are %llu/%lld/%lld/%lld, the "
                          "sampler's are %llu/%lld/%lld/%lld",
                          (unsigned long long)a->sampler_seed, (long long)a->sampler_epoch,
                          (long long)a->sampler_position, (long long)a->sampler_count,
                          (unsigned long long)b->sampler_seed, (long long)b->sampler_epoch,
                          (long long)b->sampler_position, (long long)b->sampler_count);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- TODO 3.2 */

static int only_file(const char *dir, const char *name) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test \"$(ls -A '%s')\" = '%s'", dir, name);
    if (system(cmd) == 0) return 1;
    printf("the directory should hold only %s, but holds:\n", name);
    fflush(stdout);
    snprintf(cmd, sizeof cmd, "ls -A '%s'", dir);
    if (system(cmd) != 0) printf("(ls failed)\n");
    return 0;
}

/* fsync and fdatasync, counted: this program's own definitions take the place of the C
 * library's for every call in it, the lesson's code included, and then do the call. */
static int g_syncs_file, g_syncs_dir;
static void count_sync(int fd) {
    struct stat st;
    if (fstat(fd, &st) == 0) {
        if (S_ISDIR(st.st_mode)) g_syncs_dir++;
        else g_syncs_file++;
    }
}
int fsync(int fd) {
    count_sync(fd);
    return (int)syscall(SYS_fsync, fd);
}
int fdatasync(int fd) {
    count_sync(fd);
    return (int)syscall(SYS_fdatasync, fd);
}

static int body_write(const char *dir) {
    char path[512];
    path_in(path, sizeof path, dir, "x.ckpt");
    uint8_t a[3000], b[777];
    for (size_t i = 0; i < sizeof a; i++) a[i] = (uint8_t)(i * 7);
    for (size_t i = 0; i < sizeof b; i++) b[i] = (uint8_t)(i * 13 + 1);
    CkptError err = {{0}};
    g_syncs_file = g_syncs_dir = 0;
    bool ok = expect_true(lesson_write_atomic(path, a, sizeof a, &err) == 0,
                          "lesson_write_atomic returned -1: %s", err.msg) &&
              expect_true(file_hash(path) == ckpt_hash64(a, sizeof a, 1),
                          "%s does not hold exactly the bytes given", path) &&
              expect_true(g_syncs_file >= 1, "the file was never fsync'ed: without it, after a "
                          "power loss the rename can be on disk before the data, and the "
                          "checkpoint is empty (fsync(fd) before close and rename)") &&
              expect_true(g_syncs_dir >= 1, "the directory was never fsync'ed: the rename "
                          "itself may then not survive a power loss (open the directory with "
                          "O_RDONLY | O_DIRECTORY, fsync it, close it)");
    /* a longer temporary file left by a write that was killed: it must not show through */
    char stale[600];
    snprintf(stale, sizeof stale, "%s.tmp", path);
    uint8_t junk[5000];
    memset(junk, 0xEE, sizeof junk);
    FILE *f = fopen(stale, "wb");
    bool wrote = f && fwrite(junk, 1, sizeof junk, f) == sizeof junk;
    if (f) fclose(f);
    ok = ok && expect_true(wrote, "test setup: cannot write %s", stale) &&
         expect_true(lesson_write_atomic(path, b, sizeof b, &err) == 0,
                     "the second write returned -1: %s", err.msg) &&
         expect_true(file_hash(path) == ckpt_hash64(b, sizeof b, 1),
                     "after a second, shorter write over a longer stale %s the file does not "
                     "hold exactly its bytes: open the temporary file with O_TRUNC", stale);
    if (ok && exists(stale)) remove(stale); /* another temporary name: not a fault */
    ok = ok && expect_true(only_file(dir, "x.ckpt"), "leftover temporary files: rename the "
                                                     "temporary file, do not copy it");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_write(void) { return with_tmpdir("grade03", body_write); }

static int body_write_error(const char *dir) {
    char path[512];
    path_in(path, sizeof path, dir, "no/such/dir/x.ckpt");
    uint8_t a[16] = {1};
    CkptError err;
    memset(err.msg, 0, sizeof err.msg);
    int rc = lesson_write_atomic(path, a, sizeof a, &err);
    bool ok = expect_true(rc == -1, "writing into a missing directory returned %d, expected -1", rc) &&
              expect_true(err.msg[0] != '\0', "err->msg is empty: say what failed and where");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_write_error(void) { return with_tmpdir("grade03", body_write_error); }

/* Waits up to seconds for pid; false (and the child killed) on timeout. */
static bool wait_pid(pid_t pid, double seconds, int *status) {
    double end = now_seconds() + seconds;
    while (now_seconds() < end) {
        if (waitpid(pid, status, WNOHANG) == pid) return true;
        usleep(2000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, status, 0);
    return false;
}

/* Waits until the file at path contains text, or pid ends, or time runs out. */
static bool wait_text(const char *path, const char *text, pid_t pid, double seconds) {
    double end = now_seconds() + seconds;
    static char buf[65536];
    while (now_seconds() < end) {
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = '\0';
            if (strstr(buf, text)) return true;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) return false;
        usleep(2000);
    }
    return false;
}

static void print_file(const char *title, const char *path) {
    static char buf[8192];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    printf("%s:\n%s\n", title, buf);
}

static int body_write_killed(const char *dir) {
    char path[512], log[512];
    path_in(path, sizeof path, dir, "x.ckpt");
    path_in(log, sizeof log, dir, "log");
    uint8_t old[4000], fresh[9000];
    for (size_t i = 0; i < sizeof old; i++) old[i] = (uint8_t)(i * 3);
    for (size_t i = 0; i < sizeof fresh; i++) fresh[i] = (uint8_t)(i * 5 + 2);
    if (!write_bytes(path, old, sizeof old)) return CHECK_FAIL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(log, "w", stderr)) _exit(2);
        setenv("COURSE_CKPT_STALL", "1", 1); /* the first ckpt_write_all stops halfway */
        CkptError err;
        lesson_write_atomic(path, fresh, sizeof fresh, &err);
        _exit(0);
    }
    bool stalled = wait_text(log, "COURSE_CKPT_STALL", pid, 20);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (!stalled) {
        print_file("the writer's stderr", log);
        printf("the write never stalled: write the whole buffer with one call to "
               "ckpt_write_all(fd, buf, len), where the test hook stops it halfway\n");
        return CHECK_FAIL;
    }
    bool ok = expect_true(file_hash(path) == ckpt_hash64(old, sizeof old, 1),
                          "killed (kill -9) in the middle of the write, %s no longer holds the "
                          "old file: write to a temporary file and rename it over the old one "
                          "only when it is complete", path);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_write_killed(void) { return with_tmpdir("grade03", body_write_killed); }

/* ---------------------------------------------------------------- TODO 3.3 */

static uint64_t g_saved_parts[2][PARTS]; /* of the checkpoints of steps 10 and 20 */

/* Two checkpoints in dir, at steps 10 (state from seed 10) and 20 (seed 20); the
 * run is then scrambled with seed 99. Their state hashes go to h10 and h20. */
static Run *two_checkpoints(const char *dir, uint64_t *h10, uint64_t *h20) {
    Run *r = lite_new(dir);
    ref_describe(&r->ckpt, r);
    uint64_t seeds[2] = {10, 20}, *h[2] = {h10, h20};
    for (int k = 0; k < 2; k++) {
        scramble(r, seeds[k]);
        *h[k] = state_hash(r);
        state_parts(r, g_saved_parts[k]);
        CkptError err;
        if (ckpt_store_save(&r->store, &r->ckpt, (int64_t)seeds[k], NULL, 0, &err) != 0) {
            printf("test setup: %s\n", err.msg);
            exit(CHECK_FAIL);
        }
    }
    scramble(r, 99);
    return r;
}

static bool expect_resumed(Run *r, uint64_t want, int64_t step) {
    char differ[512] = "";
    uint64_t part[PARTS];
    state_parts(r, part);
    for (int k = 0; k < PARTS; k++)
        if (part[k] != g_saved_parts[step == 20][k])
            snprintf(differ + strlen(differ), sizeof differ - strlen(differ), "%s%s",
                     *differ ? "; " : "", PART_NAMES[k]);
    bool ok = expect_true(state_hash(r) == want,
                          "after lesson_resume the run is not in the state of the checkpoint of "
                          "step %lld; what differs: %s", (long long)step,
                          *differ ? differ : "something the manifest holds besides these");
    /* the sampler must also hand out the same indices as the one that was saved */
    Sampler ref;
    sampler_init(&ref, 50, true, r->ts.sampler_seed);
    sampler_restore(&ref, (int)r->ts.sampler_epoch, (int)r->ts.sampler_position);
    int a[50], b[50];
    int na = sampler_next(&r->sampler, a, 50), nb = sampler_next(&ref, b, 50);
    ok = ok && expect_true(na == nb && memcmp(a, b, sizeof(int) * (size_t)na) == 0,
                           "the restored sampler hands out other indices than the saved one: "
                           "restore its seed, then sampler_restore(epoch, position)");
    return ok;
}

static int body_resume_newest(const char *dir) {
    uint64_t h10, h20;
    Run *r = two_checkpoints(dir, &h10, &h20);
    bool ok = expect_true(lesson_resume(r), "lesson_resume returned false with two checkpoints "
                                            "in the directory") &&
              expect_resumed(r, h20, 20);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_resume_newest(void) { return with_tmpdir("grade03", body_resume_newest); }

static int body_resume_fallback(const char *dir) {
    uint64_t h10, h20;
    Run *r = two_checkpoints(dir, &h10, &h20);
    char p10[512], p20[512];
    ckpt_store_path(&r->store, 10, p10, sizeof p10);
    ckpt_store_path(&r->store, 20, p20, sizeof p20);
    flip_byte(p20, 5000); /* inside a tensor: only the checksum can tell */
    uint64_t f10 = file_hash(p10), f20 = file_hash(p20);
    bool ok = expect_true(lesson_resume(r), "lesson_resume returned false although the "
                                            "checkpoint of step 10 is fine") &&
              expect_resumed(r, h10, 10) &&
              expect_true(file_hash(p10) == f10 && file_hash(p20) == f20,
                          "the checkpoint files changed on disk: loading must only read");
    if (!ok) printf("hint: the newest checkpoint (step 20) is damaged; skip it with a warning "
                    "and load the one before\n");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_resume_fallback(void) { return with_tmpdir("grade03", body_resume_fallback); }

static int body_resume_empty(const char *dir) {
    Run *r = lite_new(dir);
    ref_describe(&r->ckpt, r);
    scramble(r, 31);
    uint64_t before = state_hash(r);
    bool ok = expect_true(!lesson_resume(r), "lesson_resume returned true in an empty directory") &&
              expect_true(state_hash(r) == before, "lesson_resume changed the run although "
                                                   "there was nothing to load");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_resume_empty(void) { return with_tmpdir("grade03", body_resume_empty); }

static const char *g_dir;
static void resume_all_bad(void *arg) {
    (void)arg;
    uint64_t h10, h20;
    Run *r = two_checkpoints(g_dir, &h10, &h20);
    char p[512];
    ckpt_store_path(&r->store, 10, p, sizeof p);
    flip_byte(p, 100);
    ckpt_store_path(&r->store, 20, p, sizeof p);
    if (truncate(p, 1000) != 0) printf("test setup: truncate %s failed\n", p);
    lesson_resume(r);
    printf("lesson_resume returned\n");
}

static int body_resume_all_bad(const char *dir) {
    g_dir = dir;
    ChildResult res;
    run_child(resume_all_bad, NULL, &res);
    bool ok = expect_exit("lesson_resume with only damaged checkpoints", &res, 1,
                          "ckpt-000000000020.ckpt", "ckpt-000000000010.ckpt", (const char *)NULL);
    if (!ok) printf("hint: print each failure (err.msg names the file), then fatal(): starting "
                    "afresh would overwrite a run someone may want to repair\n");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_resume_all_bad(void) { return with_tmpdir("grade03", body_resume_all_bad); }

/* ---------------------------------------------------------------- TODO 3.4 */

static int check_signals(void) {
    lesson_install_stop_handlers();
    bool ok = true;
    int sigs[2] = {SIGUSR1, SIGTERM};
    for (int k = 0; k < 2 && ok; k++) {
        lesson_stop_signal = 0;
        raise(sigs[k]); /* with no handler, this ends the process: the check fails */
        ok = expect_true(lesson_stop_signal == sigs[k], "after %s, lesson_stop_signal is %d, "
                         "expected %d (the signal's number)", strsignal(sigs[k]),
                         (int)lesson_stop_signal, sigs[k]);
        /* without SA_RESTART a signal during read() or write() makes it fail with EINTR,
         * and a checkpoint write or a data load fails for no reason */
        struct sigaction now;
        ok = ok && expect_true(sigaction(sigs[k], NULL, &now) == 0 && (now.sa_flags & SA_RESTART),
                               "the handler of %s was installed without SA_RESTART: a system "
                               "call it interrupts fails with EINTR instead of going on",
                               strsignal(sigs[k]));
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The checkpoint's sampler count against the run's: another --train-limit or data set
 * would resume into a sampler of another size, and must stop with a message. */
static const char *g_count_dir;
static void resume_other_count(void *arg) {
    (void)arg;
    uint64_t h10, h20;
    Run *r = two_checkpoints(g_count_dir, &h10, &h20);
    sampler_free(&r->sampler);
    sampler_init(&r->sampler, 60, true, 7); /* the checkpoints hold a sampler of 50 */
    lesson_resume(r);
    printf("lesson_resume returned\n");
}
static int body_resume_other_count(const char *dir) {
    g_count_dir = dir;
    ChildResult res;
    run_child(resume_other_count, NULL, &res);
    bool ok = expect_exit("resuming 50 examples' checkpoints with 60 examples", &res, 1,
                          (const char *)NULL);
    if (!ok) printf("hint: after a checkpoint loads, compare run->ts.sampler_count with "
                    "run->sampler.count and fatal() when they differ (another --train-limit or "
                    "data set: the saved position would point into another order)\n");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_resume_other_count(void) { return with_tmpdir("grade03", body_resume_other_count); }

/* ---------------------------------------------------------------- TODO 3.5 */

static int count_checkpoints(const Run *r) {
    int64_t steps[64];
    return ckpt_store_list(&r->store, steps, 64);
}

static int body_after_step(const char *dir) {
    Run *r = lite_new(dir);
    ref_describe(&r->ckpt, r);
    r->store.keep = 100;
    r->cfg.checkpoint_every = 3;
    lesson_stop_signal = 0;
    bool ok = true;
    for (int step = 1; step <= 4 && ok; step++) { /* due at 3 */
        r->ts.global_step = step;
        r->steps_this_run = step;
        bool stop = lesson_after_step(r);
        ok = expect_true(!stop, "step %d: asked to stop, but no stop was requested", step) &&
             expect_true(count_checkpoints(r) == (step >= 3), "after step %d with "
                         "--checkpoint-every 3 there are %d checkpoints, expected %d", step,
                         count_checkpoints(r), step >= 3);
    }
    r->ts.global_step = 5;
    lesson_stop_signal = SIGUSR1;
    ok = ok && expect_true(lesson_after_step(r), "step 5 after SIGUSR1: not told to stop") &&
         expect_true(count_checkpoints(r) == 2, "a stop requested at step 5 wrote no checkpoint");
    lesson_stop_signal = 0;
    r->ts.global_step = 6; /* due and stopping (--stop-after-steps 6): one save */
    r->steps_this_run = 6;
    r->cfg.stop_after_steps = 6;
    int saves = r->saves;
    ok = ok && expect_true(lesson_after_step(r), "--stop-after-steps 6 after 6 steps of this "
                                                 "run: not told to stop") &&
         expect_true(count_checkpoints(r) == 3 && r->saves == saves + 1,
                     "a step where a checkpoint is due and a stop is requested saved %d times, "
                     "expected once", r->saves - saves);
    if (!ok) printf("hint: after a step, save once when a checkpoint is due (the global step is a "
                    "multiple of --checkpoint-every) or a stop was asked for (a signal, "
                    "--stop-after-steps), and return true only for a stop\n");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_after_step(void) { return with_tmpdir("grade03", body_after_step); }

/* ---------------------------------------------------------------- the whole program */

enum { MAX_ARGS = 40 };

/* Starts lesson_main in a child with the small synthetic run and extra arguments
 * (NULL-terminated); its output goes to dir/<log>. */
static pid_t spawn(const char *dir, const char *log, const char *stall, int epochs,
                   const char *const *extra) {
    static char ckdir[512], logpath[512], ep[16];
    path_in(ckdir, sizeof ckdir, dir, "ckpt");
    path_in(logpath, sizeof logpath, dir, log);
    snprintf(ep, sizeof ep, "%d", epochs);
    const char *args[MAX_ARGS] = {"train", "--dataset", "synthetic", "--train-limit", "200",
                                  "--test-limit", "100", "--batch-size", "20", "--threads", "1",
                                  "--epochs", ep, "--checkpoint-every", "3",
                                  "--checkpoint-dir", ckdir};
    int argc = 17;
    for (int i = 0; extra && extra[i] && argc < MAX_ARGS - 1; i++) args[argc++] = extra[i];
    args[argc] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(logpath, "a", stdout) || dup2(fileno(stdout), STDERR_FILENO) < 0) _exit(2);
        setvbuf(stdout, NULL, _IONBF, 0);
        if (stall) setenv("COURSE_CKPT_STALL", stall, 1);
        unsetenv("COURSE_RUN_DIR");
        _exit(lesson_main(argc, (char **)args));
    }
    return pid;
}

/* The longest one small run may take: the solution's take well under a second, so
 * this is many times that, and a run that hangs is reported in seconds, not minutes. */
enum { RUN_LIMIT_S = 15 };

/* Runs it to the end; the exit status (-1: it hung or was killed by a signal, which it
 * says). */
static int run_main(const char *dir, const char *log, int epochs, const char *const *extra) {
    pid_t pid = spawn(dir, log, NULL, epochs, extra);
    int status;
    if (!wait_pid(pid, RUN_LIMIT_S, &status)) {
        printf("a run hung: stopped after %d s (the solution's runs take under 1 s). Look for "
               "a loop that cannot end: a resumed sampler whose position never reaches its "
               "count (TODO 3.3), or a wait on a flag that the signal handler never sets "
               "(TODO 3.4-3.5)\n", RUN_LIMIT_S);
        return -1;
    }
    if (WIFSIGNALED(status)) {
        printf("a run was killed by signal %d (%s)\n", WTERMSIG(status), strsignal(WTERMSIG(status)));
        return -1;
    }
    return WEXITSTATUS(status);
}

/* The last "parameter digest: X" in dir/log, or "" */
static const char *digest_in(const char *dir, const char *log) {
    static char digest[64];
    char path[512], line[512];
    path_in(path, sizeof path, dir, log);
    digest[0] = '\0';
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "parameter digest: ", 18) == 0)
            snprintf(digest, sizeof digest, "%.*s", (int)strcspn(line + 18, "\n"), line + 18);
    if (f) fclose(f);
    return digest;
}

static void show_log(const char *dir, const char *log) {
    char path[512];
    path_in(path, sizeof path, dir, log);
    print_file(log, path);
}

/* The digest of a run that never stops (in its own subdirectory), or NULL. */
static const char *straight_digest(const char *dir, int epochs, char *out, size_t cap) {
    char sub[512];
    make_dir_in(sub, sizeof sub, dir, "straight");
    if (run_main(sub, "log", epochs, NULL) != 0 || !*digest_in(sub, "log")) {
        printf("the run without stops did not finish with a parameter digest\n");
        show_log(sub, "log");
        return NULL;
    }
    snprintf(out, cap, "%s", digest_in(sub, "log"));
    return out;
}

static bool expect_same_digest(const char *dir, const char *log, const char *want, const char *what) {
    const char *got = digest_in(dir, log);
    if (strcmp(got, want) == 0) return true;
    printf("%s: parameter digest %s, but the run without stops ends with %s\n", what,
           *got ? got : "(none)", want);
    show_log(dir, log);
    return false;
}

static int body_stop_resume(const char *dir) {
    char want[64];
    if (!straight_digest(dir, 2, want, sizeof want)) return CHECK_FAIL;
    /* 10 steps per epoch: stop mid-epoch (7), at the epoch's last step (10), mid-epoch
     * of the second (15), then run to the end */
    const char *legs[][3] = {{"--stop-after-steps", "7", NULL},
                             {"--resume", "--stop-after-steps", "3"},
                             {"--resume", "--stop-after-steps", "5"},
                             {"--resume", NULL, NULL}};
    for (int k = 0; k < 4; k++) {
        const char *extra[4] = {legs[k][0], legs[k][1], legs[k][2], NULL};
        int rc = run_main(dir, "log", 2, extra);
        int want_rc = k < 3 ? EXIT_REQUEUE : 0;
        if (!expect_true(rc == want_rc, "leg %d (%s %s %s): exit status %d, expected %d", k + 1,
                         extra[0], extra[1] ? extra[1] : "", extra[2] ? extra[2] : "", rc, want_rc)) {
            show_log(dir, "log");
            return CHECK_FAIL;
        }
    }
    return expect_same_digest(dir, "log", want, "stopped at steps 7, 10 and 15, resumed each time")
               ? CHECK_PASS : CHECK_FAIL;
}
static int check_stop_resume(void) { return with_tmpdir("grade03", body_stop_resume); }

static int body_signal(const char *dir) {
    char want[64];
    if (!straight_digest(dir, 4, want, sizeof want)) return CHECK_FAIL;
    char log[512];
    path_in(log, sizeof log, dir, "log");
    pid_t pid = spawn(dir, "log", NULL, 4, NULL);
    if (!wait_text(log, "epoch  train loss", pid, 30)) { /* set up, about to train */
        printf("the program ended or hung before training started\n");
        kill(pid, SIGKILL);
        show_log(dir, "log");
        return CHECK_FAIL;
    }
    kill(pid, SIGUSR1);
    int status;
    bool ended = wait_pid(pid, RUN_LIMIT_S, &status);
    char hung[64];
    snprintf(hung, sizeof hung, "hung: it did not end within %d s", RUN_LIMIT_S);
    if (!expect_true(ended && WIFEXITED(status) && WEXITSTATUS(status) == EXIT_REQUEUE,
                     "after SIGUSR1 the program %s, expected exit status %d (requeue)",
                     !ended ? hung : WIFSIGNALED(status) ? "was killed by the signal"
                                                         : "exited with another status",
                     EXIT_REQUEUE)) {
        if (ended && WIFEXITED(status)) printf("exit status %d\n", WEXITSTATUS(status));
        show_log(dir, "log");
        return CHECK_FAIL;
    }
    const char *extra[] = {"--resume", NULL};
    int rc = run_main(dir, "log", 4, extra);
    bool ok = expect_true(rc == 0, "the resumed run exited with %d", rc) &&
              expect_same_digest(dir, "log", want, "stopped by SIGUSR1, then resumed");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_signal(void) { return with_tmpdir("grade03", body_signal); }

/* A stop whose checkpoint cannot be written must not ask for a requeue: the next
 * stop would fail the same way, forever. A directory where the checkpoint of step 6
 * belongs makes that save fail, even for root. */
static bool log_has(const char *dir, const char *log, const char *text) {
    char path[512], line[1024];
    path_in(path, sizeof path, dir, log);
    FILE *f = fopen(path, "r");
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) found = strstr(line, text) != NULL;
    if (f) fclose(f);
    return found;
}

static int body_stop_unsaved(const char *dir) {
    char want[64], blocker[512];
    if (!straight_digest(dir, 2, want, sizeof want)) return CHECK_FAIL;
    const char *first[] = {"--stop-after-steps", "3", NULL};
    const char *second[] = {"--resume", "--stop-after-steps", "3", NULL};
    const char *last[] = {"--resume", NULL};
    int rc = run_main(dir, "log", 2, first);
    if (!expect_true(rc == EXIT_REQUEUE, "the first stop (step 3) exited with %d, expected %d", rc,
                     EXIT_REQUEUE)) {
        show_log(dir, "log");
        return CHECK_FAIL;
    }
    path_in(blocker, sizeof blocker, dir, "ckpt/ckpt-000000000006.ckpt");
    if (mkdir(blocker, 0700) != 0) {
        printf("grader: cannot create %s to make the save fail: %s\n", blocker, strerror(errno));
        return CHECK_FAIL;
    }
    rc = run_main(dir, "log", 2, second); /* its --resume passes over the directory (TODO 3.3) */
    bool ok = expect_true(rc == 1 && log_has(dir, "log", "without a checkpoint of this step"),
                          "a stop at step 6 whose checkpoint could not be written exited with %d; "
                          "expected 1 and the message \"... without a checkpoint of this step ...\" "
                          "(stop_status in train.c), not %d: a requeue would fail the same way. "
                          "(The run resumed past a directory named like a checkpoint: TODO 3.3 "
                          "must skip what does not load.)", rc, EXIT_REQUEUE);
    rmdir(blocker);
    if (ok) {
        rc = run_main(dir, "log", 2, last);
        ok = expect_true(rc == 0, "--resume after the failed stop exited with %d", rc) &&
             expect_same_digest(dir, "log", want, "resumed from step 3 after the failed stop");
    }
    if (!ok) show_log(dir, "log");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_stop_unsaved(void) { return with_tmpdir("grade03", body_stop_unsaved); }

static int body_kill_mid_write(const char *dir) {
    char want[64];
    if (!straight_digest(dir, 2, want, sizeof want)) return CHECK_FAIL;
    char log[512];
    path_in(log, sizeof log, dir, "log");
    pid_t pid = spawn(dir, "log", "2", 2, NULL); /* the 2nd write (step 6) stalls */
    bool stalled = wait_text(log, "COURSE_CKPT_STALL", pid, 30);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (!stalled) {
        printf("the second checkpoint write never stalled (write through ckpt_write_all)\n");
        show_log(dir, "log");
        return CHECK_FAIL;
    }
    /* the checkpoint of step 3 must load, with the library, as it was */
    char ckdir[512];
    path_in(ckdir, sizeof ckdir, dir, "ckpt");
    Run *r = lite_new(NULL); /* then the program's model: 1x28x28, 10 classes */
    cnn_free(&r->model);
    adam_free(&r->opt);
    Rng init;
    rng_seed(&init, 1, 0);
    cnn_init(&r->model, 1, 28, 28, 10, 1, &init);
    adam_init(&r->opt, &r->model.params, 1e-3f);
    ref_describe(&r->ckpt, r);
    ckpt_add_u64(&r->ckpt, "data.fingerprint", &r->ckpt_fingerprint); /* as train.c adds it */
    ckpt_store_init(&r->store, ckdir, 2);
    char loaded[CKPT_PATH_MAX] = "";
    CkptError err;
    int rc = ckpt_store_load_latest(&r->store, &r->ckpt, loaded, sizeof loaded, &err);
    bool ok = expect_true(rc == 1, "after kill -9 in the middle of a checkpoint write, no "
                                   "checkpoint loads: %s", rc ? err.msg : "none there") &&
              expect_true(r->ts.global_step == 3, "the newest checkpoint that loads is of step "
                          "%lld, expected 3 (%s)", (long long)r->ts.global_step, loaded);
    const char *extra[] = {"--resume", NULL};
    int code = ok ? run_main(dir, "log", 2, extra) : -1;
    ok = ok && expect_true(code == 0, "the resumed run exited with %d", code) &&
         expect_same_digest(dir, "log", want, "killed during the write of step 6, resumed");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_kill_mid_write(void) { return with_tmpdir("grade03", body_kill_mid_write); }

static int body_damaged(const char *dir) {
    char want[64];
    if (!straight_digest(dir, 2, want, sizeof want)) return CHECK_FAIL;
    const char *stop[] = {"--stop-after-steps", "7", NULL}; /* leaves steps 6 and 7 */
    int rc = run_main(dir, "log", 2, stop);
    if (!expect_true(rc == EXIT_REQUEUE, "--stop-after-steps 7 exited with %d", rc)) {
        show_log(dir, "log");
        return CHECK_FAIL;
    }
    char p6[512], p7[512];
    path_in(p6, sizeof p6, dir, "ckpt/ckpt-000000000006.ckpt");
    path_in(p7, sizeof p7, dir, "ckpt/ckpt-000000000007.ckpt");
    if (!expect_true(exists(p6) && exists(p7), "after a stop at step 7 with --checkpoint-every 3 "
                                               "and --keep 2, expected checkpoints of steps 6 and 7"))
        return CHECK_FAIL;
    /* both damaged: a clear error, exit 1, the files left as they are */
    uint8_t *good6;
    size_t len6;
    CkptError err;
    if (ckpt_read_file(p6, &good6, &len6, &err) != 0 || truncate(p7, 100000) != 0)
        return CHECK_FAIL;
    flip_byte(p6, 3000);
    uint64_t f6 = file_hash(p6), f7 = file_hash(p7);
    const char *resume[] = {"--resume", NULL};
    char bad_log[] = "log-damaged";
    rc = run_main(dir, bad_log, 2, resume);
    char path[512], text[16384] = "";
    path_in(path, sizeof path, dir, bad_log);
    FILE *f = fopen(path, "r");
    if (f) text[fread(text, 1, sizeof text - 1, f)] = '\0', fclose(f);
    bool ok = expect_true(rc == 1, "--resume with only damaged checkpoints exited with %d, "
                                   "expected 1 (a clear error)", rc) &&
              expect_true(strstr(text, "truncated") && strstr(text, "checksum") &&
                              strstr(text, "ckpt-000000000007.ckpt"),
                          "the messages should say which file is truncated and which fails its "
                          "checksum") &&
              expect_true(file_hash(p6) == f6 && file_hash(p7) == f7,
                          "the damaged files changed on disk: a failed load must not touch them");
    if (!ok) {
        show_log(dir, bad_log);
        return CHECK_FAIL;
    }
    /* step 6 repaired, 7 still truncated: the resume falls back to 6 and ends the same */
    if (!write_bytes(p6, good6, len6)) return CHECK_FAIL;
    rc = run_main(dir, "log", 2, resume);
    ok = expect_true(rc == 0, "--resume with a truncated newest checkpoint exited with %d, "
                              "expected to fall back to the one before", rc) &&
         expect_same_digest(dir, "log", want, "newest checkpoint truncated, resumed from the one before");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_damaged(void) { return with_tmpdir("grade03", body_damaged); }

int main(void) {
    check_begin("lesson 03: checkpointing");
    check_run("TODO 3.1", "the checkpoint holds the parameters, Adam's m, v and t, and the training state", check_describe, 30);
    check_run("TODO 3.1", "lesson_capture_state copies the Rng and the sampler into the training state", check_capture, 30);
    check_run("TODO 3.2", "the atomic write: exact bytes, file and directory synced, a stale longer .tmp truncated, no temporary file left", check_write, 30);
    check_run("TODO 3.2", "kill -9 in the middle of the write: the old file is intact", check_write_killed, 30);
    check_run("TODO 3.2", "a write into a missing directory returns -1 with a message", check_write_error, 30);
    check_run("TODO 3.3", "resume loads the newest checkpoint and restores the sampler and the Rng", check_resume_newest, 30);
    check_run("TODO 3.3", "a damaged newest checkpoint: resume falls back to the one before, files untouched", check_resume_fallback, 30);
    check_run("TODO 3.3", "an empty directory: resume returns false and changes nothing", check_resume_empty, 30);
    check_run("TODO 3.3", "only damaged checkpoints: exit 1, naming each file", check_resume_all_bad, 30);
    check_run("TODO 3.3", "a checkpoint of another data set size: resume stops with a message", check_resume_other_count, 30);
    check_run("TODO 3.4", "SIGUSR1 and SIGTERM set lesson_stop_signal, with SA_RESTART, and the program lives on", check_signals, 30);
    check_run("TODO 3.5", "after a step: save when due or stopping (once), and say when to stop", check_after_step, 30);
    check_run("TODO 3.1-3.5", "stop at steps 7, 10, 15 and resume: bit-identical to a run without stops", check_stop_resume, 120);
    check_run("TODO 3.4-3.5", "SIGUSR1 while training: checkpoint, exit 75, --resume ends bit-identical", check_signal, 120);
    check_run("TODO 3.3-3.5", "a stop whose checkpoint cannot be written exits 1, not 75; --resume then ends bit-identical", check_stop_unsaved, 120);
    check_run("TODO 3.2-3.3", "kill -9 during a checkpoint write: the previous one loads, --resume ends bit-identical", check_kill_mid_write, 120);
    check_run("TODO 3.3", "truncated and corrupt checkpoints: a clear error, files untouched, then fall back", check_damaged, 120);
    return check_end();
}
