// TODO 0.3 and 0.4: a first kernel. The GPU's own memory is separate from the
// host's: data goes in with a copy, the kernel runs in many threads at once, and
// the result comes back with another copy.
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "lesson.h"

// One thread per element: thread i of the whole grid computes c[i].
static __global__ void vector_add_kernel(float *c, const float *a, const float *b, int n) {
    // TODO 0.4: compute this thread's global index from blockIdx.x, blockDim.x and
    // threadIdx.x; if it is inside the vector (< n), write c[i] = a[i] + b[i].
}

extern "C" void lesson_vector_add_gpu(float *c, const float *a, const float *b, int n) {
    // TODO 0.3: 1. cudaMalloc three device buffers of n floats (da, db, dc);
    //   2. cudaMemcpy a and b into da and db (cudaMemcpyHostToDevice);
    //   3. launch vector_add_kernel<<<blocks, THREADS_PER_BLOCK>>>(dc, da, db, n)
    //      with blocks = lesson_blocks(n, THREADS_PER_BLOCK), then check
    //      cudaGetLastError();
    //   4. cudaMemcpy dc back into c (cudaMemcpyDeviceToHost);
    //   5. cudaFree all three. Wrap every call in CUDA_CHECK(...).
    TODO_STOP("0.3");
}
