/* Sharded data parallel: ZeRO stages 1, 2 and 3 (the idea behind PyTorch's FSDP).
 *
 * Plain data parallel (stage 0, parallel/ddp.h) keeps everything on every rank: the
 * parameters (4 bytes each in float32), their gradients (4) and Adam's two moments (8):
 * 16 bytes per parameter, Psi parameters, on each of N ranks. ZeRO cuts what it can into
 * N shards, one per rank:
 *
 *   stage 1  the optimiser state: gradients reduce-scattered (each rank gets the average
 *            of its shard), the step on the shard, the new parameters all-gathered
 *                                                     4 Psi + 4 Psi + 8 Psi / N
 *   stage 2  and the gradients: each block's gradients reduce-scattered as soon as its
 *            backward is done (during the backward), then dropped  4 Psi + 12 Psi / N
 *   stage 3  and the parameters: each block's gathered just before its forward and
 *            again before its backward, the next block's gather started while this one
 *            computes (prefetch), dropped after                       16 Psi / N
 *
 * The shards follow the blocks (parallel to FSDP's units): block k's parameters are one
 * range of the flat buffers, padded to a multiple of N (params_set_layout), and rank r
 * holds piece r of every block's range: s_k = ceil(n_k / N) scalars of each. So every
 * collective is one call on one block's range, in place where the buffers are whole
 * (stages 1 and 2: dist.h's in-place rule), and a block's gather is a single all-gather.
 * Stages 2 and 3 keep two windows of the largest block for gradients (and stage 3 two
 * for parameters): one in use, one in flight. Bytes each step, 4 bytes a scalar:
 * stages 1 and 2 reduce-scatter and all-gather Psi (2 x 4 Psi (N - 1) / N), stage 3
 * gathers twice and reduce-scatters once (3 x ...).
 *
 *   Zero z;
 *   zero_init(&z, dist, &model.blocks, 3, &ZERO_LIBRARY);   // rank 0's model, sharded
 *   zero_optimizer_adamw(&z, 1e-3f, 0.01f);                  // the shard's state
 *   for each step:
 *       zero_begin_step(&z);          // gradients to zero (stages 2, 3: the windows)
 *       forward, loss, backward       // the blocks' hooks do stages 2 and 3's work
 *       zero_finish_gradients(&z);    // every rank: the average of its shard
 *       zero_clip(&z, max_norm);      // optional: the global norm over the shards
 *       zero_step(&z);                // the shard's update, then (1, 2) the all-gather
 *
 * The parts a lesson writes itself are in a table (ZeroOps), the library's own in
 * ZERO_LIBRARY, the way a model's layers are (layers/layer_ops.h). */
#ifndef PARALLEL_ZERO_H
#define PARALLEL_ZERO_H

#include <stdbool.h>
#include <stdint.h>

#include "dist/dist.h"
#include "models/block.h"
#include "train/optim.h"

/* One block's parameters: a range of the flat buffers, cut in N pieces. */
typedef struct {
    int block;               /* its index in the model (and in blocks->items) */
    int first_param, params; /* its parameters in the ParamList */
    int64_t size;            /* n: scalars of its parameters */
    int64_t piece;           /* s = ceil(n / N): each rank's piece, padding included */
    int64_t start;           /* where its N * s scalars begin in the padded buffers */
    int64_t local;           /* where this rank's piece begins in the shard buffers */
    int64_t own;             /* scalars of this rank's piece that are parameters (not padding) */
    int window;              /* stage 3: the parameter window holding it, or -1 */
    DistRequest *gather;     /* stage 3: its all-gather into that window, in flight */
} ZeroUnit;

/* A window: a buffer of the largest unit's N * s scalars that one unit uses in turn. */
typedef struct {
    Tensor data;             /* [max N * s] */
    int unit;                /* the unit in it, or -1 */
    DistRequest *pending;    /* its reduce-scatter (gradients), in flight */
} ZeroWindow;

typedef struct Zero Zero;

/* Where an n-scalar range is cut into `world` pieces, padding included. */
typedef struct {
    int64_t piece;           /* each rank's piece: ceil(n / world) */
    int64_t padded;          /* world * piece */
    int64_t start;           /* rank's piece begins here (of the range) */
    int64_t own;             /* scalars of it inside [0, n) (0 for a rank past the end) */
} ZeroRange;

/* The parts of ZeRO a lesson writes (course/08-zero), or the library's (ZERO_LIBRARY). */
typedef struct {
    /* rank's piece of n scalars shared by `world` ranks */
    ZeroRange (*shard_range)(int64_t n, int world, int rank);
    /* Starts the average over the ranks of full [N s] into this rank's piece [s] (a view
     * of full at rank * s: in place, or another buffer). */
    DistRequest *(*reduce_gradients)(Dist *d, Tensor *piece, Tensor *full);
    /* The optimiser's update of every unit's piece (zero_update_piece does one). */
    void (*step)(Zero *z);
    /* Starts the all-gather of every rank's piece [s] into full [N s]. */
    DistRequest *(*gather_params)(Dist *d, Tensor *full, const Tensor *piece);
    /* Stage 3: the blocks' hook: the unit's parameters there before each pass
     * (zero_gather, zero_await), the next one's gather started, dropped after
     * (zero_release). */
    BlockHookFn stage3_hook;
} ZeroOps;

extern const ZeroOps ZERO_LIBRARY;

typedef enum { ZERO_SGD, ZERO_ADAMW } ZeroOptimizer;

