/* Unit tests of the fused causal attention (lib/layers/flash_attention.h) against the
 * unfused one (lib/layers/attention.h, itself tested against the definition in
 * test_layers_attention.c): forward and backward, dropout on (the same Rng state, so
 * the same key and mask) and off, T from 1 to 1,024, heads 5 to 256 wide; bfloat16 and
 * float16 against the float32 unfused layer; both rounded exactly where stored; finite
 * differences; a tensor-parallel window of heads against those heads of the whole;
 * threads; evaluation; the messages.
 *
 * Tolerances, float32 (fused against unfused). Both compute the same sums in float32 in
 * different orders (the online softmax rescales its partial sums once per 32 keys; the
 * unfused layer normalises first and sums through GEMMs), so they differ by rounding
 * only. A float32 sum of n terms is off by at most n u times the sum of the terms'
 * magnitudes (u = 2^-24, FLT_EPSILON / 2; Higham's bound), for each of the two. With
 *   A    = the largest scaled |q| . |k| of the case (a score's magnitude),
 *   mag  = the sum of the magnitudes of the terms of each output, in double:
 *          ctx_i:  sum_j w_ij |v_j|              (w the dropped weights)
 *          ds_ij:  w_ij |g_i| . |v_j| + p_ij sum_e |g_ie| mag(ctx_ie)   (g = dctx)
 *          dq_i:   scale sum_j mag(ds_ij) |k_j|, dk_j: scale sum_i mag(ds_ij) |q_i|,
 *          dv_j:   sum_i w_ij |g_i|,
 * a score is off by dh u A per layer, which changes each weight by that fraction and a
 * normalised sum by twice it; the sums of up to T weights and products, and lse, by
 * T u; exp (softmax_exp: 1.1e-7 < 2 u) and the few scalings by a few u. So each output
 * is within (4 dh A + 4 T + 16) u mag of the other layer's, plus 2 u |value| for the
 * addition into dqkv (rounded by each). A missing or extra term, a wrong mask or index moves an output
 * by one term, w |v| ~ 1 / T of a mag of ~1, more than this bound for every T here
 * (1 / 1,024 against 4,400 u ~ 2.6e-4 at T = 1,024, and far more below).
 *
 * Tolerances, bfloat16 (inputs rounded to bfloat16 values, the reference run on those
 * same values in float32). bfloat16 keeps 8 significant bits: rounding to nearest is
 * off by at most 2^-8 of the value (unit roundoff u16 = 2^-8). The fused layer computes
 * in float32 as above and rounds each stored value once: ctx and each dqkv entry add
 * u16 |value| to the float32 bound. The backward's delta = dctx . ctx uses the rounded
 * ctx: each ctx_ie is off by u16 |ctx_ie| <= u16 mag(ctx_ie), so delta by u16 sum_e
 * |g_ie| mag(ctx_ie), ds by p_ij times that (<= u16 mag(ds_ij)), and dq, dk by at most
 * u16 mag: they get u16 (|value| + mag). That the CPU rounds nowhere else is shown
 * exactly: its bfloat16 results are its float32 results on the same values, rounded
 * (bit for bit), and the CUDA twin is checked against it in tests/gpu/check_gpu.c.
 *
 * Tolerances, float16: the same derivation with float16's 11 significant bits, u16 =
 * 2^-11, and its smaller range: below 2^-14 (the smallest normal) values are subnormal,
 * spaced 2^-24 apart, so rounding x is off by at most u16 max(|x|, 2^-14) (2^-25 there)
 * rather than u16 |x|. Each rounded output gets u16 max(|value|, 2^-14), and the delta
 * term takes each ctx magnitude as max(mag(ctx_ie), 2^-14): dq, dk get u16
 * (max(|value|, 2^-14) + mag16), mag16 their magnitude with that floor. The inputs
 * (in [-2, 2]) and results stay far below float16's largest value, 65,504. A float16
 * bound 8 times tighter than bfloat16's shows the rounding is float16's, not bfloat16's
 * (which would be off by up to 8 times the bound); the bit-for-bit check says so exactly. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "framework/check.h"
#include "framework/gradcheck.h"
#include "framework/tensors.h"
#include "layers/attention.h"
#include "layers/dropout.h"
#include "layers/flash_attention.h"

static const double U32 = FLT_EPSILON / 2.0; /* 2^-24 */

/* How a 16-bit format rounds: unit roundoff rel, relative to magnitudes of at least tiny
 * (float16's smallest normal; 0 for bfloat16, and rel 0 for float32). */
typedef struct {
    double rel, tiny;
} Rounding;

static const Rounding EXACT32 = {0, 0};
static const Rounding BF16_ROUNDING = {1.0 / 256.0, 0};            /* 2^-8 */
static const Rounding F16_ROUNDING = {1.0 / 2048.0, 1.0 / 16384.0}; /* 2^-11, 2^-14 */

