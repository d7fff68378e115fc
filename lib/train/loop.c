#include "loop.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/args.h"
#include "core/check.h"
#include "core/log.h"
#include "core/trace.h"

void batch_init(Batch *b, int size, const Dataset *d) {
    *b = (Batch){0};
    b->size = size;
    b->indices = xcalloc((size_t)size, sizeof(int));
    b->labels = xcalloc((size_t)size, sizeof(int));
    b->images = tensor_zeros(4, size, d->channels, d->height, d->width);
    b->device = DEVICE_CPU;
}

void batch_to_device(Batch *b, Device device) {
    CHECK(b->device == DEVICE_CPU, "batch_to_device called twice");
    if (device == DEVICE_CPU) return;
    b->device = device;
    b->device_images = tensor_to(&b->images, device);
    b->device_labels = device_alloc(device, (size_t)b->size * sizeof(int));
}

void batch_free(Batch *b) {
    xfree(b->indices);
    xfree(b->labels);
    tensor_free(&b->images);
    if (b->device != DEVICE_CPU) {
        tensor_free(&b->device_images);
        device_free(b->device, b->device_labels);
    }
    *b = (Batch){0};
}

Tensor batch_load(Batch *b, const Dataset *d, int n, const int **labels) {
    trace_begin("load batch", TRACE_DATA);
    Tensor host = tensor_rows(&b->images, n);
    dataset_gather(d, b->indices, n, &host, b->labels);
    if (b->device == DEVICE_CPU) {
        *labels = b->labels;
        trace_end("load batch");
        return host;
    }
    Tensor images = tensor_rows(&b->device_images, n);
    tensor_copy(&images, &host);
    device_copy(b->device_labels, b->device, b->labels, DEVICE_CPU, (size_t)n * sizeof(int));
    *labels = b->device_labels;
    trace_end("load batch");
    return images;
}

EpochResult cnn_train_epoch(Cnn *model, Adam *opt, const Dataset *train, Sampler *sampler,
                            Batch *b) {
    EpochResult r = {0};
    double loss_sum = 0.0;
    int n;
    while ((n = sampler_next(sampler, b->indices, b->size)) > 0) {
        trace_begin("step", TRACE_STEP); /* with --trace (core/trace.h) */
        const int *labels;
        Tensor images = batch_load(b, train, n, &labels);
        Tensor logits = cnn_forward(model, &images);
        Tensor dlogits = tensor_rows(&model->d_logits, n);
        tensor_fill(&dlogits, 0.0f);
        const float loss = model->layers.softmax_cross_entropy(&dlogits, &logits, labels);
        if (!isfinite(loss)) {
            char where[64];
            snprintf(where, sizeof where, "step %lld", (long long)opt->step + 1);
            train_stop_if_diverged(loss, where, opt->lr);
        }
        loss_sum += (double)loss * n;
        params_zero_grad(&model->params);
        cnn_backward(model, &images);
        adam_step(opt, &model->params);
        trace_end("step");
        r.examples += n;
        progress("  %s: %d/%d images, %.0f images/s", device_name(model->device), r.examples,
                 train->count, progress_rate(r.examples));
    }
    progress_clear();
    r.loss = r.examples ? loss_sum / r.examples : 0.0;
    return r;
}

EpochResult cnn_evaluate(Cnn *model, const Dataset *test, Batch *b) {
    EpochResult r = {0};
    double loss_sum = 0.0;
    int correct = 0;
    trace_begin("evaluate", TRACE_OTHER);
    for (int start = 0; start < test->count; start += b->size) {
        int n = test->count - start < b->size ? test->count - start : b->size;
        for (int i = 0; i < n; i++) b->indices[i] = start + i; /* in order: no shuffling */
        const int *labels;
        Tensor images = batch_load(b, test, n, &labels);
        Tensor logits = cnn_forward(model, &images);
        /* NULL: no gradient, evaluation does not train */
        loss_sum += (double)model->layers.softmax_cross_entropy(NULL, &logits, labels) * n;
        correct += model->layers.count_correct(&logits, labels);
        r.examples += n;
    }
    trace_end("evaluate");
    r.loss = r.examples ? loss_sum / r.examples : 0.0;
    r.accuracy = r.examples ? (double)correct / r.examples : 0.0;
    return r;
}

void metrics_epoch(MetricsFile *m, const char *device, int epoch, double train_loss,
                   const EpochResult *test, double seconds, double samples_per_s) {
    metrics_begin(m);
    if (device) metrics_str(m, "device", device);
    metrics_int(m, "epoch", epoch);
    metrics_num(m, "train_loss", train_loss);
    metrics_num(m, "test_loss", test->loss);
    metrics_num(m, "test_accuracy", test->accuracy);
    metrics_num(m, "seconds", seconds);
    metrics_num(m, "samples_per_s", samples_per_s);
    metrics_end(m);
}

/* The options of the lessons that can make a run diverge when set too large (or, for
 * --clip and --max-grad-norm, to 0 or too large: no clipping). */
static const char *const CAUSES[] = {"weight-decay", "momentum", "clip", "max-grad-norm",
                                     "reward-scale", "vf-coef", "ent-coef", "clip-coef",
                                     "adam-eps", "lr"};

void train_divergence_advice(char *out, size_t cap, double lr) {
    const char *set[sizeof CAUSES / sizeof CAUSES[0]];
    int n = 0, others = 0;
    for (size_t i = 0; i < sizeof CAUSES / sizeof CAUSES[0]; i++)
        if (args_value_set(CAUSES[i])) {
            set[n++] = CAUSES[i];
            others += strcmp(CAUSES[i], "lr") != 0;
        }
    if (others == 0) {
        snprintf(out, cap, "The learning rate (--lr %g) is probably too large for this model: try "
                 "one 10 times smaller.", lr);
        return;
    }
    char list[512];
    size_t at = 0;
    for (int i = 0; i < n && at < sizeof list; i++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s--%s %s", i == 0 ? "" : i == n - 1 ? " and " : ", ",
                               set[i], args_value_set(set[i]));
    snprintf(out, cap, "This run set %s, which can make a run diverge: %s the cause most likely "
             "(try %s 10 times smaller, or at its default).", list, n == 1 ? "that is" : "one of them is",
             n == 1 ? "it" : "each");
}

void train_stop_if_diverged(double loss, const char *where, double lr) {
    if (isfinite(loss)) return;
    char advice[768];
    train_divergence_advice(advice, sizeof advice, lr);
    fatal("the training diverged: the loss at %s is %g. %s", where, loss, advice);
}
