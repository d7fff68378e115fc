/* lib/parallel/zero_checkpoint with several ranks, two launches (tests/dist/run.sh):
 *   mpirun -n N  test_zero_ckpt save DIR STAGE [--stall-rank R]
 *   mpirun -n N' test_zero_ckpt resume DIR STAGE STEP|none
 *   mpirun -n N' test_zero_ckpt refuse DIR STAGE
 * save trains a small transformer 5 AdamW steps with ZeRO at STAGE (0: plain data
 * parallel), saving after steps 1, 2, 3 (keep 2); rank 0 writes the whole gathered
 * parameters and Adam moments after each save (DIR/expect-S.bin) and at the end
 * (DIR/final.bin): the uninterrupted run. resume loads the newest checkpoint that loads
 * on N' ranks at STAGE; it must be step STEP, its parameters and moments those saved bit
 * for bit, the run's scalars restored (a run that fell back to step 2 saves step 3 again
 * over what is left there); training on to step 5 must equal stage 0 on N' ranks from
 * the saved state bit for bit, and final.bin (bit for bit when N' = N, else within a
 * tolerance: the sums over the ranks differ in order).
 * With STEP none, no checkpoint may load. refuse resumes with another model and
 * another optimiser: both refused by name. --stall-rank R: rank R keeps
 * COURSE_CKPT_STALL (checkpoint_file.h), the others drop it, to kill a save midway.
 * The global batch of each step is the same 6 sequences on any world size, cut among
 * the ranks. Rank 0 prints one line per check and "N passed, M failed". */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fs.h"
#include "core/rng.h"
#include "dist/dist.h"
#include "dist/rank_checks.h"
#include "models/transformer.h"
#include "parallel/zero.h"
#include "parallel/zero_checkpoint.h"
#include "train/train_state.h"

enum { VOCAB = 37, G = 6, T = 6, SAVES = 3, FINAL = 5, KEEP = 2 };
static const float LR = 1e-2f, DECAY = 0.01f;
static const uint64_t FINGERPRINT = 0x5eed0f00dfeedull;

static const char *g_dir;
static int g_stage;

static TransformerConfig config(int d_ff) {
    return (TransformerConfig){.vocab = VOCAB, .d_model = 16, .heads = 2, .d_ff = d_ff,
                               .layers = 2, .max_len = 64, .dropout = 0.0f};
}

/* This rank's rows of step `step`'s global batch of G sequences. */
static void make_batch(int step, int *tokens, int *targets) {
    Rng rng;
    rng_seed(&rng, 1000 + (uint64_t)step, 3);
    int all_tokens[G * T], all_targets[G * T];
    for (int i = 0; i < G * T; i++) all_tokens[i] = (int)rng_below(&rng, VOCAB);
    for (int i = 0; i < G * T; i++) all_targets[i] = (int)rng_below(&rng, VOCAB);
    const int rows = G / g_dist->world_size, first = g_dist->rank * rows;
    memcpy(tokens, all_tokens + first * T, (size_t)(rows * T) * sizeof(int));
    memcpy(targets, all_targets + first * T, (size_t)(rows * T) * sizeof(int));
}

/* A training run at stage 0 (the whole Adam on every rank) or ZeRO 1-3. */
typedef struct {
    Transformer m;
    int stage;
    Zero z;
    Adam adam;
    Sgd sgd;
    bool use_sgd;
    ZeroCkpt ckpt;
    TrainState ts;
    uint64_t fingerprint;
} Run;

static void run_init(Run *r, int stage, int d_ff, bool use_sgd) {
    memset(r, 0, sizeof *r);
    r->stage = stage, r->use_sgd = use_sgd;
    const TransformerConfig c = config(d_ff);
    transformer_init(&r->m, &c, G / g_dist->world_size, T, 5);
    if (stage == 0) {
        if (use_sgd) sgd_init(&r->sgd, &r->m.params, LR, 0.9f, DECAY);
        else adamw_init(&r->adam, &r->m.params, LR, DECAY);
    } else {
        zero_init(&r->z, g_dist, &r->m.blocks, stage, &ZERO_LIBRARY);
        if (use_sgd) zero_optimizer_sgd(&r->z, LR, 0.9f, DECAY);
        else zero_optimizer_adamw(&r->z, LR, DECAY);
    }
    zero_ckpt_init(&r->ckpt, g_dir, KEEP);
    ckpt_add_train_state(&r->ckpt.scalars, &r->ts);
    ckpt_add_u64(&r->ckpt.scalars, "data.fingerprint", &r->fingerprint);
}