static Rounding rounding_of(DType dt) {
    return dt == DTYPE_BF16 ? BF16_ROUNDING : dt == DTYPE_F16 ? F16_ROUNDING : EXACT32;
}


typedef struct {
    int B, T, H, dh;
} Case;

static const DType DTYPES[3] = {DTYPE_F32, DTYPE_BF16, DTYPE_F16};

static void describe(Case c, float p, const char *dtype) {
    printf("case: B %d, T %d, H %d, d_head %d, dropout %g, %s\n", c.B, c.T, c.H, c.dh, (double)p,
           dtype);
}

/* x rounded to a 16-bit dtype and back (float32: x) */
static float round16(DType dt, float x) {
    return dt == DTYPE_F32 ? x : dtype_f32_of_bits(dtype_f32_bits_from_bits16(dt,
                                 dtype_bits16_from_f32_bits(dt, dtype_bits_of_f32(x))));
}

/* A tensor's values rounded to dt and back: inputs both layers can take exactly. */
static void round_values(Tensor *t, DType dt) {
    for (int64_t i = 0; i < t->size; i++) t->data[i] = round16(dt, t->data[i]);
}

static Tensor to_dtype(const Tensor *t, DType dtype) {
    Tensor r = tensor_zeros_typed(DEVICE_CPU, dtype, t->ndim, t->shape[0], t->shape[1],
                                  t->shape[2], t->shape[3]);
    tensor_convert(&r, t);
    return r;
}

/* ------------------------------------------------------------ the reference */

/* The unfused layer on one case, and the magnitudes of the terms of each output. */
typedef struct {
    Case c;
    float p;
    uint64_t seed;
    int D, N;
    Tensor qkv, dctx, dqkv0;           /* inputs: [N, 3D], [N, D], what dqkv holds before */
    Tensor ctx, probs, dropped, dqkv;  /* the unfused layer's ctx, weights, dqkv0 + gradient */
    double *mag_ctx, *mag_dqkv;        /* [N, D], [N, 3D] */
    double *mag_dqkv16;                /* [N, 3D]: mag_dqkv with each mag(ctx) in delta at
                                        * least `tiny` (float16's subnormals) */
    double *lse;                       /* [B, H, T], in double from the definition */
    double R;                          /* roundings: 4 dh A + 4 T + 16 */
} Ref;

static void rng_of(Rng *rng, uint64_t seed) { rng_seed(rng, seed, 5); }

/* values: the dtype the inputs are rounded to (float32: none); tiny: the smallest
 * magnitude a 16-bit rounding of ctx is relative to (float16: 2^-14, else 0). */
