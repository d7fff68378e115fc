// Optimiser updates on the GPU, element by element, with the arithmetic of
// lib/train/optim.c (adam_update, sgd_step).
#include "cuda_check.h"
#include "kernels.h"

static __global__ void adam_kernel(float *p, const float *g, float *m, float *v, int64_t n,
                                   float b1, float b2, float step_size, float bias2_sqrt,
                                   float eps, float lr, float wd, bool decoupled) {
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x) {
        float grad = g[k], pk = p[k];
        if (wd != 0.0f) {
            if (decoupled) pk *= 1.0f - lr * wd;
            else grad += wd * pk;
        }
        const float mk = b1 * m[k] + (1.0f - b1) * grad;
        const float vk = b2 * v[k] + (1.0f - b2) * grad * grad;
        m[k] = mk;
        v[k] = vk;
        p[k] = pk - step_size * mk / (sqrtf(vk) / bias2_sqrt + eps);
    }
}

extern "C" void cuda_adam_raw(float *p, const float *g, float *m, float *v, int64_t n,
                              float beta1, float beta2, float step_size, float bias2_sqrt,
                              float eps, float lr, float weight_decay, bool decoupled) {
    if (n == 0) return;
    adam_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(
        p, g, m, v, n, beta1, beta2, step_size, bias2_sqrt, eps, lr, weight_decay, decoupled);
    CUDA_CHECK_LAUNCH();
}

static __global__ void sgd_kernel(float *p, const float *g, float *buf, int64_t n, float lr,
                                  float momentum, float wd, bool first_step) {
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x) {
        float d = g[k] + wd * p[k];
        if (momentum != 0.0f) {
            buf[k] = first_step ? d : momentum * buf[k] + d;
            d = buf[k];
        }
        p[k] -= lr * d;
    }
}

extern "C" void cuda_sgd_raw(float *p, const float *g, float *buf, int64_t n, float lr,
                             float momentum, float weight_decay, bool first_step) {
    if (n == 0) return;
    sgd_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(p, g, buf, n, lr, momentum,
                                                                   weight_decay, first_step);
    CUDA_CHECK_LAUNCH();
}
