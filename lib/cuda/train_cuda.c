/* The loss and the optimiser steps on the GPU (host side). */
#ifdef HAVE_CUDA
#include <math.h>

#include "core/check.h"
#include "gpu.h"
#include "kernels.h"
#include "ops_cuda.h"

/* Per-row losses and the bad-row flag on the device, kept between calls: a
 * cudaMalloc/cudaFree pair every step would synchronise the GPU twice more. */
static double *g_row_loss;
static int *g_bad_row;
static double *g_host_loss;
static int g_rows;

static void loss_buffers(int N) {
    if (N <= g_rows) return;
    gpu_free(g_row_loss);
    gpu_free(g_bad_row);
    xfree(g_host_loss);
    g_row_loss = gpu_malloc((size_t)N * sizeof(double));
    g_bad_row = gpu_malloc(sizeof(int));
    g_host_loss = xmalloc((size_t)N * sizeof(double));
    g_rows = N;
}

float cuda_softmax_cross_entropy(Tensor *dlogits, const Tensor *logits, const int *labels) {
    CHECK_SHAPE(logits, -1, -1);
    CHECK(logits->device == DEVICE_CUDA, "logits must be on the GPU");
    const int N = logits->shape[0], K = logits->shape[1];
    if (dlogits) CHECK_SAME_SHAPE(dlogits, logits);
    if (dlogits) CHECK(dlogits->device == DEVICE_CUDA, "dlogits must be on the GPU");
    if (N == 0) return NAN; /* as the CPU's 0 / 0; and no buffers of 0 rows to launch on */
    CHECK(gpu_is_device_pointer(labels), "labels (%p) are not GPU memory: copy them to a "
          "gpu_malloc buffer first (a host pointer would make the kernel fail with an illegal "
          "address)", (const void *)labels);
    loss_buffers(N);
    gpu_copy_to_device(g_bad_row, &N, sizeof(int)); /* no bad row yet */
    cuda_softmax_xent_raw(g_row_loss, g_bad_row, dlogits ? dlogits->data : NULL, logits->data,
                          labels, N, K);
    int bad_row = N;
    gpu_copy_to_host(g_host_loss, g_row_loss, (size_t)N * sizeof(double)); /* waits for the kernel */
    gpu_copy_to_host(&bad_row, g_bad_row, sizeof(int));
    if (bad_row < N) {
        int label = -1;
        gpu_copy_to_host(&label, labels + bad_row, sizeof(int));
        CHECK(false, "label %d of row %d outside 0..%d", label, bad_row, K - 1);
    }
    double total = 0.0;
    for (int n = 0; n < N; n++) total += g_host_loss[n]; /* in row order, as on the CPU */
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
        CHECK(q->value.device == DEVICE_CUDA && q->grad.device == DEVICE_CUDA &&
                  opt->m[i].device == DEVICE_CUDA && opt->v[i].device == DEVICE_CUDA,
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
        CHECK(opt->buf[i].size == q->value.size, "SGD state %d does not match parameter '%s'",
              i, q->name);
        CHECK(q->value.device == DEVICE_CUDA && q->grad.device == DEVICE_CUDA &&
                  opt->buf[i].device == DEVICE_CUDA,
              "cuda_sgd_step: parameter '%s' and its momentum must be on the GPU (sgd_init "
              "after moving the model)", q->name);
        cuda_sgd_raw(q->value.data, q->grad.data, opt->buf[i].data, q->value.size, opt->lr,
                     opt->momentum, opt->weight_decay, opt->step == 1);
    }
}
#endif
