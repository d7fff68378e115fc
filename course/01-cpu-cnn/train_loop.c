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
#ifdef SOLUTION
    double loss_sum = 0.0;
    int n;
    while ((n = sampler_next(sampler, b->indices, b->size)) > 0) {
        Tensor images = tensor_rows(&b->images, n); /* the last batch may be short */
        dataset_gather(train, b->indices, n, &images, b->labels);

        Tensor logits = cnn_forward(model, &images);
        Tensor dlogits = tensor_rows(&model->d_logits, n);
        tensor_fill(&dlogits, 0.0f);
        float loss = lesson_softmax_cross_entropy(&dlogits, &logits, b->labels);

        params_zero_grad(&model->params); /* gradients add up: clear last step's */
        cnn_backward(model, &images);
        lesson_adam_step(opt, &model->params);

        loss_sum += (double)loss * n; /* weight by n: the mean is over examples */
        r.examples += n;
        progress("  %d/%d images, %.0f images/s, loss %.4f", r.examples, train->count,
                 progress_rate(r.examples), loss_sum / r.examples);
    }
    r.loss = r.examples ? loss_sum / r.examples : 0.0;
#else
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
#endif
    return r;
}

EpochResult evaluate(Cnn *model, const Dataset *test, Batch *b) {
    EpochResult r = {0};
#ifdef SOLUTION
    double loss_sum = 0.0;
    int correct = 0;
    for (int start = 0; start < test->count; start += b->size) {
        int n = test->count - start < b->size ? test->count - start : b->size;
        for (int i = 0; i < n; i++) b->indices[i] = start + i; /* in order: no shuffling */
        Tensor images = tensor_rows(&b->images, n);
        dataset_gather(test, b->indices, n, &images, b->labels);
        Tensor logits = cnn_forward(model, &images);
        /* NULL: no gradient, evaluation does not train */
        loss_sum += (double)lesson_softmax_cross_entropy(NULL, &logits, b->labels) * n;
        correct += count_correct(&logits, b->labels);
        r.examples += n;
    }
    r.loss = r.examples ? loss_sum / r.examples : 0.0;
    r.accuracy = r.examples ? (double)correct / r.examples : 0.0;
#else
    /* TODO 1.7: walk the data set in order, b->size examples at a time (the last
     * batch may be smaller): gather, cnn_forward, then add up the loss (from
     * lesson_softmax_cross_entropy with NULL for the gradient, times n) and the
     * number of correct predictions (count_correct from layers/softmax_xent.h).
     * Return the mean loss in r.loss and correct / examples in r.accuracy. */
    TODO_STOP("1.7");
#endif
    return r;
}
