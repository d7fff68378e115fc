/* Sharded checkpoints: one file per rank, an index last, any world size on load. */
#include "zero_checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fs.h"
#include "parallel/zero_checkpoint_internal.h"
#include "train/checkpoint_file.h"

#define FIX_FALLBACK "the previous complete checkpoint is used instead; delete or move away the directory"

void zckpt_model_free(Model *m) { xfree(m->size), xfree(m->block); }

int zckpt_kinds(ZeroOptimizer o) { return o == ZERO_ADAMW ? 3 : 2; }
static const char *kind_name(ZeroOptimizer o, int kind) {
    static const char *const adam[3] = {"params", "adam.m", "adam.v"};
    static const char *const sgd[2] = {"params", "sgd.momentum"};
    return o == ZERO_ADAMW ? adam[kind] : sgd[kind];
}
static const char *optimizer_name(int64_t o) { return o == ZERO_ADAMW ? "AdamW" : "SGD"; }

int64_t zckpt_piece(int64_t n, int world) { return (n + world - 1) / world; }

int64_t zckpt_shard_size(const Model *m, int world) {
    int64_t s = 0;
    for (int k = 0; k < m->nunits; k++) s += zckpt_piece(m->size[k], world);
    return s;
}

void zckpt_host_buffers(Tensor *t, int kinds, int64_t n) {
    CHECK(n > 0 && n <= INT32_MAX, "a shard of %lld scalars", (long long)n);
    for (int k = 0; k < kinds; k++) t[k] = tensor_zeros(1, (int)n);
}

void zckpt_host_free(Tensor *t, int kinds) {
    for (int k = 0; k < kinds; k++) tensor_free(&t[k]);
}

/* How many ranks say `bad`: the collective every rank passes after each phase. */
static int failures(Dist *d, bool bad) { return (int)dist_sum_double(d, bad ? 1.0 : 0.0); }

/* ---------------------------------------------------------------- the manifests */

/* The index's own entries, and (staged when loading) the caller's scalars. */
typedef struct {
    int64_t world, optimizer, opt_step, step;
    uint64_t tag;
    Tensor sizes;    /* [units, 2]: n_k = [k, 0] * 2^24 + [k, 1], both exact in float32 */
    uint64_t *slots; /* [the caller's scalars]: loaded here, copied out once all ranks have */
} Index;

static const int64_t SIZE_LOW = 1 << 24;

static void index_manifest(Checkpoint *m, Index *ix, const Checkpoint *user) {
    ckpt_add_tensor(m, "zero.unit_sizes", &ix->sizes);
    ckpt_add_i64(m, "zero.world", &ix->world);
    ckpt_add_i64(m, "zero.optimizer", &ix->optimizer);
    ckpt_add_i64(m, "zero.optimizer_step", &ix->opt_step);
    ckpt_add_i64(m, "zero.step", &ix->step);
    ckpt_add_u64(m, "zero.tag", &ix->tag);
    ckpt_expect_range(m, "zero.world", 1, INT32_MAX);
    ckpt_expect_range(m, "zero.optimizer", ZERO_SGD, ZERO_ADAMW);
    ckpt_expect_range(m, "zero.optimizer_step", 0, INT64_MAX);
    ckpt_expect_range(m, "zero.step", 0, INT64_MAX);
    CHECK(user->ntensors == 0, "ZeroCkpt.scalars holds tensor '%s': the index takes scalars only "
          "(the model and optimiser are in the shards)", user->tensors[0].name);
    const int base = m->nscalars;
    for (int i = 0; i < user->nscalars; i++) {
        const CkptScalar *s = &user->scalars[i];
        void *v = ix->slots ? (void *)&ix->slots[i] : s->value;
        if (s->type == CKPT_I64) ckpt_add_i64(m, s->name, v);
        else if (s->type == CKPT_U64) ckpt_add_u64(m, s->name, v);
        else ckpt_add_f64(m, s->name, v);
        CkptScalar *e = &m->scalars[m->nscalars - 1]; /* the caller's limits, as they are */
        e->min = s->min, e->max = s->max, e->fmin = s->fmin, e->odd = s->odd, e->allow_inf = s->allow_inf;
        e->not_above = s->not_above < 0 ? -1 : base + s->not_above;
    }
}

static void shard_manifest(Checkpoint *m, ZeroOptimizer o, Tensor *t, uint64_t *tag, int64_t *rank,
                           int64_t *world) {
    for (int k = 0; k < zckpt_kinds(o); k++) ckpt_add_tensor(m, kind_name(o, k), &t[k]);
    ckpt_add_u64(m, "zero.tag", tag);
    ckpt_add_i64(m, "zero.rank", rank);
    ckpt_add_i64(m, "zero.world", world);
}

