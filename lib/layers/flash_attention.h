/* Causal multi-head self-attention fused, flash-attention's way: the same function as
 * layers/attention.h (the same qkv [B*T, 3D] layout, heads side by side, the same
 * scale 1/sqrt(dh), the same dropout on the attention weights with the same mask),
 * but no [T, T] matrix of scores or weights is ever stored.
 *
 * Forward, for each sequence b, head h and query row i, keys visited in tiles of
 * FLASH_TILE = 32 (online softmax: a running maximum m and sum l per row):
 *   s_j   = q_i . k_j / sqrt(dh)                       for the tile's keys j <= i
 *   m'    = max(m, max_j s_j),  a = exp(m - m')         (a = 0 on the first tile)
 *   l     = a l + sum_j exp(s_j - m')                   (the softmax's denominator)
 *   o     = a o + sum_j exp(s_j - m') mask_ij v_j       (mask: 0 or 1 / (1 - p))
 * then ctx_i = o / l and lse_i = m + log(l), the log-sum-exp of the row's scaled
 * scores, the only thing saved besides ctx. Backward (P recomputed, never stored):
 *   p_ij  = exp(s_ij - lse_i),  dp_ij = dctx_i . v_j,  delta_i = dctx_i . ctx_i
 *   ds_ij = p_ij (mask_ij dp_ij - delta_i)
 *   dq_i += sum_j ds_ij k_j / sqrt(dh),  dk_j += sum_i ds_ij q_i / sqrt(dh),
 *   dv_j += sum_i p_ij mask_ij dctx_i
 * delta_i = sum_j p_ij mask_ij dp_ij is the softmax backward's row sum, which is
 * dctx_i . ctx_i because ctx_i = sum_j p_ij mask_ij v_j: so the backward needs ctx,
 * not the weights (the unfused layer's w * dw - p * sum(w dw), the same numbers).
 *
 * Memory. Saved per (sequence, head, query row): 4 bytes (lse) where the unfused layer
 * keeps probs and dropped, 8 T bytes, and its backward a dscores workspace of 4 T
 * more: at T = 1,024 4 bytes against 12 KiB per row; for the issue-28 shape (128 x 256
 * tokens, 4 heads) 0.5 MB of lse per layer against 268 MB of probs and dropped. The
 * work is the same O(T^2 dh) (the backward recomputes the scores twice on the GPU,
 * see below), the memory O(T) per head.
 *
 * Dtypes. qkv, ctx, dctx and dqkv are all float32, all bfloat16 or all float16; lse is
 * float32. Every product is accumulated in float32; 16-bit values are read exactly
 * (core/dtype.h) and rounded to the 16-bit dtype (nearest even) only where a result is
 * stored: ctx once, each dqkv entry once (old + the float32 sum, then rounded). The
 * CUDA twin rounds at exactly those places, so the two differ only where their float32
 * sums, taken in another order, round to neighbouring 16-bit values: one unit in the
 * last place at most, and a CPU run predicts a GPU run. In 16 bits delta_i is taken
 * from the stored (rounded) ctx, as flash-attention does. float16 follows bfloat16
 * point for point: 11 significant bits instead of 8, but a range of 2^-24 (subnormal)
 * to 65,504. ctx is a weighted mean of v times 1 / (1 - p), so it stays in range when
 * v does; the scores, exponentials, l and lse never leave float32; a dqkv entry beyond
 * 65,504 becomes infinity (what fp16 training's loss scaler looks for, lib/train/
 * loss_scale.h), one below 2^-14 keeps an absolute 2^-25 instead of 2^-11 of itself.

 * Dropout: entry (b, h, i, j) of the weights [B, H, T, T] is kept by
 * dropout_keeps(key, index, threshold) with index ((b H + h) T + i) T + j placed by
 * the window (layers/dropout.h), the key drawn from the Rng exactly as
 * attention_forward draws it (one key, two rng_u32, only when active). So with the
 * same Rng state the fused and the unfused layer drop the same weights. The forward
 * returns what it drew in a FlashDropout, which the backward takes to regenerate the
 * identical mask (nothing of size T x T is kept for it either).
 *
 * The CPU version runs one task per (sequence, head) over OpenMP threads (the same
 * bits on any number of threads) with the GPU's formulas (its forward with the same
 * key tiles; its backward one (i, j) pair at a time), float32 scratch of O(T dh) per
 * task. The CUDA twin (lib/cuda/flash_attention.cu) says what
 * each thread block does, and what a tensor-core (WMMA / mma) version would change:
 * bf16 fragments for the six products, so P and ds rounded to bfloat16 before them
 * (here too then), bigger tiles loaded asynchronously. Its speed on a GPU is owed
 * (docs/gpu.md). */
