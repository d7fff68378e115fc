/* The optimisers' updates on the GPU (optim.cu), on device pointers: lib/train/optim.c
 * calls them for parameters on the GPU, with the arithmetic of its CPU loops (one
 * kernel launch over the whole flat buffer). In a build without CUDA they stop with a
 * message (cuda_none.c). */
#ifndef CUDA_OPTIM_H
#define CUDA_OPTIM_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One Adam update of p, m, v [n] from g [n] (AdamW when decoupled):
 *   Adam: g += wd p;  AdamW: p *= 1 - lr wd;
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
 *   p -= step_size m / (sqrt(v) / bias2_sqrt + eps)
 * with the caller's bias corrections step_size = lr / (1 - b1^t), bias2_sqrt = sqrt(1 - b2^t). */
void cuda_adam_update(float *p, const float *g, float *m, float *v, int64_t n, float b1, float b2,
                      float step_size, float bias2_sqrt, float eps, float lr, float wd,
                      bool decoupled);

/* One SGD update of p [n] from g [n]: d = g + wd p; with momentum (not 0)
 * buf = d on the first step, else momentum buf + d, and d = buf; p -= lr d. */
void cuda_sgd_update(float *p, const float *g, float *buf, int64_t n, float lr, float momentum,
                     float wd, bool first_step);

#ifdef __cplusplus
}
#endif

#endif
