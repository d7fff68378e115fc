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
 * It stops (exit status 1, one message naming the step, the losses and what to change:
 * the options set that can cause it, or --lr; train_divergence_advice) when the
 * loss is not finite; when its mean over the last LOSS_WATCH_STEPS steps is more than
 * ln V / 2 above where it started, the first step's loss or ln V, whichever is larger
 * (far above: every step there, or spikes far above it); or when it keeps rising: that
 * mean more than ln V / 2 above the lowest such mean so far. An untrained model starts
 * near ln V (a wide one above it: its initial logits spread more) and a training one
 * comes down, with spikes that a window of steps averages out (lesson 07's tutorial
 * model at lr 5: window means at most 0.3 ln V above its start on a 1,255-word text).
 * A classifier's loss is the same with V its classes (lesson 06's CNN: ln 10;
 * loss_watch_init_classes). */
#ifndef TRAIN_LOSS_WATCH_H
#define TRAIN_LOSS_WATCH_H

/* Steps in the window: long enough that a few steps far off do not stop a run, and that
 * a short run (a grader's 10 steps timing a schedule) is not judged at all. */
enum { LOSS_WATCH_STEPS = 20 };

typedef struct {
    double ln_v;                     /* ln V: the loss of a uniform guess */
    double recent[LOSS_WATCH_STEPS]; /* the last losses, a ring */
    int seen;                        /* steps watched */
    double first;                    /* the loss of the first step */
    double lowest_mean;              /* the lowest mean of LOSS_WATCH_STEPS steps so far */
    const char *of;                  /* what V counts, for the message: "words", "classes" */
} LossWatch;

void loss_watch_init(LossWatch *w, int vocab_size);
/* The same for a classifier of `classes` classes (its messages say classes, not words). */
void loss_watch_init_classes(LossWatch *w, int classes);
/* step: the run's count for the message (from 1); lr: the learning rate it used. On
 * several ranks every rank watches the same loss (the mean over the ranks), so that all
 * of them stop at the same step and none waits for the others. */
void loss_watch_step(LossWatch *w, double loss, long long step, double lr);

#endif