/* A new tag for every save, rank 0's on every rank (two exact 32-bit halves). */
static uint64_t new_tag(Dist *d, int64_t step) {
    static uint64_t saves;
    struct {
        int64_t sec, nsec, pid, step;
        uint64_t saves;
    } seed = {0, 0, (int64_t)getpid(), step, ++saves};
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    seed.sec = now.tv_sec, seed.nsec = now.tv_nsec;
    const uint64_t tag = ckpt_hash64(&seed, sizeof seed, 0x5a45524f);
    double *all = xmalloc((size_t)d->world_size * sizeof *all);
    dist_all_gather_double(d, (double)(tag >> 32), all);
    const uint64_t hi = (uint64_t)all[0];
    dist_all_gather_double(d, (double)(tag & 0xffffffffu), all);
    const uint64_t lo = (uint64_t)all[0];
    xfree(all);
    return hi << 32 | lo;
}

/* ---------------------------------------------------------------- saving */

/* Rank 0, before the shards: the directory, without what an earlier try at this step
 * left (its index first: never a complete checkpoint of mixed shards). */
static int prepare_dir(const char *cdir, CkptError *err) {
    char msg[FS_MSG_MAX];
    if (fs_mkdir_p(cdir, 0755, msg, sizeof msg) != 0) return ckpt_error(err, "%s", msg);
    char index[CKPT_PATH_MAX];
    zckpt_file_path(cdir, "index.ckpt", index, sizeof index);
    if (unlink(index) != 0 && errno != ENOENT)
        return ckpt_error(err, "cannot delete the old %s: %s", index, strerror(errno));
    zckpt_remove_files(cdir, false);
    return 0;
}

/* host: this rank's shard for d's world size, zckpt_kinds(m) buffers [shard_size]. */
int zckpt_save_core(ZeroCkpt *c, Dist *d, const Model *m, Tensor *host, int64_t step,
                     CkptError *err) {
    char cdir[CKPT_PATH_MAX], path[CKPT_PATH_MAX];
    zero_ckpt_path(c, step, cdir, sizeof cdir);
    uint64_t tag = new_tag(d, step);
    CkptError mine = {{0}};
    bool bad = d->rank == 0 && prepare_dir(cdir, &mine) != 0;
    if (failures(d, bad))
        return ckpt_error(err, "%s", bad ? mine.msg : "rank 0 could not make the checkpoint's "
                          "directory (its message says why)");

    int64_t rank = d->rank, world = d->world_size;
    Checkpoint sh = {0};
    shard_manifest(&sh, m->optimizer, host, &tag, &rank, &world);
    zckpt_shard_path(cdir, rank, world, path, sizeof path);
    bad = ckpt_save(&sh, path, &mine) != 0; /* written, synced, renamed, directory synced */
    ckpt_free(&sh);
    const int failed = failures(d, bad);  /* every shard is on disk past here */
    if (failed)
        return ckpt_error(err, "%s%s%d of the %d ranks could not write their shard of %s, so it "
                          "has no index: a resume uses the previous checkpoint", bad ? mine.msg : "",
                          bad ? "; " : "", failed, d->world_size, cdir);

    if (d->rank == 0) {
        Index ix = {.world = world, .optimizer = m->optimizer, .opt_step = m->opt_step,
                    .step = step, .tag = tag, .sizes = tensor_zeros(2, m->nunits, 2)};
        for (int k = 0; k < m->nunits; k++) {
            ix.sizes.data[2 * k] = (float)(m->size[k] / SIZE_LOW);
            ix.sizes.data[2 * k + 1] = (float)(m->size[k] % SIZE_LOW);
        }
        Checkpoint im = {0};
        index_manifest(&im, &ix, &c->scalars);
        zckpt_file_path(cdir, "index.ckpt", path, sizeof path);
        bad = ckpt_save(&im, path, &mine) != 0;
        ckpt_free(&im);
        tensor_free(&ix.sizes);
        if (!bad) zckpt_rotate(c, step); /* only once the new one is complete */
    }
    if (failures(d, bad))
        return ckpt_error(err, "%s", bad ? mine.msg : "rank 0 could not write the index (its "
                          "message says why): a resume uses the previous checkpoint");
    return 0;
}

/* ---------------------------------------------------------------- loading */

