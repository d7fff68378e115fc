/* The GPU backend's host-side parts, which need no GPU: the row-major to cuBLAS
 * argument mapping (through a host model of cublasSgemm, also strided-batched; the model
 * of cublasGemmEx on 16-bit operands), the
 * attention's per-head GEMM plans (the whole attention run through that model against
 * the CPU layer), the dropout draws of the CUDA layers against the CPU's, launch
 * arithmetic, the choice of device by local rank, the message without a GPU, and the
 * device tensors' plumbing (through a stand-in backend in host memory). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/check.h"
#include "core/envvars.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "cuda/attention_plan.h"
#include "cuda/dropout_draw.h"
#include "cuda/gemm_map.h"
#include "cuda/device.h"
#include "cuda/launch.h"
#include "framework/check.h"
#include "layers/attention.h"
#include "layers/dropout.h"
#include "ops/gemm.h"

static int check_gemm_mapping(void) {
    Rng rng;
    rng_seed(&rng, 3, 0);
    for (int t = 0; t < 16; t++) {
        bool ta = t & 1, tb = t & 2;
        int M = 1 + (int)rng_below(&rng, 9), N = 1 + (int)rng_below(&rng, 9),
            K = 1 + (int)rng_below(&rng, 9), pad = t / 4;
        int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
        float A[20 * 20], B[20 * 20], C[20 * 20], R[20 * 20];
        fill_uniform(A, 400, 1 + t, -1, 1);
        fill_uniform(B, 400, 2 + t, -1, 1);
        fill_uniform(C, 400, 3 + t, -1, 1);
        memcpy(R, C, sizeof C);
        CublasGemm g = gemm_to_cublas(ta, tb, M, N, K, lda, ldb, ldc);
        char why[256];
        gemm(ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 1.0f, R, ldc);
        if (!expect_true(gemm_through_model(&g, 0.5f, A, B, 1.0f, C, why, sizeof why), "%s", why) ||
            !expect_close("C", C, R, (int64_t)M * ldc, 1e-5f, 1e-5f)) {
            printf("M=%d N=%d K=%d trans_a=%d trans_b=%d lda=%d ldb=%d ldc=%d\n", M, N, K, ta, tb,
                   lda, ldb, ldc);
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* The model must refuse what cuBLAS refuses, or a wrong mapping could pass it. */
static int check_model_refuses(void) {
    float x[16] = {0};
    char why[256];
    bool ok = expect_true(!cublas_sgemm_model(false, false, 4, 2, 3, 1, x, 3, x, 3, 0, x, 4, why,
                                              sizeof why), "lda 3 < m 4 was accepted") &&
              expect_true(strstr(why, "lda=3") != NULL, "the reason does not name lda: %s", why) &&
              expect_true(!cublas_sgemm_model(false, true, 2, 4, 3, 1, x, 2, x, 3, 0, x, 2, why,
                                              sizeof why), "ldb 3 < n 4 (B transposed) was accepted") &&
              expect_true(cublas_sgemm_model(true, true, 2, 4, 3, 1, x, 3, x, 4, 0, x, 2, why,
                                             sizeof why), "a valid call was refused: %s", why);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* cublasGemmEx's model (the CUDA emulator's): 16-bit operands, C 16-bit or float32.
 * Integer operands make every float32 sum exact, so C's one rounding is seen alone:
 * 256 + 1 and 256 + 3 in bfloat16 (steps of 2 there) are ties, to the even 256 and 260;
 * 2048 + 1 in float16 the same. beta 0 does not read C (NaN there); float32 C against
 * the cublasSgemm model on the same values; mismatched types and a short lda refused. */
