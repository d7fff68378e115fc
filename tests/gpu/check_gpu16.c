/* make check-gpu, the 16-bit part: the CUDA layers on bfloat16 and float16 tensors against
 * the definition of issue 28's 16-bit compute, computed on the host without any 16-bit
 * layer of the CPU: the 16-bit inputs converted exactly to float32, the CPU's
 * float32 layer run on them, each 16-bit output rounded once (for an output that is added
 * to, its old 16-bit value converted first); float32 outputs (parameter gradients, mean
 * and rstd, the loss) compared as float32.
 *
 * Tolerances, and why.
 * - Exact (the same bits) where both devices do the same float operations and round
 *   once: ReLU, add, positions, dropout's output, the embedding's forward; on a GPU too.
 * - GELU's forward: bit for bit on the emulator (glibc's erfcf and expf on both sides);
 *   on a GPU CUDA's erfcf/expf differ from glibc's by an ulp or two of float32 before the
 *   rounding: there one 16-bit step (plus check_gpu.c's 1e-6 absolute). It was
 *   1 + erff(x) until an H100 (2026-11-26) showed 2.5% of the bfloat16 outputs off by a
 *   step: the cancellation at negative x made those ulps a large share of the result.
 * - Everything else: the two float32 values may differ (sums in another order: the
 *   GEMMs, layer norm's statistics, the loss's exponentials; a*b + c fused into one FMA
 *   on one side only: din + dout * mask in dropout's backward and GELU's, where gcc
 *   (-ffp-contract=fast -march=native) fuses and the emulator's x86-64 build cannot),
 *   and two float32 values within check_gpu.c's float32 tolerance round to the same
 *   16-bit value or to neighbours: that tolerance plus one 16-bit step (bfloat16: 2^-7 of
 *   the binade, float16: 2^-10, at least 2^-24), and all but 1% (and 2) of the entries
 *   with the definition's very bits (on the emulator: dropout's din 0.3% off, from the
 *   FMA; GELU's din, the GEMMs and layer norm 1 in 10,000 or fewer; the loss's dlogits
 *   none). The share is shown.
 * A test that passes a wrong rounding: truncating instead of rounding fails every exact
 * check and the share of the others; rounding the GEMM's product before adding C (two
 * roundings) fails linear and the GEMM by more than one step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/check.h"
#include "core/rng.h"
#include "framework/tensors.h"
#include "gpu/check_gpu16.h"
#include "gpu/gpu_check.h"
#include "layers/add.h"
#include "layers/add_layernorm.h"
#include "layers/attention.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/embedding.h"
#include "layers/gelu.h"
#include "layers/layernorm.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/positional.h"
#include "layers/relu.h"
#include "layers/relu_dropout.h"
#include "layers/softmax_xent.h"
#include "ops/gemm.h"

#ifdef HAVE_CUDA
#include "cuda/device.h"
#include "cuda/gemm_map.h"

#ifdef CUDA_EMULATOR
enum { EMULATED = 1 };
#else
enum { EMULATED = 0 };
#endif

static const float RTOL = 1e-4f;
static float sum_atol(int64_t terms) { return 1e-6f * (float)terms; }

static const DType DTYPES[2] = {DTYPE_BF16, DTYPE_F16};

/* 16-bit entries compared, and of them those with the definition's bits */
static int64_t equal16, total16;

static float f32_of(DType dt, uint16_t bits) {
    return dt == DTYPE_BF16 ? dtype_f32_from_bf16(bits) : dtype_f32_from_f16(bits);
}

/* The step between x and its 16-bit neighbour away from zero (the larger binade's). */
static float ulp16(DType dt, float x) {
    int e;
    frexpf(fabsf(x), &e); /* |x| in [2^(e-1), 2^e) */
    if (dt == DTYPE_BF16) return x == 0.0f ? ldexpf(1.0f, -133) : ldexpf(1.0f, e - 8);
    const float step = x == 0.0f ? 0.0f : ldexpf(1.0f, e - 11);
    return step > 0x1p-24f ? step : 0x1p-24f; /* float16's subnormals */
}

/* A host tensor of dt: uniform in [-scale, scale) rounded to dt. */
static Tensor random16(uint64_t seed, DType dt, int rows, int cols, float scale) {
    Tensor f = cols ? tensor_zeros(2, rows, cols) : tensor_zeros(1, rows);
    fill_uniform(f.data, f.size, seed, -scale, scale);
    Tensor t = cols ? tensor_zeros_typed(DEVICE_CPU, dt, 2, rows, cols)
                    : tensor_zeros_typed(DEVICE_CPU, dt, 1, rows);
    tensor_convert(&t, &f);
    tensor_free(&f);
    return t;
}

/* t converted to dt, on the host (float32 -> 16 bits: the one rounding) */
static Tensor as_dtype(const Tensor *t, DType dt) {
    Tensor r = tensor_zeros_typed(DEVICE_CPU, dt, t->ndim, t->shape[0], t->shape[1], t->shape[2],
                                  t->shape[3]);
    tensor_convert(&r, t);
    return r;
}

static Tensor wide(const Tensor *t) { return as_dtype(t, DTYPE_F32); }
static Tensor on_gpu(const Tensor *t) { return tensor_to(t, DEVICE_CUDA); }

/* The GPU's 16-bit tensor g (or a host copy) against want32, the definition before its rounding: the same
 * bits when exact, else within atol + RTOL |want| + one 16-bit ulp, and all but 1% (and
 * 2) of the entries with the same bits: a CPU run predicts the GPU's. */
