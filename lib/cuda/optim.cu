// Optimiser updates on the GPU, one kernel launch over the whole flat parameter
// buffer, with the arithmetic of lib/train/optim.c (adam_update, sgd_step).
#include "cuda_check.h"
#include "launch.h"
#include "cuda/optim.h"

static __global__ void adam_kernel(float *p, const float *g, float *m, float *v, int64_t n,
                                   float b1, float b2, float step_size, float bias2_sqrt,
                                   float eps, float lr, float wd, bool decoupled) {
    GRID_STRIDE_LOOP(k, n) {
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

static __global__ void sgd_kernel(float *p, const float *g, float *buf, int64_t n, float lr,
                                  float momentum, float wd, bool first_step) {
    GRID_STRIDE_LOOP(k, n) {
        float d = g[k] + wd * p[k];
        if (momentum != 0.0f) {
            buf[k] = first_step ? d : momentum * buf[k] + d;
            d = buf[k];
        }
        p[k] -= lr * d;
    }
}

// adam_step/sgd_step have checked that the state matches the list, all on the GPU.
extern "C" void cuda_adam_update(float *p, const float *g, float *m, float *v, int64_t n,
                                 float b1, float b2, float step_size, float bias2_sqrt,
                                 float eps, float lr, float wd, bool decoupled) {
    adam_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
        p, g, m, v, n, b1, b2, step_size, bias2_sqrt, eps, lr, wd, decoupled);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cuda_sgd_update(float *p, const float *g, float *buf, int64_t n, float lr,
                                float momentum, float wd, bool first_step) {
    sgd_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(p, g, buf, n, lr, momentum,
                                                                   wd, first_step);
    CUDA_CHECK_LAUNCH();
}
