/* make check-gpu's 16-bit part (check_gpu16.c): the CUDA layers on bfloat16 and float16
 * tensors against the bf16 contract's definition; check_run's lines, one per layer. */
#ifndef TESTS_GPU_CHECK_GPU16_H
#define TESTS_GPU_CHECK_GPU16_H

void check_gpu16(void);

#endif