static void run_free(Run *r) {
    zero_ckpt_free(&r->ckpt);
    if (r->stage == 0) {
        if (r->use_sgd) sgd_free(&r->sgd);
        else adam_free(&r->adam);
    } else {
        zero_free(&r->z);
    }
    transformer_free(&r->m);
}

/* Step `step` (from 1) of the run. */
static void run_step(Run *r, int step) {
    int tokens[G * T], targets[G * T];
    make_batch(step, tokens, targets);
    if (r->stage == 0) {
        params_zero_grad(&r->m.params);
        transformer_forward_backward(&r->m, tokens, targets);
        /* the non-blocking all-reduce, as DDP's buckets: MPI's blocking collectives may add
         * the ranks in another order than its non-blocking ones (ZeRO's), 1 ulp apart on 3 */
        dist_wait(g_dist, dist_all_reduce_start(g_dist, &r->m.params.grads, DIST_AVG));
        adam_step(&r->adam, &r->m.params);
        return;
    }
    zero_begin_step(&r->z);
    transformer_forward_backward(&r->m, tokens, targets);
    zero_finish_gradients(&r->z);
    zero_step(&r->z);
}

/* The whole parameters, Adam m and v [3 psi], on every rank. */
static float *run_state(Run *r, int64_t *psi) {
    *psi = r->m.params.total;
    float *all = xmalloc((size_t)(3 * *psi) * sizeof *all);
    if (r->stage == 0) {
        memcpy(all, r->m.params.values.data, (size_t)*psi * sizeof *all);
        memcpy(all + *psi, r->adam.m.data, (size_t)*psi * sizeof *all);
        memcpy(all + 2 * *psi, r->adam.v.data, (size_t)*psi * sizeof *all);
    } else {
        zero_full_params(&r->z, all);
        zero_full_state(&r->z, 0, all + *psi);
        zero_full_state(&r->z, 1, all + 2 * *psi);
    }
    return all;
}

static int run_save(Run *r, int step, CkptError *err) {
    r->ts = (TrainState){.epoch = 1, .step = step, .global_step = step, .rng_state = 99,
                         .rng_inc = 7, .sampler_seed = 11, .sampler_epoch = 1,
                         .sampler_position = step, .sampler_count = 100, .loss_sum = 0.5 * step,
                         .examples = G * step, .best_metric = -INFINITY};
    r->fingerprint = FINGERPRINT;
    if (r->stage == 0)
        return zero_ckpt_save_plain(&r->ckpt, g_dist, &r->m.blocks, &r->adam, NULL, step, err);
    return zero_ckpt_save(&r->ckpt, &r->z, step, err);
}

static int run_load(Run *r, int64_t *step, CkptError *err) {
    memset(&r->ts, 0, sizeof r->ts);
    r->fingerprint = 0;
    if (r->stage == 0)
        return zero_ckpt_load_latest_plain(&r->ckpt, g_dist, &r->m.blocks,
                                           r->use_sgd ? NULL : &r->adam, r->use_sgd ? &r->sgd : NULL,
                                           step, err);
    return zero_ckpt_load_latest(&r->ckpt, &r->z, step, err);
}

static void path_of(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", g_dir, name); }

static void write_floats(const char *name, const float *v, int64_t n) {
    char path[1024];
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(v, sizeof *v, (size_t)n, f) == (size_t)n && fclose(f) == 0, "cannot write %s", path);
}

