/* Given: lesson 01's training loop and evaluation on the CPU, with the library's
 * layers: the reference the GPU run is compared with. */
#include "core/log.h"
#include "layers/softmax_xent.h"
#include "lesson.h"

void batch_init(Batch *b, int size, const Dataset *d) {
    b->size = size;
    b->indices = xcalloc((size_t)size, sizeof(int));
    b->labels = xcalloc((size_t)size, sizeof(int));
    b->images = tensor_zeros(4, size, d->channels, d->height, d->width);
}

void batch_free(Batch *b) {
    xfree(b->indices);
    xfree(b->labels);
    tensor_free(&b->images);
}

EpochResult train_epoch_cpu(Cnn *model, Adam *opt, const Dataset *train, Sampler *sampler, Batch *b) {
    EpochResult r = {0};
    double loss_sum = 0.0;
    int n;
    while ((n = sampler_next(sampler, b->indices, b->size)) > 0) {
        Tensor images = tensor_rows(&b->images, n);
        dataset_gather(train, b->indices, n, &images, b->labels);
        Tensor logits = cnn_forward(model, &images);
        Tensor dlogits = tensor_rows(&model->d_logits, n);
        tensor_fill(&dlogits, 0.0f);
        loss_sum += (double)softmax_cross_entropy(&dlogits, &logits, b->labels) * n;
        params_zero_grad(&model->params);
        cnn_backward(model, &images);
        adam_step(opt, &model->params);
        r.examples += n;
        progress("  cpu: %d/%d images", r.examples, train->count);
    }
    progress_clear();
    r.loss = r.examples ? loss_sum / r.examples : 0.0;
    return r;
}

EpochResult evaluate_cpu(Cnn *model, const Dataset *test, Batch *b) {
    EpochResult r = {0};
    double loss_sum = 0.0;
    int correct = 0;
    for (int start = 0; start < test->count; start += b->size) {
        int n = test->count - start < b->size ? test->count - start : b->size;
        for (int i = 0; i < n; i++) b->indices[i] = start + i;
        Tensor images = tensor_rows(&b->images, n);
        dataset_gather(test, b->indices, n, &images, b->labels);
        Tensor logits = cnn_forward(model, &images);
        loss_sum += (double)softmax_cross_entropy(NULL, &logits, b->labels) * n;
        correct += count_correct(&logits, b->labels);
        r.examples += n;
    }
    r.loss = r.examples ? loss_sum / r.examples : 0.0;
    r.accuracy = r.examples ? (double)correct / r.examples : 0.0;
    return r;
}
