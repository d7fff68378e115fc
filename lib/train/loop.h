/* The pieces of an image classifier's training loop that every lesson shares: the
 * batch buffers, an epoch of training, the evaluation, the per-epoch metrics line.
 * The CNN runs on whichever device it lives on (cnn_to_device); the batch follows it. */
#ifndef TRAIN_LOOP_H
#define TRAIN_LOOP_H

#include "core/metrics.h"
#include "data/dataset.h"
#include "models/cnn.h"
#include "train/optim.h"
#include "train/sampler.h"

/* The buffers one step works on, reused across steps. */
typedef struct {
    int size;              /* examples per step (the last batch of an epoch may be smaller) */
    int *indices;          /* [size] which examples */
    Tensor images;         /* [size, C, H, W] on the host */
    int *labels;           /* [size] on the host */
    Device device;         /* where the model is: batch_load copies there */
    Tensor device_images;  /* [size, C, H, W] on that device (not the CPU) */
    int *device_labels;    /* [size] on that device */
} Batch;

void batch_init(Batch *b, int size, const Dataset *d);
/* Adds buffers on `device` (a GPU) that batch_load then fills. */
void batch_to_device(Batch *b, Device device);
void batch_free(Batch *b);
/* Gathers examples b->indices[0..n) of d, and copies them to the batch's device; returns
 * the images [n, C, H, W] there, and in *labels where their labels are there. */
Tensor batch_load(Batch *b, const Dataset *d, int n, const int **labels);

typedef struct {
    double loss;       /* mean loss over the examples seen */
    double accuracy;   /* fraction classified correctly (evaluation only) */
    int examples;
} EpochResult;

/* One pass over the training set in the sampler's order: forward, loss, backward,
 * Adam, step after step. */
EpochResult cnn_train_epoch(Cnn *model, Adam *opt, const Dataset *train, Sampler *sampler,
                            Batch *b);
/* Loss and accuracy on a data set, in order, without training. */
EpochResult cnn_evaluate(Cnn *model, const Dataset *test, Batch *b);

/* The JSON line of one epoch (device NULL: no "device" key): epoch, train_loss,
 * test_loss, test_accuracy, seconds, samples_per_s. */
void metrics_epoch(MetricsFile *m, const char *device, int epoch, double train_loss,
                   const EpochResult *test, double seconds, double samples_per_s);

/* A loss that is not finite means the training diverged (a learning rate too large,
 * most often): going on only turns every parameter into NaN. Stops with a message
 * naming where (e.g. "step 12", "epoch 1") and what to change (train_divergence_advice),
 * exit status 1. */
void train_stop_if_diverged(double loss, const char *where, double lr);

/* What a diverged run's message tells to change, into out (a sentence): the options the
 * command line set away from their defaults that can make a run diverge (args_value_set:
 * --weight-decay, --momentum, --clip, --reward-scale, ..., --lr), or, when it set none of
 * them but perhaps --lr, the learning rate lr:
 *   "The learning rate (--lr 5) is probably too large for this model: try one 10 times smaller."
 *   "This run set --weight-decay 1e+30 and --lr 200, which can make a run diverge: one of
 *    them is the cause most likely (try each 10 times smaller, or at its default)."
 * A weight decay of 1e30 is not blamed on the learning rate. */
void train_divergence_advice(char *out, size_t cap, double lr);

#endif
