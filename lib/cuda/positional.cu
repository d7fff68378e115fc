// Sinusoidal positions on the GPU, as lib/layers/positional.c: row r gets the table's
// row r % T added (batch-major rows), one thread per element; out may be in. The
// same float additions as the CPU: exact. bfloat16 / float16 in and out (the table stays
// float32: a fixed table, not a parameter): in + table rounded once.
#include "cuda_check.h"
#include "elem.cuh"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "kernels.h"
#include "layers/positional.h"
}

template <class E>
static __global__ void positional_kernel(E *out, const E *in, const float *table, int64_t n, int D,
                                         int T) {
    GRID_STRIDE_LOOP(i, n) {
        const int64_t r = i / D;
        elem_store(out, i, elem_load(in, i) + table[(r % T) * D + i % D]);
    }
}

extern "C" void cuda_positional_forward(Tensor *out, const Tensor *in, const Tensor *table,
                                        int T) {
    const DType dt = ONE_DTYPE(out, in);
    CHECK_FLOAT32(table);
    positional_check_forward(out, in, table, T);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(table);
    const int64_t n = in->size;
    if (n == 0) return;
    elem_dispatch(dt, [&](auto tag) {
        using E = decltype(tag);
        positional_kernel<E><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<E>(out), elems<E>(in), table->data, n, in->shape[1], T);
        CUDA_CHECK_LAUNCH();
    });
}