/* Bytes a rank holds, by kind (the persistent state) and the windows. */
typedef struct {
    int64_t params, grads, optim;   /* what the stage keeps between steps */
    int64_t windows;                /* gathered blocks and gradient windows */
    int64_t working;                /* stage 3 of a 16-bit model: its rounded shard */
} ZeroMemory;

struct Zero {
    Dist *dist;
    int stage;                      /* 1, 2, 3 */
    const ZeroOps *ops;
    BlockList *blocks;
    ParamList *params;
    Device device;
    ZeroUnit *units;                /* one per block with parameters, in block order */
    int nunits;
    int *unit_of_block;             /* [blocks->count]: its unit, or -1 */
    int64_t psi;                    /* the model's parameters */
    int64_t padded;                 /* the flat buffers' size (stages 1, 2: all of it) */
    int64_t shard;                  /* sum of the pieces: this rank's shard */
    int64_t window_size;            /* the largest unit's N * s */
    Tensor shard_values;            /* stage 3: [shard] this rank's pieces of the parameters */
    Tensor shard_working;           /* stage 3 of a 16-bit model: [shard] them rounded to its
                                     * dtype after each step: what the windows gather
                                     * (memory.working; the model keeps no whole copy) */
    Tensor shard_grads;             /* stages 2, 3: [shard] the averaged gradients' pieces */
    ZeroWindow grad_windows[2];     /* stages 2, 3 */
    ZeroWindow param_windows[2];    /* stage 3 (in the model's dtype: a 16-bit model's blocks
                                     * read only their weights' working copy) */
    int next_grad_window;
    ZeroOptimizer optimizer;
    Adam adam;                      /* the shard's moments [shard] (ZERO_ADAMW) */
    Sgd sgd;                        /* the shard's momentum [shard] (ZERO_SGD) */
    double exposed_s;               /* time spent waiting for communication, summed */
    ZeroMemory memory;              /* as allocated (all of it is held for the whole run) */
    bool in_step;                   /* between zero_begin_step and zero_finish_gradients */
};

/* Shards the model of `blocks` over the ranks of dist at `stage` 1, 2 or 3: every rank
 * must have the same model (checked). Rank 0's parameters go to every rank first (a
 * checkpoint loaded later replaces them: zero_checkpoint.h); the parameters are laid out
 * padded, and stage 3 keeps only this rank's pieces from here on. Hooks into the blocks. */
void zero_init(Zero *z, Dist *dist, BlockList *blocks, int stage, const ZeroOps *ops);
void zero_free(Zero *z);
/* The shard's optimiser state, zeroed (torch.optim.AdamW / SGD defaults as optim.h). */
void zero_optimizer_adamw(Zero *z, float lr, float weight_decay);
void zero_optimizer_sgd(Zero *z, float lr, float momentum, float weight_decay);

void zero_begin_step(Zero *z);
/* After the backward: every rank's shard of gradients is the average over the ranks. */
void zero_finish_gradients(Zero *z);
/* Clips the gradients by their global norm (clip_grad_norm's rule, train/clip.h), the
 * squares summed over the shards; returns the norm. */
float zero_clip(Zero *z, float max_norm);
/* The optimiser's step on the shard, then (stages 1 and 2) the parameters gathered. */
void zero_step(Zero *z);

/* For ZeroOps and the lesson: unit u's piece of the parameters, of the gradients (the
 * averaged shard), of the optimiser's buffers (which: 0 Adam m or SGD momentum, 1
 * Adam v); its whole range in the padded parameter buffer (stages 1, 2). */
Tensor zero_param_piece(Zero *z, const ZeroUnit *u);
Tensor zero_grad_piece(Zero *z, const ZeroUnit *u);
Tensor zero_state_piece(Zero *z, const ZeroUnit *u, int which);
Tensor zero_param_range(Zero *z, const ZeroUnit *u);
/* The optimiser's update of one unit's piece at step t (zero_step counts t). */
void zero_update_piece(Zero *z, const ZeroUnit *u, int64_t t);

/* Stage 3's mechanics, for the hook: start gathering unit u's parameters into a free
 * window (nothing if it is there or on its way); wait until they are there and point
 * the block's parameters at them; give the window back. The unit of block b, or NULL. */
void zero_gather(Zero *z, ZeroUnit *u);
void zero_await(Zero *z, ZeroUnit *u);
void zero_release(Zero *z, ZeroUnit *u);
ZeroUnit *zero_unit_of(Zero *z, const Block *b);

/* What a stage holds per rank by the ZeRO paper's formula (float32 Adam: 16 bytes per
 * parameter in all; SGD with momentum: 12), for psi parameters on `world` ranks, with no
 * padding and no windows. */
ZeroMemory zero_memory_formula(int stage, int64_t psi, int world, ZeroOptimizer optimizer);
/* Bytes each rank sends in a step by the ring model (dist.h): 2 (stages 0-2) or 3 (3)
 * times 4 psi (N - 1) / N. A model computing in `dtype` (16 bits) changes stage 3's two
 * gathers only (they move its rounded shard): (2 x 2 + 4) psi (N - 1) / N; stages 1 and 2
 * gather the float32 master values. */
double zero_bytes_formula(int stage, int64_t psi, int world, DType dtype);

/* The whole model's parameters into values [psi] (packed, params' order) on every
 * rank's host: stage 3 gathers them; for digests and checks. */
void zero_full_params(Zero *z, float *values);
/* The whole optimiser state `which` (as zero_state_piece) gathered the same way. */
void zero_full_state(Zero *z, int which, float *state);

#endif
