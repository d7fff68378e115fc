/* Lesson 10, part 2: mixed precision. The functions you write (TODOs 10.7-10.10) and the
 * program's two precision modes (precision_run.c, given).
 *
 * The library's versions, to read once your checks pass: lib/core/dtype.h (the
 * conversions), lib/train/loss_scale.h (dynamic loss scaling, GradScaler's rules),
 * lib/train/mixed_precision.h (a step's order); docs/mixed-precision.md says why. */
#ifndef LESSON10_PRECISION_H
#define LESSON10_PRECISION_H

#include <stdbool.h>
#include <stdint.h>

#include "models/params.h"
#include "train/loss_scale.h"
#include "train/optim.h"

/* TODO 10.7 (bf16.c): float32 -> bfloat16 bits, rounded to nearest, ties to the even
 * pattern; a value from halfway past the largest finite bf16 on becomes infinity; a NaN
 * stays a NaN of the same sign: its top 16 bits with the quiet bit 0x0040 set. */
uint16_t lesson_bf16_from_f32(float x);
/* TODO 10.7 (bf16.c): bfloat16 bits -> float32, exactly (every bf16 value is a float32). */
float lesson_f32_from_bf16(uint16_t h);

/* TODO 10.8 (master.c): one plain SGD step (no momentum, no decay) of n weights in mixed
 * precision: the float32 master copy master[n] takes the update w -= lr g, then the
 * bfloat16 working copy work[n] (what the forward reads) is rounded again from it
 * (with your lesson_bf16_from_f32). grad[n] is float32. */
void lesson_master_step(float *master, uint16_t *work, const float *grad, int64_t n, float lr);

/* TODO 10.9 (loss_scale.c): the gradients g[n] (float32, multiplied by the loss scale in
 * the backward) divided by it: g *= 1/scale, the inverse computed in double and rounded
 * to float, as GradScaler does. Returns whether any g was inf or NaN before the multiply
 * (as the backward left them: with a scale below 1 the multiply itself can overflow a
 * finite g, which says nothing about the scale being too large). */
bool lesson_unscale(float *g, int64_t n, float scale);
/* TODO 10.9 (loss_scale.c): the end of a step (GradScaler.update) for s->scale,
 * s->growth_tracker, s->steps_taken, s->steps_skipped: on an inf or NaN (found_inf) the
 * scale times s->backoff_factor, the clean-step count back to 0, the step counted as
 * skipped; else counted as taken, and after s->growth_interval clean steps in a row the
 * scale times s->growth_factor (kept as it was where that would overflow float) and the
 * count back to 0. The other fields are the library's: leave them. */
void lesson_scale_update(LossScaler *s, bool found_inf);

/* TODO 10.10 (loss_scale.c): one float16 step, after the backward. */
typedef struct {
    ParamList *params;  /* values: float32 master; grads: float32, times S (the backward's
                         * loss gradient was scaled); working: the float16 copy */
    Adam *opt;          /* steps params->values */
    LossScaler *scaler; /* S and its counts (your TODO 10.9 updates them) */
    float max_norm;     /* clip_grad_norm's bound on the true gradients' norm */
} Fp16Step;
/* In the library's order: 1. unscale (your lesson_unscale); 2. on an inf or NaN, zero the
 * gradients (tensor_fill(&params->grads, 0.0f)); 3. clip (clip_grad_norm; on a skipped
 * step's zeros it changes nothing, so clipping only clean steps is the same); 4. unless
 * an inf or NaN was found, the optimiser's step (adam_step) and the working copy rounded
 * again (params_refresh_working), else neither (the step is skipped); 5. either way, the
 * scale updated, once (your lesson_scale_update). Returns whether the step was taken. */
bool lesson_fp16_step(Fp16Step *st);

/* Given (precision_run.c): train --precision-demo | --compare-precision [...]. */
int precision_main(int argc, char **argv);

#endif
