/* Multi-head causal self-attention, the core between the two projections (PyTorch's
 * nn.MultiheadAttention with a causal mask, as nn.TransformerEncoderLayer calls it).
 *
 * The input is the fused in-projection's output qkv [B*T, 3D] (linear_forward with
 * PyTorch's in_proj_weight [3D, D]): columns 0..D-1 are the queries, D..2D-1 the keys,
 * 2D..3D-1 the values, and head h uses columns h*dh .. (h+1)*dh - 1 of each block
 * (dh = D / H). Rows are batch-major: sequence b, position t is row b*T + t. For each
 * sequence b and head h:
 *   scores[i][j] = q_i . k_j / sqrt(dh)        for j <= i (causal: t sees 0..t)
 *   probs[i][.]  = softmax over j <= i of scores[i][.]   (0 for j > i)
 *   dropped      = probs * dropout mask          (PyTorch drops attention weights too)
 *   ctx_i        = sum over j <= i of dropped[i][j] v_j   (heads side by side in ctx)
 * The out-projection is linear_forward on ctx [B*T, D] again.
 *
 * The sizes come from probs [B, H, T, T]: it names the number of heads and the
 * sequence length, so the calls need no size arguments.
 *
 * Speed: one task per (sequence, head), split over OpenMP threads (the same bits on
 * any number of threads: each task writes its own rows and columns only); inside,
 * loops over the causal triangle only (4 dot products at a time, vectorised over dh):
 * at the tutorial's sequence length (T = 35) a (sequence, head) is a few small
 * matrices, too small for a GEMM call each to pay off. (Not yet benchmarked against
 * batched GEMMs: lesson 04's benchmark is to say.)
 * Float32 only: a 16-bit tensor stops with a message; the 16-bit path's attention is the
 * fused one, layers/flash_attention.h. */
#ifndef LAYERS_ATTENTION_H
#define LAYERS_ATTENTION_H

#include <stdbool.h>

#include "core/rng.h"
#include "core/tensor.h"
#include "layers/dropout.h"

typedef struct {
    int B, T, H, D, dh; /* sequences, positions, heads, model width, head width */
} AttentionSizes;

/* ctx [B*T, D] and probs [B, H, T, T] (saved for the backward) from qkv [B*T, 3D].
 * Dropout on the attention weights with probability dropout_p at training: dropped
 * [B, H, T, T] receives probs times the mask (layers/dropout.h: one key from rng per
 * call); it may be NULL when dropout is off (!training or p == 0), and otherwise
 * holds a copy of probs. */
void attention_forward(Tensor *ctx, Tensor *probs, Tensor *dropped, const Tensor *qkv,
                       float dropout_p, bool training, Rng *rng);

/* The same for some of the heads of a wider attention (a tensor-parallel rank's H of
 * the model's heads): the weights dropped are the ones the unsplit layer drops, window
 * placing probs [B, H, T, T] in the unsplit [B, H_all, T, T] (rows of H*T*T entries,
 * columns [h0*T*T, ...) of H_all*T*T; DROPOUT_WHOLE: all of it). */
void attention_forward_window(Tensor *ctx, Tensor *probs, Tensor *dropped, const Tensor *qkv,
                              float dropout_p, bool training, Rng *rng, DropoutWindow window);

/* dqkv [B*T, 3D] += dL/dqkv given dctx [B*T, D] and what the forward saved (probs
 * and dropped, or dropped NULL when the forward had none). dscores [B, H, T, T] is a
 * workspace (the caller's, allocated once): it receives dL/dscores. */
void attention_backward(Tensor *dqkv, Tensor *dscores, const Tensor *dctx, const Tensor *qkv,
                        const Tensor *probs, const Tensor *dropped);

/* The shape checks of both devices; they return the sizes. */
AttentionSizes attention_check_forward(const Tensor *ctx, const Tensor *probs,
                                       const Tensor *dropped, const Tensor *qkv,
                                       float dropout_p, bool training, const Rng *rng);
/* A window of whole heads (attention_forward_window) */
void attention_check_window(const AttentionSizes *s, DropoutWindow w);
AttentionSizes attention_check_backward(const Tensor *dqkv, const Tensor *dscores,
                                        const Tensor *dctx, const Tensor *qkv,
                                        const Tensor *probs, const Tensor *dropped);

/* CUDA twins (lib/cuda/attention.cu), in builds with CUDA: tensors on the GPU; the
 * dropout key drawn on the host from rng as here, so the mask is the CPU's. */
void cuda_attention_forward(Tensor *ctx, Tensor *probs, Tensor *dropped, const Tensor *qkv,
                            float dropout_p, bool training, Rng *rng);
void cuda_attention_forward_window(Tensor *ctx, Tensor *probs, Tensor *dropped,
                                   const Tensor *qkv, float dropout_p, bool training, Rng *rng,
                                   DropoutWindow window);
void cuda_attention_backward(Tensor *dqkv, Tensor *dscores, const Tensor *dctx,
                             const Tensor *qkv, const Tensor *probs, const Tensor *dropped);

#endif
