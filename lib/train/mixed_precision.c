#include "train/mixed_precision.h"

#include <math.h>
#include <string.h>

#include "core/check.h"

void mixed_precision_init_scaled(MixedPrecision *mp, DType dtype, BlockList *blocks,
                                 ParamList *params, float init_scale, int growth_interval) {
    memset(mp, 0, sizeof *mp);
    mp->dtype = dtype, mp->blocks = blocks, mp->params = params;
    CHECK(blocks->dtype == dtype, "mixed precision %s for a model that runs in %s: set the "
          "model's precision first (transformer_set_precision)", dtype_name(dtype),
          dtype_name(blocks->dtype));
    CHECK(dtype == DTYPE_F32 || (params->working.raw && params->working.dtype == dtype),
          "mixed precision %s without a %s working copy of the parameters", dtype_name(dtype),
          dtype_name(dtype));
    mp->scaling = dtype == DTYPE_F16;
    if (mp->scaling) {
        loss_scale_init_with(&mp->scaler, init_scale, 2.0f, 0.5f, growth_interval);
        blocks->loss_scale = loss_scale_value(&mp->scaler);
    }
}

void mixed_precision_init(MixedPrecision *mp, DType dtype, BlockList *blocks, ParamList *params) {
    mixed_precision_init_scaled(mp, dtype, blocks, params, 65536.0f, 2000); /* GradScaler's */
}

static void after_backward(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after) {
    if (pass == BLOCK_BACKWARD && after && b->index == l->first) /* the backward's last block */
        mixed_precision_unscale(ctx);
}

void mixed_precision_free(MixedPrecision *mp) {
    if (mp->hooked) blocks_remove_hook(mp->blocks, after_backward, mp);
    if (mp->scaling) mp->blocks->loss_scale = 0.0f;
    memset(mp, 0, sizeof *mp);
}

bool mixed_precision_unscale(MixedPrecision *mp) {
    if (!mp->scaling) return false;
    const bool found = loss_scale_unscale(&mp->scaler, &mp->params->grads);
    if (found) tensor_fill(&mp->params->grads, 0.0f); /* skipped: a clean 0 for clip's norm */
    return found;
}

void mixed_precision_unscale_after_backward(MixedPrecision *mp) {
    if (!mp->scaling || mp->hooked) return;
    blocks_add_hook(mp->blocks, after_backward, mp);
    mp->hooked = true;
}

bool mixed_precision_should_step(const MixedPrecision *mp) {
    return !mp->scaling || loss_scale_should_step(&mp->scaler);
}

void mixed_precision_step_done(MixedPrecision *mp) {
    if (mp->dtype == DTYPE_F32) return;
    if (mixed_precision_should_step(mp)) params_refresh_working(mp->params);
    if (mp->scaling) {
        loss_scale_update(&mp->scaler);
        mp->blocks->loss_scale = loss_scale_value(&mp->scaler);
    }
}

int64_t mixed_precision_skipped(const MixedPrecision *mp) {
    return mp->scaling ? mp->scaler.steps_skipped : 0;
}

float mixed_precision_scale(const MixedPrecision *mp) {
    return mp->scaling ? loss_scale_value(&mp->scaler) : 1.0f;
}

void mixed_precision_ckpt_add(Checkpoint *c, MixedPrecision *mp, MixedPrecisionCkpt *slot) {
    const LossScaler *ls = &mp->scaler;
    *slot = (MixedPrecisionCkpt){0};
    if (!mp->scaling) { /* nothing to keep; an fp16 run's file loads all the same */
        ckpt_ignore_unknown(c, "loss_scale.");
        return;
    }
    *slot = (MixedPrecisionCkpt){.scale = ls->scale, .growth_tracker = ls->growth_tracker,
                                 .steps_taken = ls->steps_taken, .steps_skipped = ls->steps_skipped};
    ckpt_add_f64(c, "loss_scale.scale", &slot->scale);
    ckpt_add_i64(c, "loss_scale.growth_tracker", &slot->growth_tracker);
    ckpt_add_i64(c, "loss_scale.steps_taken", &slot->steps_taken);
    ckpt_add_i64(c, "loss_scale.steps_skipped", &slot->steps_skipped);
    ckpt_expect_f64_at_least(c, "loss_scale.scale", 0x1p-149); /* float's least positive */
    /* a tracker at the interval would have grown S and restarted (the interval is this
     * run's: a setting, not state) */
    ckpt_expect_range(c, "loss_scale.growth_tracker", 0, ls->growth_interval - 1);
    ckpt_expect_range(c, "loss_scale.steps_taken", 0, INT64_MAX);
    ckpt_expect_range(c, "loss_scale.steps_skipped", 0, INT64_MAX);
    /* the four come together: one flag for them (a file holds all or none) */
    ckpt_expect_optional(c, "loss_scale.scale", &slot->found);
    ckpt_expect_optional(c, "loss_scale.growth_tracker", &slot->found);
    ckpt_expect_optional(c, "loss_scale.steps_taken", &slot->found);
    ckpt_expect_optional(c, "loss_scale.steps_skipped", &slot->found);
}

bool mixed_precision_ckpt_loaded(MixedPrecision *mp, const MixedPrecisionCkpt *slot) {
    if (!mp->scaling || !slot->found) return false;
    LossScaler *ls = &mp->scaler;
    const float scale = (float)slot->scale;
    CHECK(isfinite(scale) && scale > 0.0f && (double)scale == slot->scale,
          "a loss scale of %g from a checkpoint: not a float's value", slot->scale);
    ls->scale = scale;
    ls->growth_tracker = (int)slot->growth_tracker;
    ls->steps_taken = slot->steps_taken, ls->steps_skipped = slot->steps_skipped;
    mp->blocks->loss_scale = scale;
    return true;
}