static int check_gemm_ex_model(void) {
    char why[256];
    bool ok = true;
    for (int d = 0; d < 2 && ok; d++) {
        const DType dt = d ? DTYPE_F16 : DTYPE_BF16;
        const float base = d ? 2048.0f : 256.0f;
        uint16_t (*to16)(float) = d ? dtype_f16_from_f32 : dtype_bf16_from_f32;
        float (*from16)(uint16_t) = d ? dtype_f32_from_f16 : dtype_f32_from_bf16;
        /* column-major C [2, 1] = base + B^T A, B [2, 2] = columns (1, 2), (0, 1), A = (1, 1):
         * the sums 3 and 1 */
        const uint16_t A[2] = {to16(1.0f), to16(1.0f)}, B[4] = {to16(1.0f), to16(2.0f), to16(0.0f), to16(1.0f)};
        uint16_t C[2] = {to16(base), to16(base)};
        ok = expect_true(cublas_gemm_ex_model(true, false, 2, 1, 2, 1.0f, B, 2, A, 2, dt, 1.0f, C, 2,
                                              dt, why, sizeof why), "%s", why) &&
             expect_true(from16(C[0]) == base + 4.0f && from16(C[1]) == base,
                         "%s: %g + 3 and %g + 1 became %g and %g, want %g and %g (ties to even)",
                         dtype_name(dt), (double)base, (double)base, (double)from16(C[0]),
                         (double)from16(C[1]), (double)base + 4, (double)base);
        float C32[2] = {NAN, NAN};
        ok = ok && expect_true(cublas_gemm_ex_model(true, false, 2, 1, 2, 0.5f, B, 2, A, 2, dt, 0.0f,
                                                    C32, 2, DTYPE_F32, why, sizeof why), "%s", why) &&
             expect_true(C32[0] == 1.5f && C32[1] == 0.5f, "%s, float32 C, beta 0: %g %g, want 1.5 0.5",
                         dtype_name(dt), (double)C32[0], (double)C32[1]);
        /* random operands, float32 C: the cublasSgemm model on their float32 values */
        enum { M = 7, N = 5, K = 33 };
        float a[M * K], b[K * N], c[M * N], want[M * N];
        uint16_t a16[M * K], b16[K * N];
        fill_uniform(a, M * K, 40 + d, -1, 1), fill_uniform(b, K * N, 41 + d, -1, 1);
        fill_uniform(c, M * N, 42 + d, -1, 1);
        for (int i = 0; i < M * K; i++) a16[i] = to16(a[i]), a[i] = from16(a16[i]);
        for (int i = 0; i < K * N; i++) b16[i] = to16(b[i]), b[i] = from16(b16[i]);
        memcpy(want, c, sizeof c);
        ok = ok && expect_true(cublas_sgemm_model(false, false, M, N, K, 0.5f, a, M, b, K, 1.0f, want,
                                                  M, why, sizeof why), "%s", why) &&
             expect_true(cublas_gemm_ex_model(false, false, M, N, K, 0.5f, a16, M, b16, K, dt, 1.0f,
                                              c, M, DTYPE_F32, why, sizeof why), "%s", why) &&
             expect_close("float32 C", c, want, M * N, 1e-5f, 1e-5f);
    }
    uint16_t x[16] = {0};
    ok = ok && expect_true(!cublas_gemm_ex_model(false, false, 2, 2, 2, 1, x, 2, x, 2, DTYPE_BF16, 0,
                                                 x, 2, DTYPE_F16, why, sizeof why),
                           "bfloat16 operands with a float16 C were accepted") &&
         expect_true(strstr(why, "NOT_SUPPORTED") != NULL, "the reason: %s", why) &&
         expect_true(!cublas_gemm_ex_model(false, false, 4, 2, 3, 1, x, 3, x, 3, DTYPE_F16, 0, x, 4,
                                           DTYPE_F16, why, sizeof why), "lda 3 < m 4 was accepted");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Strided batches: each entry through the model against gemm() on the same entry. */
static int check_gemm_batch_mapping(void) {
    Rng rng;
    rng_seed(&rng, 4, 0);
    for (int t = 0; t < 16; t++) {
        GemmBatch b = {.trans_a = t & 1, .trans_b = t & 2, .M = 1 + (int)rng_below(&rng, 7),
                       .N = 1 + (int)rng_below(&rng, 7), .K = 1 + (int)rng_below(&rng, 7),
                       .batch = 1 + (int)rng_below(&rng, 4), .alpha = 0.5f, .beta = t % 3 ? 1.0f : 0.0f};
        const int pad = t / 4;
        b.lda = (b.trans_a ? b.M : b.K) + pad, b.ldb = (b.trans_b ? b.K : b.N) + pad, b.ldc = b.N + pad;
        /* entries further apart than their size, differently for each operand */
        b.stride_a = (long long)(b.trans_a ? b.K : b.M) * b.lda + 1 + t % 2;
        b.stride_b = (long long)(b.trans_b ? b.N : b.K) * b.ldb + 3;
        b.stride_c = (long long)b.M * b.ldc + 2;
        enum { CAP = 4 * 200 };
        float A[CAP], B[CAP], C[CAP], R[CAP];
        fill_uniform(A, CAP, 11 + t, -1, 1);
        fill_uniform(B, CAP, 12 + t, -1, 1);
        fill_uniform(C, CAP, 13 + t, -1, 1);
        memcpy(R, C, sizeof C);
        for (int i = 0; i < b.batch; i++)
            gemm(b.trans_a, b.trans_b, b.M, b.N, b.K, b.alpha, A + i * b.stride_a, b.lda,
                 B + i * b.stride_b, b.ldb, b.beta, R + i * b.stride_c, b.ldc);
        CublasGemmBatch c = gemm_batch_to_cublas(&b);
        char why[256];
        if (!expect_true(gemm_batch_through_model(&c, b.alpha, A, B, b.beta, C, why, sizeof why),
                         "%s", why) ||
            !expect_close("C (every entry, and what lies between them untouched)", C, R, CAP,
                          1e-5f, 1e-5f)) {
            printf("M=%d N=%d K=%d trans_a=%d trans_b=%d batch=%d strides %lld %lld %lld\n", b.M,
                   b.N, b.K, b.trans_a, b.trans_b, b.batch, b.stride_a, b.stride_b, b.stride_c);
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* What the CUDA attention computes, on the host: the plans' products through the cuBLAS
 * model, and between them the two row kernels of attention.cu written as loops. */
static bool run_plans(const AttentionSizes *s, AttentionGemm which, const float *A,
                      const float *B, float *C) {
    for (int h = 0; h < s->H; h++) {
        const AttentionGemmPlan p = attention_gemm_plan(s, which, h);
        CublasGemmBatch c = gemm_batch_to_cublas(&p.g);
        char why[256];
        if (!expect_true(gemm_batch_through_model(&c, p.g.alpha, A + p.a, B + p.b, p.g.beta,
                                                  C + p.c, why, sizeof why),
                         "product %d, head %d: %s", (int)which, h, why))
            return false;
    }
    return true;
}

static void host_causal_softmax(float *p, float *w, int64_t rows, int T, const DropoutDraw *d) {
    for (int64_t r = 0; r < rows; r++) {
        const int i = (int)(r % T);
        float *pr = p + r * T, m = pr[0], sum = 0.0f;
        for (int j = 1; j <= i; j++) m = fmaxf(m, pr[j]);
        for (int j = 0; j <= i; j++) sum += pr[j] = expf(pr[j] - m);
        for (int j = 0; j < T; j++) {
            pr[j] = j <= i ? pr[j] / sum : 0.0f;
            if (w)
                w[r * T + j] = !d->active ? pr[j]
                               : dropout_keeps(d->key, (uint64_t)(r * T + j), d->threshold)
                                   ? pr[j] * d->keep_scale : 0.0f;
        }
    }
}

static void host_causal_softmax_backward(float *ds, const float *w, const float *p, int64_t rows,
                                         int T) {
    for (int64_t r = 0; r < rows; r++) {
        const int i = (int)(r % T);
        float *d = ds + r * T, wdw = 0.0f;
        for (int j = 0; j <= i; j++) wdw += w[r * T + j] * d[j];
        for (int j = 0; j < T; j++) d[j] = j <= i ? w[r * T + j] * d[j] - p[r * T + j] * wdw : 0.0f;
    }
}

static int compare_attention_plans(int B, int T, int H, int dh, float p, uint64_t seed) {
    const int D = H * dh, N = B * T;
    Tensor qkv = tensor_zeros(2, N, 3 * D), ctx = tensor_zeros(2, N, D), hctx = tensor_zeros(2, N, D);
    Tensor probs = tensor_zeros(4, B, H, T, T), hprobs = tensor_zeros(4, B, H, T, T);
    Tensor dropped = tensor_zeros(4, B, H, T, T), hdropped = tensor_zeros(4, B, H, T, T);
    Tensor dctx = tensor_zeros(2, N, D), dqkv = tensor_zeros(2, N, 3 * D);
    Tensor hdqkv = tensor_zeros(2, N, 3 * D), ds = tensor_zeros(4, B, H, T, T);
    Tensor hds = tensor_zeros(4, B, H, T, T);
    fill_uniform(qkv.data, qkv.size, seed, -1, 1);
    fill_uniform(dctx.data, dctx.size, seed + 1, -1, 1);
    fill_uniform(dqkv.data, dqkv.size, seed + 2, -1, 1); /* the backward adds into it */
    memcpy(hdqkv.data, dqkv.data, sizeof(float) * (size_t)dqkv.size);
    /* outputs and the workspace start with garbage: what they held must not matter */
    fill_uniform(hds.data, hds.size, seed + 3, -9, 9);
    fill_uniform(hprobs.data, hprobs.size, seed + 4, -9, 9);
    fill_uniform(hdropped.data, hdropped.size, seed + 5, -9, 9);
    fill_uniform(hctx.data, hctx.size, seed + 6, -9, 9);
    Rng r1, r2;
    rng_seed(&r1, seed, 7), rng_seed(&r2, seed, 7);
    const bool drop = p > 0.0f;
    attention_forward(&ctx, &probs, drop ? &dropped : NULL, &qkv, p, true, &r1);
    attention_backward(&dqkv, &ds, &dctx, &qkv, &probs, drop ? &dropped : NULL);

    const AttentionSizes s = attention_check_forward(&hctx, &hprobs, drop ? &hdropped : NULL, &qkv,
                                                     p, true, &r2);
    const DropoutDraw d = dropout_draw(p, true, &r2);
    const int64_t rows = (int64_t)B * H * T;
    const float *w = drop ? hdropped.data : hprobs.data;
    bool ok = run_plans(&s, ATTN_SCORES, qkv.data, qkv.data, hprobs.data);
    host_causal_softmax(hprobs.data, drop ? hdropped.data : NULL, rows, T, &d);
    ok = ok && run_plans(&s, ATTN_CONTEXT, w, qkv.data, hctx.data) &&
         run_plans(&s, ATTN_DV, w, dctx.data, hdqkv.data) &&
         run_plans(&s, ATTN_DW, dctx.data, qkv.data, hds.data);
    host_causal_softmax_backward(hds.data, w, hprobs.data, rows, T);
    ok = ok && run_plans(&s, ATTN_DQ, hds.data, qkv.data, hdqkv.data) &&
         run_plans(&s, ATTN_DK, hds.data, qkv.data, hdqkv.data);
    /* float loops of a few terms against the CPU's: rounding only (1e-5); a wrong offset
     * or stride moves whole values (0.01 to 1) */
    ok = ok && expect_close("probs", hprobs.data, probs.data, probs.size, 1e-5f, 1e-5f) &&
         (!drop || expect_close("dropped", hdropped.data, dropped.data, dropped.size, 1e-5f, 1e-5f)) &&
         expect_close("ctx", hctx.data, ctx.data, ctx.size, 1e-5f, 1e-5f) &&
         expect_close("dscores", hds.data, ds.data, ds.size, 1e-5f, 1e-5f) &&
         expect_close("dqkv (added to)", hdqkv.data, dqkv.data, dqkv.size, 1e-5f, 1e-5f) &&
         expect_true(rng_u32(&r1) == rng_u32(&r2), "the Rng is not where the CPU left it");
    if (!ok) printf("B=%d T=%d H=%d dh=%d dropout %g\n", B, T, H, dh, (double)p);
    Tensor *all[] = {&qkv, &ctx, &hctx, &probs, &hprobs, &dropped, &hdropped, &dctx, &dqkv, &hdqkv, &ds, &hds};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_attention_plans(void) {
    static const int cases[][4] = {{1, 1, 1, 1}, {2, 7, 3, 5}, {3, 13, 2, 4}, {1, 35, 4, 8}, {2, 33, 1, 16}};
    for (int t = 0; t < 5; t++)
        for (int drop = 0; drop < 2; drop++)
            if (compare_attention_plans(cases[t][0], cases[t][1], cases[t][2], cases[t][3],
                                        drop ? 0.3f : 0.0f, 40 + 10 * (uint64_t)t) != CHECK_PASS)
                return CHECK_FAIL;
    return CHECK_PASS;
}

/* The CUDA layers' draws (dropout_draw) against the CPU dropout: the same key, so the
 * same mask entry by entry, and the Rng left in the same state; nothing drawn when off. */
static int check_dropout_draw(void) {
    static const float ps[] = {0.0f, 0.1f, 0.5f, 0.9f, 1.0f};
    for (int t = 0; t < 10; t++) {
        const float p = ps[t % 5];
        const bool training = t < 5 || t == 7;
        Rng r1, r2;
        rng_seed(&r1, 3, (uint64_t)t), rng_seed(&r2, 3, (uint64_t)t);
        Tensor x = tensor_zeros(2, 37, 29), y = tensor_zeros(2, 37, 29), m = tensor_zeros(2, 37, 29);
        fill_uniform(x.data, x.size, 5, -1, 1);
        dropout_forward(&y, &m, &x, p, training, &r1);
        const DropoutDraw d = dropout_draw(p, training, &r2);
        bool ok = expect_true(d.active == dropout_active(p, training), "p %g: active %d", (double)p, d.active);
        for (int64_t i = 0; ok && i < m.size; i++) {
            const float want = !d.active ? 1.0f
                               : dropout_keeps(d.key, (uint64_t)i, d.threshold) ? d.keep_scale : 0.0f;
            ok = expect_true(want == m.data[i], "p %g, training %d: mask[%lld] %g, the CPU's %g",
                             (double)p, training, (long long)i, (double)want, (double)m.data[i]);
        }
        ok = ok && expect_true(rng_u32(&r1) == rng_u32(&r2), "p %g, training %d: the Rng is not "
                               "where the CPU dropout left it", (double)p, training);
        tensor_free(&x), tensor_free(&y), tensor_free(&m);
        if (!ok) return CHECK_FAIL;
    }
    return CHECK_PASS;
}

static int check_blocks(void) {
    bool ok = expect_true(cuda_blocks_for(0, 256) == 1, "0 elements: %d blocks", cuda_blocks_for(0, 256)) &&
              expect_true(cuda_blocks_for(256, 256) == 1, "256 elements: %d", cuda_blocks_for(256, 256)) &&
              expect_true(cuda_blocks_for(257, 256) == 2, "257 elements: %d", cuda_blocks_for(257, 256)) &&
              expect_true(cuda_blocks_for(1000, 32) == 32, "1000 / 32: %d", cuda_blocks_for(1000, 32)) &&
              expect_true(cuda_blocks_for((int64_t)1 << 40, 256) == 65535, "2^40 elements: %d",
                          cuda_blocks_for((int64_t)1 << 40, 256)) &&
              /* one warp per row: 8 rows per block of 256 threads */
              expect_true(cuda_blocks_for_rows(0, 256) == 1, "0 rows: %d", cuda_blocks_for_rows(0, 256)) &&
              expect_true(cuda_blocks_for_rows(8, 256) == 1, "8 rows: %d", cuda_blocks_for_rows(8, 256)) &&
              expect_true(cuda_blocks_for_rows(9, 256) == 2, "9 rows: %d", cuda_blocks_for_rows(9, 256)) &&
              expect_true(cuda_blocks_for_rows(20 * 2 * 35, 256) == 175, "the tutorial's score rows "
                          "(B 20 x H 2 x T 35 = 1,400): %d blocks", cuda_blocks_for_rows(20 * 2 * 35, 256)) &&
              expect_true(cuda_blocks_for_rows((int64_t)1 << 40, 256) == 65535, "2^40 rows: %d",
                          cuda_blocks_for_rows((int64_t)1 << 40, 256));
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_local_rank(void) {
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    unsetenv("SLURM_LOCALID");
    unsetenv("LOCAL_RANK");
    unsetenv("MPI_LOCALRANKID");
    bool ok = expect_true(env_local_rank() == 0, "no variable set: rank %d", env_local_rank());
    setenv("MPI_LOCALRANKID", "7", 1);
    ok = ok && expect_true(env_local_rank() == 7, "MPICH's MPI_LOCALRANKID=7: rank %d", env_local_rank());
    setenv("LOCAL_RANK", "5", 1);
    ok = ok && expect_true(env_local_rank() == 5, "LOCAL_RANK=5 before MPICH's: rank %d", env_local_rank());
    setenv("SLURM_LOCALID", "2", 1);
    ok = ok && expect_true(env_local_rank() == 2, "SLURM_LOCALID=2 before LOCAL_RANK: %d", env_local_rank());
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
    ok = ok && expect_true(env_local_rank() == 3, "Open MPI's first: %d", env_local_rank());
    ok = ok && expect_true(cuda_pick_device(5, 4) == 1 && cuda_pick_device(3, 1) == 0 &&
                               cuda_pick_device(0, 8) == 0,
                           "rank modulo count: 5 of 4 -> %d, 3 of 1 -> %d", cuda_pick_device(5, 4),
                           cuda_pick_device(3, 1));
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void bad_rank_body(void *arg) {
    (void)arg;
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    setenv("SLURM_LOCALID", "two", 1);
    env_local_rank();
}

static int check_bad_rank(void) {
    ChildResult r;
    run_child(bad_rank_body, NULL, &r);
    return expect_exit("SLURM_LOCALID=two", &r, 1, "SLURM_LOCALID", "is not a number",
                       (const char *)NULL) ? CHECK_PASS : CHECK_FAIL;
}

static void require_body(void *arg) {
    (void)arg;
    cuda_require();
    puts("cuda_require returned");
}

/* Here without a GPU: --device cuda must fail with one clear line, not crash. */
static int check_no_gpu_message(void) {
    char why[512];
    ChildResult probe;
    run_child(require_body, NULL, &probe);
    if (WIFEXITED(probe.status) && WEXITSTATUS(probe.status) == 0) {
        printf("a GPU is usable here: the no-GPU message cannot be tested\n");
        return CHECK_SKIP;
    }
    bool ok = expect_exit("cuda_require without a usable GPU", &probe, 1, "error: --device cuda: ",
                          "--device cpu", (const char *)NULL);
    ok = ok && expect_true(cuda_device_count(why, sizeof why) < 0 || cuda_built(),
                           "cuda_device_count gave no reason");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A stand-in backend in host memory: tests that tensors route allocation, fill,
 * copies and free to their device's backend, without a GPU. */
static int g_allocs, g_frees, g_fills, g_copies;
static void *fake_alloc(size_t bytes) { g_allocs++; return calloc(1, bytes); }
static void fake_free(void *p) { g_frees++; free(p); }
static void fake_fill(float *p, int64_t n, float v) { g_fills++; for (int64_t i = 0; i < n; i++) p[i] = v; }
static void fake_scale(float *p, int64_t n, float f) { for (int64_t i = 0; i < n; i++) p[i] *= f; }
static void fake_copy(void *dst, Device dd, const void *src, Device sd, size_t bytes) {
    (void)dd, (void)sd;
    g_copies++;
    memcpy(dst, src, bytes);
}
static const TensorDeviceOps FAKE = {"fake", fake_alloc, fake_free, fake_fill, fake_scale, fake_copy,
                                     NULL, NULL}; /* no 16-bit kernels */

static int check_device_tensors(void) {
    tensor_register_device(DEVICE_CUDA, &FAKE);
    Tensor h = tensor_zeros(2, 3, 4);
    fill_uniform(h.data, h.size, 9, -1, 1);
    Tensor d = tensor_to(&h, DEVICE_CUDA), d2 = tensor_zeros_like(&d);
    tensor_copy(&d2, &d);
    Tensor back = tensor_to(&d2, DEVICE_CPU);
    tensor_fill(&d, 1.0f);
    bool ok = expect_true(d.device == DEVICE_CUDA && d2.device == DEVICE_CUDA &&
                              back.device == DEVICE_CPU, "devices: %d %d %d", d.device, d2.device,
                          back.device) &&
              expect_close("round trip", back.data, h.data, h.size, 0, 0) &&
              expect_true(d.data[0] == 1.0f && g_fills == 1, "fill did not go to the backend");
    tensor_free(&d);
    tensor_free(&d2);
    ok = ok && expect_true(g_allocs == 2 && g_frees == 2 && g_copies == 3,
                           "backend calls: %d allocs, %d frees, %d copies (expected 2, 2, 3)",
                           g_allocs, g_frees, g_copies);
    tensor_free(&h), tensor_free(&back);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void unstarted_body(void *arg) {
    (void)arg;
    tensor_zeros_on(DEVICE_CUDA, 1, 4);
}

static int check_unstarted_backend(void) {
    ChildResult r;
    run_child(unstarted_body, NULL, &r);
    return expect_exit("a CUDA tensor before cuda_init", &r, 2, "cuda_init", (const char *)NULL)
               ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("GPU backend, host side (no GPU needed)");
    check_run(NULL, "row-major GEMM -> cuBLAS arguments, through a host model of cublasSgemm", check_gemm_mapping, 20);
    check_run(NULL, "the cublasSgemm model refuses leading dimensions cuBLAS refuses", check_model_refuses, 20);
    check_run(NULL, "the cublasGemmEx model: 16-bit operands, float32 sums, C rounded once (ties to even) or float32", check_gemm_ex_model, 20);
    check_run(NULL, "strided-batched GEMM -> cublasSgemmStridedBatched arguments, through the model", check_gemm_batch_mapping, 20);
    check_run(NULL, "attention on the GPU's plan (per-head batched products, row kernels) = the CPU's", check_attention_plans, 60);
    check_run(NULL, "dropout: the CUDA layers draw the CPU's key (same mask, same Rng state)", check_dropout_draw, 20);
    check_run(NULL, "launch arithmetic: blocks for n elements, and for a warp per row", check_blocks, 20);
    check_run(NULL, "local rank from Open MPI, Slurm, torchrun, MPICH variables; rank modulo devices", check_local_rank, 20);
    check_run(NULL, "a malformed local rank is a user error", check_bad_rank, 20);
    check_run(NULL, "--device cuda without a usable GPU: one clear message, exit 1", check_no_gpu_message, 60);
    check_run(NULL, "device tensors go through their backend (a stand-in in host memory)", check_device_tensors, 20);
    check_run(NULL, "a CUDA tensor before cuda_init stops with a message", check_unstarted_backend, 20);
    return check_end();
}