static Ref ref_make(Case c, float p, uint64_t seed, DType values) {
    Ref r;
    memset(&r, 0, sizeof r);
    r.c = c, r.p = p, r.seed = seed;
    r.D = c.H * c.dh, r.N = c.B * c.T;
    const int D = r.D, N = r.N, T = c.T, dh = c.dh;
    r.qkv = random2(seed, N, 3 * D);
    for (int64_t i = 0; i < r.qkv.size; i++) r.qkv.data[i] *= 2.0f; /* sharper softmax */
    r.dctx = random2(seed + 1, N, D);
    r.dqkv0 = random2(seed + 2, N, 3 * D);
    round_values(&r.qkv, values), round_values(&r.dctx, values), round_values(&r.dqkv0, values);
    const double tiny = rounding_of(values).tiny;
    r.ctx = tensor_zeros(2, N, D);
    r.probs = tensor_zeros(4, c.B, c.H, T, T);
    r.dropped = tensor_zeros(4, c.B, c.H, T, T);
    r.dqkv = tensor_zeros(2, N, 3 * D);
    tensor_copy(&r.dqkv, &r.dqkv0);
    Rng rng;
    rng_of(&rng, seed);
    attention_forward(&r.ctx, &r.probs, &r.dropped, &r.qkv, p, true, &rng);
    Tensor ds = tensor_zeros(4, c.B, c.H, T, T);
    attention_backward(&r.dqkv, &ds, &r.dctx, &r.qkv, &r.probs, &r.dropped);
    tensor_free(&ds);

    r.mag_ctx = calloc((size_t)N * D, sizeof(double));
    r.mag_dqkv = calloc((size_t)N * 3 * D, sizeof(double));
    r.mag_dqkv16 = calloc((size_t)N * 3 * D, sizeof(double));
    r.lse = calloc((size_t)c.B * c.H * T, sizeof(double));
    double *gv = malloc(sizeof(double) * (size_t)T), *mds = malloc(sizeof(double) * (size_t)T);
    double *mds16 = malloc(sizeof(double) * (size_t)T);
    const double scale = 1.0 / sqrt((double)dh);
    const float *x = r.qkv.data, *g = r.dctx.data;
    double A = 0;
    for (int b = 0; b < c.B; b++)
        for (int h = 0; h < c.H; h++) {
#define Q(i, e) x[((size_t)b * T + (i)) * 3 * D + (size_t)h * dh + (e)]
#define K(i, e) x[((size_t)b * T + (i)) * 3 * D + D + (size_t)h * dh + (e)]
#define V(i, e) x[((size_t)b * T + (i)) * 3 * D + 2 * D + (size_t)h * dh + (e)]
#define G(i, e) g[((size_t)b * T + (i)) * D + (size_t)h * dh + (e)]
            const size_t first = ((size_t)b * c.H + h) * T * T;
            const float *P = r.probs.data + first, *W = r.dropped.data + first;
            double *mc = r.mag_ctx, *mq = r.mag_dqkv, *mq16 = r.mag_dqkv16;
            for (int i = 0; i < T; i++) {
                double m = -INFINITY, sum = 0, mag_delta = 0, mag_delta16 = 0;
                for (int j = 0; j <= i; j++) { /* scores in double: lse and A */
                    double s = 0, a = 0;
                    for (int e = 0; e < dh; e++) s += (double)Q(i, e) * K(j, e), a += fabs((double)Q(i, e) * K(j, e));
                    gv[j] = s * scale;
                    A = fmax(A, a * scale);
                    m = fmax(m, gv[j]);
                }
                for (int j = 0; j <= i; j++) sum += exp(gv[j] - m);
                r.lse[((size_t)b * c.H + h) * T + i] = m + log(sum);
                const size_t ci = ((size_t)b * T + i) * D + (size_t)h * dh;
                for (int e = 0; e < dh; e++) {
                    double s = 0;
                    for (int j = 0; j <= i; j++) s += W[(size_t)i * T + j] * fabs((double)V(j, e));
                    mc[ci + e] = s;
                    mag_delta += fabs((double)G(i, e)) * s;
                    mag_delta16 += fabs((double)G(i, e)) * fmax(s, tiny);
                }
                for (int j = 0; j <= i; j++) {
                    double a = 0;
                    for (int e = 0; e < dh; e++) a += fabs((double)G(i, e) * V(j, e));
                    mds[j] = W[(size_t)i * T + j] * a + P[(size_t)i * T + j] * mag_delta;
                    mds16[j] = W[(size_t)i * T + j] * a + P[(size_t)i * T + j] * mag_delta16;
                }
                const size_t qi = ((size_t)b * T + i) * 3 * D + (size_t)h * dh;
                for (int j = 0; j <= i; j++) {
                    const size_t kj = ((size_t)b * T + j) * 3 * D + D + (size_t)h * dh;
                    const double w = W[(size_t)i * T + j];
                    for (int e = 0; e < dh; e++) {
                        mq[qi + e] += scale * mds[j] * fabs((double)K(j, e));
                        mq[kj + e] += scale * mds[j] * fabs((double)Q(i, e));
                        mq[kj + D + e] += w * fabs((double)G(i, e));
                        mq16[qi + e] += scale * mds16[j] * fabs((double)K(j, e));
                        mq16[kj + e] += scale * mds16[j] * fabs((double)Q(i, e));
                        mq16[kj + D + e] += w * fabs((double)G(i, e));
                    }
                }
            }
#undef Q
#undef K
#undef V
#undef G
        }
    r.R = 4.0 * dh * A + 4.0 * T + 16.0;
    free(gv), free(mds), free(mds16);
    return r;
}

static void ref_free(Ref *r) {
    FREE_ALL(&r->qkv, &r->dctx, &r->dqkv0, &r->ctx, &r->probs, &r->dropped, &r->dqkv);
    free(r->mag_ctx), free(r->mag_dqkv), free(r->mag_dqkv16), free(r->lse);
}

static double worst; /* the largest error / tolerance of a check, shown */

/* got[i] within R u32 mag[i] + rel (max(|want[i]|, tiny) + (mag16 ? mag16[i] : 0))
 * + 2 u32 |want[i]| */
static bool within(const char *what, const float *got, const float *want, const double *mag,
                   int64_t n, double R, Rounding rd, const double *mag16) {
    for (int64_t i = 0; i < n; i++) {
        const double tol = R * U32 * mag[i] +
                           rd.rel * (fmax(fabs(want[i]), rd.tiny) + (mag16 ? mag16[i] : 0)) +
                           2 * U32 * fabs(want[i]); /* the addition into dqkv, rounded by each */
        const double err = fabs((double)got[i] - want[i]);
        if (tol > 0 && err / tol > worst) worst = err / tol;
        if (!(err <= tol))
            return expect_true(false, "%s[%lld] = %.9g, the unfused layer gives %.9g (tolerance "
                               "%.3g, %g roundings of a magnitude %.4g)", what, (long long)i,
                               got[i], want[i], tol, R, mag[i]);
    }
    return true;
}

/* The fused layer of `dtype` on r's inputs: ctx, lse and dqkv as float32, and what the
 * Rng holds after the forward. */
typedef struct {
    Tensor ctx, lse, dqkv;
    uint32_t rng_next;
    FlashDropout drop;
} Fused;

