/* Sharded checkpoints of ZeRO (parallel/zero.h): every rank writes its own shard, and
 * a run saved on N ranks resumes on any N' (PyTorch's distributed checkpoint, DCP).
 *
 *   ZeroCkpt c;
 *   zero_ckpt_init(&c, "run/ckpt", 2);                 // keep the 2 newest
 *   ckpt_add_train_state(&c.scalars, &ts);             // the run's own scalars, in the index
 *   ckpt_add_u64(&c.scalars, "data.fingerprint", &fp);
 *   int64_t step;
 *   if (zero_ckpt_load_latest(&c, &z, &step, &err) < 0) fatal("%s", err.msg);  // 0: none
 *   ...
 *   if (zero_ckpt_save(&c, &z, step, &err) != 0) fatal("%s", err.msg);        // every rank
 *
 * The layout: DIR/zero-<step, 9 digits>/
 *   shard-<r>-of-<N>.ckpt  rank r's piece of every unit (block), in its shard's order:
 *                          tensors "params", "adam.m", "adam.v" (or "sgd.momentum"), each
 *                          [sum over units of s_k = ceil(n_k / N)], padding included;
 *                          scalars zero.tag, zero.rank, zero.world
 *   index.ckpt             written by rank 0 last, once every shard is on disk: zero.world
 *                          N, zero.unit_sizes [units, 2] (n_k = hi * 2^24 + lo: exact in
 *                          float32), zero.optimizer (0 SGD, 1 AdamW), zero.optimizer_step,
 *                          zero.step, zero.tag, and the caller's scalars
 * A checkpoint is complete iff its index exists: a save killed on any rank leaves the
 * previous one intact, and a directory without an index (an unfinished save) is no
 * checkpoint: loading skips it with a note, and a directory with nothing else holds none. The tag (new for every save) tells a shard of another checkpoint
 * or run from its own. The files are train/checkpoint.h's format, written atomically.
 *
 * Loading on N' ranks: each rank reads the index, refuses another model (which unit
 * differs) or optimiser, and reads the old shards that overlap its new pieces (only
 * those); stages 1 and 2 then all-gather each unit. The file does not depend on the
 * stage, so a run saved at stage 1 resumes at stage 3, or at stage 0 (plain data
 * parallel) through the _plain functions. A missing, truncated or foreign shard or a
 * missing or damaged index is refused by name (a warning on stderr) and the previous
 * complete checkpoint is tried; every rank uses the same one (agreed after each try). */
#ifndef PARALLEL_ZERO_CHECKPOINT_H
#define PARALLEL_ZERO_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "parallel/zero.h"
#include "train/checkpoint.h"

typedef struct {
    char dir[CKPT_PATH_MAX];
    int keep;              /* complete checkpoints kept (the newest ones), at least 1 */
    /* The run's own scalars saved in the index and restored on load (only once every
     * rank has its checkpoint): ckpt_add_train_state, ckpt_add_u64 ... with their limits.
     * Scalars only; names starting "zero." are this file's. */
    Checkpoint scalars;
} ZeroCkpt;

/* Creates dir (and its parents) when needed; a directory that cannot be made is a fatal
 * user error that names it. Every rank calls it. */
void zero_ckpt_init(ZeroCkpt *c, const char *dir, int keep);
void zero_ckpt_free(ZeroCkpt *c);
/* dir/zero-<step, 9 digits> */
void zero_ckpt_path(const ZeroCkpt *c, int64_t step, char *out, size_t cap);

/* Every rank of z's Dist: its shard, then rank 0 the index and deletes the complete
 * checkpoints beyond keep (older than step; later ones, left by a run that fell back
 * past them, are neither counted nor deleted) and unfinished ones older than step.
 * 0, or -1 on every rank and err (this rank's reason, or which ranks failed). */
int zero_ckpt_save(ZeroCkpt *c, Zero *z, int64_t step, CkptError *err);

/* The step of the newest complete checkpoint in c's directory (its index is there; not
 * loaded), or -1 when it holds none: a run that does not resume refuses such a
 * directory. Any rank; a file system all ranks see gives all the same answer. */
int64_t zero_ckpt_newest_complete(const ZeroCkpt *c);

/* Every rank: the newest checkpoint that loads on all ranks into z's pieces (z made
 * by zero_init and zero_optimizer_adamw or _sgd, as the saved run was), its optimiser
 * step and c->scalars. Returns 1 (loaded; its step in *step), 0 (no complete checkpoint
 * in dir: unfinished saves alone, each noted on stderr, are none) or -1 (complete ones,
 * but none loads: err says why, this rank's reasons). An unfinished save newer than the
 * one loaded is noted as skipped. */
int zero_ckpt_load_latest(ZeroCkpt *c, Zero *z, int64_t *step, CkptError *err);

/* Stage 0, plain data parallel: the whole model and optimiser on every rank (one of
 * adam, sgd; the other NULL), cut into the units of `blocks` as ZeRO would on d's ranks.
 * Each rank saves its piece; loading reads every shard. The same files as above. */
int zero_ckpt_save_plain(ZeroCkpt *c, Dist *d, BlockList *blocks, Adam *adam, Sgd *sgd,
                         int64_t step, CkptError *err);
int zero_ckpt_load_latest_plain(ZeroCkpt *c, Dist *d, BlockList *blocks, Adam *adam, Sgd *sgd,
                                int64_t *step, CkptError *err);

#endif
