// Dropout on the GPU, as lib/layers/dropout.c: the key is drawn on the host from the
// caller's Rng exactly as the CPU draws it (dropout_draw.h), and entry i keeps or drops
// by the same counter-based dropout_keeps(key, i, threshold): the GPU's mask is the
// CPU's, bit for bit, whatever the grid. One thread per element; out may be in. A
// window (a tensor-parallel slice) maps each entry to its index in the wider mask.
// bfloat16 / float16 in, out, dout and din (elem.cuh; the mask stays float32): in * mask
// rounded once, din old value + dout * mask rounded once.
#include "cuda_check.h"
#include "elem.cuh"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "cuda/device.h"
#include "cuda/dropout_draw.h"
#include "kernels.h"
#include "layers/dropout.h"
}

template <class T>
static __global__ void dropout_forward_kernel(T *out, float *mask, const T *in, int64_t n,
                                              uint64_t key, const uint64_t *key_at,
                                              uint64_t threshold, float keep_scale,
                                              DropoutWindow window) {
    if (key_at) key = *key_at; // a replayed graph's key (cuda/graph.h)
    GRID_STRIDE_LOOP(i, n) {
        const uint64_t at = dropout_index(window, (uint64_t)i); // i itself unless a slice
        const float m = dropout_keeps(key, at, threshold) ? keep_scale : 0.0f;
        mask[i] = m;
        elem_store(out, i, elem_load(in, i) * m);
    }
}

// din += dout * mask, or din += dout where there is no mask
template <class T>
static __global__ void dropout_backward_kernel(T *din, const T *dout, const float *mask,
                                               int64_t n) {
    GRID_STRIDE_LOOP(i, n)
        elem_add(din, i, mask ? elem_load(dout, i) * mask[i] : elem_load(dout, i));
}

extern "C" void cuda_dropout_forward(Tensor *out, Tensor *mask, const Tensor *in, float p,
                                     bool training, Rng *rng) {
    cuda_dropout_forward_window(out, mask, in, p, training, rng, DROPOUT_WHOLE);
}

extern "C" void cuda_dropout_forward_window(Tensor *out, Tensor *mask, const Tensor *in, float p,
                                            bool training, Rng *rng, DropoutWindow window) {
    const DType dt = ONE_DTYPE(out, in);
    CHECK_FLOAT32(mask);
    dropout_check_forward(out, mask, in, p, training, rng);
    dropout_check_window(window, in->size);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(mask);
    CHECK_ON_GPU(in);
    const DropoutDraw d = dropout_draw(p, training, rng); // before any early return, as the CPU
    const int64_t n = in->size;
    if (n == 0) return;
    if (!d.active) { // the identity
        if (out->raw != in->raw) cuda_copy_on_device(out->raw, in->raw, tensor_bytes(in));
        if (mask) cuda_fill(mask->data, n, 1.0f);
        return;
    }
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        dropout_forward_kernel<T><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<T>(out), mask->data, elems<T>(in), n, d.key, d.key_at, d.threshold, d.keep_scale, window);
        CUDA_CHECK_LAUNCH();
    });
}

extern "C" void cuda_dropout_backward(Tensor *din, const Tensor *dout, const Tensor *mask) {
    const DType dt = ONE_DTYPE(din, dout);
    CHECK_FLOAT32(mask);
    dropout_check_backward(din, dout, mask);
    CHECK_ON_GPU(din);
    CHECK_ON_GPU(dout);
    CHECK_ON_GPU(mask);
    const int64_t n = dout->size;
    if (n == 0) return;
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        dropout_backward_kernel<T><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<T>(din), elems<T>(dout), mask ? mask->data : NULL, n);
        CUDA_CHECK_LAUNCH();
    });
}