static Fused fused_run(const Ref *r, DType dtype) {
    Fused f;
    const Case c = r->c;
    Tensor qkv = to_dtype(&r->qkv, dtype), dctx = to_dtype(&r->dctx, dtype);
    Tensor dqkv = to_dtype(&r->dqkv0, dtype);
    Tensor ctx = tensor_zeros_typed(DEVICE_CPU, dtype, 2, r->N, r->D);
    f.lse = tensor_zeros(3, c.B, c.H, c.T);
    Rng rng;
    rng_of(&rng, r->seed);
    flash_attention_forward(&ctx, &f.lse, &f.drop, &qkv, r->p, true, &rng, DROPOUT_WHOLE);
    f.rng_next = rng_u32(&rng);
    flash_attention_backward(&dqkv, &dctx, &qkv, &ctx, &f.lse, &f.drop);
    f.ctx = to_dtype(&ctx, DTYPE_F32);
    f.dqkv = to_dtype(&dqkv, DTYPE_F32);
    FREE_ALL(&qkv, &dctx, &dqkv, &ctx);
    return f;
}

static void fused_free(Fused *f) { FREE_ALL(&f->ctx, &f->lse, &f->dqkv); }

/* lse against the definition in double: a score is off by dh u A, a log-sum-exp of T
 * terms by T u more; R u (1 + |lse|) covers both. */
static bool lse_ok(const Ref *r, const Fused *f) {
    for (int64_t i = 0; i < f->lse.size; i++) {
        const double tol = r->R * U32 * (1.0 + fabs(r->lse[i]));
        if (!(fabs(f->lse.data[i] - r->lse[i]) <= tol))
            return expect_true(false, "lse[%lld] = %.9g, the definition gives %.9g (tolerance %.3g)",
                               (long long)i, f->lse.data[i], r->lse[i], tol);
    }
    return true;
}

static bool same_rng(const Ref *r, const Fused *f) {
    Rng rng;
    rng_of(&rng, r->seed);
    if (dropout_active(r->p, true)) dropout_draw_key(&rng); /* what the unfused layer drew */
    return expect_true(rng_u32(&rng) == f->rng_next, "the Rng is not where the unfused layer leaves it");
}

/* B, T, H, d_head: T = 1, 2, below, at and above a tile of 32, the tutorial's 35 with 2
 * heads of 100, 100, 257, 1,024; heads of 5 to 256 columns */
static const Case F32_CASES[] = {
    {2, 1, 2, 16},  {1, 2, 3, 32},   {2, 31, 2, 64},   {1, 32, 2, 128}, {2, 33, 1, 16},
    {2, 35, 2, 100}, {1, 100, 2, 64}, {1, 257, 1, 128}, {1, 1024, 1, 64}, {1, 1024, 2, 16},
    {1, 70, 1, 256}, {2, 9, 2, 5},
};

