#include "cuda/attention_plan.h"

#include <math.h>

#include "core/check.h"

AttentionGemmPlan attention_gemm_plan(const AttentionSizes *s, AttentionGemm which, int h) {
    CHECK(h >= 0 && h < s->H, "attention plan: head %d of %d", h, s->H);
    const int T = s->T, D = s->D, dh = s->dh, ld = 3 * D;
    const long long seq_qkv = (long long)T * ld;     /* one sequence in qkv, dqkv */
    const long long seq_tt = (long long)s->H * T * T; /* one sequence in probs, dscores */
    const long long seq_ctx = (long long)T * D;      /* one sequence in ctx, dctx */
    const long long q = (long long)h * dh, k = D + q, v = 2LL * D + q; /* columns in qkv */
    const long long tt = (long long)h * T * T, c = q;                 /* head h in probs, ctx */
    const float scale = 1.0f / sqrtf((float)dh);
    AttentionGemmPlan p;
    GemmBatch *g = &p.g;
    switch (which) {
    case ATTN_SCORES:
        *g = (GemmBatch){false, true, T, T, dh, ld, ld, T, s->B, seq_qkv, seq_qkv, seq_tt, scale, 0.0f};
        p.a = q, p.b = k, p.c = tt;
        break;
    case ATTN_CONTEXT:
        *g = (GemmBatch){false, false, T, dh, T, T, ld, D, s->B, seq_tt, seq_qkv, seq_ctx, 1.0f, 0.0f};
        p.a = tt, p.b = v, p.c = c;
        break;
    case ATTN_DV:
        *g = (GemmBatch){true, false, T, dh, T, T, D, ld, s->B, seq_tt, seq_ctx, seq_qkv, 1.0f, 1.0f};
        p.a = tt, p.b = c, p.c = v;
        break;
    case ATTN_DW:
        *g = (GemmBatch){false, true, T, T, dh, D, ld, T, s->B, seq_ctx, seq_qkv, seq_tt, 1.0f, 0.0f};
        p.a = c, p.b = v, p.c = tt;
        break;
    case ATTN_DQ:
        *g = (GemmBatch){false, false, T, dh, T, T, ld, ld, s->B, seq_tt, seq_qkv, seq_qkv, scale, 1.0f};
        p.a = tt, p.b = k, p.c = q;
        break;
    case ATTN_DK:
        *g = (GemmBatch){true, false, T, dh, T, T, ld, ld, s->B, seq_tt, seq_qkv, seq_qkv, scale, 1.0f};
        p.a = tt, p.b = q, p.c = k;
        break;
    default:
        CHECK(false, "attention plan: no product %d", (int)which);
    }
    return p;
}
