/* TODOs 10.9 and 10.10: dynamic loss scaling for float16 (PyTorch's GradScaler).
 *
 * float16's smallest subnormal is 2^-24: smaller gradients become 0. The loss (its
 * gradient) is multiplied by S before the backward, so every gradient is S times larger
 * and lands in float16's range; the gradients are divided by S after it. Too large an S
 * overflows to inf: that step is skipped and S halved; after growth_interval clean steps
 * in a row S is doubled again. So S settles just below the largest that does not
 * overflow. A NaN is an overflow too (inf - inf, 0 x inf): it compares false with
 * everything, so a test like g > FLT_MAX misses it. */
#include <math.h>

#include "lesson.h"
#include "train/clip.h"

bool lesson_unscale(float *g, int64_t n, float scale) {
    /* TODO 10.9: every g[k] *= inv, inv = (float)(1.0 / (double)scale); note whether any
     * g[k] was inf or NaN (isfinite) before its multiply, and return that. */
    TODO_STOP("10.9");
}

void lesson_scale_update(LossScaler *s, bool found_inf) {
    /* TODO 10.9: halve (backoff) on found_inf and restart the count, else count the clean
     * step and grow after growth_interval of them in a row; count taken and skipped. */
    TODO_STOP("10.9");
}

bool lesson_fp16_step(Fp16Step *st) {
    /* TODO 10.10: unscale (lesson_unscale on params->grads.data, .size); on an inf or NaN
     * zero the gradients (tensor_fill(&params->grads, 0.0f)); clip (clip_grad_norm); then
     * step (adam_step) and refresh the working copy (params_refresh_working), unless an inf
     * or NaN was found (skip both); then, either way, update the scale once
     * (lesson_scale_update: it counts the step); return whether the step was taken. */
    TODO_STOP("10.10");
}
