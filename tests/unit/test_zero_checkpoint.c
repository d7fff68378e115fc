/* Unit tests of lib/parallel/zero_checkpoint on one rank (the single backend; the runs
 * across world sizes are tests/dist/test_zero_ckpt): a checkpoint saved at one stage
 * loads at another and at stage 0 bit for bit, with SGD too; a load that fails changes
 * neither the model nor the caller's scalars; an unfinished save is no checkpoint (none
 * alone, skipped after a complete one); keep-K rotation removes older and
 * unfinished checkpoints, leaves later ones, and a save over an old try's files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fs.h"
#include "core/rng.h"
#include "dist/dist.h"
#include "framework/check.h"
#include "models/transformer.h"
#include "parallel/zero_checkpoint.h"

enum { VOCAB = 23, B = 2, T = 5 };

static const TransformerConfig CONFIG = {.vocab = VOCAB, .d_model = 8, .heads = 2, .d_ff = 12,
                                         .layers = 1, .max_len = 16, .dropout = 0.0f};

typedef struct {
    Transformer m;
    Zero z;
    ZeroCkpt c;
    int64_t position;   /* a scalar of the caller's */
} Run;

static void run_init(Run *r, Dist *d, int stage, bool sgd, const char *dir, int keep) {
    memset(r, 0, sizeof *r);
    transformer_init(&r->m, &CONFIG, B, T, 3);
    zero_init(&r->z, d, &r->m.blocks, stage, &ZERO_LIBRARY);
    if (sgd) zero_optimizer_sgd(&r->z, 0.1f, 0.9f, 0.01f);
    else zero_optimizer_adamw(&r->z, 1e-2f, 0.01f);
    zero_ckpt_init(&r->c, dir, keep);
    ckpt_add_i64(&r->c.scalars, "sampler.position", &r->position);
}

static void run_free(Run *r) {
    zero_ckpt_free(&r->c);
    zero_free(&r->z);
    transformer_free(&r->m);
}

static void train(Run *r, int steps) {
    for (int s = 0; s < steps; s++) {
        Rng rng;
        rng_seed(&rng, 40 + (uint64_t)s, 1);
        int tokens[B * T], targets[B * T];
        for (int i = 0; i < B * T; i++) tokens[i] = (int)rng_below(&rng, VOCAB);
        for (int i = 0; i < B * T; i++) targets[i] = (int)rng_below(&rng, VOCAB);
        zero_begin_step(&r->z);
        transformer_forward_backward(&r->m, tokens, targets);
        zero_finish_gradients(&r->z);
        zero_step(&r->z);
    }
}

/* The whole parameters and optimiser state [3 psi] (SGD: the third part zero). */
static float *state_of(Run *r) {
    const int64_t n = r->z.psi;
    float *s = xcalloc((size_t)(3 * n), sizeof *s);
    zero_full_params(&r->z, s);
    zero_full_state(&r->z, 0, s + n);
    if (r->z.optimizer == ZERO_ADAMW) zero_full_state(&r->z, 1, s + 2 * n);
    return s;
}

static bool same(const float *a, const float *b, int64_t n, const char *what) {
    return expect_true(memcmp(a, b, (size_t)n * sizeof *a) == 0, "%s: not bit for bit", what);
}

/* ------------------------------------------------------------ round trips */