/* n floats of the file, or NULL (said) when it is not there or of another size. */
static float *read_floats(const char *name, int64_t n) {
    char path[1024];
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "rb");
    float *v = xmalloc((size_t)(n + 1) * sizeof *v);
    if (!f || fread(v, sizeof *v, (size_t)n + 1, f) != (size_t)n) {
        printf("  rank %d: %s is missing or not %lld floats\n", g_dist->rank, path, (long long)n);
        xfree(v);
        v = NULL;
    }
    if (f) fclose(f);
    return v;
}

/* ---------------------------------------------------------------- save */

static bool g_saved_ok, g_rotated;

static bool saved(Dist *d) { (void)d; return g_saved_ok; }
static bool rotated(Dist *d) { (void)d; return g_rotated; }

static void do_save(void) {
    Run r;
    run_init(&r, g_stage, 24, false);
    g_saved_ok = true;
    for (int step = 1; step <= FINAL; step++) {
        run_step(&r, step);
        if (step > SAVES) continue;
        CkptError err;
        if (run_save(&r, step, &err) != 0) {
            printf("  rank %d: saving step %d: %s\n", g_dist->rank, step, err.msg);
            g_saved_ok = false;
        }
        int64_t psi;
        float *all = run_state(&r, &psi);
        char name[64];
        snprintf(name, sizeof name, "expect-%d.bin", step);
        if (g_dist->rank == 0) write_floats(name, all, 3 * psi);
        xfree(all);
    }
    int64_t psi;
    float *all = run_state(&r, &psi);
    if (g_dist->rank == 0) {
        write_floats("final.bin", all, 3 * psi);
        char path[1024];
        path_of(path, sizeof path, "saved-world");
        FILE *f = fopen(path, "w");
        CHECK(f && fprintf(f, "%d\n", g_dist->world_size) > 0 && fclose(f) == 0, "cannot write %s", path);
    }
    xfree(all);
    /* keep 2: steps 2 and 3 are there, step 1 is not */
    g_rotated = true;
    for (int step = 1; step <= SAVES; step++) {
        char cdir[CKPT_PATH_MAX];
        zero_ckpt_path(&r.ckpt, step, cdir, sizeof cdir);
        if (fs_is_dir(cdir) != (step > SAVES - KEEP)) {
            printf("  rank %d: %s %s\n", g_dist->rank, cdir, step > SAVES - KEEP ? "is missing" :
                   "is still there (keep 2)");
            g_rotated = false;
        }
    }
    run_free(&r);
    run("every rank saved steps 1, 2, 3 (a shard each, rank 0 the index)", saved);
    run("only the newest 2 checkpoints are kept", rotated);
}

/* ---------------------------------------------------------------- resume */

static int g_expect_step; /* -1: none may load */
static int64_t g_loaded;
static int g_load_rc;
static bool g_same, g_scalars, g_resaved, g_reference, g_final;

static bool loaded_expected(Dist *d) {
    (void)d;
    const bool ok = g_expect_step < 0 ? g_load_rc == -1 : g_load_rc == 1 && g_loaded == g_expect_step;
    if (!ok) printf("  rank %d: load returned %d, step %lld\n", g_dist->rank, g_load_rc, (long long)g_loaded);
    return ok;
}
static bool same_state(Dist *d) { (void)d; return g_same; }
static bool scalars_back(Dist *d) { (void)d; return g_scalars; }
static bool resaved(Dist *d) { (void)d; return g_resaved; }
static bool reference(Dist *d) { (void)d; return g_reference; }
static bool continues(Dist *d) { (void)d; return g_final; }

/* The largest difference relative to the largest value of each part. */
static double difference(const float *a, const float *b, int64_t psi) {
    double worst = 0;
    for (int k = 0; k < 3; k++) {
        double scale = 0, diff = 0;
        for (int64_t i = k * psi; i < (k + 1) * psi; i++) {
            scale = fmax(scale, fabs((double)b[i]));
            diff = fmax(diff, fabs((double)a[i] - b[i]));
        }
        worst = fmax(worst, diff / (scale > 0 ? scale : 1));
    }
    return worst;
}

