/* A language model's training loss watched for divergence that has no NaN in it: SGD
 * at a learning rate far too large for the model drives the loss far above ln V (the
 * loss of a uniform guess over V words: a model there predicts a few words with
 * confidence, and wrongly) and the run would go on to a perplexity of 1e19 with exit
 * status 0. Each step:
 *
 *   LossWatch w;
 *   loss_watch_init(&w, vocab_size);
 *   ... loss_watch_step(&w, loss, step, lr);   // returns, or stops the run
 *
 * It stops (exit status 1, one message naming the step, the losses and --lr) when the
 * loss is not finite; when it stays above 1.5 ln V for LOSS_WATCH_STEPS steps in a row;
 * or when it keeps rising: the mean of the last LOSS_WATCH_STEPS steps more than
 * ln V / 2 above the lowest such mean so far. An untrained model starts at about ln V
 * and a training one only comes down, by less than that within a window's noise. */
#ifndef TRAIN_LOSS_WATCH_H
#define TRAIN_LOSS_WATCH_H

enum { LOSS_WATCH_STEPS = 10 };

typedef struct {
    double ln_v;                     /* ln V: the loss of a uniform guess */
    double recent[LOSS_WATCH_STEPS]; /* the last losses, a ring */
    int seen;                        /* steps watched */
    int above;                       /* steps in a row above 1.5 ln V */
    double lowest_mean;              /* the lowest mean of LOSS_WATCH_STEPS steps so far */
} LossWatch;

void loss_watch_init(LossWatch *w, int vocab_size);
/* step: the run's count for the message (from 1); lr: the learning rate it used. */
void loss_watch_step(LossWatch *w, double loss, long long step, double lr);

#endif
