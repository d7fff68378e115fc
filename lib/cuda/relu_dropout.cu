// ReLU then dropout in one kernel (layers/relu_dropout.h): entry i is
// max(0, in[i]) * mask[i] with dropout.cu's mask (the key drawn on the host as the CPU
// draws it, dropout_keeps(key, i, threshold)), rounded once where stored: relu's store
// is exact (max(0, x) of a stored x), so this is relu then dropout, bit for bit, in one
// pass instead of two (speed on a GPU: owed, docs/gpu.md). out may be in.
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
