/* Launch arithmetic of the 1-D kernels (launch.c is plain host code, in every build,
 * so it is tested everywhere). */
#ifndef CUDA_LAUNCH_H
#define CUDA_LAUNCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Threads per block for the 1-D kernels: a multiple of the 32-thread warp. */
enum { CUDA_THREADS = 256 };

/* Blocks for n elements at `threads` per block, capped: the kernels loop over the
 * rest (grid-stride), so any n works with a bounded grid. */
int cuda_blocks_for(int64_t n, int threads);

/* Blocks for kernels that give each row a warp of 32 threads (WARP_STRIDE_LOOP in
 * reduce.cuh): `threads` a multiple of 32, capped like cuda_blocks_for. */
int cuda_blocks_for_rows(int64_t rows, int threads);

#ifdef __cplusplus
}
#endif

/* Inside a kernel: i from the thread's global index, in steps of the whole grid. */
#define GRID_STRIDE_LOOP(i, n)                                                        \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);          \
         i += (int64_t)gridDim.x * blockDim.x)

#endif
