/* Inside lib/parallel: what the files of sharded checkpoints hold and where they go
 * (zero_checkpoint.c, zero_checkpoint_dir.c), for the strategies' adapters
 * (zero_checkpoint_pieces.c). */
#ifndef PARALLEL_ZERO_CHECKPOINT_INTERNAL_H
#define PARALLEL_ZERO_CHECKPOINT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parallel/zero_checkpoint.h"

/* What the files hold, whichever strategy wrote them: the units' sizes, the optimiser. */
typedef struct {
    int nunits;
    int64_t *size;          /* [nunits] n_k: scalars of unit k */
    int *block;             /* [nunits] the block it is, for messages */
    ZeroOptimizer optimizer;
    int64_t opt_step;
} Model;

void zckpt_model_free(Model *m);
/* The tensors of a shard: the parameters, then the optimiser's buffers (2 or 3 kinds). */
int zckpt_kinds(ZeroOptimizer o);
/* ceil(n / world): a rank's piece of an n-scalar unit; a shard: the pieces of all units */
int64_t zckpt_piece(int64_t n, int world);
int64_t zckpt_shard_size(const Model *m, int world);
/* kinds host buffers [n] each, and their end */
void zckpt_host_buffers(Tensor *t, int kinds, int64_t n);
void zckpt_host_free(Tensor *t, int kinds);

/* Every rank: host[kind] [shard] this rank's pieces, saved as checkpoint `step`. */
int zckpt_save_core(ZeroCkpt *c, Dist *d, const Model *m, Tensor *host, int64_t step,
                     CkptError *err);
/* Every rank: the newest checkpoint that loads, as rank r of W ranks' pieces into out
 * [kinds][shard of W]; 1 loaded, 0 none, -1 none loads (zero_ckpt_load_latest). */
int zckpt_load_core(ZeroCkpt *c, Dist *d, Model *m, int W, int r, Tensor *out, int64_t *step,
                     CkptError *err);

/* cdir/name, and cdir/shard-<rank>-of-<world>.ckpt */
void zckpt_file_path(const char *cdir, const char *name, char *out, size_t cap);
void zckpt_shard_path(const char *cdir, int64_t rank, int64_t world, char *out, size_t cap);
/* The steps of the checkpoint directories in dir, complete or not, newest first
 * (*steps malloc'ed); returns how many. */
int zckpt_list_steps(const char *dir, int64_t **steps);
/* Whether the checkpoint directory cdir is complete: its index is there (written last,
 * once every shard was on disk). One without is a save that did not finish. */
bool zckpt_is_complete(const char *cdir);
/* Deletes a checkpoint directory's index first (from then on it is incomplete), then its
 * shards and leftover .tmp files; the directory too when and_dir and nothing else is in it. */
void zckpt_remove_files(const char *cdir, bool and_dir);
/* After `written` was saved: it and the keep - 1 newest complete checkpoints before it
 * stay; older ones and unfinished ones before it go (checkpoint_store.c's rule). */
void zckpt_rotate(const ZeroCkpt *c, int64_t written);

#endif
