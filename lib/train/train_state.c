#include "train_state.h"

#include <stdint.h>

uint64_t train_data_fingerprint(const Dataset *d) {
    const int64_t sizes[5] = {d->count, d->channels, d->height, d->width, d->num_classes};
    const size_t n = (size_t)(d->count < 64 ? d->count : 64);
    const size_t pixels = (size_t)d->channels * (size_t)d->height * (size_t)d->width;
    return ckpt_hash64(sizes, sizeof sizes, 0) ^ ckpt_hash64(d->images, n * pixels * sizeof(float), 1) ^
           ckpt_hash64(d->labels, n, 2);
}

void ckpt_add_train_state(Checkpoint *c, TrainState *s) {
    ckpt_add_i64(c, "train.epoch", &s->epoch);
    ckpt_add_i64(c, "train.step", &s->step);
    ckpt_add_i64(c, "train.global_step", &s->global_step);
    ckpt_add_u64(c, "rng.state", &s->rng_state);
    ckpt_add_u64(c, "rng.inc", &s->rng_inc);
    ckpt_add_u64(c, "sampler.seed", &s->sampler_seed);
    ckpt_add_i64(c, "sampler.epoch", &s->sampler_epoch);
    ckpt_add_i64(c, "sampler.position", &s->sampler_position);
    ckpt_add_i64(c, "sampler.count", &s->sampler_count);
    ckpt_add_f64(c, "train.loss_sum", &s->loss_sum);
    ckpt_add_i64(c, "train.examples", &s->examples);
    ckpt_add_f64(c, "best.metric", &s->best_metric);
    ckpt_add_i64(c, "best.epoch", &s->best_epoch);
    /* what a run can have been at: anything else is refused on load like damage */
    ckpt_expect_range(c, "train.epoch", 1, INT32_MAX);
    ckpt_expect_range(c, "train.step", 0, INT32_MAX);
    ckpt_expect_range(c, "train.global_step", 0, INT64_MAX);
    ckpt_expect_odd(c, "rng.inc"); /* PCG's increment is always odd (rng_seed makes it so) */
    ckpt_expect_range(c, "sampler.epoch", 0, INT32_MAX);
    ckpt_expect_range(c, "sampler.position", 0, INT32_MAX);
    ckpt_expect_range(c, "sampler.count", 0, INT32_MAX);
    ckpt_expect_at_most(c, "sampler.position", "sampler.count");
    ckpt_expect_range(c, "train.examples", 0, INT64_MAX);
    ckpt_expect_inf_allowed(c, "best.metric"); /* -infinity: no evaluation yet */
    ckpt_expect_range(c, "best.epoch", 0, INT32_MAX);
}
