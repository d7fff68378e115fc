/* The causal self-attention's six matrix products on the GPU (attention.cu), as
 * strided batches of cuBLAS: one call per head, batched over the B sequences.
 *
 * Why per head: in qkv [B*T, 3D] head h of sequence b starts at b*T*3D + h*dh, so the
 * (sequence, head) pairs are not one stride apart, but the sequences of one head are
 * (T*3D for qkv, H*T*T for probs [B, H, T, T], T*D for ctx). Each product below is the
 * CPU's (layers/attention.c, one (sequence, head) at a time) with the same arguments;
 * the plan says where head h's first matrix starts in each buffer and how far apart
 * the sequences are. Host code, so tests/gpu/test_gpu_host.c runs the plans through
 * the host model of cuBLAS and compares with the CPU attention, without a GPU. */
#ifndef CUDA_ATTENTION_PLAN_H
#define CUDA_ATTENTION_PLAN_H

#include "cuda/gemm_map.h"
#include "layers/attention.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ATTN_SCORES,  /* probs   = scale Q K^T         A qkv (Q), B qkv (K), C probs    */
    ATTN_CONTEXT, /* ctx     = W V                 A weights, B qkv (V), C ctx      */
    ATTN_DV,      /* dV     += W^T dctx            A weights, B dctx,    C dqkv (V) */
    ATTN_DW,      /* dscores = dctx V^T            A dctx,    B qkv (V), C dscores  */
    ATTN_DQ,      /* dQ     += scale dscores K     A dscores, B qkv (K), C dqkv (Q) */
    ATTN_DK,      /* dK     += scale dscores^T Q   A dscores, B qkv (Q), C dqkv (K) */
    ATTN_GEMMS
} AttentionGemm;
/* (W: the weights that multiply V, dropped or probs, [B, H, T, T] like dscores.) */

typedef struct {
    GemmBatch g;       /* batch = B sequences */
    long long a, b, c; /* offsets, in floats, of head h's matrices of sequence 0 */
} AttentionGemmPlan;

AttentionGemmPlan attention_gemm_plan(const AttentionSizes *s, AttentionGemm which, int h);

#ifdef __cplusplus
}
#endif

#endif
