/* TODO 1.6 and 1.7: the training loop and the evaluation.
 *
 * One training step: take a batch of examples, run the model forward, measure the
 * loss, run it backward to get every parameter's gradient, and let the optimiser
 * move the parameters a little against their gradients. One epoch is one pass
 * over the training set in the sampler's (shuffled) order. */
#include "core/log.h"
#include "layers/softmax_xent.h"
#include "lesson.h"

EpochResult train_epoch(Cnn *model, Adam *opt, const Dataset *train, Sampler *sampler, Batch *b) {
    EpochResult r = {0};
    /* TODO 1.6: until sampler_next() returns 0:
     *   1. n = sampler_next(sampler, b->indices, b->size); images = tensor_rows(&b->images, n)
     *      and dataset_gather() copies those examples into images and b->labels;
     *   2. logits = cnn_forward(model, &images);
     *   3. clear the first n rows of model->d_logits, then
     *      loss = lesson_softmax_cross_entropy(&those rows, &logits, b->labels);
     *   4. params_zero_grad(&model->params); cnn_backward(model, &images);
     *   5. lesson_adam_step(opt, &model->params).
     * Return the mean loss per example in r.loss and the count in r.examples. */
    TODO_STOP("1.6");
    return r;
}

EpochResult evaluate(Cnn *model, const Dataset *test, Batch *b) {
    EpochResult r = {0};
    /* TODO 1.7: walk the data set in order, b->size examples at a time (the last
     * batch may be smaller): gather, cnn_forward, then add up the loss (from
     * lesson_softmax_cross_entropy with NULL for the gradient, times n) and the
     * number of correct predictions (count_correct from layers/softmax_xent.h).
     * Return the mean loss in r.loss and correct / examples in r.accuracy. */
    TODO_STOP("1.7");
    return r;
}
