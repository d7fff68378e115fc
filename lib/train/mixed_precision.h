/* A training run's precision, for its loop: float32, or bfloat16 / float16 compute with
 * float32 master weights (issue 28, docs/mixed-precision.md).
 *
 * What a step does in each (the model set to the dtype first: transformer_set_precision):
 *   fp32  nothing more than today;
 *   bf16  after the optimiser's step, the 16-bit working copy is rounded again from the
 *         float32 master values (params_refresh_working): the master copy keeps an
 *         update smaller than half a bfloat16 step, which the working copy shows once
 *         the master has crossed to its next bfloat16 neighbour;
 *   fp16  the same, and dynamic loss scaling (train/loss_scale.h, GradScaler's
 *         semantics): the loss gradient is multiplied by S (BlockList.loss_scale), the
 *         parameters' gradients divided by S after the backward, a step with an inf or
 *         NaN gradient skipped (and counted), S halved, doubled after 2,000 clean steps.
 *
 *   MixedPrecision mp;
 *   mixed_precision_init(&mp, dtype, &m.blocks, &m.params);
 *   params_zero_grad(&m.params);
 *   loss = transformer_forward_backward(&m, tokens, targets);  // scaled loss gradient
 *   mixed_precision_unscale(&mp);             // fp16: g /= S; an inf zeroes g (below)
 *   clip_grad_norm(&m.params, clip);          // on true gradients
 *   if (mixed_precision_should_step(&mp)) adam_step(&opt, &m.params);
 *   mixed_precision_step_done(&mp);           // working copy refreshed; S updated
 *
 * A loop that has no place for the unscale between its backward and its clipping (lesson
 * 04's TODO 4.7, written for float32) calls mixed_precision_unscale_after_backward once:
 * the model's backward then unscales as its last block finishes (a block hook). Either
 * way, a skipped step's gradients are set to zero, so that the loop's clipping and its
 * divergence check see a norm of 0 and not the inf that is only float16's overflow.
 *
 * The hook suits a loop with one backward of the whole model per step (lesson 04). A
 * loop with several backwards a step (micro-batches) or a gradient reduction after them
 * (data parallel, lesson 06) calls mixed_precision_unscale itself once they are done;
 * its ranks then agree on a skip with loss_scale_agree (its header: &mp.scaler) before
 * the step. */
#ifndef TRAIN_MIXED_PRECISION_H
#define TRAIN_MIXED_PRECISION_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"
#include "models/block.h"
#include "models/params.h"
#include "train/checkpoint.h"
#include "train/loss_scale.h"

typedef struct {
    DType dtype;
    bool scaling;          /* float16: dynamic loss scaling */
    LossScaler scaler;     /* with scaling */
    BlockList *blocks;     /* whose loss gradient is scaled */
    ParamList *params;     /* the master values, gradients and working copy */
    bool hooked;           /* unscales at the end of each backward */
} MixedPrecision;

/* For a model already set to `dtype` (its blocks and parameters' working copy); fp16
 * sets blocks->loss_scale to GradScaler's initial 65536. */
void mixed_precision_init(MixedPrecision *mp, DType dtype, BlockList *blocks, ParamList *params);
/* The same with other loss-scaling settings (loss_scale_init_with). */
void mixed_precision_init_scaled(MixedPrecision *mp, DType dtype, BlockList *blocks,
                                 ParamList *params, float init_scale, int growth_interval);
void mixed_precision_free(MixedPrecision *mp);

/* After the backward (and any gradient reduction), before clipping: fp16 divides the
 * gradients by S and returns whether one was inf or NaN (then they are zeroed); else
 * nothing, false. */
bool mixed_precision_unscale(MixedPrecision *mp);
/* The model's backward unscales by itself from now on (the hook above). */
void mixed_precision_unscale_after_backward(MixedPrecision *mp);
/* Whether the optimiser steps (false: fp16's gradients held an inf or NaN). */
bool mixed_precision_should_step(const MixedPrecision *mp);
/* After the optimiser's step (or the skip): the working copy rounded from the master
 * values (16-bit), the scale updated (fp16) and given to the blocks. */
void mixed_precision_step_done(MixedPrecision *mp);

/* Steps skipped for an inf or NaN gradient so far (0 unless fp16); the scale (1 unless fp16). */
int64_t mixed_precision_skipped(const MixedPrecision *mp);
float mixed_precision_scale(const MixedPrecision *mp);

/* The loss scaler in a checkpoint (lesson 03's, train/checkpoint.h), so that a resumed
 * fp16 run scales, grows and skips exactly as the uninterrupted one. An fp16 run's
 * manifest gets
 *   loss_scale.scale           S (float64, exact)
 *   loss_scale.growth_tracker  clean steps in a row since S last changed
 *   loss_scale.steps_taken     steps whose update ran
 *   loss_scale.steps_skipped   steps skipped for an overflow
 * through *slot (the file's scalars are 64-bit); a float32 or bf16 run's, none (its
 * files are as before) but leave to skip them in an fp16 run's file. Saving: add, then
 * ckpt_save. Loading: add, ckpt_load, then mixed_precision_ckpt_loaded. In fp16 the
 * entries are optional: a float32 or bf16 run's checkpoint, or one written before they
 * existed, loads, and the scaler stays fresh. So any precision resumes any other's
 * checkpoint (the weights are the float32 master copy either way). */
typedef struct {
    double scale;
    int64_t growth_tracker, steps_taken, steps_skipped;
    bool found; /* the last load had them */
} MixedPrecisionCkpt;
void mixed_precision_ckpt_add(Checkpoint *c, MixedPrecision *mp, MixedPrecisionCkpt *slot);
/* After a successful load: a float16 run takes the file's scaler (and gives its scale to
 * the blocks) and returns true; false when there was none to take (a float32 or bf16
 * run's checkpoint, or an older one: the scaler stays as it is) or the run is not fp16. */
bool mixed_precision_ckpt_loaded(MixedPrecision *mp, const MixedPrecisionCkpt *slot);

#endif
