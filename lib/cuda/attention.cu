// Causal multi-head self-attention on the GPU, as lib/layers/attention.c.
//
// The six matrix products are cuBLAS strided-batched GEMMs, one call per head over the
// B sequences (attention_plan.h: offsets and strides, tested on the host); between them
// one warp per row of scores [B, H, T, T]:
//   forward:  the causal softmax of row i over j <= i, written in place over the scores,
//             0 above the diagonal (exactly, as the CPU); the attention dropout on the
//             weights with the CPU's key and the same index (row * T + j, placed in the
//             unsplit model's weights for a tensor-parallel rank's heads): the same mask;
//   backward: ds = w * dw - p * sum_j (w dw) over j <= i, 0 above the diagonal.
// The softmax uses expf (within 2 ulp) where the CPU uses softmax_exp (within 1.1e-7
// relative), and sums in another order: probabilities agree to rounding, not bit for
// bit. Every launch is in the default stream, so the products and kernels run in order.
#include <math.h>

#include "cuda_check.h"
#include "launch.h"
#include "reduce.cuh"
extern "C" {
#include "core/check.h"
#include "cuda/attention_plan.h"
#include "cuda/dropout_draw.h"
#include "kernels.h"
#include "layers/attention.h"
#include "layers/dropout.h"
}

// p [rows, T] (rows = B*H*T, row r is position i = r % T of its (sequence, head)) holds
// the scaled scores; w (NULL: none) receives the weights that multiply V.
static __global__ void causal_softmax_kernel(float *p, float *w, int64_t rows, int T, bool drop,
                                             uint64_t key, const uint64_t *key_at,
                                             uint64_t threshold, float keep_scale,
                                             DropoutWindow window) {
    if (key_at) key = *key_at; // a replayed graph's key (cuda/graph.h)
    const int lane = threadIdx.x % 32;
    WARP_STRIDE_LOOP(r, rows) {
        const int i = (int)(r % T);
        float *pr = p + r * T;
        float m = -INFINITY;
        for (int j = lane; j <= i; j += 32) m = fmaxf(m, pr[j]);
        m = warp_max(m);
        float sum = 0.0f;
        for (int j = lane; j <= i; j += 32) { // each lane rereads only what it wrote
            const float e = expf(pr[j] - m);
            pr[j] = e;
            sum += e;
        }
        const float inv = 1.0f / warp_sum(sum);
        for (int j = lane; j < T; j += 32) {
            const float v = j <= i ? pr[j] * inv : 0.0f;
            pr[j] = v;
            if (w) {
                const uint64_t at = dropout_index(window, (uint64_t)(r * T + j));
                const bool keep = !drop || dropout_keeps(key, at, threshold);
                w[r * T + j] = drop ? (keep ? v * keep_scale : 0.0f) : v;
            }
        }
    }
}

// ds [rows, T] holds dw = dctx V^T; w the weights that multiplied V, p the probabilities.
static __global__ void causal_softmax_backward_kernel(float *ds, const float *w, const float *p,
                                                      int64_t rows, int T) {
    const int lane = threadIdx.x % 32;
    WARP_STRIDE_LOOP(r, rows) {
        const int i = (int)(r % T);
        float *d = ds + r * T;
        const float *wr = w + r * T, *pr = p + r * T;
        float wdw = 0.0f;
        for (int j = lane; j <= i; j += 32) wdw += wr[j] * d[j];
        wdw = warp_sum(wdw);
        for (int j = lane; j < T; j += 32) d[j] = j <= i ? wr[j] * d[j] - pr[j] * wdw : 0.0f;
    }
}

// The product `which` for every head: A, B, C are the buffers the plan names.
static void products(const AttentionSizes *s, AttentionGemm which, const float *A, const float *B,
                     float *C) {
    for (int h = 0; h < s->H; h++) {
        const AttentionGemmPlan p = attention_gemm_plan(s, which, h);
        cuda_gemm_batched(&p.g, A + p.a, B + p.b, C + p.c);
    }
}

extern "C" void cuda_attention_forward(Tensor *ctx, Tensor *probs, Tensor *dropped,
                                       const Tensor *qkv, float dropout_p, bool training,
                                       Rng *rng) {
    cuda_attention_forward_window(ctx, probs, dropped, qkv, dropout_p, training, rng,
                                  DROPOUT_WHOLE);
}

// The unfused attention computes in float32 only; a 16-bit run's is the fused one.
static void check_float32_qkv(const char *func, const Tensor *qkv) {
    CHECK(!qkv || qkv->dtype == DTYPE_F32, "%s: qkv is a %s tensor, but the unfused attention "
          "computes in float32 only: in a 16-bit run use flash attention "
          "(cuda_flash_attention_forward / _backward, lib/layers/flash_attention.h)", func,
          dtype_name(qkv->dtype));
}

extern "C" void cuda_attention_forward_window(Tensor *ctx, Tensor *probs, Tensor *dropped,
                                              const Tensor *qkv, float dropout_p, bool training,
                                              Rng *rng, DropoutWindow window) {
    check_float32_qkv(__func__, qkv);
    CHECK_FLOAT32(ctx, probs, dropped, qkv);
    const AttentionSizes s =
        attention_check_forward(ctx, probs, dropped, qkv, dropout_p, training, rng);
    attention_check_window(&s, window);
    CHECK_ON_GPU(ctx);
    CHECK_ON_GPU(probs);
    CHECK_ON_GPU(dropped);
    CHECK_ON_GPU(qkv);
    const DropoutDraw d = dropout_draw(dropout_p, training, rng); // as the CPU: a key when active
    const int64_t rows = (int64_t)s.B * s.H * s.T;
    if (rows == 0) return;
    products(&s, ATTN_SCORES, qkv->data, qkv->data, probs->data);
    causal_softmax_kernel<<<cuda_blocks_for_rows(rows, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
        probs->data, dropped ? dropped->data : NULL, rows, s.T, d.active, d.key, d.key_at, d.threshold,
        d.keep_scale, window);
    CUDA_CHECK_LAUNCH();
    products(&s, ATTN_CONTEXT, dropped ? dropped->data : probs->data, qkv->data, ctx->data);
}

extern "C" void cuda_attention_backward(Tensor *dqkv, Tensor *dscores, const Tensor *dctx,
                                        const Tensor *qkv, const Tensor *probs,
                                        const Tensor *dropped) {
    check_float32_qkv(__func__, qkv);
    CHECK_FLOAT32(dqkv, dscores, dctx, qkv, probs, dropped);
    const AttentionSizes s = attention_check_backward(dqkv, dscores, dctx, qkv, probs, dropped);
    CHECK_ON_GPU(dqkv);
    CHECK_ON_GPU(dscores);
    CHECK_ON_GPU(dctx);
    CHECK_ON_GPU(qkv);
    CHECK_ON_GPU(probs);
    CHECK_ON_GPU(dropped);
    const int64_t rows = (int64_t)s.B * s.H * s.T;
    if (rows == 0) return;
    const float *w = dropped ? dropped->data : probs->data;
    products(&s, ATTN_DV, w, dctx->data, dqkv->data);
    products(&s, ATTN_DW, dctx->data, qkv->data, dscores->data);
    causal_softmax_backward_kernel<<<cuda_blocks_for_rows(rows, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
        dscores->data, w, probs->data, rows, s.T);
    CUDA_CHECK_LAUNCH();
    products(&s, ATTN_DQ, dscores->data, qkv->data, dqkv->data);
    products(&s, ATTN_DK, dscores->data, qkv->data, dqkv->data);
}