/* Step's directory holds the index and this run's shards, nothing of the old one. */
static bool only_new_files(const ZeroCkpt *c, int step) {
    char cdir[CKPT_PATH_MAX];
    zero_ckpt_path(c, step, cdir, sizeof cdir);
    DIR *d = opendir(cdir);
    int files = 0;
    bool ok = d != NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        int rank = -1, world = -1, end = 0;
        const bool mine = strcmp(e->d_name, "index.ckpt") == 0 ||
                          (sscanf(e->d_name, "shard-%d-of-%d.ckpt%n", &rank, &world, &end) == 2 &&
                           e->d_name[end] == '\0' && world == g_dist->world_size);
        if (!mine)
            printf("  rank %d: %s/%s is left from the old checkpoint\n", g_dist->rank, cdir, e->d_name);
        ok = ok && mine;
        files++;
    }
    if (d) closedir(d);
    return ok && files == 1 + g_dist->world_size;
}

/* Stage 0 on these ranks from the saved state in `name` (whole buffers, no checkpoint
 * code) to step FINAL: what the resumed run must be. */
static float *continue_plain(const char *name, int64_t psi) {
    float *saved_state = read_floats(name, 3 * psi);
    if (!saved_state) return NULL;
    Run p;
    run_init(&p, 0, 24, false);
    memcpy(p.m.params.values.data, saved_state, (size_t)psi * sizeof(float));
    memcpy(p.adam.m.data, saved_state + psi, (size_t)psi * sizeof(float));
    memcpy(p.adam.v.data, saved_state + 2 * psi, (size_t)psi * sizeof(float));
    p.adam.step = g_loaded;
    for (int step = (int)g_loaded + 1; step <= FINAL; step++) run_step(&p, step);
    int64_t n;
    float *out = run_state(&p, &n);
    run_free(&p);
    xfree(saved_state);
    return out;
}

static void do_resume(void) {
    Run r;
    run_init(&r, g_stage, 24, false);
    CkptError err;
    g_loaded = -1;
    g_load_rc = run_load(&r, &g_loaded, &err);
    if (g_load_rc < 0 && g_dist->rank == 0) printf("  rank 0: %s\n", err.msg);
    if (g_dist->rank == 0 && g_load_rc == 1) printf("  loaded step %lld\n", (long long)g_loaded);
    run("the newest checkpoint that loads, the same on every rank", loaded_expected);
    if (g_expect_step < 0 || g_load_rc != 1) {
        run_free(&r);
        return;
    }
    int64_t psi;
    float *got = run_state(&r, &psi);
    char name[64];
    snprintf(name, sizeof name, "expect-%lld.bin", (long long)g_loaded);
    float *want = read_floats(name, 3 * psi);
    g_same = want && memcmp(got, want, (size_t)(3 * psi) * sizeof *got) == 0;
    if (want && !g_same)
        printf("  rank %d: the loaded state differs from step %lld's by %.3g (relative)\n",
               g_dist->rank, (long long)g_loaded, difference(got, want, psi));
    xfree(got), xfree(want);
    run("parameters and Adam moments gathered = those saved, bit for bit", same_state);
    g_scalars = r.ts.global_step == g_loaded && r.ts.sampler_position == g_loaded &&
                r.ts.rng_inc == 7 && isinf(r.ts.best_metric) && r.fingerprint == FINGERPRINT;
    run("the training position and the caller's scalars restored", scalars_back);

    for (int step = (int)g_loaded + 1; step <= FINAL; step++) {
        run_step(&r, step);
        if (step == SAVES) { /* fell back: step 3's directory is there, unfinished or damaged */
            g_resaved = run_save(&r, step, &err) == 0 && only_new_files(&r.ckpt, step);
            run("a run that fell back saves step 3 anew over the old one's files", resaved);
        }
    }
    got = run_state(&r, &psi);
    float *ref = continue_plain(name, psi);
    g_reference = ref && memcmp(got, ref, (size_t)(3 * psi) * sizeof *got) == 0;
    if (ref && !g_reference)
        printf("  rank %d: differs from stage 0 on these ranks by %.3g (relative)\n", g_dist->rank,
               difference(got, ref, psi));
    run("training on = stage 0 on these ranks from the saved state, bit for bit", reference);

    want = read_floats("final.bin", 3 * psi);
    char path[1024];
    path_of(path, sizeof path, "saved-world");
    FILE *f = fopen(path, "r");
    int saved_world = 0;
    CHECK(f && fscanf(f, "%d", &saved_world) == 1, "cannot read %s", path);
    fclose(f);
    const double diff = want ? difference(got, want, psi) : INFINITY;
    /* The same ranks add the same numbers in the same order. Other ranks add them in
     * another order (the loss's mean over another cut of the batch, the average over
     * other ranks): a gradient summed from terms that nearly cancel keeps a rounding
     * error as large as itself, and Adam divides it by its own size, so such a
     * parameter moves by up to lr (1e-2) differently. */
    const double allowed = saved_world == g_dist->world_size ? 0 : 1e-3;
    g_final = diff <= allowed;
    if (g_dist->rank == 0)
        printf("  to step %d: %.3g from the uninterrupted %d-rank run (relative; %g allowed)\n",
               FINAL, diff, saved_world, allowed);
    xfree(got), xfree(want), xfree(ref);
    run(saved_world == g_dist->world_size ? "training on = the uninterrupted run, bit for bit"
                                          : "training on = the uninterrupted run on other ranks (1e-3)",
        continues);
    run_free(&r);
}