/* The model and optimiser of the index against this run's. */
static int check_index(const Index *ix, const Model *m, const char *path, CkptError *err) {
    if (ix->optimizer != m->optimizer)
        return ckpt_error(err, "%s was saved with %s, but this run uses %s: resume with the same "
                          "--optimizer", path, optimizer_name(ix->optimizer),
                          optimizer_name(m->optimizer));
    for (int k = 0; k < m->nunits; k++) {
        const float hi = ix->sizes.data[2 * k], lo = ix->sizes.data[2 * k + 1];
        if (!(hi >= 0 && lo >= 0 && lo < SIZE_LOW && hi < SIZE_LOW && hi == (float)(int64_t)hi &&
              lo == (float)(int64_t)lo))
            return ckpt_error(err, "%s: unit %d's size is damaged (%g, %g); %s", path, k,
                              (double)hi, (double)lo, FIX_FALLBACK);
        const int64_t n = (int64_t)hi * SIZE_LOW + (int64_t)lo;
        if (n != m->size[k])
            return ckpt_error(err, "%s is of another model: unit %d (block %d) has %lld parameters "
                              "there but %lld in this model. Resume with the model options that "
                              "wrote it, or use a new --checkpoint-dir", path, k, m->block[k],
                              (long long)n, (long long)m->size[k]);
    }
    return 0;
}

/* Copies what old shard j (world N, buffers in) has of this rank's new pieces (world W,
 * rank r) into out. */
static void copy_overlap(const Model *m, int N, int j, const Tensor *in, int W, int r, Tensor *out) {
    int64_t at_old = 0, at_new = 0;
    for (int k = 0; k < m->nunits; k++) {
        const int64_t n = m->size[k], s_old = zckpt_piece(n, N), s_new = zckpt_piece(n, W);
        const int64_t a = r * s_new, b = a + s_new < n ? a + s_new : n;
        const int64_t lo = a > j * s_old ? a : j * s_old;
        const int64_t hi = b < (j + 1) * s_old ? b : (j + 1) * s_old;
        for (int kind = 0; lo < hi && kind < zckpt_kinds(m->optimizer); kind++)
            memcpy(out[kind].data + at_new + (lo - a), in[kind].data + at_old + (lo - j * s_old),
                   (size_t)(hi - lo) * sizeof(float));
        at_old += s_old, at_new += s_new;
    }
}

/* One try at `cdir`: the index into ix (the caller's scalars into ix->slots), this
 * rank's pieces for world W, rank r into out (padding zero). LOADED, or and err:
 * UNFINISHED (no index: a save that did not finish, no checkpoint), INDEX_BAD (what
 * every rank reads) or SHARD_BAD (one of this rank's shards). */
enum { LOADED, UNFINISHED, INDEX_BAD, SHARD_BAD };
static int try_load(const ZeroCkpt *c, const Model *m, int64_t step, const char *cdir, int W,
                    int r, Tensor *out, Index *ix, CkptError *err) {
    char path[CKPT_PATH_MAX];
    zckpt_file_path(cdir, "index.ckpt", path, sizeof path);
    if (access(path, F_OK) != 0) {
        ckpt_error(err, "%s has no index.ckpt: its save did not finish (a rank killed or a disk "
                   "full while saving?)", cdir);
        return UNFINISHED;
    }
    Checkpoint im = {0};
    index_manifest(&im, ix, &c->scalars);
    int rc = ckpt_load(&im, path, err);
    ckpt_free(&im);
    if (rc == 0 && ix->step != step)
        rc = ckpt_error(err, "%s is the index of step %" PRId64 ", not of the step its directory "
                        "names (renamed or copied?); %s", path, ix->step, FIX_FALLBACK);
    if (rc != 0 || check_index(ix, m, path, err) != 0) return INDEX_BAD;

    const int N = (int)ix->world, kinds = zckpt_kinds(m->optimizer);
    bool *needed = xcalloc((size_t)N, sizeof *needed);
    for (int k = 0; k < m->nunits; k++) {
        const int64_t n = m->size[k], s_old = zckpt_piece(n, N), s_new = zckpt_piece(n, W);
        const int64_t a = r * s_new, b = a + s_new < n ? a + s_new : n;
        for (int64_t j = a / s_old; a < b && j <= (b - 1) / s_old; j++) needed[j] = true;
    }
    for (int kind = 0; kind < kinds; kind++) tensor_fill(&out[kind], 0.0f);
    Tensor in[3];
    zckpt_host_buffers(in, kinds, zckpt_shard_size(m, N));
    for (int j = 0; rc == 0 && j < N; j++) {
        if (!needed[j]) continue;
        uint64_t tag;
        int64_t rank, world;
        Checkpoint sh = {0};
        shard_manifest(&sh, m->optimizer, in, &tag, &rank, &world);
        zckpt_shard_path(cdir, j, N, path, sizeof path);
        rc = ckpt_load(&sh, path, err);
        ckpt_free(&sh);
        if (rc == 0 && tag != ix->tag)
            rc = ckpt_error(err, "%s belongs to another checkpoint or run (its tag %016" PRIx64
                            " is not the index's %016" PRIx64 "; copied from elsewhere?); %s",
                            path, tag, ix->tag, FIX_FALLBACK);
        else if (rc == 0 && (rank != j || world != N))
            rc = ckpt_error(err, "%s holds shard %" PRId64 " of %" PRId64 ", not the one its name "
                            "says (renamed?); %s", path, rank, world, FIX_FALLBACK);
        if (rc == 0) copy_overlap(m, N, j, in, W, r, out);
    }
    zckpt_host_free(in, kinds);
    xfree(needed);
    return rc == 0 ? LOADED : SHARD_BAD;
}

