// TODO 0.3 and 0.4: a first kernel. The GPU's own memory is separate from the
// host's: data goes in with a copy, the kernel runs in many threads at once, and
// the result comes back with another copy.
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "lesson.h"

// One thread per element: thread i of the whole grid computes c[i].
static __global__ void vector_add_kernel(float *c, const float *a, const float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; // this thread's element
    if (i < n) c[i] = a[i] + b[i];                 // the last block may run past n
}

extern "C" void lesson_vector_add_gpu(float *c, const float *a, const float *b, int n) {
    const size_t bytes = (size_t)n * sizeof(float);
    float *da, *db, *dc; // device memory: the GPU can read it, the host cannot
    CUDA_CHECK(cudaMalloc(&da, bytes));
    CUDA_CHECK(cudaMalloc(&db, bytes));
    CUDA_CHECK(cudaMalloc(&dc, bytes));
    CUDA_CHECK(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice));
    vector_add_kernel<<<lesson_blocks(n, THREADS_PER_BLOCK), THREADS_PER_BLOCK>>>(dc, da, db, n);
    CUDA_CHECK(cudaGetLastError()); // a bad launch configuration shows here
    CUDA_CHECK(cudaMemcpy(c, dc, bytes, cudaMemcpyDeviceToHost)); // waits for the kernel
    CUDA_CHECK(cudaFree(da));
    CUDA_CHECK(cudaFree(db));
    CUDA_CHECK(cudaFree(dc));
}
