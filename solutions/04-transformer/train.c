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
    /* StepLR (step size 1): epoch 1 trains with the base rate, each later one gamma times less */
    const float lr = step_lr(opt->base_lr, s->gamma, 1, epoch - 1);
    optimizer_set_lr(opt, lr);
    transformer_train(m); /* dropout on */
    const int64_t batches = text_batch_count(train, s->bptt);
    const double t0 = now_seconds();
    double loss_sum = 0.0, norm_sum = 0.0;
    for (int64_t i = 0; i < train->rows - 1; i += s->bptt) {
        if (s->max_steps > 0 && st.steps >= s->max_steps) break;
        TextBatch b = lesson_get_batch(train, i, s->bptt);
        token_batch_load(tb, &b);                 /* [seq_len, B] -> rows b*T + t, on the device */
        transformer_set_seq_len(m, b.seq_len);    /* the last batch is shorter */
        params_zero_grad(&m->params);             /* the backward adds (+=) into the gradients */
        const float loss = transformer_forward_backward(m, tb->tokens, tb->targets);
        char where[64];
        snprintf(where, sizeof where, "epoch %d, step %lld", epoch, (long long)st.steps + 1);
        train_stop_if_diverged(loss, where, lr);
        /* finite, but far above where the run started, or rising: the program's watch */
        if (s->watch) loss_watch_step(s->watch, loss, st.steps + 1, lr);
        /* clip: scale all gradients together so that their global norm is at most s->clip */
        const float norm = s->clip > 0 ? clip_grad_norm(&m->params, s->clip) : grad_norm(&m->params);
        train_stop_if_diverged(norm, where, lr);
        optimizer_step(opt, &m->params);
        const int64_t n = (int64_t)b.seq_len * b.cols; /* tokens in this batch */
        loss_sum += (double)loss * (double)n;          /* loss is their mean: weight it by n */
        norm_sum += norm;
        st.tokens += n;
        st.steps++;
        show_progress(epoch, st.steps, batches, lr, loss_sum / (double)st.tokens, now_seconds() - t0);
    }
    progress_clear();
    st.loss = st.tokens ? loss_sum / (double)st.tokens : 0.0;
    st.grad_norm = st.steps ? norm_sum / (double)st.steps : 0.0;
    return st;
}

EvalResult lesson_evaluate(Transformer *m, const TextBatches *data, int bptt, TokenBatch *tb) {
    EvalResult r = {0};
    CHECK(data->cols == m->B, "the data has %d columns, the model takes %d sequences", data->cols,
          m->B);
    const int blocks = transformer_block_count(&m->cfg);
    transformer_eval(m); /* dropout off: evaluation uses the whole model */
    double loss_sum = 0.0;
    for (int64_t i = 0; i < data->rows - 1; i += bptt) {
        TextBatch b = lesson_get_batch(data, i, bptt);
        token_batch_load(tb, &b);
        transformer_set_seq_len(m, b.seq_len);
        transformer_forward(m, 0, blocks, tb->tokens, NULL); /* no backward: nothing to learn */
        const int64_t n = (int64_t)b.seq_len * b.cols;
        loss_sum += (double)transformer_loss(m, tb->targets) * (double)n;
        r.tokens += n;
    }
    transformer_train(m);
    r.loss = r.tokens ? loss_sum / (double)r.tokens : 0.0;
    r.ppl = exp(r.loss);
    return r;
}
