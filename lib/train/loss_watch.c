/* loss_watch.h: two tests on the mean of the recent losses, against ln V. */
#include "loss_watch.h"

#include <math.h>

#include "core/check.h"
#include "train/loop.h"

void loss_watch_init(LossWatch *w, int vocab_size) {
    *w = (LossWatch){.ln_v = log(vocab_size > 1 ? (double)vocab_size : 2.0), .lowest_mean = INFINITY,
                     .of = "words"};
}

void loss_watch_init_classes(LossWatch *w, int classes) {
    loss_watch_init(w, classes);
    w->of = "classes";
}

void loss_watch_step(LossWatch *w, double loss, long long step, double lr) {
    const double ln_v = w->ln_v;
    char advice[768]; /* the options set that can cause it, or --lr (train/loop.h) */
    if (!isfinite(loss)) {
        train_divergence_advice(advice, sizeof advice, lr);
        fatal("the training diverged: the loss at step %lld is %g. %s", step, loss, advice);
    }
    if (w->seen == 0) w->first = loss;
    w->recent[w->seen % LOSS_WATCH_STEPS] = loss;
    w->seen++;
    if (w->seen < LOSS_WATCH_STEPS) return;
    double mean = 0;
    for (int i = 0; i < LOSS_WATCH_STEPS; i++) mean += w->recent[i];
    mean /= LOSS_WATCH_STEPS;
    /* a wide model starts above ln V (its initial logits spread more: the seed model's
     * by about 6.8 nats); its own start, not ln V, is the reference then */
    const double start = fmax(w->first, ln_v);
    if (mean > start + 0.5 * ln_v) {
        train_divergence_advice(advice, sizeof advice, lr);
        fatal("the training diverged: the loss has averaged %.2f over the last %d steps (%.2f at "
              "step %lld), far above where it started (%.2f at step 1; ln V = %.2f is a uniform "
              "guess over the V = %.0f %s): the model predicts a few %s with confidence, "
              "wrongly. %s", mean, LOSS_WATCH_STEPS, loss, step, w->first, ln_v, exp(ln_v), w->of,
              w->of, advice);
    }
    if (mean < w->lowest_mean) w->lowest_mean = mean;
    if (mean > w->lowest_mean + 0.5 * ln_v) {
        train_divergence_advice(advice, sizeof advice, lr);
        fatal("the training diverged: the loss keeps rising: its mean over the last %d steps is "
              "%.2f at step %lld, up from %.2f (ln V = %.2f, a uniform guess). %s", LOSS_WATCH_STEPS,
              mean, step, w->lowest_mean, ln_v, advice);
    }
}
