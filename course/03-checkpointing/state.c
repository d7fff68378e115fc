/* TODO 3.1: what a checkpoint must hold.
 *
 * Everything that training changes and that the next step depends on. Leave a
 * piece out and the resumed run drifts away from the one that never stopped: see
 * the README, section "TODO 3.1", for what goes wrong without each piece. */
#include "lesson.h"

void lesson_describe_checkpoint(Checkpoint *c, Run *run) {
#ifdef SOLUTION
    ckpt_add_params(c, "model", &run->model.params); /* the weights themselves */
    ckpt_add_adam(c, &run->opt, &run->model.params); /* m, v and t: Adam's memory */
    ckpt_add_train_state(c, &run->ts);               /* epoch, step, RNG, sampler, best */
#else
    /* TODO 3.1: add to c
     *   1. the model's parameters: ckpt_add_params(c, "model", &run->model.params);
     *   2. Adam's state (both moments of every parameter, and the step count t):
     *      ckpt_add_adam(c, &run->opt, &run->model.params);
     *   3. the training state: ckpt_add_train_state(c, &run->ts).
     * Not the gradients or the activations: each step recomputes them from scratch. */
    TODO_STOP("3.1");
#endif
}

void lesson_capture_state(Run *run) {
#ifdef SOLUTION
    TrainState *ts = &run->ts;
    ts->rng_state = run->rng.state;
    ts->rng_inc = run->rng.inc;
    ts->sampler_seed = run->sampler.seed;
    ts->sampler_epoch = run->sampler.epoch;
    ts->sampler_position = run->sampler.position;
    ts->sampler_count = run->sampler.count;
#else
    /* TODO 3.1: copy into run->ts what the manifest cannot point at directly:
     *   rng_state, rng_inc         from run->rng (.state, .inc)
     *   sampler_seed, sampler_epoch, sampler_position, sampler_count
     *                              from run->sampler (.seed, .epoch, .position, .count)
     * The sampler's order itself is not saved: it is rebuilt from seed and epoch. */
    TODO_STOP("3.1");
#endif
}
