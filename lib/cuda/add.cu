// The residual addition on the GPU, as lib/layers/add.c: one thread per element, the
// same float additions (exact). out may be a or b. bfloat16 / float16: a + b rounded
// once; da, db old value + dout, rounded once.
#include "cuda_check.h"
#include "elem.cuh"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "kernels.h"
#include "layers/add.h"
}

template <class T> static __global__ void add_kernel(T *out, const T *a, const T *b, int64_t n) {
    GRID_STRIDE_LOOP(i, n) elem_store(out, i, elem_load(a, i) + elem_load(b, i));
}

// da += dout, then db += dout, element by element (dout read again after da is
// written: the CPU's two passes, even where da is dout); either may be NULL.
template <class T>
static __global__ void add_backward_kernel(T *da, T *db, const T *dout, int64_t n) {
    GRID_STRIDE_LOOP(i, n) {
        if (da) elem_add(da, i, elem_load(dout, i));
        if (db) elem_add(db, i, elem_load(dout, i));
    }
}

extern "C" void cuda_add_forward(Tensor *out, const Tensor *a, const Tensor *b) {
    const DType dt = ONE_DTYPE(out, a, b);
    add_check_forward(out, a, b);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(a);
    CHECK_ON_GPU(b);
    const int64_t n = a->size;
    if (n == 0) return;
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        add_kernel<T><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<T>(out), elems<T>(a), elems<T>(b), n);
        CUDA_CHECK_LAUNCH();
    });
}

extern "C" void cuda_add_backward(Tensor *da, Tensor *db, const Tensor *dout) {
    const DType dt = ONE_DTYPE(dout, da, db);
    add_check_backward(da, db, dout);
    CHECK_ON_GPU(da);
    CHECK_ON_GPU(db);
    CHECK_ON_GPU(dout);
    const int64_t n = dout->size;
    if (n == 0 || (!da && !db)) return;
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        add_backward_kernel<T><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<T>(da), elems<T>(db), elems<T>(dout), n);
        CUDA_CHECK_LAUNCH();
    });
}
