/* make check-gpu's 16-bit part (check_gpu16.c): the CUDA layers on bfloat16 and float16
 * tensors against the definition of issue 28's rounding points; one check_run line per
 * layer; and the helpers check_gpu.c shares with it. */
#ifndef TESTS_GPU_CHECK_GPU16_H
#define TESTS_GPU_CHECK_GPU16_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

void check_gpu16(void);

/* check_gpu.c's helpers, shared with check_gpu16.c (builds with CUDA) */
/* a copy of h[0..n) in the GPU's memory (cuda_free it) */
int *ints_on_gpu(const int *h, int64_t n);
/* n tokens in 0..V-1 with repeats (the embedding's backward must add them all), the
 * first one again at the end; xfree them */
int *random_tokens(int n, int V, uint64_t seed);
/* check_gpu16.c's, shared: two tensors (on any device) hold the same bits; else a
 * message naming what and the first entry that differs */
bool gpu_same_bits(const char *what, const Tensor *a, const Tensor *b);

#endif
