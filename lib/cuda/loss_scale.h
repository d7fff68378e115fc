/* The unscaling of dynamic loss scaling on the GPU (loss_scale.cu; lib/train/loss_scale.c
 * calls it for gradients on the GPU, its CPU loop is the twin). In a build without CUDA
 * it stops with a message. */
#ifndef CUDA_LOSS_SCALE_H
#define CUDA_LOSS_SCALE_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* g[k] *= inv_scale over device memory g[0..n), in place; true when any g[k] was inf or
 * NaN before. One kernel sets a flag in device memory, which is read back once. */
bool cuda_unscale_find_inf(float *g, int64_t n, float inv_scale);

#ifdef __cplusplus
}
#endif

#endif