#ifndef LAYERS_FLASH_ATTENTION_H
#define LAYERS_FLASH_ATTENTION_H

#include <stdbool.h>
#include <stdint.h>

#include "core/rng.h"
#include "core/tensor.h"
#include "layers/attention.h"
#include "layers/dropout.h"

/* Keys per tile of the online softmax, on both devices (one per lane of a warp). */
enum { FLASH_TILE = 32 };
/* The widest head the CUDA kernels take (their register tiles are sized for 32, 64,
 * 128 or 256 columns); the CPU takes any. */
enum { FLASH_MAX_HEAD = 256 };

/* What a forward drew for its dropout, for its backward. */
typedef struct {
    bool active;          /* training and p > 0: key was drawn */
    uint64_t key;         /* 0 when not active */
    const uint64_t *key_at; /* on a GPU while a CUDA graph records (cuda/graph.h): where
                           * the kernels read the key (new at each replay); else NULL */
    uint64_t threshold;   /* dropout_threshold(p) */
    float keep_scale;     /* 1 / (1 - p) (0 for p = 1); 1 when not active */
    DropoutWindow window; /* where these heads sit in the unsplit weights' mask */
} FlashDropout;

/* ctx [B*T, D] and lse [B, H, T] (float32) from qkv [B*T, 3D]; the sizes come from lse.
 * Dropout p on the attention weights at training, key from rng, window as in
 * attention_forward_window (DROPOUT_WHOLE: all heads). drop (may be NULL when no
 * backward follows) receives what was drawn. */
void flash_attention_forward(Tensor *ctx, Tensor *lse, FlashDropout *drop, const Tensor *qkv,
                             float dropout_p, bool training, Rng *rng, DropoutWindow window);

/* dqkv [B*T, 3D] += dL/dqkv given dctx [B*T, D] and what the forward saved: ctx, lse
 * and its FlashDropout (NULL: the forward dropped nothing). */
void flash_attention_backward(Tensor *dqkv, const Tensor *dctx, const Tensor *qkv,
                              const Tensor *ctx, const Tensor *lse, const FlashDropout *drop);

/* The checks of both devices (shapes, dtypes, dropout arguments); they return the sizes. */
AttentionSizes flash_attention_check_forward(const Tensor *ctx, const Tensor *lse,
                                             const Tensor *qkv, float dropout_p, bool training,
                                             const Rng *rng, DropoutWindow window);
AttentionSizes flash_attention_check_backward(const Tensor *dqkv, const Tensor *dctx,
                                              const Tensor *qkv, const Tensor *ctx,
                                              const Tensor *lse, const FlashDropout *drop);
/* The FlashDropout of a forward with these arguments (draws the key when active). */
FlashDropout flash_attention_draw(float dropout_p, bool training, Rng *rng, DropoutWindow window);
/* The same with the key given (drawn by the caller when dropout_active). */
FlashDropout flash_attention_dropout(float dropout_p, bool training, uint64_t key,
                                     DropoutWindow window);

/* CUDA twins (lib/cuda/flash_attention.cu), in builds with CUDA: tensors on the GPU,
 * the key drawn on the host as here. Heads of at most FLASH_MAX_HEAD columns. */
void cuda_flash_attention_forward(Tensor *ctx, Tensor *lse, FlashDropout *drop, const Tensor *qkv,
                                  float dropout_p, bool training, Rng *rng, DropoutWindow window);
void cuda_flash_attention_backward(Tensor *dqkv, const Tensor *dctx, const Tensor *qkv,
                                   const Tensor *ctx, const Tensor *lse, const FlashDropout *drop);

#endif
