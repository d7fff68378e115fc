/* TODO 10.1: ranges around a step's phases.
 *
 * A trace shows what you name: the library already opens ranges for each block's
 * passes ("layer 0 forward"), the collectives ("all-reduce", "wait all-reduce"), the
 * optimiser ("adam step") and the loader ("wait batch"), but what a step is, and which
 * part of it is loading, forward, backward or the optimiser, only the training loop
 * knows. trace_begin(name, category) opens a range on this thread's track and
 * trace_end(name) closes it: they nest, like brackets (core/trace.h). With no trace
 * open they cost nothing. */
#include "lesson.h"
#include "train/clip.h"

float lesson_step(Step *s) {
    const int blocks = transformer_block_count(&s->lm->cfg);
    trace_begin("step", TRACE_STEP);
    trace_begin("load batch", TRACE_DATA);
    step_load_batch(s);
    trace_end("load batch");
    params_zero_grad(s->params);
    trace_begin("forward", TRACE_COMPUTE);
    transformer_forward(s->lm, 0, blocks, s->tokens, NULL);
    const float loss = transformer_loss_grad(s->lm, s->targets);
    trace_end("forward");
    trace_begin("backward", TRACE_COMPUTE);
    transformer_backward(s->lm, 0, blocks, &s->lm->dlogits, NULL, NULL);
    trace_end("backward");
    step_sync_gradients(s); /* the library's comm ranges: not inside a compute range */
    trace_begin("optimizer", TRACE_COMPUTE);
    if (s->clip > 0) clip_grad_norm(s->params, s->clip);
    adam_step(s->adam, s->params);
    trace_end("optimizer");
    trace_end("step");
    return loss;
}
