/* Dynamic loss scaling for float16 training, with PyTorch's GradScaler semantics
 * (torch.amp.GradScaler: init_scale 2^16, growth_factor 2, backoff_factor 0.5,
 * growth_interval 2000).
 *
 * Why: float16's smallest subnormal is 2^-24 (6e-8) and its smallest normal 2^-14;
 * gradients of a deep model are often smaller and flush to zero. Multiplying the loss
 * by S multiplies every gradient by S (the backward is linear in the loss gradient), so
 * they land in float16's range; dividing by S before the update gives them back.
 * Too large an S overflows to inf instead: the scale is then halved and that step
 * skipped, and doubled again after `growth_interval` clean steps in a row, so it
 * settles just below the largest scale that does not overflow.
 *
 * One step (the gradients float32, on the CPU or the GPU):
 *
 *   LossScaler ls;
 *   loss_scale_init(&ls);                         // once
 *   ...
 *   params_zero_grad(&params);
 *   // forward; the loss gradient times loss_scale_value(&ls); backward
 *   loss_scale_unscale(&ls, &params.grads);       // g *= 1/S, inf/NaN noted
 *   loss_scale_agree(&ls, any_rank, dist);        // several ranks only (below)
 *   clip_grad_norm(&params, max_norm);            // on true gradients
 *   if (loss_scale_should_step(&ls)) adam_step(&opt, &params);
 *   loss_scale_update(&ls);                       // halve, or count towards doubling
 *
 * Unscale BEFORE clipping: max_norm is a bound on the true gradient's norm. On scaled
 * gradients the norm is S times too large, so clipping would fire on nearly every step
 * and by a factor that depends on S, which changes during training (the update would
 * jump each time the scale halves or doubles). Unscaled first, the clipped gradients
 * are those of the unscaled run (bit for bit when S is a power of two, as it stays with
 * the default factors). Unscale once per step: a second call would divide again (it is
 * refused until loss_scale_update). On a skipped step the gradients hold inf or NaN and
 * so does clip's norm: that is expected, not divergence; the step is not taken.
 *
 * Data parallel: every rank must skip the same steps, or the replicas drift apart. The
 * ranks' flags are combined by the caller (lib/train does not know lib/dist) with one
 * host-scalar reduction, MAX over ranks (any rank's inf skips everyone; for flags of 0
 * and 1 a sum above 0 is their maximum):
 *
 *   static bool any_rank(void *d, bool found) { return dist_sum_double(d, found) > 0.0; }
 *   loss_scale_agree(&ls, any_rank, dist);         // after unscale, before clip/step
 *
 * It is needed wherever ranks hold different gradients: pipeline stages, tensor-parallel
 * shards, ZeRO's gradient shards. In plain data parallel the gradient all-reduce already
 * carries an inf to every rank; the agreement costs one scalar and keeps that true
 * whatever the strategy. Every rank's scale then stays the same. */
#ifndef TRAIN_LOSS_SCALE_H
#define TRAIN_LOSS_SCALE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

typedef struct {
    float scale;                 /* S: the loss gradient is multiplied by it */
    float growth_factor;         /* S *= this after growth_interval clean steps */
    float backoff_factor;        /* S *= this on a step with inf or NaN */
    int growth_interval;
    int growth_tracker;          /* clean steps in a row since S last changed */
    bool found_inf;              /* the last unscaled gradients had an inf or NaN (on any
                                  * rank, after loss_scale_agree) */
    bool unscaled;               /* loss_scale_unscale ran this step */
    int64_t steps_taken;         /* steps whose update ran */
    int64_t steps_skipped;       /* steps skipped for inf/NaN: for the metrics */
} LossScaler;

/* PyTorch's defaults: S = 65536, x2 after 2000 clean steps, x0.5 on inf/NaN. */
void loss_scale_init(LossScaler *ls);
/* Other values (positive scale, growth_factor > 1, 0 < backoff_factor < 1, interval
 * >= 1); a bad one is a user error that names it. */
void loss_scale_init_with(LossScaler *ls, float init_scale, float growth_factor,
                          float backoff_factor, int growth_interval);

/* S, to multiply the loss (its gradient) by before the backward. */
float loss_scale_value(const LossScaler *ls);

/* grads [n] float32, in place: each g *= 1/S (1/S computed in double, rounded to
 * float, as GradScaler does); found_inf set when any g was inf or NaN before the
 * multiplication. CPU: one OpenMP loop; GPU: one kernel and a flag read back (one
 * 4-byte copy, the step's one synchronisation). Returns this rank's found_inf. */
bool loss_scale_unscale(LossScaler *ls, Tensor *grads);

/* found_inf = agree(ctx, found_inf): the ranks' verdicts combined (above). */
typedef bool (*LossScaleAgreeFn)(void *ctx, bool found_inf);
void loss_scale_agree(LossScaler *ls, LossScaleAgreeFn agree, void *ctx);

/* Whether the optimiser may step: false when the gradients held an inf or NaN.
 * Stops with a message when loss_scale_unscale has not run this step (the step
 * would use scaled gradients). */
bool loss_scale_should_step(const LossScaler *ls);

/* Ends the step (GradScaler.update): on inf/NaN S *= backoff_factor, the clean-step
 * count restarts and the step is counted as skipped; else the count grows, and when it
 * reaches growth_interval S *= growth_factor (kept as it was if that overflows float)
 * and the count restarts. Needs loss_scale_unscale first. */
void loss_scale_update(LossScaler *ls);

#endif
