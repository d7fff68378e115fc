// Sums and maxima across a warp or a block, in a fixed order: the same inputs give
// the same bits on every run (no atomics), and every thread receives the result.
//
//   float m = warp_max(v);                // 32 lanes of one warp, all active
//   double s = block_allreduce(v, Sum()); // a block of whole warps (blockDim.x % 32 == 0)
#ifndef CUDA_REDUCE_CUH
#define CUDA_REDUCE_CUH

struct Sum {
    template <typename T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Butterfly over the 32 lanes: lane l combines its value with lane l ^ o's, so both
// compute op(a, b) and op(b, a) of the same two values (equal for + and max), and all
// lanes end with the same bits.
template <typename T, typename Op> __device__ inline T warp_allreduce(T v, Op op) {
    for (int o = 16; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
template <typename T> __device__ inline T warp_sum(T v) { return warp_allreduce(v, Sum()); }
__device__ inline float warp_max(float v) { return warp_allreduce(v, Max()); }

// The whole block: each warp reduces, then every thread combines the warps' results in
// warp order (at most 32 values from shared memory). Called by all threads of the block.
template <typename T, typename Op> __device__ T block_allreduce(T v, Op op) {
    __shared__ T part[32];
    v = warp_allreduce(v, op);
    const int warps = (int)(blockDim.x / 32);
    __syncthreads(); // part may still be read by a previous call
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
    __syncthreads();
    v = part[0];
    for (int w = 1; w < warps; w++) v = op(v, part[w]);
    return v;
}

// Inside a kernel: one warp per row, rows in steps of the whole grid's warps.
#define WARP_STRIDE_LOOP(row, rows)                                                      \
    for (int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; row < (rows); \
         row += (int64_t)gridDim.x * blockDim.x / 32)

#endif
