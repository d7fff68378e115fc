/* Lesson 00: hello, GPU. The functions you write in this lesson.
 *
 * This header is read by C (launch.c, main.c) and by CUDA C++ (vector_add.cu). */
#ifndef LESSON00_H
#define LESSON00_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "core/todo.h"

#define LESSON_DIR "lessons/00-hello-gpu"
#define TODO_STOP(id) todo_stop(id, LESSON_DIR, __func__)

/* Threads per block for the vector add: a multiple of the warp size (32). */
enum { THREADS_PER_BLOCK = 256 };

/* TODO 0.1 (launch.c): the number of blocks of `threads` threads needed so that
 * every one of n elements gets a thread (n >= 1). */
int lesson_blocks(int64_t n, int threads);

/* TODO 0.2 (launch.c): the device memory's peak bandwidth in GB/s (1e9 bytes/s)
 * from its clock (kHz) and bus width (bits), and a measured bandwidth in GB/s. */
double lesson_peak_bandwidth_gbs(int memory_clock_khz, int bus_width_bits);
double lesson_bandwidth_gbs(size_t bytes, double seconds);

/* TODO 0.3 and 0.4 (vector_add.cu): c = a + b for n floats in host memory,
 * computed on the GPU: allocate, copy in, launch the kernel, copy back, free. */
void lesson_vector_add_gpu(float *c, const float *a, const float *b, int n);

/* Given (copies.cu): seconds per copy of `bytes` host->device, device->host and
 * device->device, the best of `repeats`, with pinned (page-locked) host memory
 * when `pinned` is non-zero. */
typedef struct {
    double h2d, d2h, d2d;
} CopyTimes;
CopyTimes time_copies(size_t bytes, int repeats, int pinned);

#ifdef __cplusplus
}
#endif

#endif