static int body_round_trip(const char *dir) {
    Dist *d = dist_init(&(DistOptions){.backend = "single"});
    bool ok = true;
    for (int sgd = 0; sgd <= 1; sgd++) {
        Run a;
        run_init(&a, d, 1, sgd, dir, 2);
        train(&a, 2);
        a.position = 17;
        CkptError err;
        ok = ok && expect_true(zero_ckpt_save(&a.c, &a.z, 2, &err) == 0, "save: %s", err.msg);
        float *want = state_of(&a);
        const int64_t n = 3 * a.z.psi;
        for (int stage = 1; stage <= 3; stage++) {
            Run b;
            run_init(&b, d, stage, sgd, dir, 2);
            int64_t step = -1;
            ok = ok && expect_true(zero_ckpt_load_latest(&b.c, &b.z, &step, &err) == 1 && step == 2,
                                   "load at stage %d: step %lld: %s", stage, (long long)step, err.msg);
            float *got = state_of(&b);
            ok = ok && same(got, want, n, sgd ? "SGD's parameters and momentum" : "AdamW's state") &&
                 expect_true(b.position == 17 && (sgd ? b.z.sgd.step : b.z.adam.step) == 2,
                             "the caller's scalar %lld, the optimiser's step", (long long)b.position);
            xfree(got);
            run_free(&b);
        }
        /* stage 0: the plain model and optimiser read every piece */
        Transformer p;
        transformer_init(&p, &CONFIG, B, T, 9);
        Adam adam;
        Sgd sg;
        if (sgd) sgd_init(&sg, &p.params, 0.1f, 0.9f, 0.01f);
        else adamw_init(&adam, &p.params, 1e-2f, 0.01f);
        ZeroCkpt c;
        zero_ckpt_init(&c, dir, 2);
        int64_t step = -1, position = 0;
        ckpt_add_i64(&c.scalars, "sampler.position", &position);
        ok = ok && expect_true(zero_ckpt_load_latest_plain(&c, d, &p.blocks, sgd ? NULL : &adam,
                                                           sgd ? &sg : NULL, &step, &err) == 1,
                               "plain load: %s", err.msg);
        const int64_t psi = p.params.total;
        ok = ok && same(p.params.values.data, want, psi, "stage 0's parameters") &&
             same(sgd ? sg.buf.data : adam.m.data, want + psi, psi, "stage 0's first state") &&
             (sgd || same(adam.v.data, want + 2 * psi, psi, "stage 0's Adam v")) &&
             expect_true(position == 17, "stage 0: the caller's scalar %lld", (long long)position);
        /* and saved from stage 0, loaded at stage 3 */
        ok = ok && expect_true(zero_ckpt_save_plain(&c, d, &p.blocks, sgd ? NULL : &adam,
                                                    sgd ? &sg : NULL, 5, &err) == 0,
                               "plain save: %s", err.msg);
        Run b;
        run_init(&b, d, 3, sgd, dir, 2);
        ok = ok && expect_true(zero_ckpt_load_latest(&b.c, &b.z, &step, &err) == 1 && step == 5,
                               "stage 3 from stage 0's step 5: %s", err.msg);
        float *got = state_of(&b);
        ok = ok && same(got, want, n, "stage 0 -> stage 3");
        xfree(got);
        run_free(&b);
        zero_ckpt_free(&c);
        if (sgd) sgd_free(&sg);
        else adam_free(&adam);
        transformer_free(&p);
        xfree(want);
        run_free(&a);
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'/zero-*", dir);
        ok = ok && expect_true(system(cmd) == 0, "%s", cmd);
    }
    dist_finalize(d);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_round_trip(void) { return with_tmpdir("test_zckpt", body_round_trip); }

/* ------------------------------------------------------------ failures */

static int body_failed_load(const char *dir) {
    Dist *d = dist_init(&(DistOptions){.backend = "single"});
    Run a;
    run_init(&a, d, 2, false, dir, 3);
    train(&a, 1);
    CkptError err;
    bool ok = expect_true(zero_ckpt_save(&a.c, &a.z, 1, &err) == 0, "save: %s", err.msg);
    char path[CKPT_PATH_MAX], shard[CKPT_PATH_MAX + 32];
    zero_ckpt_path(&a.c, 1, path, sizeof path);
    snprintf(shard, sizeof shard, "%s/shard-0-of-1.ckpt", path);
    ok = ok && expect_true(truncate(shard, 100) == 0, "truncate %s", shard);
    Run b;
    run_init(&b, d, 3, false, dir, 3);
    b.position = 99;
    float *before = state_of(&b);
    int64_t step = -7;
    const int rc = zero_ckpt_load_latest(&b.c, &b.z, &step, &err);
    float *after = state_of(&b);
    ok = ok && expect_true(rc == -1 && strstr(err.msg, "none of the 1 sharded checkpoints") &&
                           strstr(err.msg, "shard-0-of-1.ckpt is truncated"), "rc %d: %s", rc, err.msg) &&
         same(after, before, 3 * b.z.psi, "the model after a failed load") &&
         expect_true(b.position == 99 && step == -7 && b.z.adam.step == 0,
                     "a failed load changed the caller's scalar (%lld) or step (%lld)",
                     (long long)b.position, (long long)step);
    xfree(before), xfree(after);
    run_free(&b);
    /* an empty directory: nothing to load, 0 */
    Run e;
    char empty[300];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    run_init(&e, d, 1, false, empty, 1);
    ok = ok && expect_true(zero_ckpt_load_latest(&e.c, &e.z, &step, &err) == 0, "an empty directory");
    run_free(&e);
    run_free(&a);
    dist_finalize(d);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_failed_load(void) { return with_tmpdir("test_zckpt", body_failed_load); }

/* ------------------------------------------------------------ unfinished saves */

/* A save killed before its index is no checkpoint: alone, the directory holds none (0,
 * nothing changed: the run starts afresh); before a complete one... after it, the
 * complete one loads (issue 39: a job killed in its first save could never resume). */
static int body_unfinished(const char *dir) {
    Dist *d = dist_init(&(DistOptions){.backend = "single"});
    Run a;
    run_init(&a, d, 3, false, dir, 3);
    train(&a, 1);
    CkptError err;
    bool ok = expect_true(zero_ckpt_save(&a.c, &a.z, 1, &err) == 0, "save: %s", err.msg);
    char cdir[CKPT_PATH_MAX], index[CKPT_PATH_MAX + 32];
    zero_ckpt_path(&a.c, 1, cdir, sizeof cdir);
    snprintf(index, sizeof index, "%s/index.ckpt", cdir);
    ok = ok && expect_true(unlink(index) == 0, "unlink %s", index); /* step 1 never finished */
    Run b;
    run_init(&b, d, 3, false, dir, 3);
    b.position = 99;
    float *before = state_of(&b);
    int64_t step = -7;
    int rc = zero_ckpt_load_latest(&b.c, &b.z, &step, &err);
    float *after = state_of(&b);
    ok = ok && expect_true(rc == 0, "only an unfinished save: rc %d (expected 0: no checkpoint): %s", rc, err.msg) &&
         same(after, before, 3 * b.z.psi, "the model after finding no checkpoint") &&
         expect_true(b.position == 99 && step == -7, "the caller's scalar (%lld) or step (%lld) changed",
                     (long long)b.position, (long long)step) &&
         expect_true(zero_ckpt_newest_complete(&b.c) == -1, "an unfinished save counted as complete");
    xfree(before), xfree(after);
    /* a complete step 2 after it, then an unfinished step 3: step 2 loads */
    train(&a, 1);
    a.position = 2;
    ok = ok && expect_true(zero_ckpt_save(&a.c, &a.z, 2, &err) == 0, "save 2: %s", err.msg);
    float *saved = state_of(&a);
    zero_ckpt_path(&a.c, 3, cdir, sizeof cdir);
    mkdir(cdir, 0755);
    snprintf(index, sizeof index, "%s/shard-0-of-1.ckpt.tmp", cdir);
    FILE *f = fopen(index, "w");
    if (f) {
        fputs("half a shard", f);
        fclose(f);
    }
    rc = zero_ckpt_load_latest(&b.c, &b.z, &step, &err);
    after = state_of(&b);
    ok = ok && expect_true(rc == 1 && step == 2 && b.position == 2, "complete 2, unfinished 3: rc %d, step %lld, "
                           "position %lld (expected 1, 2, 2): %s", rc, (long long)step, (long long)b.position, err.msg) &&
         same(after, saved, 3 * b.z.psi, "the state loaded past the unfinished step 3") &&
         expect_true(zero_ckpt_newest_complete(&b.c) == 2, "the newest complete checkpoint is %lld, not 2",
                     (long long)zero_ckpt_newest_complete(&b.c));
    xfree(saved), xfree(after);
    run_free(&b);
    run_free(&a);
    dist_finalize(d);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_unfinished(void) { return with_tmpdir("test_zckpt", body_unfinished); }

/* ------------------------------------------------------------ rotation */

static bool exists(const ZeroCkpt *c, int64_t step, const char *file) {
    char cdir[CKPT_PATH_MAX], path[CKPT_PATH_MAX + 64];
    zero_ckpt_path(c, step, cdir, sizeof cdir);
    snprintf(path, sizeof path, "%s/%s", cdir, file);
    return access(path, F_OK) == 0;
}

static void touch(const ZeroCkpt *c, int64_t step, const char *file) {
    char cdir[CKPT_PATH_MAX], path[CKPT_PATH_MAX + 64];
    zero_ckpt_path(c, step, cdir, sizeof cdir);
    mkdir(cdir, 0755);
    snprintf(path, sizeof path, "%s/%s", cdir, file);
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
}

static int body_rotation(const char *dir) {
    Dist *d = dist_init(&(DistOptions){.backend = "single"});
    Run a;
    run_init(&a, d, 1, false, dir, 2);
    touch(&a.c, 2, "shard-0-of-1.ckpt");    /* an unfinished save before ours: goes */
    touch(&a.c, 9, "index.ckpt");           /* a later one (a run fell back past it): stays */
    touch(&a.c, 4, "shard-3-of-4.ckpt");    /* an old try at step 4 with 4 ranks: replaced */
    touch(&a.c, 4, "shard-0-of-1.ckpt.tmp");
    touch(&a.c, 4, "index.ckpt");
    CkptError err;
    bool ok = true;
    for (int64_t step = 3; step <= 5; step++)
        ok = ok && expect_true(zero_ckpt_save(&a.c, &a.z, step, &err) == 0, "save %lld: %s",
                               (long long)step, err.msg);
    char cdir[CKPT_PATH_MAX];
    zero_ckpt_path(&a.c, 2, cdir, sizeof cdir);
    ok = ok && expect_true(!fs_is_dir(cdir), "the unfinished %s is still there", cdir) &&
         expect_true(!exists(&a.c, 3, "index.ckpt"), "step 3 is kept beyond keep 2") &&
         expect_true(exists(&a.c, 4, "index.ckpt") && exists(&a.c, 5, "index.ckpt"), "steps 4, 5") &&
         expect_true(!exists(&a.c, 4, "shard-3-of-4.ckpt") && !exists(&a.c, 4, "shard-0-of-1.ckpt.tmp"),
                     "the old try's files at step 4 are still there") &&
         expect_true(exists(&a.c, 9, "index.ckpt"), "the later step 9 was deleted");
    run_free(&a);
    dist_finalize(d);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_rotation(void) { return with_tmpdir("test_zckpt", body_rotation); }

int main(void) {
    check_begin("lib/parallel/zero_checkpoint");
    check_run(NULL, "saved at stage 1 loads at stages 1-3 and 0 bit for bit, stage 0's at 3 (AdamW, SGD)",
              check_round_trip, 60);
    check_run(NULL, "a failed load changes neither the model nor the caller's scalars",
              check_failed_load, 30);
    check_run(NULL, "an unfinished save is no checkpoint: alone none (0), after a complete one skipped",
              check_unfinished, 30);
    check_run(NULL, "keep 2: older and unfinished checkpoints go, later ones stay, a save over an old try",
              check_rotation, 30);
    return check_end();
}
