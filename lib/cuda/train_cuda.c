/* The loss and the optimiser steps on the GPU (host side). */
#ifdef HAVE_CUDA
#include <math.h>

#include "core/check.h"
#include "gpu.h"
#include "kernels.h"
#include "ops_cuda.h"

float cuda_softmax_cross_entropy(Tensor *dlogits, const Tensor *logits, const int *labels) {
    CHECK_SHAPE(logits, -1, -1);
    CHECK(logits->device == DEVICE_CUDA, "logits must be on the GPU");
    const int N = logits->shape[0], K = logits->shape[1];
    if (dlogits) CHECK_SAME_SHAPE(dlogits, logits);
    /* per-row losses and the first bad label's row, then one copy back */
    double *row_loss = gpu_malloc((size_t)N * sizeof(double));
    int *bad = gpu_malloc(sizeof(int));
    gpu_copy_to_device(bad, &N, sizeof(int));
    cuda_softmax_xent_raw(row_loss, bad, dlogits ? dlogits->data : NULL, logits->data, labels, N, K);
    double *host = xmalloc((size_t)N * sizeof(double));
    int bad_row = N;
    gpu_copy_to_host(host, row_loss, (size_t)N * sizeof(double));
    gpu_copy_to_host(&bad_row, bad, sizeof(int));
    gpu_free(row_loss);
    gpu_free(bad);
    if (bad_row < N) {
        int label = -1;
        gpu_copy_to_host(&label, labels + bad_row, sizeof(int));
        CHECK(false, "label %d of row %d outside 0..%d", label, bad_row, K - 1);
    }
    double total = 0.0;
    for (int n = 0; n < N; n++) total += host[n]; /* in row order, as on the CPU */
    xfree(host);
    return (float)(total / N);
}

void cuda_adam_step(Adam *opt, ParamList *params) {
    opt->step++;
    const int64_t t = opt->step;
    /* the bias corrections exactly as adam_update computes them */
    const float bias1 = 1.0f - powf(opt->beta1, (float)t);
    const float bias2_sqrt = sqrtf(1.0f - powf(opt->beta2, (float)t));
    for (int i = 0; i < params->count; i++) {
        Param *q = &params->items[i];
        CHECK(opt->m[i].size == q->value.size, "Adam state %d does not match parameter '%s'", i,
              q->name);
        CHECK(q->value.device == DEVICE_CUDA && opt->m[i].device == DEVICE_CUDA,
              "cuda_adam_step: parameter '%s' and its Adam state must be on the GPU (adam_init "
              "after moving the model)", q->name);
        cuda_adam_raw(q->value.data, q->grad.data, opt->m[i].data, opt->v[i].data, q->value.size,
                      opt->beta1, opt->beta2, opt->lr / bias1, bias2_sqrt, opt->eps, opt->lr,
                      opt->weight_decay, opt->decoupled);
    }
}

void cuda_sgd_step(Sgd *opt, ParamList *params) {
    opt->step++;
    for (int i = 0; i < params->count; i++) {
        Param *q = &params->items[i];
        CHECK(q->value.device == DEVICE_CUDA && opt->buf[i].device == DEVICE_CUDA,
              "cuda_sgd_step: parameter '%s' and its momentum must be on the GPU (sgd_init "
              "after moving the model)", q->name);
        cuda_sgd_raw(q->value.data, q->grad.data, opt->buf[i].data, q->value.size, opt->lr,
                     opt->momentum, opt->weight_decay, opt->step == 1);
    }
}
#endif
