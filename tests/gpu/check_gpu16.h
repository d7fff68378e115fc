/* make check-gpu's 16-bit part (check_gpu16.c): the CUDA layers on bfloat16 and float16
 * tensors against the definition of issue 28's rounding points; one check_run line per
 * layer. */
#ifndef TESTS_GPU_CHECK_GPU16_H
#define TESTS_GPU_CHECK_GPU16_H

void check_gpu16(void);

#endif