/* The newest checkpoint that every rank loads: rank 0 names each in turn, all try it,
 * all agree; one that rank 0 finds unfinished is skipped by all, with a note, and is no
 * checkpoint. out: this rank's pieces for world W, rank r. 1, 0 or -1 as documented. */
int zckpt_load_core(ZeroCkpt *c, Dist *d, Model *m, int W, int r, Tensor *out, int64_t *step,
                     CkptError *err) {
    int64_t *steps = NULL;
    const int mine = d->rank == 0 ? zckpt_list_steps(c->dir, &steps) : 0;
    double *all = xmalloc((size_t)d->world_size * sizeof *all);
    dist_all_gather_double(d, mine, all);
    const int n = (int)all[0];
    Index ix = {.sizes = tensor_zeros(2, m->nunits, 2),
                .slots = xcalloc((size_t)c->scalars.nscalars + 1, sizeof *ix.slots)};
    char cdir[CKPT_PATH_MAX];
    size_t used = 0;
    if (err) err->msg[0] = '\0';
    int rc = 0, complete = 0; /* complete: those tried that had an index */
    for (int i = 0; i < n && rc != 1; i++) {
        dist_all_gather_double(d, d->rank == 0 ? (double)steps[i] : 0, all);
        const int64_t at = (int64_t)all[0];
        zero_ckpt_path(c, at, cdir, sizeof cdir);
        CkptError one = {{0}};
        const int how = try_load(c, m, at, cdir, W, r, out, &ix, &one);
        dist_all_gather_double(d, how, all); /* every rank's outcome, on every rank */
        if (all[0] == UNFINISHED) { /* rank 0 lists them: an unfinished save is no checkpoint */
            if (d->rank == 0)
                fprintf(stderr, "note: skipping an unfinished save, not a checkpoint: %s has no "
                        "index.ckpt (the job was stopped or a disk filled while it saved)\n", cdir);
            continue;
        }
        complete++;
        int failed = 0;
        for (int q = 0; q < d->world_size; q++) failed += all[q] != LOADED;
        if (failed == 0) {
            for (int s = 0; s < c->scalars.nscalars; s++)
                memcpy(c->scalars.scalars[s].value, &ix.slots[s], 8);
            m->opt_step = ix.opt_step;
            *step = ix.step;
            rc = 1;
            break;
        }
        rc = -1;
        /* an index is the same file for all: rank 0 says what is wrong with it */
        if (how == SHARD_BAD || how == UNFINISHED || (how == INDEX_BAD && (d->rank == 0 || all[0] != INDEX_BAD)))
            fprintf(stderr, "warning: rank %d: skipping a sharded checkpoint that does not load: "
                    "%s\n", d->rank, one.msg);
        else if (how == LOADED && d->rank == 0)
            fprintf(stderr, "warning: skipping sharded checkpoint %s: %d rank(s) could not load it "
                    "(their warnings say why)\n", cdir, failed);
        if (how == LOADED)
            snprintf(one.msg, sizeof one.msg, "%s: %d other rank(s) could not load it", cdir, failed);
        if (err && used < sizeof err->msg)
            used += (size_t)snprintf(err->msg + used, sizeof err->msg - used, "%s%s",
                                     used ? "\n  " : "", one.msg);
    }
    if (rc == -1 && err) { /* a summary first, then each checkpoint's reason */
        char *list = xstrdup(err->msg);
        snprintf(err->msg, sizeof err->msg, "none of the %d sharded checkpoints in %s loads on "
                 "these %d ranks; move them away to start afresh, or resume from another "
                 "--checkpoint-dir:\n  %s", complete, c->dir, d->world_size, list);
        xfree(list);
    }
    tensor_free(&ix.sizes);
    xfree(ix.slots);
    xfree(all);
    xfree(steps);
    return rc;
}
