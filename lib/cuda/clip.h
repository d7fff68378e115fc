/* The sum behind gradient clipping on the GPU (clip.cu; lib/train/clip.c computes the
 * norm from it and scales). In a build without CUDA it stops with a message. */
#ifndef CUDA_CLIP_H
#define CUDA_CLIP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* sum of x[k]^2 over device memory x[0..n), in double: each run of `block` elements
 * summed by one GPU block, then those sums added in a fixed tree, so the same values
 * give the same bits on every run. */
double cuda_sum_squares(const float *x, int64_t n, int64_t block);

#ifdef __cplusplus
}
#endif

#endif
