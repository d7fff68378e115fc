// Dropout on the GPU, as lib/layers/dropout.c: the key is drawn on the host from the
// caller's Rng exactly as the CPU draws it (dropout_draw.h), and entry i keeps or drops
// by the same counter-based dropout_keeps(key, i, threshold): the GPU's mask is the
// CPU's, bit for bit, whatever the grid. One thread per element; out may be in. A
// window (a tensor-parallel slice) maps each entry to its index in the wider mask.
#include "cuda_check.h"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "cuda/device.h"
#include "cuda/dropout_draw.h"
#include "kernels.h"
#include "layers/dropout.h"
}

static __global__ void dropout_forward_kernel(float *out, float *mask, const float *in, int64_t n,
                                              uint64_t key, uint64_t threshold, float keep_scale,
                                              DropoutWindow window) {
    GRID_STRIDE_LOOP(i, n) {
        const uint64_t at = dropout_index(window, (uint64_t)i); // i itself unless a slice
        const float m = dropout_keeps(key, at, threshold) ? keep_scale : 0.0f;
        mask[i] = m;
        out[i] = in[i] * m;
    }
}

// din += dout * mask, or din += dout where there is no mask
static __global__ void dropout_backward_kernel(float *din, const float *dout, const float *mask,
                                               int64_t n) {
    GRID_STRIDE_LOOP(i, n) din[i] += mask ? dout[i] * mask[i] : dout[i];
}

extern "C" void cuda_dropout_forward(Tensor *out, Tensor *mask, const Tensor *in, float p,
                                     bool training, Rng *rng) {
    cuda_dropout_forward_window(out, mask, in, p, training, rng, DROPOUT_WHOLE);
}

extern "C" void cuda_dropout_forward_window(Tensor *out, Tensor *mask, const Tensor *in, float p,
                                            bool training, Rng *rng, DropoutWindow window) {
    CHECK_FLOAT32(out, mask, in);
    dropout_check_forward(out, mask, in, p, training, rng);
    dropout_check_window(window, in->size);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(mask);
    CHECK_ON_GPU(in);
    const DropoutDraw d = dropout_draw(p, training, rng); // before any early return, as the CPU
    const int64_t n = in->size;
    if (n == 0) return;
    if (!d.active) { // the identity
        if (out->data != in->data) cuda_copy_on_device(out->data, in->data, (size_t)n * sizeof(float));
        if (mask) cuda_fill(mask->data, n, 1.0f);
        return;
    }
    dropout_forward_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(
        out->data, mask->data, in->data, n, d.key, d.threshold, d.keep_scale, window);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cuda_dropout_backward(Tensor *din, const Tensor *dout, const Tensor *mask) {
    CHECK_FLOAT32(din, dout, mask);
    dropout_check_backward(din, dout, mask);
    CHECK_ON_GPU(din);
    CHECK_ON_GPU(dout);
    CHECK_ON_GPU(mask);
    const int64_t n = dout->size;
    if (n == 0) return;
    dropout_backward_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(
        din->data, dout->data, mask ? mask->data : NULL, n);
    CUDA_CHECK_LAUNCH();
}