static bool same16(const char *what, const Tensor *g, const Tensor *want32, float atol, bool exact) {
    const DType dt = g->dtype;
    Tensor want = as_dtype(want32, dt), got = tensor_to(g, DEVICE_CPU);
    bool ok = expect_true(got.size == want.size, "%s: %lld entries, want %lld", what,
                          (long long)got.size, (long long)want.size);
    int64_t equal = 0;
    for (int64_t i = 0; ok && i < want.size; i++) {
        const uint16_t gb = got.bits16[i], wb = want.bits16[i];
        if (gb == wb) {
            equal++;
            continue;
        }
        const float gv = f32_of(dt, gb), wv = f32_of(dt, wb);
        const float big = fabsf(gv) > fabsf(wv) ? gv : wv;
        ok = expect_true(!exact && fabsf(gv - wv) <= atol + RTOL * fabsf(wv) + ulp16(dt, big),
                         "%s (%s) [%lld]: %.8g (0x%04x) on the GPU, %.8g (0x%04x) by the "
                         "definition (%.8g before rounding)%s", what, dtype_name(dt),
                         (long long)i, (double)gv, gb, (double)wv, wb, (double)want32->data[i],
                         exact ? ": not the same bits" : ": more than one step apart");
    }
    ok = ok && expect_true(equal >= want.size - want.size / 100 - 2, "%s (%s): only %lld of %lld "
                           "entries hold the definition's bits", what, dtype_name(dt),
                           (long long)equal, (long long)want.size);
    equal16 += equal, total16 += want.size;
    tensor_free(&want), tensor_free(&got);
    return ok;
}

/* A float32 GPU tensor against the float32 definition. */
static bool same32(const char *what, const Tensor *g, const Tensor *want, float atol, float rtol) {
    Tensor h = tensor_to(g, DEVICE_CPU);
    const bool ok = expect_true(h.dtype == DTYPE_F32, "%s: a %s tensor", what, dtype_name(h.dtype)) &&
                    expect_close(what, h.data, want->data, want->size, atol, rtol);
    tensor_free(&h);
    return ok;
}

