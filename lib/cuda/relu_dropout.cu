// ReLU then dropout in one kernel (layers/relu_dropout.h): entry i is
// max(0, in[i]) * mask[i] with dropout.cu's mask (the key drawn on the host as the CPU
// draws it, dropout_keeps(key, i, threshold)), rounded once where stored: relu's store
// is exact (max(0, x) of a stored x), so this is relu then dropout, bit for bit, in one
// pass instead of two (speed on a GPU: owed, docs/gpu.md). out may be in.
//
// The backward fused the same way: the encoder's dropout_backward into a cleared buffer,
// then relu_backward from it, in one pass that neither clears nor re-reads the middle
// buffer. Entry i: t = 0 + dout[i] * mask[i] rounded to the storage type (what the
// middle buffer held), then din[i] += (out[i] > 0 ? t : 0), rounded once: bit for bit the
// two kernels (check_gpu16.c compares them).
#include "cuda_check.h"
#include "elem.cuh"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "cuda/device.h"
#include "cuda/dropout_draw.h"
#include "kernels.h"
#include "layers/dropout.h"
#include "layers/relu.h"
#include "layers/relu_dropout.h"
}

template <class T>
static __global__ void relu_dropout_kernel(T *out, float *mask, const T *in, int64_t n,
                                           uint64_t key, const uint64_t *key_at,
                                           uint64_t threshold, float keep_scale) {
    if (key_at) key = *key_at; // a replayed graph's key (cuda/graph.h)
    GRID_STRIDE_LOOP(i, n) {
        const float x = elem_load(in, i);
        const float m = dropout_keeps(key, (uint64_t)i, threshold) ? keep_scale : 0.0f;
        mask[i] = m;
        elem_store(out, i, (x > 0.0f ? x : 0.0f) * m);
    }
}

template <class T>
static __global__ void relu_dropout_backward_kernel(T *din, const T *dout, const float *mask,
                                                    const T *out, int64_t n) {
    GRID_STRIDE_LOOP(i, n) {
        T middle[1]; // the separate layers' middle buffer, entry i, cleared then added to
        elem_store(middle, 0, 0.0f + (mask ? elem_load(dout, i) * mask[i] : elem_load(dout, i)));
        elem_add(din, i, elem_load(out, i) > 0.0f ? elem_load(middle, 0) : 0.0f);
    }
}

extern "C" void cuda_relu_dropout_backward(Tensor *din, const Tensor *dout, const Tensor *mask,
                                           const Tensor *out) {
    const DType dt = ONE_DTYPE(din, dout, out);
    CHECK(din->raw != dout->raw, "relu_dropout_backward: din is dout (it adds into din)");
    dropout_check_backward(din, dout, mask);
    relu_check_backward(din, dout, out);
    CHECK_ON_GPU(din);
    CHECK_ON_GPU(dout);
    CHECK_ON_GPU(out);
    if (mask) {
        CHECK_FLOAT32(mask);
        CHECK_ON_GPU(mask);
    }
    const int64_t n = dout->size;
    if (n == 0) return;
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        relu_dropout_backward_kernel<T><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<T>(din), elems<T>(dout), mask ? mask->data : NULL, elems<T>(out), n);
        CUDA_CHECK_LAUNCH();
    });
}

extern "C" void cuda_relu_dropout_forward(Tensor *out, Tensor *mask, const Tensor *in, float p,
                                          bool training, Rng *rng) {
    const DType dt = ONE_DTYPE(out, in);
    CHECK_FLOAT32(mask);
    relu_check_forward(out, in);
    dropout_check_forward(out, mask, in, p, training, rng);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(mask);
    CHECK_ON_GPU(in);
    const DropoutDraw d = dropout_draw(p, training, rng); // before any early return, as the CPU
    const int64_t n = in->size;
    if (n == 0) return;
    if (!d.active) { // relu alone, the mask all 1 (dropout's identity)
        cuda_relu_forward(out, in);
        if (mask) cuda_fill(mask->data, n, 1.0f);
        return;
    }
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        relu_dropout_kernel<T><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<T>(out), mask->data, elems<T>(in), n, d.key, d.key_at, d.threshold, d.keep_scale);
        CUDA_CHECK_LAUNCH();
    });
}
