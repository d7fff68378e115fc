// Sinusoidal positions on the GPU, as lib/layers/positional.c: row r gets the table's
// row r % T added (batch-major rows), one thread per element; out may be in. The
// same float additions as the CPU: exact.
#include "cuda_check.h"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "kernels.h"
#include "layers/positional.h"
}

static __global__ void positional_kernel(float *out, const float *in, const float *table,
                                         int64_t n, int D, int T) {
    GRID_STRIDE_LOOP(i, n) {
        const int64_t r = i / D;
        out[i] = in[i] + table[(r % T) * D + i % D];
    }
}

extern "C" void cuda_positional_forward(Tensor *out, const Tensor *in, const Tensor *table,
                                        int T) {
    CHECK_FLOAT32(out, in, table);
    positional_check_forward(out, in, table, T);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(table);
    const int64_t n = in->size;
    if (n == 0) return;
    positional_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(
        out->data, in->data, table->data, n, in->shape[1], T);
    CUDA_CHECK_LAUNCH();
}
