/* TODO 3.1: what a checkpoint must hold.
 *
 * Everything that training changes and that the next step depends on. Leave a
 * piece out and the resumed run drifts away from the one that never stopped: see
 * the README, section "TODO 3.1", for what goes wrong without each piece. */
#include "lesson.h"

void lesson_describe_checkpoint(Checkpoint *c, Run *run) {
    ckpt_add_params(c, "model", &run->model.params); /* the weights themselves */
    ckpt_add_adam(c, &run->opt, &run->model.params); /* m, v and t: Adam's memory */
    ckpt_add_train_state(c, &run->ts);               /* epoch, step, RNG, sampler, best */
}

void lesson_capture_state(Run *run) {
    TrainState *ts = &run->ts;
    ts->rng_state = run->rng.state;
    ts->rng_inc = run->rng.inc;
    ts->sampler_seed = run->sampler.seed;
    ts->sampler_epoch = run->sampler.epoch;
    ts->sampler_position = run->sampler.position;
    ts->sampler_count = run->sampler.count;
}
