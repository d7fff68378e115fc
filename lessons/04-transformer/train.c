/* TODO 4.7 and 4.8: the training loop and the evaluation.
 *
 * One step: take the next bptt rows of the batchified text, run the model forward and
 * backward on them (the library's transformer_forward_backward: logits, the mean
 * cross-entropy of predicting each next token, every gradient), clip the gradients'
 * global norm, and let the optimiser take a step. One epoch is one pass over the rows.
 * The evaluation runs the same batches forward only, without dropout, and turns the
 * mean loss into a perplexity. */
#include <math.h>
#include <stdio.h>

#include "core/log.h"
#include "core/timer.h"
#include "lesson.h"
#include "train/clip.h"
#include "train/loop.h"
#include "train/loss_watch.h"
#include "train/schedule.h"

void show_progress(int epoch, int64_t batch, int64_t batches, float lr, double loss,
                   double seconds) {
    if (batch % 10 != 0 && batch != batches) return; /* a terminal need not see every step */
    progress("| epoch %3d | %5lld/%5lld batches | lr %5.2g | ms/batch %6.1f | loss %5.2f | ppl %8.2f",
             epoch, (long long)batch, (long long)batches, (double)lr, 1e3 * seconds / (double)batch,
             loss, exp(loss));
}

TrainStats lesson_train_epoch(Transformer *m, Optimizer *opt, const TextBatches *train,
                              const TrainSettings *s, int epoch, TokenBatch *tb) {
    TrainStats st = {0};
    CHECK(train->cols == m->B, "the training data has %d columns, the model takes %d sequences",
          train->cols, m->B);
    /* TODO 4.7: first the learning rate of this epoch (StepLR, step size 1):
     *     lr = step_lr(opt->base_lr, s->gamma, 1, epoch - 1);  optimizer_set_lr(opt, lr);
     * and transformer_train(m) (dropout on). Then for i = 0, bptt, 2 bptt, ... while
     * i < train->rows - 1, and while s->max_steps is 0 or st.steps < s->max_steps:
     *   1. b = lesson_get_batch(train, i, s->bptt); token_batch_load(tb, &b) puts its
     *      tokens into the model's layout and memory; transformer_set_seq_len(m, b.seq_len)
     *      (the last batch is shorter);
     *   2. params_zero_grad(&m->params), then
     *      loss = transformer_forward_backward(m, tb->tokens, tb->targets);
     *   3. a loss that is NaN or inf stops with a message: train_stop_if_diverged(loss,
     *      where, lr) (lib/train/loop.h), where "where" names the step for the message:
     *          char where[64];
     *          snprintf(where, sizeof where, "epoch %d, step %lld", epoch, (long long)st.steps + 1);
     *      and a loss that stays finite but climbs far above where the run started (a
     *      learning rate far too large) stops it too: when s->watch is not NULL,
     *      loss_watch_step(s->watch, loss, st.steps + 1, lr) (lib/train/loss_watch.h);
     *   4. norm = clip_grad_norm(&m->params, s->clip) when s->clip > 0 (else
     *      grad_norm(&m->params)), then optimizer_step(opt, &m->params);
     *   5. n = b.seq_len * b.cols tokens: add loss * n to a double sum, n to st.tokens,
     *      norm to another sum; st.steps++; show_progress(epoch, st.steps,
     *      text_batch_count(train, s->bptt), lr, sum / st.tokens, seconds so far), with
     *      text_batch_count from data/text.h (the number of batches of the epoch) and the
     *      seconds from now_seconds() (core/timer.h): t0 = now_seconds() before the loop,
     *      now_seconds() - t0 at each step.
     * After the loop: progress_clear(); st.loss = the sum / st.tokens, st.grad_norm =
     * the mean norm per step. */
    TODO_STOP("4.7");
    return st;
}

EvalResult lesson_evaluate(Transformer *m, const TextBatches *data, int bptt, TokenBatch *tb) {
    EvalResult r = {0};
    CHECK(data->cols == m->B, "the data has %d columns, the model takes %d sequences", data->cols,
          m->B);
    /* TODO 4.8: transformer_eval(m) (dropout off), then over the batches of data as in
     * TODO 4.7 (i = 0, bptt, ... while i < data->rows - 1; lesson_get_batch,
     * token_batch_load, transformer_set_seq_len), but forward only:
     *     transformer_forward(m, 0, transformer_block_count(&m->cfg), tb->tokens, NULL);
     *     loss = transformer_loss(m, tb->targets);        (the batch's mean per token)
     * Weight each batch's loss by its n = seq_len * cols tokens (the last batch is
     * shorter), and return r.loss = the mean per token, r.ppl = exp(r.loss), r.tokens.
     * Put the model back into training mode at the end: transformer_train(m). */
    TODO_STOP("4.8");
    return r;
}
