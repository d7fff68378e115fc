#include "train/clip.h"

#include <math.h>

#include "core/check.h"
#include "core/trace.h"
#include "cuda/clip.h"

/* sum of g^2 over g[0..n): each block in double, in parallel, then the blocks' sums
 * added in order, so any number of threads gives the same bits */
static double sum_squares(const float *g, int64_t n) {
    const int64_t blocks = (n + CLIP_BLOCK - 1) / CLIP_BLOCK;
    double *partial = xmalloc((size_t)(blocks > 0 ? blocks : 1) * sizeof *partial);
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t end = (b + 1) * CLIP_BLOCK < n ? (b + 1) * CLIP_BLOCK : n;
        double s = 0.0; /* in vector lanes: a single chain would wait on each add */
#pragma omp simd reduction(+ : s)
        for (int64_t k = b * CLIP_BLOCK; k < end; k++) s += (double)g[k] * (double)g[k];
        partial[b] = s;
    }
    double total = 0.0;
    for (int64_t b = 0; b < blocks; b++) total += partial[b];
    xfree(partial);
    return total;
}

double grad_sum_squares(const Tensor *g) {
    CHECK_FLOAT32(g);
    if (g->device != DEVICE_CPU) return cuda_sum_squares(g->data, g->size, CLIP_BLOCK);
    return sum_squares(g->data, g->size);
}

float grad_norm(const ParamList *params) {
    if (params->grads.device != DEVICE_CPU)
        return (float)sqrt(cuda_sum_squares(params->grads.data, params->total, CLIP_BLOCK));
    CHECK(params->grads.data || params->total == 0, "grad_norm before params_allocate");
    return (float)sqrt(sum_squares(params->grads.data, params->total));
}

static float clip(ParamList *params, float max_norm) {
    const float norm = grad_norm(params);
    const float coef = max_norm / (norm + 1e-6f); /* float, as PyTorch computes it */
    if (!(coef < 1.0f) && !isnan(coef)) return norm;
    if (params->grads.device != DEVICE_CPU) { /* one kernel launch: g *= coef */
        tensor_scale(&params->grads, coef);
        return norm;
    }
    float *g = params->grads.data;
#pragma omp parallel for simd schedule(static)
    for (int64_t k = 0; k < params->total; k++) g[k] *= coef;
    return norm;
}

float clip_grad_norm(ParamList *params, float max_norm) {
    CHECK(max_norm > 0.0f, "clip_grad_norm with max_norm %g: it must be positive", max_norm);
    trace_begin("clip gradients", TRACE_COMPUTE);
    const float norm = clip(params, max_norm);
    trace_end("clip gradients");
    return norm;
}
