// The residual addition on the GPU, as lib/layers/add.c: one thread per element, the
// same float additions (exact). out may be a or b.
#include "cuda_check.h"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "kernels.h"
#include "layers/add.h"
}

static __global__ void add_kernel(float *out, const float *a, const float *b, int64_t n) {
    GRID_STRIDE_LOOP(i, n) out[i] = a[i] + b[i];
}

// da += dout, then db += dout, element by element (dout read again after da is
// written: the CPU's two passes, even where da is dout); either may be NULL.
static __global__ void add_backward_kernel(float *da, float *db, const float *dout, int64_t n) {
    GRID_STRIDE_LOOP(i, n) {
        if (da) da[i] += dout[i];
        if (db) db[i] += dout[i];
    }
}

extern "C" void cuda_add_forward(Tensor *out, const Tensor *a, const Tensor *b) {
    CHECK_FLOAT32(out, a, b);
    add_check_forward(out, a, b);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(a);
    CHECK_ON_GPU(b);
    const int64_t n = a->size;
    if (n == 0) return;
    add_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(out->data, a->data, b->data, n);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cuda_add_backward(Tensor *da, Tensor *db, const Tensor *dout) {
    CHECK_FLOAT32(da, db, dout);
    add_check_backward(da, db, dout);
    CHECK_ON_GPU(da);
    CHECK_ON_GPU(db);
    CHECK_ON_GPU(dout);
    const int64_t n = dout->size;
    if (n == 0 || (!da && !db)) return;
    add_backward_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(
        da ? da->data : NULL, db ? db->data : NULL, dout->data, n);
    CUDA_CHECK_LAUNCH();
}
