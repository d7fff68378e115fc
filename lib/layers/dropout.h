/* Dropout, inverted (PyTorch's nn.Dropout): at training each entry is zeroed with
 * probability p and the others are scaled by 1 / (1 - p), so evaluation is the
 * identity and the expected value does not change between the two.
 *
 * The mask: each call draws one 64-bit key from the caller's Rng (two rng_u32), and
 * entry i is dropped when the top 32 bits of a hash of (key, i) fall below
 * p * 2^32. The hash is SplitMix64's output function (a counter-based generator:
 * entry i needs no state of the entries before it), so threads can fill any part
 * of the mask and the mask depends only on the seed, never on the thread count;
 * the CUDA twin can call the same dropout_keeps and give the same mask as the CPU.
 * A run is reproduced by its seed: the same Rng state gives the same masks.
 * p = 0, or evaluation, is the identity and draws nothing from the Rng.
 * 16-bit runs (layers/rounded.h): in, out, dout, din of one dtype, rounded once where
 * stored; the mask float32 always (the same mask as a float32 run's). */
#ifndef LAYERS_DROPOUT_H
#define LAYERS_DROPOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/rng.h"
#include "core/tensor.h"

#ifdef __CUDACC__
#define DROPOUT_HOST_DEVICE __host__ __device__
#else
#define DROPOUT_HOST_DEVICE
#endif

/* Where a tensor sits in the mask of a wider one: a tensor-parallel rank holds some
 * columns of an activation (or some heads of the attention weights) and must drop
 * exactly the entries the unsplit model drops. Viewed as rows of `cols` entries, the
 * tensor is columns [col0, col0 + cols) of rows of `full_cols`, so its entry k is entry
 *   (k / cols) * full_cols + col0 + k % cols
 * of the wider mask. DROPOUT_WHOLE ({0}): the tensor is the whole of it, entry k is k. */
typedef struct {
    int64_t cols, full_cols, col0;
} DropoutWindow;
#define DROPOUT_WHOLE ((DropoutWindow){0, 0, 0})

static inline DROPOUT_HOST_DEVICE uint64_t dropout_index(DropoutWindow w, uint64_t k) {
    if (!w.cols) return k;
    return (k / (uint64_t)w.cols) * (uint64_t)w.full_cols + (uint64_t)w.col0 + k % (uint64_t)w.cols;
}

/* out = in * mask, mask [same size as in] = 0 (probability p) or 1 / (1 - p).
 * Identity (out = in, mask all 1) when !training or p == 0; p == 1 drops all.
 * out may be in; mask may be NULL only where dropout_active is false. */
void dropout_forward(Tensor *out, Tensor *mask, const Tensor *in, float p, bool training,
                     Rng *rng);

/* The same for a window of a wider tensor: the entries the unsplit tensor's mask keeps
 * (in->size a multiple of window.cols). */
void dropout_forward_window(Tensor *out, Tensor *mask, const Tensor *in, float p, bool training,
                            Rng *rng, DropoutWindow window);

/* din += dout * mask; mask NULL (an inactive forward given none): din += dout. */
void dropout_backward(Tensor *din, const Tensor *dout, const Tensor *mask);

/* The size and probability checks of both devices. */
void dropout_check_forward(const Tensor *out, const Tensor *mask, const Tensor *in, float p,
                           bool training, const Rng *rng);
void dropout_check_window(DropoutWindow w, int64_t size);
void dropout_check_backward(const Tensor *din, const Tensor *dout, const Tensor *mask);

/* Whether a forward with these settings drops anything (and so draws a key). */
static inline bool dropout_active(float p, bool training) { return training && p > 0.0f; }

/* One call's key from the Rng (advances it by two draws). */
uint64_t dropout_draw_key(Rng *rng);

/* p * 2^32 rounded: entry i is dropped when the hash's top 32 bits are below it. */
uint64_t dropout_threshold(float p);

/* Whether entry i survives under `key` (SplitMix64 of key + (i + 1) * golden gamma). */
static inline DROPOUT_HOST_DEVICE bool dropout_keeps(uint64_t key, uint64_t i,
                                                     uint64_t threshold) {
    uint64_t z = key + (i + 1u) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (z >> 32) >= threshold;
}

/* CUDA twins (lib/cuda/dropout.cu), in builds with CUDA: tensors on the GPU, the key
 * drawn on the host from rng as here, so the mask is the CPU's. */
void cuda_dropout_forward(Tensor *out, Tensor *mask, const Tensor *in, float p, bool training,
                          Rng *rng);
void cuda_dropout_forward_window(Tensor *out, Tensor *mask, const Tensor *in, float p,
                                 bool training, Rng *rng, DropoutWindow window);
void cuda_dropout_backward(Tensor *din, const Tensor *dout, const Tensor *mask);

#endif