static int show_equal(void) {
    check_show("%lld of %lld 16-bit entries hold the definition's bits", (long long)equal16,
               (long long)total16);
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- GEMM */

/* cuda_gemm_ex against the row-major definition: A and B converted, gemm in float32 on the
 * host, C (16-bit: rounded once; float32: as is). 4 transposes, padded strides, alpha,
 * beta 0 (C not read: it holds NaN) and 1, C of both kinds. */
static int check_gemm_ex(void) {
    REQUIRE_GPU();
    Rng rng;
    rng_seed(&rng, 8, 0);
    for (int t = 0; t < 32; t++) {
        const DType dt = DTYPES[t / 16], ct = t % 8 < 4 ? dt : DTYPE_F32;
        const bool ta = t & 1, tb = t & 2;
        const int M = 1 + (int)rng_below(&rng, 40), N = 1 + (int)rng_below(&rng, 40),
                  K = 1 + (int)rng_below(&rng, 300), pad = (int)rng_below(&rng, 3);
        const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
        const float alpha = t % 3 ? 1.0f : 0.5f, beta = t % 4 == 1 ? 0.0f : 1.0f;
        Tensor A = random16(300 + t, dt, ta ? K : M, lda, 1.0f);
        Tensor B = random16(330 + t, dt, tb ? N : K, ldb, 1.0f);
        Tensor C = random16(360 + t, ct, M, ldc, 1.0f);
        Tensor a = wide(&A), b = wide(&B), want = wide(&C);
        Tensor gA = on_gpu(&A), gB = on_gpu(&B), gC = on_gpu(&C);
        if (beta == 0.0f) tensor_fill(&gC, NAN); /* must not be read */
        gemm(ta, tb, M, N, K, alpha, a.data, lda, b.data, ldb, beta, want.data, ldc);
        cuda_gemm_ex(ta, tb, M, N, K, alpha, gA.raw, lda, gB.raw, ldb, dt, beta, gC.raw, ldc, ct);
        /* the M x N part (C's padding columns are the caller's) */
        Tensor h = tensor_to(&gC, DEVICE_CPU), got = tensor_zeros_typed(DEVICE_CPU, ct, 2, M, N);
        Tensor w = tensor_zeros(2, M, N);
        const size_t esize = dtype_size(ct);
        for (int i = 0; i < M; i++) {
            memcpy((char *)got.raw + (size_t)i * N * esize, (char *)h.raw + (size_t)i * ldc * esize,
                   (size_t)N * esize);
            memcpy(w.data + (int64_t)i * N, want.data + (int64_t)i * ldc, (size_t)N * sizeof(float));
        }
        const bool ok = ct == DTYPE_F32
                            ? expect_close("C (float32)", got.data, w.data, w.size, sum_atol(K + 1), RTOL)
                            : same16("C", &got, &w, sum_atol(K + 1), false);
        tensor_free(&h), tensor_free(&got), tensor_free(&w);
        if (!ok)
            printf("%s, C %s: M=%d N=%d K=%d trans_a=%d trans_b=%d lda=%d ldb=%d ldc=%d "
                   "alpha=%g beta=%g\n", dtype_name(dt), dtype_name(ct), M, N, K, ta, tb, lda, ldb,
                   ldc, (double)alpha, (double)beta);
        FREE_ALL(&A, &B, &C, &a, &b, &want, &gA, &gB, &gC);
        if (!ok) return CHECK_FAIL;
    }
    return show_equal();
}

/* ---------------------------------------------------------------- linear */

static int check_linear16(void) {
    REQUIRE_GPU();
    static const int cases[][3] = {{1, 1, 1}, {7, 13, 5}, {100, 1200, 50}, {33, 50, 10}};
    for (int d = 0; d < 2; d++)
        for (int t = 0; t < 4; t++) {
            const DType dt = DTYPES[d];
            const int N = cases[t][0], IN = cases[t][1], OUT = cases[t][2];
            const uint64_t s = 400 + 20 * (uint64_t)t + 100 * (uint64_t)d;
            Tensor x = random16(s, dt, N, IN, 1.0f), w = random16(s + 1, dt, OUT, IN, 1.0f);
            Tensor b = random16(s + 2, dt, OUT, 0, 1.0f), y = random16(s + 3, dt, N, OUT, 1.0f);
            Tensor dy = random16(s + 4, dt, N, OUT, 1.0f), dx = random16(s + 5, dt, N, IN, 1.0f);
            Tensor dw = tensor_zeros(2, OUT, IN), db = tensor_zeros(1, OUT);
            fill_uniform(dw.data, dw.size, s + 6, -1, 1), fill_uniform(db.data, db.size, s + 7, -1, 1);
            /* the definition: float32 copies through the float32 layer */
            Tensor fx = wide(&x), fw = wide(&w), fb = wide(&b), fy = tensor_zeros(2, N, OUT);
            Tensor fdy = wide(&dy), fdx = wide(&dx), fdw = wide(&dw), fdb = wide(&db);
            linear_forward(&fy, &fx, &fw, &fb);
            const bool with_din = t != 3;
            linear_backward(with_din ? &fdx : NULL, &fdw, &fdb, &fdy, &fx, &fw);
            Tensor gx = on_gpu(&x), gw = on_gpu(&w), gb = on_gpu(&b), gy = on_gpu(&y);
            Tensor gdy = on_gpu(&dy), gdx = on_gpu(&dx), gdw = on_gpu(&dw), gdb = on_gpu(&db);
            tensor_fill(&gy, NAN); /* out is written, not added to */
            cuda_linear_forward(&gy, &gx, &gw, &gb);
            cuda_linear_backward(with_din ? &gdx : NULL, &gdw, &gdb, &gdy, &gx, &gw);
            bool ok = same16("linear out = round(bias + in w^T)", &gy, &fy, sum_atol(IN + 1), false) &&
                      same32("linear dbias (float32, added to)", &gdb, &fdb, sum_atol(N + 1), RTOL) &&
                      same32("linear dweight (float32, added to)", &gdw, &fdw, sum_atol(N + 1), RTOL) &&
                      same16(with_din ? "linear din = round(din + dout w)" : "din NULL: untouched",
                             &gdx, &fdx, sum_atol(OUT + 1), !with_din);
            if (!ok) printf("%s: in [%d, %d], weight [%d, %d]\n", dtype_name(dt), N, IN, OUT, IN);
            FREE_ALL(&x, &w, &b, &y, &dy, &dx, &dw, &db, &fx, &fw, &fb, &fy, &fdy, &fdx, &fdw, &fdb,
                     &gx, &gw, &gb, &gy, &gdy, &gdx, &gdw, &gdb);
            if (!ok) return CHECK_FAIL;
        }
    return show_equal();
}

/* ---------------------------------------------------------------- layer norm */

static int check_layernorm16(void) {
    REQUIRE_GPU();
    static const int cases[][2] = {{1, 2}, {7, 37}, {35, 200}, {69, 1024}, {300, 33}};
    for (int d = 0; d < 2; d++)
        for (int t = 0; t < 5; t++) {
            const DType dt = DTYPES[d];
            const int N = cases[t][0], D = cases[t][1];
            const uint64_t s = 500 + 20 * (uint64_t)t + 100 * (uint64_t)d;
            Tensor x32 = tensor_zeros(2, N, D);
            fill_uniform(x32.data, x32.size, s, -1, 1);
            for (int64_t i = 0; i < x32.size; i++) x32.data[i] = 3.0f * x32.data[i] + 2.0f; /* mean 2 */
            Tensor x = as_dtype(&x32, dt), g = random16(s + 1, dt, D, 0, 1.0f);
            Tensor b = random16(s + 2, dt, D, 0, 1.0f), y = tensor_zeros_typed(DEVICE_CPU, dt, 2, N, D);
            Tensor dy = random16(s + 3, dt, N, D, 1.0f), dx = random16(s + 4, dt, N, D, 1.0f);
            Tensor dg = tensor_zeros(1, D), db = tensor_zeros(1, D);
            fill_uniform(dg.data, D, s + 5, -1, 1), fill_uniform(db.data, D, s + 6, -1, 1);
            Tensor mean = tensor_zeros(1, N), rstd = tensor_zeros(1, N);
            Tensor fx = wide(&x), fg = wide(&g), fb = wide(&b), fy = tensor_zeros(2, N, D);
            Tensor fdy = wide(&dy), fdx = wide(&dx), fdg = wide(&dg), fdb = wide(&db);
            layernorm_forward(&fy, &mean, &rstd, &fx, &fg, &fb, LAYERNORM_EPS);
            const bool with_din = t != 2;
            layernorm_backward(with_din ? &fdx : NULL, &fdg, &fdb, &fdy, &fx, &mean, &rstd, &fg);
            Tensor gx = on_gpu(&x), gg = on_gpu(&g), gb = on_gpu(&b), gy = on_gpu(&y);
            Tensor gmean = on_gpu(&mean), grstd = on_gpu(&rstd);
            tensor_fill(&gmean, NAN), tensor_fill(&grstd, NAN);
            cuda_layernorm_forward(&gy, &gmean, &grstd, &gx, &gg, &gb, LAYERNORM_EPS);
            bool ok = same32("layer norm mean (float32)", &gmean, &mean, 1e-6f * 5.0f, 1e-6f) &&
                      same32("layer norm rstd (float32)", &grstd, &rstd, 0.0f, 1e-5f) &&
                      same16("layer norm out", &gy, &fy, 2e-5f, false);
            /* the backward from the CPU's mean and rstd: checked alone */
            tensor_copy(&gmean, &mean), tensor_copy(&grstd, &rstd);
            Tensor gdy = on_gpu(&dy), gdx = on_gpu(&dx), gdg = on_gpu(&dg), gdb = on_gpu(&db);
            cuda_layernorm_backward(with_din ? &gdx : NULL, &gdg, &gdb, &gdy, &gx, &gmean, &grstd, &gg);
            ok = ok && same32("layer norm dgamma (float32, added to)", &gdg, &fdg, sum_atol(N + 1) * 2.0f, RTOL) &&
                 same32("layer norm dbeta (float32, added to)", &gdb, &fdb, sum_atol(N + 1), RTOL) &&
                 same16(with_din ? "layer norm din (added to)" : "din NULL: untouched", &gdx, &fdx,
                        2e-5f, !with_din);
            if (!ok) printf("%s: in [%d, %d]%s\n", dtype_name(dt), N, D, with_din ? "" : ", din NULL");
            FREE_ALL(&x32, &x, &g, &b, &y, &dy, &dx, &dg, &db, &mean, &rstd, &fx, &fg, &fb, &fy, &fdy,
                     &fdx, &fdg, &fdb, &gx, &gg, &gb, &gy, &gmean, &grstd, &gdy, &gdx, &gdg, &gdb);
            if (!ok) return CHECK_FAIL;
        }
    return show_equal();
}

/* ---------------------------------------------------------------- loss */

/* With a loss scale S (1, 2^10, 2^16): the float32 loss (never scaled) and dlogits = old +
 * S x gradient, S inside the float32 formula (s_n = S x (1/N) in place of 1/N, both
 * devices), rounded once; the old values are S times a gradient's size too. */
static int check_softmax_xent_fast16(void) {
    REQUIRE_GPU();
    static const int cases[][2] = {{1, 1}, {37, 10}, {20, 28782}, {3, 257}};
    static const float scales[] = {1.0f, 0x1p10f, 0x1p16f};
    for (int d = 0; d < 2; d++)
        for (int t = 0; t < 4; t++)
            for (int k = 0; k < 3; k++) {
                const DType dt = DTYPES[d];
                const int N = cases[t][0], K = cases[t][1];
                const float S = scales[k];
                const uint64_t s = 600 + 20 * (uint64_t)t + 100 * (uint64_t)d;
                Tensor z32 = tensor_zeros(2, N, K), dz32 = tensor_zeros(2, N, K);
                fill_uniform(z32.data, z32.size, s, -1, 1), fill_uniform(dz32.data, dz32.size, s + 1, -1, 1);
                for (int64_t i = 0; i < z32.size; i++) z32.data[i] *= i % 97 ? 4.0f : 60.0f;
                for (int64_t i = 0; i < dz32.size; i++) dz32.data[i] = dz32.data[i] / (float)N * S;
                Tensor z = as_dtype(&z32, dt), dz = as_dtype(&dz32, dt), fz = wide(&z), fdz = wide(&dz);
                int *labels = random_tokens(N, K, s + 2), *glabels = ints_on_gpu(labels, N);
                const float want = softmax_cross_entropy_fast(&fdz, &fz, labels, S);
                Tensor gz = on_gpu(&z), gdz = on_gpu(&dz);
                const float got = cuda_softmax_cross_entropy_fast(&gdz, &gz, glabels, S);
                const float again = cuda_softmax_cross_entropy_fast(NULL, &gz, glabels, S);
                bool ok = expect_close("loss (float32, from the exact logits)", &got, &want, 1, 1e-6f, 1e-5f) &&
                          expect_close("loss with dlogits NULL", &again, &want, 1, 1e-6f, 1e-5f) &&
                          same16("dlogits (added to)", &gdz, &fdz, 2e-6f * S / (float)N, false);
                if (!ok) printf("%s: %d rows of %d classes, loss scale %g\n", dtype_name(dt), N, K, (double)S);
                FREE_ALL(&z32, &dz32, &z, &dz, &fz, &fdz, &gz, &gdz);
                cuda_free(glabels);
                xfree(labels);
                if (!ok) return CHECK_FAIL;
            }
    return show_equal();
}

/* ---------------------------------------------------------------- embedding, positions */

static int check_embedding16(void) {
    REQUIRE_GPU();
    /* N, V, D, and a slice: rows [first, first + V) of a vocabulary of `vocab` (0, 0: the
     * whole table) */
    static const int cases[][5] = {{1, 1, 1, 0, 0}, {37, 11, 33, 0, 0}, {700, 50, 200, 0, 0},
                                   {300, 1000, 64, 0, 0}, {40, 10, 8, 10, 30}};
    for (int d = 0; d < 2; d++)
        for (int t = 0; t < 5; t++) {
            const DType dt = DTYPES[d];
            const int N = cases[t][0], V = cases[t][1], D = cases[t][2];
            const int first = cases[t][3], vocab = cases[t][4] ? cases[t][4] : V;
            const float scale = sqrtf((float)D);
            const uint64_t s = 700 + 20 * (uint64_t)t + 100 * (uint64_t)d;
            int *tokens = random_tokens(N, vocab, s), *gtokens = ints_on_gpu(tokens, N);
            Tensor table = random16(s + 1, dt, V, D, 1.0f), out = random16(s + 2, dt, N, D, 1.0f);
            Tensor dout = random16(s + 3, dt, N, D, 1.0f), dtable = tensor_zeros(2, V, D);
            fill_uniform(dtable.data, dtable.size, s + 4, -1, 1);
            Tensor ftable = wide(&table), fout = tensor_zeros(2, N, D), fdout = wide(&dout);
            Tensor fdtable = wide(&dtable);
            embedding_forward_rows(&fout, tokens, &ftable, scale, first, vocab);
            embedding_backward_rows(&fdtable, &fdout, tokens, scale, first, vocab);
            Tensor gtable = on_gpu(&table), gout = on_gpu(&out), gdout = on_gpu(&dout);
            Tensor gdtable = on_gpu(&dtable);
            if (cases[t][4]) {
                cuda_embedding_forward_rows(&gout, gtokens, &gtable, scale, first, vocab);
                cuda_embedding_backward_rows(&gdtable, &gdout, gtokens, scale, first, vocab);
            } else {
                cuda_embedding_forward(&gout, gtokens, &gtable, scale);
                cuda_embedding_backward(&gdtable, &gdout, gtokens, scale);
            }
            int most = 0; /* the most rows one token receives */
            for (int v = 0; v < vocab; v++) {
                int count = 0;
                for (int n = 0; n < N; n++) count += tokens[n] == v;
                most = count > most ? count : most;
            }
            bool ok = same16("embedding out = round(table * scale)", &gout, &fout, 0.0f, true) &&
                      same32("embedding dtable (float32, added to; repeated tokens)", &gdtable,
                             &fdtable, sum_atol(most + 1) * scale, 1e-6f);
            if (!ok)
                printf("%s: %d tokens, vocabulary %d (rows %d.. of %d), width %d\n", dtype_name(dt),
                       N, vocab, first, V, D);
            FREE_ALL(&table, &out, &dout, &dtable, &ftable, &fout, &fdout, &fdtable, &gtable, &gout,
                     &gdout, &gdtable);
            cuda_free(gtokens);
            xfree(tokens);
            if (!ok) return CHECK_FAIL;
        }
    return show_equal();
}

static int check_positional16(void) {
    REQUIRE_GPU();
    static const int cases[][3] = {{1, 1, 2}, {3, 7, 6}, {2, 35, 200}, {5, 13, 34}}; /* B, T, D */
    for (int d = 0; d < 2; d++)
        for (int t = 0; t < 4; t++) {
            const DType dt = DTYPES[d];
            const int B = cases[t][0], T = cases[t][1], D = cases[t][2];
            Tensor table = tensor_zeros(2, 40, D); /* float32: a fixed table */
            positional_table_fill(&table);
            Tensor x = random16(800 + (uint64_t)t + 100 * (uint64_t)d, dt, B * T, D, 2.0f);
            Tensor y = tensor_zeros_typed(DEVICE_CPU, dt, 2, B * T, D);
            Tensor fx = wide(&x), fy = tensor_zeros(2, B * T, D);
            positional_forward(&fy, &fx, &table, T);
            Tensor gtable = on_gpu(&table), gx = on_gpu(&x), gy = on_gpu(&y);
            cuda_positional_forward(&gy, &gx, &gtable, T);
            bool ok = same16("positions added", &gy, &fy, 0.0f, true);
            cuda_positional_forward(&gx, &gx, &gtable, T); /* in place, as the model calls it */
            ok = ok && same16("positions added in place", &gx, &fy, 0.0f, true);
            if (!ok) printf("%s: B=%d T=%d D=%d\n", dtype_name(dt), B, T, D);
            FREE_ALL(&table, &x, &y, &fx, &fy, &gtable, &gx, &gy);
            if (!ok) return CHECK_FAIL;
        }
    return show_equal();
}

/* ---------------------------------------------------------------- dropout */

static int check_dropout16(void) {
    REQUIRE_GPU();
    static const float ps[] = {0.25f, 0.0f, 1.0f, 0.5f};
    for (int d = 0; d < 2; d++)
        for (int t = 0; t < 9; t++) {
            const DType dt = DTYPES[d];
            const float p = t == 8 ? 0.3f : ps[t % 4];
            const bool training = t != 3, in_place = t % 2, with_mask = !(t == 5 || t == 7);
            const int n = t == 0 ? 100003 : t == 8 ? 5 * 12 : 1 + 97 * t;
            /* t = 8: a window, columns 4..7 of 12 in each row (a tensor-parallel slice) */
            const DropoutWindow window = t == 8 ? (DropoutWindow){4, 12, 4} : DROPOUT_WHOLE;
            const uint64_t s = 900 + 10 * (uint64_t)t + 100 * (uint64_t)d;
            Rng r1, r2;
            rng_seed(&r1, s, 1), rng_seed(&r2, s, 1);
            Tensor x = random16(s, dt, n, 0, 1.0f), y = tensor_zeros_typed(DEVICE_CPU, dt, 1, n);
            Tensor m = tensor_zeros(1, n), fm = tensor_zeros(1, n);
            Tensor fx = wide(&x), fy = tensor_zeros(1, n);
            const bool mask = with_mask || dropout_active(p, training);
            dropout_forward_window(&fy, mask ? &fm : NULL, &fx, p, training, &r1, window);
            Tensor gx = on_gpu(&x), gy = on_gpu(&y), gm = on_gpu(&m);
            cuda_dropout_forward_window(in_place ? &gx : &gy, mask ? &gm : NULL, &gx, p, training,
                                        &r2, window);
            bool ok = same32("dropout mask (float32)", &gm, &fm, 0.0f, 0.0f) &&
                      same16("dropout out = round(in * mask)", in_place ? &gx : &gy, &fy, 0.0f, true) &&
                      expect_true(rng_u32(&r1) == rng_u32(&r2), "the Rng is not where the CPU's is");
            Tensor dy = random16(s + 1, dt, n, 0, 1.0f), dx = random16(s + 2, dt, n, 0, 1.0f);
            Tensor fdy = wide(&dy), fdx = wide(&dx);
            dropout_backward(&fdx, &fdy, mask ? &fm : NULL);
            Tensor gdy = on_gpu(&dy), gdx = on_gpu(&dx);
            cuda_dropout_backward(&gdx, &gdy, mask ? &gm : NULL);
            ok = ok && same16("dropout din (added to)", &gdx, &fdx, 1e-6f, false);
            if (!ok)
                printf("%s: %d entries, p %g, training %d, in place %d, mask %d, window %d\n",
                       dtype_name(dt), n, (double)p, training, in_place, mask, t == 8);
            FREE_ALL(&x, &y, &m, &fm, &fx, &fy, &gx, &gy, &gm, &dy, &dx, &fdy, &fdx, &gdy, &gdx);
            if (!ok) return CHECK_FAIL;
        }
    return show_equal();
}

/* ---------------------------------------------------------------- ReLU, GELU, add */

static int check_activations16(void) {
    REQUIRE_GPU();
    const int n = 100003;
    for (int d = 0; d < 2; d++) {
        const DType dt = DTYPES[d];
        const uint64_t s = 1000 + 100 * (uint64_t)d;
        Tensor x = random16(s, dt, n, 0, 5.0f), dy = random16(s + 1, dt, n, 0, 1.0f);
        Tensor dx = random16(s + 2, dt, n, 0, 1.0f), y = tensor_zeros_typed(DEVICE_CPU, dt, 1, n);
        Tensor fx = wide(&x), fdy = wide(&dy), fy = tensor_zeros(1, n);
        Tensor gx = on_gpu(&x), gdy = on_gpu(&dy), gy = on_gpu(&y);
        /* ReLU: its backward reads the forward's output, rounded (exact here) */
        relu_forward(&fy, &fx);
        cuda_relu_forward(&gy, &gx);
        bool ok = same16("relu out", &gy, &fy, 0.0f, true);
        Tensor fdx = wide(&dx), gdx = on_gpu(&dx);
        relu_backward(&fdx, &fdy, &fy);
        cuda_relu_backward(&gdx, &gdy, &gy);
        ok = ok && same16("relu din (added to)", &gdx, &fdx, 0.0f, true);
        tensor_free(&fdx), tensor_free(&gdx);
        /* GELU: erff and expf, CUDA's or glibc's (see the top) */
        gelu_forward(&fy, &fx);
        cuda_gelu_forward(&gy, &gx);
        ok = ok && same16("gelu out", &gy, &fy, EMULATED ? 0.0f : 1e-6f, EMULATED);
        fdx = wide(&dx), gdx = on_gpu(&dx);
        gelu_backward(&fdx, &fdy, &fx);
        cuda_gelu_backward(&gdx, &gdy, &gx);
        ok = ok && same16("gelu din (added to)", &gdx, &fdx, 1e-6f, false);
        tensor_free(&fdx), tensor_free(&gdx);
        if (!ok) printf("%s, %d entries\n", dtype_name(dt), n);
        FREE_ALL(&x, &dy, &dx, &y, &fx, &fdy, &fy, &gx, &gdy, &gy);
        if (!ok) return CHECK_FAIL;
    }
    return show_equal();
}

static int check_add16(void) {
    REQUIRE_GPU();
    const int n = 30011;
    for (int d = 0; d < 2; d++) {
        const DType dt = DTYPES[d];
        const uint64_t s = 1200 + 100 * (uint64_t)d;
        Tensor a = random16(s, dt, n, 0, 1.0f), b = random16(s + 1, dt, n, 0, 3.0f);
        Tensor out = tensor_zeros_typed(DEVICE_CPU, dt, 1, n);
        Tensor fa = wide(&a), fb = wide(&b), fout = tensor_zeros(1, n);
        add_forward(&fout, &fa, &fb);
        Tensor ga = on_gpu(&a), gb = on_gpu(&b), gout = on_gpu(&out);
        cuda_add_forward(&gout, &ga, &gb);
        bool ok = same16("add out = round(a + b)", &gout, &fout, 0.0f, true);
        cuda_add_forward(&ga, &ga, &gb); /* in place, as the residual stream */
        ok = ok && same16("add in place", &ga, &fout, 0.0f, true);
        /* backward: da += dout, db += dout; then da being dout itself */
        Tensor dout = random16(s + 2, dt, n, 0, 1.0f), da = random16(s + 3, dt, n, 0, 1.0f);
        Tensor db = random16(s + 4, dt, n, 0, 1.0f);
        Tensor fdout = wide(&dout), fda = wide(&da), fdb = wide(&db);
        add_backward(&fda, &fdb, &fdout);
        Tensor gdout = on_gpu(&dout), gda = on_gpu(&da), gdb = on_gpu(&db);
        cuda_add_backward(&gda, &gdb, &gdout);
        ok = ok && same16("add da (added to)", &gda, &fda, 0.0f, true) &&
             same16("add db (added to)", &gdb, &fdb, 0.0f, true);
        Tensor fdout2 = wide(&dout), fdb2 = wide(&db);
        add_backward(&fdout2, &fdb2, &fdout2);
        Tensor gdb2 = on_gpu(&db);
        cuda_add_backward(&gdout, &gdb2, &gdout);
        ok = ok && same16("add: da is dout", &gdout, &fdout2, 0.0f, true) &&
             same16("add: db after da = dout", &gdb2, &fdb2, 0.0f, true);
        if (!ok) printf("%s, %d entries\n", dtype_name(dt), n);
        FREE_ALL(&a, &b, &out, &fa, &fb, &fout, &ga, &gb, &gout, &dout, &da, &db, &fdout, &fda, &fdb,
                 &gdout, &gda, &gdb, &fdout2, &fdb2, &gdb2);
        if (!ok) return CHECK_FAIL;
    }
    return show_equal();
}

/* ---------------------------------------------------------------- what is refused */

static void child_gpu_init(void) {
    char why[512];
    if (cuda_init(why, sizeof why)) return;
    printf(GPU_SKIP_PREFIX "%s\n", why);
    exit(CHECK_SKIP);
}

static Tensor gpu16(int rows, int cols) {
    return tensor_zeros_typed(DEVICE_CUDA, DTYPE_BF16, 2, rows, cols);
}

/* Each stops (exit status 2) with a message naming what to do. */
static void refused_body(void *arg) {
    const int what = *(const int *)arg;
    child_gpu_init();
    Tensor x = gpu16(4, 6), w = gpu16(3, 6), b = tensor_zeros_typed(DEVICE_CUDA, DTYPE_BF16, 1, 3);
    Tensor y = gpu16(4, 3), w32 = tensor_zeros_on(DEVICE_CUDA, 2, 3, 6);
    Tensor dw16 = gpu16(3, 6), db = tensor_zeros_on(DEVICE_CUDA, 1, 3);
    switch (what) {
    case 0: cuda_linear_forward(&y, &x, &w32, &b); break; /* a float32 weight in a bf16 call */
    case 1: cuda_linear_backward(NULL, &dw16, &db, &y, &x, &w); break; /* a bf16 dweight */
    case 2: { /* the unfused attention: flash attention's job */
        Tensor qkv = gpu16(4, 6), ctx = gpu16(4, 2), probs = tensor_zeros_on(DEVICE_CUDA, 4, 1, 1, 4, 4);
        cuda_attention_forward(&ctx, &probs, NULL, &qkv, 0.0f, false, NULL);
        break;
    }
    case 3: { /* the CNN's layers and loss: float32 only */
        Tensor img = tensor_zeros_typed(DEVICE_CUDA, DTYPE_BF16, 4, 1, 1, 4, 4);
        Tensor k = tensor_zeros_on(DEVICE_CUDA, 4, 1, 1, 3, 3), kb = tensor_zeros_on(DEVICE_CUDA, 1, 1);
        Tensor o = tensor_zeros_on(DEVICE_CUDA, 4, 1, 1, 2, 2);
        cuda_conv2d_forward(&o, &img, &k, &kb, 1, 0);
        break;
    }
    case 4: {
        Tensor img = tensor_zeros_typed(DEVICE_CUDA, DTYPE_F16, 4, 1, 1, 4, 4);
        Tensor o = tensor_zeros_typed(DEVICE_CUDA, DTYPE_F16, 4, 1, 1, 2, 2);
        int *argmax = cuda_malloc(4 * sizeof(int));
        cuda_maxpool2d_forward(&o, argmax, &img, 2, 2);
        break;
    }
    default: {
        int labels[4] = {0, 1, 2, 0}, *g = ints_on_gpu(labels, 4);
        cuda_softmax_cross_entropy(NULL, &y, g);
    }
    }
}

static int check_refused16(void) {
    static const char *const why[][3] = {
        {"linear: a float32 weight with bfloat16 activations", "weight is a float32 tensor but out is a bfloat16 one", "share one dtype"},
        {"linear: a bfloat16 weight gradient", "dweight is a bfloat16 tensor", "float32"},
        {"the unfused attention on bfloat16 qkv", "float32 only", "flash attention"},
        {"conv2d on a bfloat16 image", "in is a bfloat16 tensor", "takes float32"},
        {"max-pool on a float16 image", "is a float16 tensor", "takes float32"},
        {"the CNN's softmax cross-entropy on bfloat16 logits", "logits is a bfloat16 tensor", "takes float32"}};
    for (int v = 0; v < 6; v++) {
        ChildResult r;
        run_child(refused_body, (void *)&v, &r);
        if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == CHECK_SKIP) {
            fputs(r.out, stdout);
            return CHECK_SKIP;
        }
        if (!expect_exit(why[v][0], &r, 2, why[v][1], why[v][2], (const char *)NULL)) return CHECK_FAIL;
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- fused forwards */

bool gpu_same_bits(const char *what, const Tensor *a, const Tensor *b) {
    Tensor ha = tensor_to(a, DEVICE_CPU), hb = tensor_to(b, DEVICE_CPU);
    int64_t first = -1;
    for (int64_t i = 0; first < 0 && i < ha.size; i++)
        if (memcmp((const char *)ha.raw + i * dtype_size(ha.dtype),
                   (const char *)hb.raw + i * dtype_size(hb.dtype), dtype_size(ha.dtype)))
            first = i;
    const bool ok = expect_true(ha.size == hb.size && ha.dtype == hb.dtype && first < 0,
                                "%s (%s): not the same bits (first at entry %lld)", what,
                                dtype_name(ha.dtype), (long long)first);
    tensor_free(&ha), tensor_free(&hb);
    return ok;
}

static const DType ALL_DTYPES[3] = {DTYPE_F32, DTYPE_BF16, DTYPE_F16};

/* The fused add + layer norm and relu + dropout on the GPU against the separate CUDA
 * kernels: the same bits (one row function for both layer norms; relu's store exact;
 * the fused backward rounds where the middle buffer would). */
static int check_fused_forwards(void) {
    REQUIRE_GPU();
    static const int cases[][2] = {{1, 1}, {7, 37}, {35, 200}, {69, 1024}, {300, 33}};
    for (int d = 0; d < 3; d++)
        for (int t = 0; t < 5; t++) {
            const DType dt = ALL_DTYPES[d];
            const int N = cases[t][0], D = cases[t][1];
            const uint64_t s = 7000 + 20 * (uint64_t)t + 100 * (uint64_t)d;
            Tensor a = random16(s, dt, N, D, 3.0f), b = random16(s + 1, dt, N, D, 2.0f);
            Tensor g = random16(s + 2, dt, D, 0, 1.5f), be = random16(s + 3, dt, D, 0, 1.0f);
            Tensor ga = on_gpu(&a), gb = on_gpu(&b), gg = on_gpu(&g), gbe = on_gpu(&be);
            Tensor r1 = on_gpu(&a), y1 = on_gpu(&a), r2 = on_gpu(&a), y2 = on_gpu(&a);
            Tensor m1 = tensor_zeros_on(DEVICE_CUDA, 1, N), s1 = tensor_zeros_on(DEVICE_CUDA, 1, N);
            Tensor m2 = tensor_zeros_on(DEVICE_CUDA, 1, N), s2 = tensor_zeros_on(DEVICE_CUDA, 1, N);
            cuda_add_forward(&r1, &ga, &gb);
            cuda_layernorm_forward(&y1, &m1, &s1, &r1, &gg, &gbe, LAYERNORM_EPS);
            cuda_add_layernorm_forward(&r2, &y2, &m2, &s2, &ga, &gb, &gg, &gbe, LAYERNORM_EPS);
            bool ok = gpu_same_bits("add + layer norm: r", &r2, &r1) &&
                      gpu_same_bits("add + layer norm: y", &y2, &y1) &&
                      gpu_same_bits("add + layer norm: mean", &m2, &m1) &&
                      gpu_same_bits("add + layer norm: rstd", &s2, &s1);
            /* r written over b, as the encoder may */
            cuda_add_layernorm_forward(&gb, &y2, &m2, &s2, &ga, &gb, &gg, &gbe, LAYERNORM_EPS);
            ok = ok && gpu_same_bits("add + layer norm, r in place of b: r", &gb, &r1) &&
                 gpu_same_bits("add + layer norm, r in place of b: y", &y2, &y1);
            /* relu + dropout: p 0, 0.3, 1, training or not; out apart and in place */
            static const float ps[] = {0.0f, 0.3f, 1.0f};
            for (int k = 0; ok && k < 6; k++) {
                const float p = ps[k % 3];
                const bool training = k < 3;
                Rng q1, q2;
                rng_seed(&q1, s, 0), rng_seed(&q2, s, 0);
                Tensor k1 = tensor_zeros_on(DEVICE_CUDA, 2, N, D), k2 = tensor_zeros_on(DEVICE_CUDA, 2, N, D);
                cuda_relu_forward(&r1, &ga);
                cuda_dropout_forward(&r1, &k1, &r1, p, training, &q1);
                cuda_relu_dropout_forward(&r2, &k2, &ga, p, training, &q2);
                ok = gpu_same_bits("relu + dropout: out", &r2, &r1) &&
                     gpu_same_bits("relu + dropout: mask", &k2, &k1) &&
                     expect_true(rng_u32(&q1) == rng_u32(&q2), "relu + dropout: the Rng's state after");
                rng_seed(&q2, s, 0);
                tensor_copy(&r2, &ga);
                cuda_relu_dropout_forward(&r2, &k2, &r2, p, training, &q2);
                ok = ok && gpu_same_bits("relu + dropout in place: out", &r2, &r1) &&
                     gpu_same_bits("relu + dropout in place: mask", &k2, &k1);
                /* the backward: dropout's into a cleared middle buffer, then relu's from it
                 * (the encoder's order), against the fused pass; din added to (+=), with
                 * the mask and without (an inactive dropout's) */
                Tensor dout = random16(s + 9 + (uint64_t)k, dt, N, D, 2.0f), d0 = random16(s + 19, dt, N, D, 1.0f);
                Tensor gdout = on_gpu(&dout), mid = tensor_zeros_typed(DEVICE_CUDA, dt, 2, N, D);
                for (int with_mask = 0; ok && with_mask < 2; with_mask++) {
                    const Tensor *mask = with_mask ? &k1 : NULL;
                    Tensor din1 = on_gpu(&d0), din2 = on_gpu(&d0);
                    tensor_fill(&mid, 0.0f);
                    cuda_dropout_backward(&mid, &gdout, mask);
                    cuda_relu_backward(&din1, &mid, &r1);
                    cuda_relu_dropout_backward(&din2, &gdout, mask, &r1);
                    ok = gpu_same_bits(with_mask ? "relu + dropout backward: din" :
                                       "relu + dropout backward without a mask: din", &din2, &din1);
                    FREE_ALL(&din1, &din2);
                }
                FREE_ALL(&k1, &k2, &dout, &d0, &gdout, &mid);
                if (!ok) printf("p %g, %s\n", (double)p, training ? "training" : "evaluation");
            }
            if (!ok) printf("%s: [%d, %d]\n", dtype_name(dt), N, D);
            FREE_ALL(&a, &b, &g, &be, &ga, &gb, &gg, &gbe, &r1, &y1, &r2, &y2, &m1, &s1, &m2, &s2);
            if (!ok) return CHECK_FAIL;
        }
    return CHECK_PASS;
}

#endif /* HAVE_CUDA */

void check_gpu16(void) {
    check_run(NULL, "16-bit GEMM (cublasGemmEx): bf16/fp16 operands, C 16-bit or float32, 4 transposes, padding, alpha, beta", GPU_CHECK(check_gemm_ex), 60);
    check_run(NULL, "16-bit linear forward and backward (bf16, fp16): out and din rounded once, dweight and dbias float32", GPU_CHECK(check_linear16), 60);
    check_run(NULL, "16-bit layer norm forward and backward (bf16, fp16): mean, rstd, dgamma, dbeta float32", GPU_CHECK(check_layernorm16), 60);
    check_run(NULL, "16-bit softmax cross-entropy (fast version; bf16, fp16; loss scale 1, 2^10, 2^16): the float32 loss, dlogits = old + S x gradient rounded once", GPU_CHECK(check_softmax_xent_fast16), 60);
    check_run(NULL, "16-bit embedding (bf16, fp16; a slice of the rows too): out exact, dtable float32", GPU_CHECK(check_embedding16), 60);
    check_run(NULL, "16-bit positions added (bf16, fp16; in place too), exact", GPU_CHECK(check_positional16), 60);
    check_run(NULL, "16-bit dropout (bf16, fp16; a window too): the CPU's float32 mask, out exact, din", GPU_CHECK(check_dropout16), 60);
    check_run(NULL, "16-bit ReLU (exact) and GELU forward and backward (bf16, fp16)", GPU_CHECK(check_activations16), 60);
    check_run(NULL, "16-bit residual add forward and backward (bf16, fp16; in place, da = dout), exact", GPU_CHECK(check_add16), 60);
    check_run(NULL, "fused add + layer norm and relu + dropout, forward and backward (f32, bf16, fp16; in place) = the separate CUDA kernels, bit for bit", GPU_CHECK(check_fused_forwards), 60);
    check_run(NULL, "16-bit tensors refused with a message: mixed dtypes, a 16-bit gradient, the unfused attention, conv2d, max-pool, the CNN's loss", GPU_CHECK(check_refused16), 60);
}