static int check_flash_f32(void) {
    bool ok = true;
    for (size_t k = 0; ok && k < sizeof F32_CASES / sizeof F32_CASES[0]; k++)
        for (int with_dropout = 0; ok && with_dropout < 2; with_dropout++) {
            const float p = with_dropout ? 0.2f : 0.0f;
            Ref r = ref_make(F32_CASES[k], p, 300 + 10 * k, DTYPE_F32);
            Fused f = fused_run(&r, DTYPE_F32);
            ok = within("ctx", f.ctx.data, r.ctx.data, r.mag_ctx, r.ctx.size, r.R, EXACT32, NULL) &&
                 lse_ok(&r, &f) && same_rng(&r, &f) &&
                 within("dqkv", f.dqkv.data, r.dqkv.data, r.mag_dqkv, r.dqkv.size, r.R, EXACT32, NULL);
            if (!ok) describe(r.c, p, "float32");
            fused_free(&f);
            ref_free(&r);
        }
    check_show("largest error of ctx and dqkv: %.3f of its tolerance", worst);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static const Case CASES16[] = {
    {2, 1, 2, 16}, {1, 33, 2, 64}, {2, 35, 2, 100}, {1, 257, 1, 128}, {1, 1024, 1, 64}, {1, 70, 1, 256},
};

/* The 16-bit layer of dt against the float32 unfused layer on dt's values. */
static int check_flash16(DType dt, uint64_t seed) {
    const Rounding rd = rounding_of(dt);
    char what[3][48];
    snprintf(what[0], sizeof what[0], "ctx (%s)", dtype_name(dt));
    snprintf(what[1], sizeof what[1], "dq, dk (%s)", dtype_name(dt));
    snprintf(what[2], sizeof what[2], "dv (%s)", dtype_name(dt));
    worst = 0;
    bool ok = true;
    for (size_t k = 0; ok && k < sizeof CASES16 / sizeof CASES16[0]; k++)
        for (int with_dropout = 0; ok && with_dropout < 2; with_dropout++) {
            const float p = with_dropout ? 0.2f : 0.0f;
            Ref r = ref_make(CASES16[k], p, seed + 10 * k, dt);
            Fused f = fused_run(&r, dt);
            const int64_t N = r.N, D = r.D;
            ok = within(what[0], f.ctx.data, r.ctx.data, r.mag_ctx, r.ctx.size, r.R, rd, NULL) &&
                 lse_ok(&r, &f) && same_rng(&r, &f);
            /* dq and dk: u16 (|value| + mag16); dv: u16 |value| */
            for (int64_t n = 0; ok && n < N; n++) {
                const size_t at = (size_t)n * 3 * D;
                ok = within(what[1], f.dqkv.data + at, r.dqkv.data + at, r.mag_dqkv + at, 2 * D,
                            r.R, rd, r.mag_dqkv16 + at) &&
                     within(what[2], f.dqkv.data + at + 2 * D, r.dqkv.data + at + 2 * D,
                            r.mag_dqkv + at + 2 * D, D, r.R, rd, NULL);
            }
            if (!ok) describe(r.c, p, dtype_name(dt));
            fused_free(&f);
            ref_free(&r);
        }
    check_show("largest error of ctx and dqkv: %.3f of its tolerance (one rounding: up to 1)", worst);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_flash_bf16(void) { return check_flash16(DTYPE_BF16, 400); }
static int check_flash_f16(void) { return check_flash16(DTYPE_F16, 450); }

/* A 16-bit layer rounds where values are stored, nowhere else: on values of its dtype,
 * its ctx is the float32 layer's rounded and lse the same, bit for bit; its dqkv the
 * float32 layer's (given the rounded ctx) rounded. */
static bool same_bits16(const char *what, const Tensor *t16, const Tensor *f32) {
    const DType dt = t16->dtype;
    for (int64_t i = 0; i < f32->size; i++) {
        const uint16_t want = dtype_bits16_from_f32_bits(dt, dtype_bits_of_f32(f32->data[i]));
        if (t16->bits16[i] != want)
            return expect_true(false, "%s[%lld]: %s 0x%04x, the float32 layer's %.9g rounds to "
                               "0x%04x", what, (long long)i, dtype_name(dt), t16->bits16[i],
                               f32->data[i], want);
    }
    return true;
}

/* Cases: two shapes, and one whose gradients are float16 subnormals (dctx and the old
 * dqkv times 2^-14: the rounding below 2^-14 too). */
static int check_flash_rounding(void) {
    const Case cases[] = {{2, 45, 2, 48}, {1, 130, 1, 128}, {2, 40, 2, 32}};
    const float grad_scale[] = {1.0f, 1.0f, 0x1p-14f};
    bool ok = true;
    for (int d = 0; ok && d < 2; d++)
        for (int k = 0; ok && k < 3; k++) {
            const DType dt = d ? DTYPE_F16 : DTYPE_BF16;
            const Case c = cases[k];
            const int N = c.B * c.T, D = c.H * c.dh;
            Tensor qkv = random2(500 + k, N, 3 * D), dctx = random2(510 + k, N, D);
            Tensor d32 = random2(520 + k, N, 3 * D);
            tensor_scale(&dctx, grad_scale[k]), tensor_scale(&d32, grad_scale[k]);
            round_values(&qkv, dt), round_values(&dctx, dt), round_values(&d32, dt);
            Tensor qkv16 = to_dtype(&qkv, dt), dctx16 = to_dtype(&dctx, dt), d16 = to_dtype(&d32, dt);
            Tensor ctx32 = tensor_zeros(2, N, D), ctx16 = tensor_zeros_typed(DEVICE_CPU, dt, 2, N, D);
            Tensor lse32 = tensor_zeros(3, c.B, c.H, c.T), lse16 = tensor_zeros(3, c.B, c.H, c.T);
            FlashDropout f1, f2;
            Rng r1, r2;
            rng_seed(&r1, 9, 1), rng_seed(&r2, 9, 1);
            flash_attention_forward(&ctx32, &lse32, &f1, &qkv, 0.25f, true, &r1, DROPOUT_WHOLE);
            flash_attention_forward(&ctx16, &lse16, &f2, &qkv16, 0.25f, true, &r2, DROPOUT_WHOLE);
            ok = same_bits16("ctx", &ctx16, &ctx32) &&
                 expect_true(memcmp(lse16.data, lse32.data, tensor_bytes(&lse32)) == 0,
                             "lse of the %s layer differs from the float32 layer's", dtype_name(dt));
            Tensor ctx_rounded = to_dtype(&ctx16, DTYPE_F32);
            flash_attention_backward(&d32, &dctx, &qkv, &ctx_rounded, &lse32, &f1);
            flash_attention_backward(&d16, &dctx16, &qkv16, &ctx16, &lse16, &f2);
            ok = ok && same_bits16("dqkv", &d16, &d32);
            if (!ok) describe(c, 0.25f, dt == DTYPE_F16 ? "float16 against float32 rounded"
                                                        : "bfloat16 against float32 rounded");
            FREE_ALL(&qkv, &dctx, &d32, &qkv16, &dctx16, &d16, &ctx32, &ctx16, &lse32, &lse16,
                     &ctx_rounded);
        }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ finite differences */

typedef struct {
    Tensor qkv, ctx, lse, R;
    float p;
} FdSetup;

static double fd_objective(void *arg) {
    FdSetup *s = arg;
    Rng rng;
    rng_seed(&rng, 77, 5); /* the same key, so the same mask, every time */
    flash_attention_forward(&s->ctx, &s->lse, NULL, &s->qkv, s->p, true, &rng, DROPOUT_WHOLE);
    return weighted_sum(&s->ctx, &s->R);
}

/* eps = 1e-2, 1e-3 absolute + 2e-3 relative: as test_layers_attention.c (the same
 * function of qkv, smooth, third derivatives O(1)). */
static int check_flash_grad(void) {
    omp_set_num_threads(1);
    const Case cases[] = {{1, 5, 2, 4}, {2, 3, 1, 8}, {1, 34, 1, 3}};
    bool ok = true;
    for (int k = 0; ok && k < 3; k++)
        for (int with_dropout = 0; ok && with_dropout < 2; with_dropout++) {
            const Case c = cases[k];
            const int N = c.B * c.T, D = c.H * c.dh;
            FdSetup s = {random2(600 + k, N, 3 * D), tensor_zeros(2, N, D),
                         tensor_zeros(3, c.B, c.H, c.T), random2(610 + k, N, D),
                         with_dropout ? 0.25f : 0.0f};
            FlashDropout drop;
            Rng rng;
            rng_seed(&rng, 77, 5);
            flash_attention_forward(&s.ctx, &s.lse, &drop, &s.qkv, s.p, true, &rng, DROPOUT_WHOLE);
            Tensor dqkv = tensor_zeros_like(&s.qkv);
            flash_attention_backward(&dqkv, &s.R, &s.qkv, &s.ctx, &s.lse, &drop);
            ok = fd_check("flash attention d qkv", s.qkv.data, dqkv.data, s.qkv.size, fd_objective,
                          &s, 1e-2f, 1e-3, 2e-3);
            if (!ok) describe(c, s.p, "float32");
            FREE_ALL(&s.qkv, &s.ctx, &s.lse, &s.R, &dqkv);
        }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ a window of heads */

/* Columns [h0 dh, (h0 + hw) dh) of each of the q, k, v blocks of qkv [N, 3D] (or of
 * the one block of a [N, D] tensor, parts = 1). */
static Tensor heads_of(const Tensor *t, int parts, int D, int dh, int h0, int hw) {
    const int N = t->shape[0], w = hw * dh;
    Tensor r = tensor_zeros_typed(DEVICE_CPU, t->dtype, 2, N, parts * w);
    const size_t es = dtype_size(t->dtype);
    for (int n = 0; n < N; n++)
        for (int part = 0; part < parts; part++)
            memcpy((char *)r.raw + ((size_t)n * parts * w + (size_t)part * w) * es,
                   (const char *)t->raw + ((size_t)n * parts * D + (size_t)part * D + (size_t)h0 * dh) * es,
                   (size_t)w * es);
    return r;
}

static bool same_bytes(const char *what, const Tensor *a, const Tensor *b) {
    return expect_true(tensor_bytes(a) == tensor_bytes(b) && memcmp(a->raw, b->raw, tensor_bytes(a)) == 0,
                       "%s: the window's differ from those heads of the whole", what);
}

/* Heads 1 and 2 of 4, dropout 0.3: the window (its heads' weights placed in the whole's
 * mask) computes exactly what the whole does on those heads, forward and backward,
 * float32, bfloat16 and float16. */
static int check_flash_window(void) {
    const int B = 2, T = 37, H = 4, dh = 16, D = H * dh, N = B * T, h0 = 1, hw = 2;
    const DropoutWindow win = {(int64_t)hw * T * T, (int64_t)H * T * T, (int64_t)h0 * T * T};
    bool ok = true;
    for (int k = 0; ok && k < 3; k++) {
        const DType dt = DTYPES[k];
        Tensor q32 = random2(700, N, 3 * D), g32 = random2(701, N, D);
        Tensor qkv = to_dtype(&q32, dt), dctx = to_dtype(&g32, dt);
        Tensor ctx = tensor_zeros_typed(DEVICE_CPU, dt, 2, N, D), lse = tensor_zeros(3, B, H, T);
        Tensor dqkv = tensor_zeros_typed(DEVICE_CPU, dt, 2, N, 3 * D);
        Tensor wqkv = heads_of(&qkv, 3, D, dh, h0, hw), wdctx = heads_of(&dctx, 1, D, dh, h0, hw);
        Tensor wctx = tensor_zeros_typed(DEVICE_CPU, dt, 2, N, hw * dh), wlse = tensor_zeros(3, B, hw, T);
        Tensor wdqkv = tensor_zeros_typed(DEVICE_CPU, dt, 2, N, 3 * hw * dh);
        FlashDropout d1, d2;
        Rng r1, r2;
        rng_seed(&r1, 3, 3), rng_seed(&r2, 3, 3);
        flash_attention_forward(&ctx, &lse, &d1, &qkv, 0.3f, true, &r1, DROPOUT_WHOLE);
        flash_attention_forward(&wctx, &wlse, &d2, &wqkv, 0.3f, true, &r2, win);
        flash_attention_backward(&dqkv, &dctx, &qkv, &ctx, &lse, &d1);
        flash_attention_backward(&wdqkv, &wdctx, &wqkv, &wctx, &wlse, &d2);
        Tensor hctx = heads_of(&ctx, 1, D, dh, h0, hw), hdqkv = heads_of(&dqkv, 3, D, dh, h0, hw);
        Tensor hlse = tensor_zeros(3, B, hw, T);
        for (int b = 0; b < B; b++)
            memcpy(hlse.data + (size_t)b * hw * T, lse.data + ((size_t)b * H + h0) * T,
                   sizeof(float) * (size_t)hw * T);
        ok = same_bytes("ctx", &wctx, &hctx) && same_bytes("lse", &wlse, &hlse) &&
             same_bytes("dqkv", &wdqkv, &hdqkv);
        if (!ok) printf("%s\n", dtype_name(dt));
        FREE_ALL(&q32, &g32, &qkv, &dctx, &ctx, &lse, &dqkv, &wqkv, &wdctx, &wctx, &wlse, &wdqkv,
                 &hctx, &hdqkv, &hlse);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ threads, evaluation */

static int check_flash_threads(void) {
    const Case c = {3, 70, 2, 32};
    const int N = c.B * c.T, D = c.H * c.dh;
    bool ok = true;
    for (int k = 0; ok && k < 3; k++) {
        const DType dt = DTYPES[k];
        Tensor q32 = random2(800, N, 3 * D), g32 = random2(801, N, D);
        Tensor qkv = to_dtype(&q32, dt), dctx = to_dtype(&g32, dt);
        Tensor ctx[2], lse[2], dqkv[2];
        for (int t = 0; t < 2; t++) {
            omp_set_num_threads(t + 1);
            ctx[t] = tensor_zeros_typed(DEVICE_CPU, dt, 2, N, D);
            lse[t] = tensor_zeros(3, c.B, c.H, c.T);
            dqkv[t] = tensor_zeros_typed(DEVICE_CPU, dt, 2, N, 3 * D);
            FlashDropout d;
            Rng rng;
            rng_seed(&rng, 4, 4);
            flash_attention_forward(&ctx[t], &lse[t], &d, &qkv, 0.2f, true, &rng, DROPOUT_WHOLE);
            flash_attention_backward(&dqkv[t], &dctx, &qkv, &ctx[t], &lse[t], &d);
        }
        ok = expect_true(memcmp(ctx[0].raw, ctx[1].raw, tensor_bytes(&ctx[0])) == 0 &&
                             memcmp(lse[0].raw, lse[1].raw, tensor_bytes(&lse[0])) == 0 &&
                             memcmp(dqkv[0].raw, dqkv[1].raw, tensor_bytes(&dqkv[0])) == 0,
                         "%s: 1 and 2 threads give different bits", dtype_name(dt));
        FREE_ALL(&q32, &g32, &qkv, &dctx, &ctx[0], &ctx[1], &lse[0], &lse[1], &dqkv[0], &dqkv[1]);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Evaluation (or p = 0) draws nothing, drops nothing: the same bits as p = 0 at training;
 * the FlashDropout says inactive, and a NULL one in the backward means the same. */
static int check_flash_eval(void) {
    const Case c = {2, 40, 2, 24};
    const int N = c.B * c.T, D = c.H * c.dh;
    Tensor qkv = random2(900, N, 3 * D), dctx = random2(901, N, D);
    Tensor ctx1 = tensor_zeros(2, N, D), ctx2 = tensor_zeros(2, N, D), lse = tensor_zeros(3, c.B, c.H, c.T);
    Tensor d1 = tensor_zeros(2, N, 3 * D), d2 = tensor_zeros(2, N, 3 * D);
    Rng rng, before;
    rng_seed(&rng, 1, 1);
    before = rng;
    FlashDropout drop;
    flash_attention_forward(&ctx1, &lse, &drop, &qkv, 0.5f, false, &rng, DROPOUT_WHOLE);
    bool ok = expect_true(rng.state == before.state, "evaluation drew from the Rng") &&
              expect_true(!drop.active && drop.keep_scale == 1.0f, "evaluation's FlashDropout is active");
    flash_attention_backward(&d1, &dctx, &qkv, &ctx1, &lse, &drop);
    flash_attention_backward(&d2, &dctx, &qkv, &ctx1, &lse, NULL);
    ok = ok && expect_true(memcmp(d1.data, d2.data, tensor_bytes(&d1)) == 0,
                           "backward with an inactive FlashDropout differs from NULL");
    flash_attention_forward(&ctx2, &lse, NULL, &qkv, 0.0f, true, NULL, DROPOUT_WHOLE);
    ok = ok && expect_true(memcmp(ctx1.data, ctx2.data, tensor_bytes(&ctx1)) == 0,
                           "evaluation differs from p = 0 at training");
    FREE_ALL(&qkv, &dctx, &ctx1, &ctx2, &lse, &d1, &d2);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ messages */

static void bad_heads(void *arg) {
    (void)arg;
    Tensor qkv = tensor_zeros(2, 8, 30), ctx = tensor_zeros(2, 8, 10), lse = tensor_zeros(3, 2, 3, 4);
    flash_attention_forward(&ctx, &lse, NULL, &qkv, 0.0f, false, NULL, DROPOUT_WHOLE);
}

static void mixed_dtypes(void *arg) {
    (void)arg;
    Tensor qkv = tensor_zeros(2, 8, 24), lse = tensor_zeros(3, 2, 2, 4);
    Tensor ctx = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 2, 8, 8);
    flash_attention_forward(&ctx, &lse, NULL, &qkv, 0.0f, false, NULL, DROPOUT_WHOLE);
}

static void mixed16(void *arg) {
    (void)arg;
    Tensor qkv = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 2, 8, 24), lse = tensor_zeros(3, 2, 2, 4);
    Tensor ctx = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 2, 8, 8);
    Tensor dctx = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 2, 8, 8);
    Tensor dqkv = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 2, 8, 24);
    flash_attention_forward(&ctx, &lse, NULL, &qkv, 0.0f, false, NULL, DROPOUT_WHOLE);
    flash_attention_backward(&dqkv, &dctx, &qkv, &ctx, &lse, NULL);
}

static void float16_lse(void *arg) {
    (void)arg;
    Tensor qkv = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 2, 8, 24);
    Tensor lse = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 3, 2, 2, 4);
    Tensor ctx = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 2, 8, 8);
    flash_attention_forward(&ctx, &lse, NULL, &qkv, 0.0f, false, NULL, DROPOUT_WHOLE);
}

static void bad_window(void *arg) {
    (void)arg;
    Tensor qkv = tensor_zeros(2, 8, 24), ctx = tensor_zeros(2, 8, 8), lse = tensor_zeros(3, 2, 2, 4);
    Rng rng;
    rng_seed(&rng, 1, 1);
    const DropoutWindow w = {2 * 16, 4 * 16, 8}; /* starts inside a head */
    flash_attention_forward(&ctx, &lse, NULL, &qkv, 0.1f, true, &rng, w);
}

static int check_flash_errors(void) {
    ChildResult r;
    run_child(bad_heads, NULL, &r);
    bool ok = expect_exit("d_model 10 with 3 heads", &r, 2, "flash_attention.c", "d_model 10",
                          "3 heads", (const char *)NULL);
    run_child(mixed_dtypes, NULL, &r);
    ok = expect_exit("bfloat16 ctx, float32 qkv", &r, 2, "ctx is bfloat16 but qkv is float32",
                     (const char *)NULL) && ok;
    run_child(mixed16, NULL, &r);
    ok = expect_exit("bfloat16 dctx, float16 qkv (the backward)", &r, 2,
                     "dctx is bfloat16 but qkv is float16", (const char *)NULL) && ok;
    run_child(float16_lse, NULL, &r);
    ok = expect_exit("a float16 lse", &r, 2, "lse", "float32", (const char *)NULL) && ok;
    run_child(bad_window, NULL, &r);
    ok = expect_exit("a window inside a head", &r, 2, "are not heads", (const char *)NULL) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("fused (flash) attention");
    check_run(NULL, "float32: fused = unfused forward, lse, backward (T 1 to 1,024, heads 5 to 256, dropout on and off)", check_flash_f32, 120);
    check_run(NULL, "bfloat16 against the float32 unfused layer within 2^-8 bounds (T 1 to 1,024)", check_flash_bf16, 120);
    check_run(NULL, "float16 against the float32 unfused layer within 2^-11 bounds, subnormals below 2^-14 (T 1 to 1,024)", check_flash_f16, 120);
    check_run(NULL, "bfloat16 and float16 round only where stored: ctx, lse, dqkv are float32's rounded, bit for bit (float16 subnormals too)", check_flash_rounding, 30);
    check_run(NULL, "backward vs finite differences, with and without dropout", check_flash_grad, 60);
    check_run(NULL, "a window of 2 of 4 heads = those heads of the whole, bit for bit (float32, bfloat16, float16)", check_flash_window, 30);
    check_run(NULL, "same bits on 1 and 2 threads (float32, bfloat16, float16)", check_flash_threads, 30);
    check_run(NULL, "evaluation: nothing drawn or dropped; NULL dropout in the backward", check_flash_eval, 10);
    check_run(NULL, "messages: heads, mixed dtypes (float16 with bfloat16 too), a float16 lse, a window inside a head", check_flash_errors, 10);
    return check_end();
}
