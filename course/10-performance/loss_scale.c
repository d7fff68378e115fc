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
#ifdef SOLUTION
    const float inv = (float)(1.0 / (double)scale);
    bool found = false;
    for (int64_t k = 0; k < n; k++) {
        found |= !isfinite(g[k]);
        g[k] *= inv;
    }
    return found;
#else
    /* TODO 10.9: every g[k] *= inv, inv = (float)(1.0 / (double)scale); note whether any
     * g[k] was inf or NaN (isfinite) before its multiply, and return that. */
    TODO_STOP("10.9");
#endif
}

void lesson_scale_update(LossScaler *s, bool found_inf) {
#ifdef SOLUTION
    if (found_inf) {
        s->scale *= s->backoff_factor;
        s->growth_tracker = 0;
        s->steps_skipped++;
        return;
    }
    s->steps_taken++;
    if (++s->growth_tracker == s->growth_interval) {
        const float grown = s->scale * s->growth_factor;
        if (isfinite(grown)) s->scale = grown;
        s->growth_tracker = 0;
    }
#else
    /* TODO 10.9: halve (backoff) on found_inf and restart the count, else count the clean
     * step and grow after growth_interval of them in a row; count taken and skipped. */
    TODO_STOP("10.9");
#endif
}

bool lesson_fp16_step(Fp16Step *st) {
#ifdef SOLUTION
    ParamList *p = st->params;
    const bool found = lesson_unscale(p->grads.data, p->grads.size, st->scaler->scale);
    if (found) tensor_fill(&p->grads, 0.0f); /* a clean 0 for the norm, not inf */
    clip_grad_norm(p, st->max_norm);         /* on the true gradients */
    if (!found) {
        adam_step(st->opt, p);
        params_refresh_working(p);
    }
    lesson_scale_update(st->scaler, found);
    return !found;
#else
    /* TODO 10.10: unscale (lesson_unscale on params->grads.data, .size); on an inf or NaN
     * zero the gradients (tensor_fill(&params->grads, 0.0f)); clip (clip_grad_norm); then
     * step (adam_step) and refresh the working copy (params_refresh_working), unless an inf
     * or NaN was found (skip both); then, either way, update the scale once
     * (lesson_scale_update: it counts the step); return whether the step was taken. */
    TODO_STOP("10.10");
#endif
}
