#include "train/loss_scale.h"

#include <math.h>

#include "core/check.h"
#include "core/dtype.h"
#include "cuda/loss_scale.h"

void loss_scale_init_with(LossScaler *ls, float init_scale, float growth_factor,
                          float backoff_factor, int growth_interval) {
    if (!(init_scale > 0.0f) || !isfinite(init_scale))
        fatal("loss scaling: the initial scale is %g; it must be positive and finite "
              "(GradScaler's default is 65536)", (double)init_scale);
    if (!(growth_factor > 1.0f) || !isfinite(growth_factor))
        fatal("loss scaling: the growth factor is %g; it must be above 1 (default 2)",
              (double)growth_factor);
    if (!(backoff_factor > 0.0f && backoff_factor < 1.0f))
        fatal("loss scaling: the backoff factor is %g; it must be between 0 and 1 (default 0.5)",
              (double)backoff_factor);
    if (growth_interval < 1)
        fatal("loss scaling: the growth interval is %d steps; it must be at least 1 (default 2000)",
              growth_interval);
    *ls = (LossScaler){.scale = init_scale, .growth_factor = growth_factor,
                       .backoff_factor = backoff_factor, .growth_interval = growth_interval};
}

void loss_scale_init(LossScaler *ls) { loss_scale_init_with(ls, 65536.0f, 2.0f, 0.5f, 2000); }

float loss_scale_value(const LossScaler *ls) { return ls->scale; }

/* g[0..n) *= inv; true when a g was inf or NaN before (all exponent bits set: a test on
 * the bits, which no floating-point mode can turn off) */
static bool unscale_cpu(float *g, int64_t n, float inv) {
    int found = 0;
#pragma omp parallel for simd reduction(| : found) schedule(static)
    for (int64_t k = 0; k < n; k++) {
        found |= (dtype_bits_of_f32(g[k]) & 0x7f800000u) == 0x7f800000u;
        g[k] *= inv;
    }
    return found != 0;
}

bool loss_scale_unscale(LossScaler *ls, Tensor *grads) {
    CHECK(!ls->unscaled, "loss_scale_unscale called twice in one step: the gradients would be "
          "divided by the scale twice (call loss_scale_update to end the step)");
    CHECK_FLOAT32(grads);
    const float inv = (float)(1.0 / (double)ls->scale);
    if (grads->device == DEVICE_CPU) ls->found_inf = unscale_cpu(grads->data, grads->size, inv);
    else ls->found_inf = cuda_unscale_find_inf(grads->data, grads->size, inv);
    ls->unscaled = true;
    return ls->found_inf;
}

void loss_scale_agree(LossScaler *ls, LossScaleAgreeFn agree, void *ctx) {
    CHECK(ls->unscaled, "loss_scale_agree before loss_scale_unscale: there is no verdict to "
          "share yet");
    ls->found_inf = agree(ctx, ls->found_inf);
}

bool loss_scale_should_step(const LossScaler *ls) {
    CHECK(ls->unscaled, "the optimiser step asked before loss_scale_unscale: the gradients are "
          "still multiplied by the loss scale %g", (double)ls->scale);
    return !ls->found_inf;
}

void loss_scale_update(LossScaler *ls) {
    CHECK(ls->unscaled, "loss_scale_update before loss_scale_unscale in this step");
    if (ls->found_inf) {
        ls->scale = (float)((double)ls->scale * ls->backoff_factor);
        ls->growth_tracker = 0;
        ls->steps_skipped++;
    } else {
        ls->steps_taken++;
        if (++ls->growth_tracker == ls->growth_interval) {
            const float grown = (float)((double)ls->scale * ls->growth_factor);
            if (isfinite(grown)) ls->scale = grown; /* never grown to inf */
            ls->growth_tracker = 0;
        }
    }
    ls->unscaled = false; /* found_inf stays: the step just ended, for the metrics */
}