/* ---------------------------------------------------------------- refuse */

static bool g_model_refused, g_optimizer_refused;
static bool model_refused(Dist *d) { (void)d; return g_model_refused; }
static bool optimizer_refused(Dist *d) { (void)d; return g_optimizer_refused; }

static bool refused(int d_ff, bool sgd, const char *want) {
    Run r;
    run_init(&r, g_stage, d_ff, sgd);
    CkptError err;
    int64_t step = -1;
    const int rc = run_load(&r, &step, &err);
    const bool ok = rc == -1 && strstr(err.msg, want);
    if (!ok) printf("  rank %d: load returned %d: %s\n", g_dist->rank, rc, rc < 0 ? err.msg : "");
    else if (g_dist->rank == 0) printf("  %s\n", strchr(err.msg, '\n') + 3);
    run_free(&r);
    return ok;
}

static void do_refuse(void) {
    g_model_refused = refused(32, false, "is of another model: unit 1 (block 1) has");
    run("a model of other sizes refused, the unit named", model_refused);
    g_optimizer_refused = refused(24, true, "was saved with AdamW, but this run uses SGD");
    run("another optimiser refused by name", optimizer_refused);
}

int main(int argc, char **argv) {
    if (argc < 4 || (strcmp(argv[1], "resume") == 0 && argc < 5)) {
        fprintf(stderr, "usage: %s save|resume|refuse DIR STAGE [STEP|none] [--stall-rank R]\n", argv[0]);
        return 2;
    }
    g_dist = dist_init(&(DistOptions){.backend = "auto", .timeout_s = 30});
    g_dir = argv[2];
    g_stage = atoi(argv[3]);
    CHECK(g_stage >= 0 && g_stage <= 3, "stage %d: 0 to 3", g_stage);
    CHECK(G % g_dist->world_size == 0, "%d ranks: the batch of %d sequences is cut evenly (1, 2, 3, 6)",
          g_dist->world_size, G);
    int stall = -1;
    for (int i = 4; i + 1 < argc; i++)
        if (strcmp(argv[i], "--stall-rank") == 0) stall = atoi(argv[i + 1]);
    if (g_dist->rank != stall) unsetenv("COURSE_CKPT_STALL");
    if (strcmp(argv[1], "save") == 0) do_save();
    else if (strcmp(argv[1], "resume") == 0) {
        g_expect_step = strcmp(argv[4], "none") == 0 ? -1 : atoi(argv[4]);
        do_resume();
    } else {
        do_refuse();
    }
    const int status = rank_checks_end();
    dist_finalize(g_dist);
    return status;
}
