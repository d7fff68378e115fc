/* Unit tests of the CPU layers on 16-bit tensors (bfloat16 and float16; issue 28,
 * layers/rounded.h): every layer of the 16-bit path, both formats, random inputs.
 *
 * (1) The rounding points, bit for bit. The 16-bit result must equal the float32 layer
 *     run on the exactly converted 16-bit inputs (and, for += outputs, the exactly
 *     converted old values), its 16-bit outputs rounded once (dtype_convert_cpu), and
 *     its float32 outputs (parameter gradients, statistics, masks, the loss) equal as
 *     they are. The reference is computed here, through the float32 functions and the
 *     conversions, not through layers/rounded.c.
 *
 * (2) Against the float32 layer on the unrounded float32 inputs (each 16-bit kernel
 *     against its float32 twin), within a bound derived from the format:
 *     rounding to nearest is off by at most u |value|, u = 2^-8 for bfloat16 (8
 *     significant bits) and 2^-11 for float16 (11). The 16-bit run rounds its inputs
 *     (each once) and its 16-bit outputs (once); the float32 formula in between is the
 *     same. To first order, an output moves by u times
 *       E = sum over the rounded inputs of |d output / d input| |input| + |output|
 *     (the last term: its own rounding, absent for float32 outputs). E is written out
 *     per layer below from the layer's formula, in double, on the unrounded values:
 *       linear     out = b + sum x w:          E = |b| + 2 sum |x w| + |out|
 *                  din = old + sum dy w:       E = |old| + 2 sum |dy w| + |din|
 *                  dw += sum dy x (float32):   E = 2 sum |dy x|,  db: sum |dy|
 *       embedding  out = s table[t]:           E = 2 |out|; dtable (float32): sum |s dy|
 *       positional out = in + pe (pe float32): E = |in| + |out|
 *       dropout    out = x m:                  E = 2 |out|;  din: |old| + |dy m| + |din|
 *       relu       out = max(x, 0):            E = |x| + |out|; din: |old| + |dy| + |din|
 *       gelu       out = x Phi(x):             E = |gelu'(x) x| + |out|
 *                  din = old + dy gelu'(x):    E = |old| + |dy gelu'| + |dy gelu''(x) x| + |din|
 *       add        out = a + b:                E = |a| + |b| + |out|; da: |old| + |dy| + |da|
 *       softmax cross-entropy (logits z, p = softmax z, N rows):
 *                  loss (float32):             E = mean_n (sum_j p_j |z_j| + |z_label|)
 *                  dz = old + (p - onehot)/N:  E = |old| + |dz| + p_j (|z_j| + sum_k p_k |z_k|) / N
 *       layer norm (xhat = (x - mean) r, r = rstd, y = xhat g + b): a relative change u
 *                  of each x moves x - mean by u (|x_i| + mean |x|) and r by u r V,
 *                  V = mean_j |xhat_j x_j|, so xhat_i by u X_i,
 *                  X_i = r (|x_i| + mean |x|) + |xhat_i| r V:
 *                  y:      E = |g| X + |xhat g| + |b| + |y|;   mean: mean |x|;  rstd: r V
 *                  din = old + r (G_i - A - xhat_i B), G = dy g, A = mean G, B = mean G xhat:
 *                          E = |old| + |din| + r |G_i - A - xhat_i B| V
 *                              + r (2|G_i| + 2 mean|G| + X_i |B| + |xhat_i| mean(2|G xhat| + |G| X))
 *                  dgamma += sum dy xhat (float32): E = sum_n |dy| (|xhat| + X);  dbeta: sum |dy|
 *     The bound is u (1 + 4u) E (the factor covers the second-order terms, products of
 *     two roundings), plus 2^-16 S for float32's own roundings in the two runs (S the sum
 *     of the magnitudes of the terms; a float32 sum of n terms is off by n 2^-24 S, and
 *     n <= 53 here), plus 4 * 2^-25 for float16's subnormals (below 2^-14 a rounding is
 *     off by at most 2^-25 absolute, not u relative: the output's own rounding, and
 *     the rare tiny input, times factors below 2). A wrong rounding point (an extra
 *     rounding of a float32 partial result, a bias rounded apart) or a wrong formula
 *     is typically off by much more than u |value| on some element of these sizes.
 *
 * (3) The refusals: mixed dtypes among the activations and weights, a 16-bit parameter
 *     gradient, statistic or mask, and the float32-only layers (conv2d, max-pool, the
 *     unfused attention, the CNN's loss) given 16-bit tensors, and a loss scale of 0,
 *     stop with one message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "framework/check.h"
#include "framework/tensors.h"
#include "layers/add.h"
#include "layers/attention.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/embedding.h"
#include "layers/gelu.h"
#include "layers/layer_ops.h"
#include "layers/layernorm.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/positional.h"
#include "layers/relu.h"
#include "layers/softmax_exp.h"
#include "layers/softmax_xent.h"

/* ------------------------------------------------------------ the format under test */

typedef struct {
    DType dt;
    double u;   /* unit roundoff */
    double eta; /* a subnormal rounding's largest error */
} Fmt;
static const Fmt BF16 = {DTYPE_BF16, 1.0 / 256.0, 0x1p-134};
static const Fmt F16 = {DTYPE_F16, 1.0 / 2048.0, 0x1p-25};
static const Fmt *FMT; /* set before each check_run (the check's child inherits it) */

/* ------------------------------------------------------------ tensors */

/* [a] (b = 0) or [a, b], uniform in [lo, hi) */
static Tensor rnd(uint64_t seed, float lo, float hi, int a, int b) {
    Tensor t = b ? tensor_zeros(2, a, b) : tensor_zeros(1, a);
    fill_uniform(t.data, t.size, seed, lo, hi);
    return t;
}

/* A 16-bit copy of x, rounded once (the 16-bit run's input). */
static Tensor to16(const Tensor *x) {
    Tensor h = tensor_zeros_typed(DEVICE_CPU, FMT->dt, 1, (int)x->size);
    h.ndim = x->ndim;
    memcpy(h.shape, x->shape, sizeof h.shape);
    tensor_convert(&h, x);
    return h;
}

/* A float32 copy of any tensor (exact from 16 bits). */
static Tensor to32(const Tensor *x) {
    Tensor f = tensor_zeros(1, (int)x->size);
    f.ndim = x->ndim;
    memcpy(f.shape, x->shape, sizeof f.shape);
    tensor_convert(&f, x);
    return f;
}

static Tensor zeros16_like(const Tensor *x) {
    Tensor h = tensor_zeros_typed(DEVICE_CPU, FMT->dt, 1, (int)x->size);
    h.ndim = x->ndim;
    memcpy(h.shape, x->shape, sizeof h.shape);
    return h;
}

static double at(const Tensor *t, int64_t i) {
    return t->dtype == DTYPE_F32 ? (double)t->data[i]
           : t->dtype == DTYPE_BF16 ? (double)dtype_f32_from_bf16(t->bits16[i])
                                    : (double)dtype_f32_from_f16(t->bits16[i]);
}

static double *dzeros(int64_t n) { return calloc((size_t)n, sizeof(double)); }

/* (1): got (16-bit) holds round(want) (float32) bit for bit. */
static bool exact16(const char *what, const Tensor *got, const Tensor *want) {
    if (!expect_true(got->dtype == FMT->dt && got->size == want->size, "%s: dtype or size", what))
        return false;
    for (int64_t i = 0; i < got->size; i++) {
        const uint16_t w = dtype_bits16_from_f32_bits(FMT->dt, dtype_bits_of_f32(want->data[i]));
        if (got->bits16[i] != w)
            return expect_true(false, "%s[%lld]: 0x%04x, but the float32 layer gives %.9g, "
                               "which rounds to 0x%04x", what, (long long)i, got->bits16[i],
                               (double)want->data[i], w);
    }
    return true;
}

/* (1) for float32 outputs: the same bits. */
static bool exact32(const char *what, const Tensor *got, const Tensor *want) {
    if (!expect_true(got->dtype == DTYPE_F32 && got->size == want->size, "%s: dtype or size", what))
        return false;
    for (int64_t i = 0; i < got->size; i++)
        if (dtype_bits_of_f32(got->data[i]) != dtype_bits_of_f32(want->data[i]))
            return expect_true(false, "%s[%lld]: %.9g, but the float32 layer gives %.9g", what,
                               (long long)i, (double)got->data[i], (double)want->data[i]);
    return true;
}

/* (2): |got - want| <= u (1 + 4u) E + 2^-16 S + 4 eta, element by element (header). */
static bool near(const char *what, const Tensor *got, const Tensor *want, const double *E,
                 const double *S) {
    const double u = FMT->u;
    double worst = 0.0;
    int64_t wi = 0;
    for (int64_t i = 0; i < got->size; i++) {
        const double tol = u * (1.0 + 4.0 * u) * E[i] + 0x1p-16 * S[i] + 4.0 * FMT->eta;
        const double err = fabs(at(got, i) - (double)want->data[i]);
        if (!(err <= tol))
            return expect_true(false, "%s[%lld]: %.9g against the float32 layer's %.9g: off "
                               "by %.3g, more than the bound %.3g (E %.4g, S %.4g)", what,
                               (long long)i, at(got, i), (double)want->data[i], err, tol,
                               E[i], S[i]);
        if (err / tol > worst) worst = err / tol, wi = i;
    }
    check_show("%s: largest error %.2f of its bound (element %lld)", what, worst, (long long)wi);
    return true;
}

/* An input of the 16-bit run (rounded) and the exact float32 of it (the reference). */
typedef struct {
    Tensor h, r;
} Pair;
static Pair pair(const Tensor *x) {
    Pair p = {to16(x), {0}};
    p.r = to32(&p.h);
    return p;
}
static void free_pair(Pair *p) { FREE_ALL(&p->h, &p->r); }

/* ------------------------------------------------------------ linear */

static int check_linear(void) {
    const int N = 5, IN = 37, OUT = 19;
    Tensor x = rnd(1, -1, 1, N, IN), w = rnd(2, -1, 1, OUT, IN), b = rnd(3, -1, 1, OUT, 0);
    Tensor dy = rnd(4, -1, 1, N, OUT), din0 = rnd(5, -1, 1, N, IN);
    Tensor dw0 = rnd(6, -1, 1, OUT, IN), db0 = rnd(7, -1, 1, OUT, 0);
    Pair X = pair(&x), W = pair(&w), B = pair(&b), DY = pair(&dy), DIN = pair(&din0);
    /* the 16-bit run */
    Tensor out16 = tensor_zeros_typed(DEVICE_CPU, FMT->dt, 2, N, OUT);
    Tensor dw16 = to32(&dw0), db16 = to32(&db0);
    linear_forward(&out16, &X.h, &W.h, &B.h);
    linear_backward(&DIN.h, &dw16, &db16, &DY.h, &X.h, &W.h);
    /* (1) the float32 layer on the converted inputs */
    Tensor outR = tensor_zeros(2, N, OUT), dwR = to32(&dw0), dbR = to32(&db0);
    linear_forward(&outR, &X.r, &W.r, &B.r);
    linear_backward(&DIN.r, &dwR, &dbR, &DY.r, &X.r, &W.r);
    bool ok = exact16("out", &out16, &outR) && exact16("din", &DIN.h, &DIN.r) &&
              exact32("dweight", &dw16, &dwR) && exact32("dbias", &db16, &dbR);
    /* (2) the float32 layer on the unrounded inputs */
    Tensor outF = tensor_zeros(2, N, OUT), dinF = to32(&din0), dwF = to32(&dw0), dbF = to32(&db0);
    linear_forward(&outF, &x, &w, &b);
    linear_backward(&dinF, &dwF, &dbF, &dy, &x, &w);
    double *E = dzeros(N * OUT), *S = dzeros(N * OUT);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OUT; o++) {
            double m = 0;
            for (int k = 0; k < IN; k++) m += fabs((double)x.data[n * IN + k] * w.data[o * IN + k]);
            const double bb = fabs(b.data[o]);
            E[n * OUT + o] = bb + 2 * m + fabs(outF.data[n * OUT + o]);
            S[n * OUT + o] = bb + m;
        }
    ok = ok && near("out", &out16, &outF, E, S);
    free(E), free(S);
    E = dzeros(N * IN), S = dzeros(N * IN);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < IN; k++) {
            double m = 0;
            for (int o = 0; o < OUT; o++) m += fabs((double)dy.data[n * OUT + o] * w.data[o * IN + k]);
            const double old = fabs(din0.data[n * IN + k]);
            E[n * IN + k] = old + 2 * m + fabs(dinF.data[n * IN + k]);
            S[n * IN + k] = old + m;
        }
    ok = ok && near("din", &DIN.h, &dinF, E, S);
    free(E), free(S);
    E = dzeros(OUT * IN), S = dzeros(OUT * IN);
    for (int o = 0; o < OUT; o++)
        for (int k = 0; k < IN; k++) {
            double m = 0;
            for (int n = 0; n < N; n++) m += fabs((double)dy.data[n * OUT + o] * x.data[n * IN + k]);
            E[o * IN + k] = 2 * m;
            S[o * IN + k] = fabs(dw0.data[o * IN + k]) + m;
        }
    ok = ok && near("dweight", &dw16, &dwF, E, S);
    free(E), free(S);
    E = dzeros(OUT), S = dzeros(OUT);
    for (int o = 0; o < OUT; o++) {
        for (int n = 0; n < N; n++) E[o] += fabs(dy.data[n * OUT + o]);
        S[o] = fabs(db0.data[o]) + E[o];
    }
    ok = ok && near("dbias", &db16, &dbF, E, S);
    free(E), free(S);
    free_pair(&X), free_pair(&W), free_pair(&B), free_pair(&DY), free_pair(&DIN);
    FREE_ALL(&x, &w, &b, &dy, &din0, &dw0, &db0, &out16, &dw16, &db16, &outR, &dwR, &dbR, &outF,
             &dinF, &dwF, &dbF);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ layer norm */

static int check_layernorm(void) {
    const int N = 6, D = 48;
    Tensor x = rnd(11, -0.3f, 1.7f, N, D), g = rnd(12, 0.5f, 1.5f, D, 0), b = rnd(13, -1, 1, D, 0);
    Tensor dy = rnd(14, -1, 1, N, D), din0 = rnd(15, -1, 1, N, D);
    Tensor dg0 = rnd(16, -1, 1, D, 0), db0 = rnd(17, -1, 1, D, 0);
    Pair X = pair(&x), G = pair(&g), B = pair(&b), DY = pair(&dy), DIN = pair(&din0);
    const float eps = LAYERNORM_EPS;
    Tensor out16 = tensor_zeros_typed(DEVICE_CPU, FMT->dt, 2, N, D);
    Tensor mean16 = tensor_zeros(1, N), rstd16 = tensor_zeros(1, N), dg16 = to32(&dg0), db16 = to32(&db0);
    layernorm_forward(&out16, &mean16, &rstd16, &X.h, &G.h, &B.h, eps);
    layernorm_backward(&DIN.h, &dg16, &db16, &DY.h, &X.h, &mean16, &rstd16, &G.h);
    Tensor outR = tensor_zeros(2, N, D), meanR = tensor_zeros(1, N), rstdR = tensor_zeros(1, N);
    Tensor dgR = to32(&dg0), dbR = to32(&db0);
    layernorm_forward(&outR, &meanR, &rstdR, &X.r, &G.r, &B.r, eps);
    layernorm_backward(&DIN.r, &dgR, &dbR, &DY.r, &X.r, &meanR, &rstdR, &G.r);
    bool ok = exact16("out", &out16, &outR) && exact32("mean", &mean16, &meanR) &&
              exact32("rstd", &rstd16, &rstdR) && exact16("din", &DIN.h, &DIN.r) &&
              exact32("dgamma", &dg16, &dgR) && exact32("dbeta", &db16, &dbR);
    Tensor outF = tensor_zeros(2, N, D), meanF = tensor_zeros(1, N), rstdF = tensor_zeros(1, N);
    Tensor dinF = to32(&din0), dgF = to32(&dg0), dbF = to32(&db0);
    layernorm_forward(&outF, &meanF, &rstdF, &x, &g, &b, eps);
    layernorm_backward(&dinF, &dgF, &dbF, &dy, &x, &meanF, &rstdF, &g);
    /* the bound's terms (header), per row in double */
    double *Ey = dzeros(N * D), *Sy = dzeros(N * D), *Em = dzeros(N), *Sm = dzeros(N);
    double *Er = dzeros(N), *Sr = dzeros(N), *Ed = dzeros(N * D), *Sd = dzeros(N * D);
    double *Eg = dzeros(D), *Sg = dzeros(D), *Eb = dzeros(D), *Sb = dzeros(D);
    double *xh = dzeros(D), *X_ = dzeros(D);
    for (int n = 0; n < N; n++) {
        const float *xr = x.data + n * D, *gy = dy.data + n * D;
        double mu = 0, var = 0, mabs = 0;
        for (int j = 0; j < D; j++) mu += xr[j], mabs += fabs(xr[j]);
        mu /= D, mabs /= D;
        for (int j = 0; j < D; j++) var += (xr[j] - mu) * (xr[j] - mu);
        const double r = 1.0 / sqrt(var / D + eps);
        double V = 0;
        for (int j = 0; j < D; j++) xh[j] = (xr[j] - mu) * r, V += fabs(xh[j] * xr[j]);
        V /= D;
        for (int j = 0; j < D; j++) X_[j] = r * (fabs(xr[j]) + mabs) + fabs(xh[j]) * r * V;
        Em[n] = Sm[n] = mabs;
        Er[n] = r * V, Sr[n] = r;
        double A = 0, Bm = 0, mG = 0, mGx = 0, mix = 0;
        for (int j = 0; j < D; j++) {
            const double Gj = gy[j] * g.data[j];
            A += Gj, Bm += Gj * xh[j], mG += fabs(Gj), mGx += fabs(Gj * xh[j]);
            mix += 2 * fabs(Gj * xh[j]) + fabs(Gj) * X_[j];
        }
        A /= D, Bm /= D, mG /= D, mGx /= D, mix /= D;
        for (int j = 0; j < D; j++) {
            const int i = n * D + j;
            const double Gj = gy[j] * g.data[j], inner = Gj - A - xh[j] * Bm;
            Ey[i] = fabs(g.data[j]) * X_[j] + fabs(xh[j] * g.data[j]) + fabs(b.data[j]) + fabs(outF.data[i]);
            Sy[i] = fabs(xh[j] * g.data[j]) + fabs(b.data[j]);
            Ed[i] = fabs(din0.data[i]) + fabs(dinF.data[i]) + r * fabs(inner) * V +
                    r * (2 * fabs(Gj) + 2 * mG + X_[j] * fabs(Bm) + fabs(xh[j]) * mix);
            Sd[i] = fabs(din0.data[i]) + r * (fabs(Gj) + mG + fabs(xh[j]) * mGx);
            Eg[j] += fabs(gy[j]) * (fabs(xh[j]) + X_[j]);
            Sg[j] += fabs(gy[j] * xh[j]);
            Eb[j] += fabs(gy[j]);
        }
    }
    for (int j = 0; j < D; j++) Sg[j] += fabs(dg0.data[j]), Sb[j] = Eb[j] + fabs(db0.data[j]);
    ok = ok && near("out", &out16, &outF, Ey, Sy) && near("mean", &mean16, &meanF, Em, Sm) &&
         near("rstd", &rstd16, &rstdF, Er, Sr) && near("din", &DIN.h, &dinF, Ed, Sd) &&
         near("dgamma", &dg16, &dgF, Eg, Sg) && near("dbeta", &db16, &dbF, Eb, Sb);
    double *all[] = {Ey, Sy, Em, Sm, Er, Sr, Ed, Sd, Eg, Sg, Eb, Sb, xh, X_};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) free(all[k]);
    free_pair(&X), free_pair(&G), free_pair(&B), free_pair(&DY), free_pair(&DIN);
    FREE_ALL(&x, &g, &b, &dy, &din0, &dg0, &db0, &out16, &mean16, &rstd16, &dg16, &db16, &outR,
             &meanR, &rstdR, &dgR, &dbR, &outF, &meanF, &rstdF, &dinF, &dgF, &dbF);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ softmax cross-entropy */

static int check_xent(void) {
    const int N = 6, K = 53;
    Tensor z = rnd(21, -4, 4, N, K), d0 = rnd(22, -0.01f, 0.01f, N, K);
    int labels[6];
    for (int n = 0; n < N; n++) labels[n] = (n * 17 + 5) % K;
    Pair Z = pair(&z), D = pair(&d0);
    const float loss16 = softmax_cross_entropy_fast(&D.h, &Z.h, labels, 1.0f);
    Tensor st16 = zeros16_like(&z);
    const float loss_st16 = softmax_cross_entropy_fast_store(&st16, &Z.h, labels, 1.0f);
    const float lossR = softmax_cross_entropy_fast(&D.r, &Z.r, labels, 1.0f);
    Tensor stR = tensor_zeros(2, N, K);
    softmax_cross_entropy_fast_store(&stR, &Z.r, labels, 1.0f);
    bool ok = expect_true(dtype_bits_of_f32(loss16) == dtype_bits_of_f32(lossR) &&
                          dtype_bits_of_f32(loss_st16) == dtype_bits_of_f32(lossR),
                          "loss %.9g (stored: %.9g), but the float32 loss gives %.9g",
                          (double)loss16, (double)loss_st16, (double)lossR) &&
              exact16("dlogits (+=)", &D.h, &D.r) && exact16("dlogits (stored)", &st16, &stR);
    Tensor dF = to32(&d0);
    const float lossF = softmax_cross_entropy_fast(&dF, &z, labels, 1.0f);
    double *E = dzeros(N * K), *S = dzeros(N * K), El = 0, Sl = 0;
    for (int n = 0; n < N; n++) {
        const float *zr = z.data + n * K;
        double mx = zr[0], sum = 0, pz = 0;
        for (int j = 1; j < K; j++) mx = zr[j] > mx ? zr[j] : mx;
        for (int j = 0; j < K; j++) sum += exp(zr[j] - mx);
        for (int j = 0; j < K; j++) pz += exp(zr[j] - mx) / sum * fabs(zr[j]);
        El += (pz + fabs(zr[labels[n]])) / N;
        Sl += (log(sum) + fabs(mx) + fabs(zr[labels[n]])) / N;
        for (int j = 0; j < K; j++) {
            const int i = n * K + j;
            const double p = exp(zr[j] - mx) / sum;
            E[i] = fabs(d0.data[i]) + fabs(dF.data[i]) + p * (fabs(zr[j]) + pz) / N;
            S[i] = fabs(d0.data[i]) + (p + 1.0) / N;
        }
    }
    Tensor l16 = tensor_zeros(1, 1), lF = tensor_zeros(1, 1);
    l16.data[0] = loss16, lF.data[0] = lossF;
    ok = ok && near("loss", &l16, &lF, &El, &Sl) && near("dlogits", &D.h, &dF, E, S);
    free(E), free(S);
    free_pair(&Z), free_pair(&D);
    FREE_ALL(&z, &d0, &st16, &stR, &dF, &l16, &lF);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ the loss scale */

/* The definition of softmax_xent.h's scaled gradient for one row of K < 8 logits (the
 * layer's block of 2048 is then the whole row and its sum one float sum in column
 * order), written here from the formula, not through the layer: zmax the row's maximum,
 * e_j = softmax_exp(z_j - zmax) (float), sum = e_0 + ... + e_{K-1} (float), s_n = S *
 * (1/N) (float), a = (float)(s_n * exp(0) / sum) (in double), g_j = e_j a (float),
 * g_label -= s_n. volatile: each product rounded to float, as the layer stores it. */
static void xent_definition(float *g, const float *z, int K, int label, float S, int N) {
    float zmax = z[0], sum = 0.0f;
    for (int j = 1; j < K; j++) zmax = z[j] > zmax ? z[j] : zmax;
    volatile float e[8];
    for (int j = 0; j < K; j++) e[j] = softmax_exp(z[j] - zmax), sum += e[j];
    const float s_n = S * (1.0f / (float)N);
    const float a = (float)((double)s_n / (double)sum);
    for (int j = 0; j < K; j++) {
        volatile float p = e[j] * a;
        g[j] = p;
    }
    g[label] -= s_n;
}

/* The loss scale S of softmax_cross_entropy_fast (fp16's dynamic loss scaling, issue 28):
 *  - rows of 7 logits, S = 1, 2^10, 2^16: the 16-bit dlogits (stored, and added to
 *    zeros) equal the definition above on the converted logits, rounded once, bit for
 *    bit; row 0's gradient (logits 12, its label, against -6 to -9: p/N below 4e-9)
 *    rounds to 0 in float16 unscaled, and scaled keeps digits: each entry nonzero and
 *    within one rounding of S times the float32 gradient (but the label's, p - 1 =
 *    -1.5e-8, which float32's sum near 1 already loses: 0 at every S);
 *  - 53 and 2,500 classes (two of the layer's blocks), added to old values: the 16-bit
 *    result equals the float32 layer with S on the converted tensors, rounded; the float32
 *    layer with S = 2^k is S times its S = 1 gradient bit for bit, with S = 1000 within
 *    four float32 roundings of it; the loss is the unscaled one, bit for bit, at every S. */
static int check_xent_scaled(void) {
    enum { N = 4, K = 7 };
    static const float scales[] = {1.0f, 0x1p10f, 0x1p16f};
    Tensor z = rnd(31, -4, 4, N, K);
    const float flush[K] = {12, -6, -7, -8, -6.5f, -9, -7.5f};
    memcpy(z.data, flush, sizeof flush);
    int labels[N] = {0, 3, 6, 1};
    Pair Z = pair(&z);
    bool ok = true;
    float loss1 = 0;
    Tensor want = tensor_zeros(2, N, K), unscaled = tensor_zeros(2, N, K);
    for (int k = 0; k < 3 && ok; k++) {
        const float S = scales[k];
        for (int n = 0; n < N; n++)
            xent_definition(want.data + n * K, Z.r.data + n * K, K, labels[n], S, N);
        if (k == 0) tensor_copy(&unscaled, &want);
        Tensor st = zeros16_like(&z), add = zeros16_like(&z);
        const float ls = softmax_cross_entropy_fast_store(&st, &Z.h, labels, S);
        const float la = softmax_cross_entropy_fast(&add, &Z.h, labels, S);
        if (k == 0) loss1 = ls;
        char what[80];
        snprintf(what, sizeof what, "S = 2^%d: dlogits (stored)", (int)log2f(S));
        ok = exact16(what, &st, &want) && ok;
        snprintf(what, sizeof what, "S = 2^%d: dlogits (added to zeros)", (int)log2f(S));
        ok = exact16(what, &add, &want) && ok;
        ok = expect_true(dtype_bits_of_f32(ls) == dtype_bits_of_f32(loss1) &&
                         dtype_bits_of_f32(la) == dtype_bits_of_f32(loss1),
                         "S = %g: loss %.9g (added: %.9g), unscaled %.9g", (double)S, (double)ls,
                         (double)la, (double)loss1) && ok;
        if (FMT->dt == DTYPE_F16) { /* row 0 but its label: 0 unscaled, kept when scaled */
            int zero = 0;
            double worst = 0;
            for (int j = 0; j < K; j++) {
                if (j == labels[0]) continue;
                const double g = at(&st, j), exact = (double)S * unscaled.data[j];
                zero += g == 0.0;
                const double err = fabs(g - exact) / (FMT->u * fabs(exact) + FMT->eta);
                worst = err > worst ? err : worst;
            }
            if (k == 0)
                ok = expect_true(zero == K - 1, "unscaled, %d of row 0's %d float16 entries "
                                 "besides the label's are 0 (its float32 gradient: %.3g, %.3g)",
                                 zero, K - 1, (double)unscaled.data[0],
                                 (double)unscaled.data[2]) && ok;
            else
                ok = expect_true(zero == 0 && worst <= 1.0, "S = %g: %d of row 0's entries are "
                                 "0, the worst %.2f of one rounding", (double)S, zero, worst) && ok;
            if (k > 0)
                check_show("float16, S = 2^%d: row 0's %d entries 0 unscaled are all nonzero, "
                           "within %.2f of one rounding of S x float32", (int)log2f(S), K - 1 - zero,
                           worst);
            ok = expect_true(at(&st, labels[0]) == 0.0 && want.data[labels[0]] == 0.0f,
                             "row 0's label entry %g, its float32 value %g: not the 0 of a "
                             "float32 sum near 1", at(&st, labels[0]),
                             (double)want.data[labels[0]]) && ok;
        }
        FREE_ALL(&st, &add);
    }
    FREE_ALL(&want, &unscaled);
    free_pair(&Z);
    tensor_free(&z);
    /* larger rows, several blocks, added to old values */
    static const int shapes[][2] = {{6, 53}, {3, 2500}};
    static const float more[] = {0x1p10f, 0x1p16f, 1000.0f};
    for (int c = 0; c < 2 && ok; c++) {
        const int n_ = shapes[c][0], k_ = shapes[c][1];
        Tensor x = rnd(41 + c, -4, 4, n_, k_), d0 = rnd(43 + c, -0.01f, 0.01f, n_, k_);
        int *lab = malloc(sizeof(int) * (size_t)n_);
        for (int n = 0; n < n_; n++) lab[n] = (n * 17 + 5) % k_;
        Pair X = pair(&x);
        Tensor g1 = tensor_zeros(2, n_, k_);
        const float l1 = softmax_cross_entropy_fast_store(&g1, &X.r, lab, 1.0f);
        for (int k = 0; k < 3 && ok; k++) {
            const float S = more[k], s_n = S * (1.0f / (float)n_);
            Tensor dS = tensor_zeros(2, n_, k_); /* old values of a scaled gradient's size */
            for (int64_t i = 0; i < d0.size; i++) dS.data[i] = d0.data[i] * S;
            Pair D = pair(&dS);
            const float l16 = softmax_cross_entropy_fast(&D.h, &X.h, lab, S);
            const float lR = softmax_cross_entropy_fast(&D.r, &X.r, lab, S);
            Tensor gS = tensor_zeros(2, n_, k_);
            softmax_cross_entropy_fast_store(&gS, &X.r, lab, S);
            ok = exact16("dlogits (+=), scaled", &D.h, &D.r) &&
                 expect_true(l16 == l1 && lR == l1, "%d x %d, S = %g: loss %.9g (float32: %.9g), "
                             "unscaled %.9g", n_, k_, (double)S, (double)l16, (double)lR, (double)l1);
            const bool pow2 = S == ldexpf(1.0f, (int)log2f(S));
            for (int64_t i = 0; ok && i < gS.size; i++) {
                const double want_i = (double)S * g1.data[i], got_i = gS.data[i];
                if (pow2 && fabsf(g1.data[i]) >= 0x1p-126f)
                    ok = expect_true(got_i == want_i, "%d x %d, S = %g: float32 gradient [%lld] "
                                     "%.9g, not S x %.9g", n_, k_, (double)S, (long long)i, got_i,
                                     (double)g1.data[i]);
                else if (!pow2)
                    ok = expect_true(fabs(got_i - want_i) <= 0x1p-22 * (fabs(want_i) + s_n),
                                     "%d x %d, S = %g: float32 gradient [%lld] %.9g, S x the "
                                     "unscaled one %.9g", n_, k_, (double)S, (long long)i,
                                     got_i, want_i);
            }
            free_pair(&D);
            FREE_ALL(&gS, &dS);
        }
        free_pair(&X);
        FREE_ALL(&x, &d0, &g1);
        free(lab);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ embedding */

static int check_embedding(void) {
    const int V = 11, D = 24, N = 9, first = 3, Vr = 5;
    const float scale = sqrtf((float)D);
    const int tokens[9] = {4, 0, 10, 4, 7, 3, 9, 4, 6};
    Tensor tab = rnd(31, -1, 1, V, D), slice = rnd(32, -1, 1, Vr, D), dy = rnd(33, -1, 1, N, D);
    Tensor dt0 = rnd(34, -1, 1, V, D), ds0 = rnd(35, -1, 1, Vr, D);
    Pair T = pair(&tab), SL = pair(&slice), DY = pair(&dy);
    Tensor out16 = tensor_zeros_typed(DEVICE_CPU, FMT->dt, 2, N, D), rows16 = zeros16_like(&out16);
    Tensor dt16 = to32(&dt0), ds16 = to32(&ds0);
    embedding_forward(&out16, tokens, &T.h, scale);
    embedding_forward_rows(&rows16, tokens, &SL.h, scale, first, V);
    embedding_backward(&dt16, &DY.h, tokens, scale);
    embedding_backward_rows(&ds16, &DY.h, tokens, scale, first, V);
    Tensor outR = tensor_zeros(2, N, D), rowsR = tensor_zeros(2, N, D), dtR = to32(&dt0), dsR = to32(&ds0);
    embedding_forward(&outR, tokens, &T.r, scale);
    embedding_forward_rows(&rowsR, tokens, &SL.r, scale, first, V);
    embedding_backward(&dtR, &DY.r, tokens, scale);
    embedding_backward_rows(&dsR, &DY.r, tokens, scale, first, V);
    bool ok = exact16("out", &out16, &outR) && exact16("out (rows)", &rows16, &rowsR) &&
              exact32("dtable", &dt16, &dtR) && exact32("dtable (rows)", &ds16, &dsR);
    Tensor outF = tensor_zeros(2, N, D), rowsF = tensor_zeros(2, N, D), dtF = to32(&dt0), dsF = to32(&ds0);
    embedding_forward(&outF, tokens, &tab, scale);
    embedding_forward_rows(&rowsF, tokens, &slice, scale, first, V);
    embedding_backward(&dtF, &dy, tokens, scale);
    embedding_backward_rows(&dsF, &dy, tokens, scale, first, V);
    double *E = dzeros(N * D), *S = dzeros(N * D), *E2 = dzeros(N * D), *S2 = dzeros(N * D);
    for (int i = 0; i < N * D; i++) {
        E[i] = 2 * fabs(outF.data[i]), S[i] = fabs(outF.data[i]);
        E2[i] = 2 * fabs(rowsF.data[i]), S2[i] = fabs(rowsF.data[i]);
    }
    ok = ok && near("out", &out16, &outF, E, S) && near("out (rows)", &rows16, &rowsF, E2, S2);
    free(E), free(S), free(E2), free(S2);
    E = dzeros(V * D), S = dzeros(V * D), E2 = dzeros(Vr * D), S2 = dzeros(Vr * D);
    for (int n = 0; n < N; n++)
        for (int d = 0; d < D; d++) {
            const double c = fabs(scale * dy.data[n * D + d]);
            E[tokens[n] * D + d] += c;
            const int local = tokens[n] - first;
            if (local >= 0 && local < Vr) E2[local * D + d] += c;
        }
    for (int i = 0; i < V * D; i++) S[i] = E[i] + fabs(dt0.data[i]);
    for (int i = 0; i < Vr * D; i++) S2[i] = E2[i] + fabs(ds0.data[i]);
    ok = ok && near("dtable", &dt16, &dtF, E, S) && near("dtable (rows)", &ds16, &dsF, E2, S2);
    free(E), free(S), free(E2), free(S2);
    free_pair(&T), free_pair(&SL), free_pair(&DY);
    FREE_ALL(&tab, &slice, &dy, &dt0, &ds0, &out16, &rows16, &dt16, &ds16, &outR, &rowsR, &dtR,
             &dsR, &outF, &rowsF, &dtF, &dsF);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ positional */

static int check_positional(void) {
    const int T = 5, B = 2, D = 16;
    Tensor pe = tensor_zeros(2, 8, D);
    positional_table_fill(&pe);
    Tensor x = rnd(41, -1, 1, B * T, D);
    Pair X = pair(&x);
    Tensor out16 = zeros16_like(&x), outR = tensor_zeros(2, B * T, D), outF = tensor_zeros(2, B * T, D);
    positional_forward(&out16, &X.h, &pe, T);
    positional_forward(&outR, &X.r, &pe, T);
    positional_forward(&outF, &x, &pe, T);
    double *E = dzeros(x.size), *S = dzeros(x.size);
    for (int i = 0; i < x.size; i++) {
        E[i] = fabs(x.data[i]) + fabs(outF.data[i]);
        S[i] = fabs(x.data[i]) + fabs(pe.data[(i / D) % T * D + i % D]);
    }
    const bool ok = exact16("out", &out16, &outR) && near("out", &out16, &outF, E, S);
    free(E), free(S);
    free_pair(&X);
    FREE_ALL(&pe, &x, &out16, &outR, &outF);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ dropout */

static void dropout_run(Tensor *out, Tensor *mask, const Tensor *in, DropoutWindow w) {
    Rng rng;
    rng_seed(&rng, 2024, 0); /* the same key in every run */
    dropout_forward_window(out, mask, in, 0.3f, true, &rng, w);
}

static int check_dropout(void) {
    const int R = 7, C = 13;
    const DropoutWindow windows[2] = {DROPOUT_WHOLE, {C, 40, 9}};
    bool ok = true;
    for (int k = 0; k < 2 && ok; k++) {
        const char *tag = k ? " (window)" : "";
        char name[64];
        Tensor x = rnd(51, -1, 1, R, C), dy = rnd(52, -1, 1, R, C), din0 = rnd(53, -1, 1, R, C);
        Pair X = pair(&x), DY = pair(&dy), DIN = pair(&din0);
        Tensor out16 = zeros16_like(&x), m16 = tensor_zeros(2, R, C);
        Tensor outR = tensor_zeros(2, R, C), mR = tensor_zeros(2, R, C);
        Tensor outF = tensor_zeros(2, R, C), mF = tensor_zeros(2, R, C), dinF = to32(&din0);
        dropout_run(&out16, &m16, &X.h, windows[k]);
        dropout_backward(&DIN.h, &DY.h, &m16);
        dropout_run(&outR, &mR, &X.r, windows[k]);
        dropout_backward(&DIN.r, &DY.r, &mR);
        dropout_run(&outF, &mF, &x, windows[k]);
        dropout_backward(&dinF, &dy, &mF);
        snprintf(name, sizeof name, "out%s", tag);
        ok = exact16(name, &out16, &outR) && exact32("mask", &m16, &mR) &&
             exact16("din", &DIN.h, &DIN.r);
        double *E = dzeros(x.size), *S = dzeros(x.size), *E2 = dzeros(x.size), *S2 = dzeros(x.size);
        for (int i = 0; i < x.size; i++) {
            E[i] = 2 * fabs(outF.data[i]), S[i] = fabs(outF.data[i]);
            const double c = fabs(dy.data[i] * mF.data[i]);
            E2[i] = fabs(din0.data[i]) + c + fabs(dinF.data[i]), S2[i] = fabs(din0.data[i]) + c;
        }
        ok = ok && near(name, &out16, &outF, E, S) && exact32("mask", &m16, &mF) &&
             near("din", &DIN.h, &dinF, E2, S2);
        free(E), free(S), free(E2), free(S2);
        free_pair(&X), free_pair(&DY), free_pair(&DIN);
        FREE_ALL(&x, &dy, &din0, &out16, &m16, &outR, &mR, &outF, &mF, &dinF);
    }
    /* evaluation: the identity, no mask */
    Tensor x = rnd(54, -1, 1, 40, 0);
    Tensor x16 = to16(&x), y16 = zeros16_like(&x);
    dropout_forward(&y16, NULL, &x16, 0.3f, false, NULL);
    ok = ok && expect_true(memcmp(x16.bits16, y16.bits16, tensor_bytes(&x16)) == 0,
                           "evaluation: the output is not the input");
    FREE_ALL(&x, &x16, &y16);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ relu, gelu */

static double gelu_d1(double x) { return 0.5 * (1 + erf(x / sqrt(2))) + x * exp(-x * x / 2) / sqrt(2 * M_PI); }
static double gelu_d2(double x) { return exp(-x * x / 2) / sqrt(2 * M_PI) * (2 - x * x); }

/* relu (gelu = false) or gelu: forward and backward, (1) and (2). */
static bool activation(bool gelu) {
    const int n = 301;
    Tensor x = rnd(61, -3, 3, n, 0), dy = rnd(62, -1, 1, n, 0), din0 = rnd(63, -1, 1, n, 0);
    Pair X = pair(&x), DY = pair(&dy), DIN = pair(&din0);
    Tensor out16 = zeros16_like(&x), outR = tensor_zeros(1, n), outF = tensor_zeros(1, n);
    Tensor dinF = to32(&din0);
    if (gelu) {
        gelu_forward(&out16, &X.h);
        gelu_backward(&DIN.h, &DY.h, &X.h);
        gelu_forward(&outR, &X.r);
        gelu_backward(&DIN.r, &DY.r, &X.r);
        gelu_forward(&outF, &x);
        gelu_backward(&dinF, &dy, &x);
    } else { /* the backward reads the forward's output, as stored by each run */
        relu_forward(&out16, &X.h);
        relu_backward(&DIN.h, &DY.h, &out16);
        relu_forward(&outR, &X.r);
        Tensor out16r = to32(&out16);
        relu_backward(&DIN.r, &DY.r, &out16r);
        tensor_free(&out16r);
        relu_forward(&outF, &x);
        relu_backward(&dinF, &dy, &outF);
    }
    bool ok = exact16("out", &out16, &outR) && exact16("din", &DIN.h, &DIN.r);
    double *E = dzeros(n), *S = dzeros(n), *E2 = dzeros(n), *S2 = dzeros(n);
    for (int i = 0; i < n; i++) {
        const double xi = x.data[i], g = dy.data[i], old = fabs(din0.data[i]);
        if (gelu) {
            E[i] = fabs(gelu_d1(xi) * xi) + fabs(outF.data[i]);
            E2[i] = old + fabs(g * gelu_d1(xi)) + fabs(g * gelu_d2(xi) * xi) + fabs(dinF.data[i]);
            S2[i] = old + fabs(g) * 2;
        } else {
            E[i] = fabs(xi) + fabs(outF.data[i]);
            E2[i] = old + fabs(g) + fabs(dinF.data[i]);
            S2[i] = old + fabs(g);
        }
        S[i] = fabs(xi);
    }
    ok = ok && near("out", &out16, &outF, E, S) && near("din", &DIN.h, &dinF, E2, S2);
    free(E), free(S), free(E2), free(S2);
    free_pair(&X), free_pair(&DY), free_pair(&DIN);
    FREE_ALL(&x, &dy, &din0, &out16, &outR, &outF, &dinF);
    return ok;
}
static int check_relu(void) { return activation(false) ? CHECK_PASS : CHECK_FAIL; }
static int check_gelu(void) { return activation(true) ? CHECK_PASS : CHECK_FAIL; }

/* ------------------------------------------------------------ add */

static int check_add(void) {
    const int n = 257;
    Tensor a = rnd(71, -1, 1, n, 0), b = rnd(72, -1, 1, n, 0), dy = rnd(73, -1, 1, n, 0);
    Tensor da0 = rnd(74, -1, 1, n, 0), db0 = rnd(75, -1, 1, n, 0);
    Pair A = pair(&a), B = pair(&b), DY = pair(&dy), DA = pair(&da0), DB = pair(&db0);
    Tensor out16 = zeros16_like(&a), outR = tensor_zeros(1, n), outF = tensor_zeros(1, n);
    Tensor daF = to32(&da0), dbF = to32(&db0);
    add_forward(&out16, &A.h, &B.h);
    add_backward(&DA.h, &DB.h, &DY.h);
    add_forward(&outR, &A.r, &B.r);
    add_backward(&DA.r, &DB.r, &DY.r);
    add_forward(&outF, &a, &b);
    add_backward(&daF, &dbF, &dy);
    bool ok = exact16("out", &out16, &outR) && exact16("da", &DA.h, &DA.r) &&
              exact16("db", &DB.h, &DB.r);
    double *E = dzeros(n), *S = dzeros(n), *Ea = dzeros(n), *Sa = dzeros(n), *Eb = dzeros(n), *Sb = dzeros(n);
    for (int i = 0; i < n; i++) {
        E[i] = fabs(a.data[i]) + fabs(b.data[i]) + fabs(outF.data[i]);
        S[i] = fabs(a.data[i]) + fabs(b.data[i]);
        Ea[i] = fabs(da0.data[i]) + fabs(dy.data[i]) + fabs(daF.data[i]);
        Sa[i] = fabs(da0.data[i]) + fabs(dy.data[i]);
        Eb[i] = fabs(db0.data[i]) + fabs(dy.data[i]) + fabs(dbF.data[i]);
        Sb[i] = fabs(db0.data[i]) + fabs(dy.data[i]);
    }
    ok = ok && near("out", &out16, &outF, E, S) && near("da", &DA.h, &daF, Ea, Sa) &&
         near("db", &DB.h, &dbF, Eb, Sb);
    free(E), free(S), free(Ea), free(Sa), free(Eb), free(Sb);
    free_pair(&A), free_pair(&B), free_pair(&DY), free_pair(&DA), free_pair(&DB);
    FREE_ALL(&a, &b, &dy, &da0, &db0, &out16, &outR, &outF, &daF, &dbF);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ in place, the table */

static bool same16(const char *what, const Tensor *a, const Tensor *b) {
    return expect_true(memcmp(a->bits16, b->bits16, tensor_bytes(a)) == 0,
                       "%s: in place differs from out of place", what);
}

/* Layers whose output may be their input: one float32 view, the same bits. */
static int check_in_place(void) {
    const int T = 4, D = 8, rows = 8;
    Tensor x = rnd(81, -2, 2, rows, D), y = rnd(82, -2, 2, rows, D);
    Tensor pe = tensor_zeros(2, T, D), m = tensor_zeros(2, rows, D);
    positional_table_fill(&pe);
    Tensor a = to16(&x), b = to16(&y), o = zeros16_like(&x), io = to16(&x);
    bool ok = true;
    relu_forward(&o, &a), relu_forward(&io, &io);
    ok = same16("relu", &io, &o) && ok;
    tensor_convert(&io, &x);
    positional_forward(&o, &a, &pe, T), positional_forward(&io, &io, &pe, T);
    ok = same16("positional", &io, &o) && ok;
    tensor_convert(&io, &x);
    dropout_run(&o, &m, &a, DROPOUT_WHOLE), dropout_run(&io, &m, &io, DROPOUT_WHOLE);
    ok = same16("dropout", &io, &o) && ok;
    tensor_convert(&io, &x);
    add_forward(&o, &a, &b), add_forward(&io, &io, &b);
    ok = same16("add", &io, &o) && ok;
    tensor_convert(&io, &x);
    int labels[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    const float l1 = softmax_cross_entropy_fast_store(&o, &a, labels, 1.0f);
    const float l2 = softmax_cross_entropy_fast_store(&io, &io, labels, 1.0f);
    ok = same16("softmax_cross_entropy_fast_store", &io, &o) &&
         expect_true(l1 == l2, "stored in place: loss %g, else %g", (double)l2, (double)l1) && ok;
    FREE_ALL(&x, &y, &pe, &m, &a, &b, &o, &io);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The CPU table keeps its entries (the dispatch is inside them), and a 16-bit call
 * through it is the direct call. */
static int check_table(void) {
    const LayerOps *L = layer_ops(DEVICE_CPU);
    bool ok = expect_true(L->linear_forward == linear_forward && L->linear_backward == linear_backward &&
                              L->layernorm_forward == layernorm_forward &&
                              L->layernorm_backward == layernorm_backward &&
                              L->softmax_cross_entropy_fast == softmax_cross_entropy_fast &&
                              L->embedding_forward == embedding_forward &&
                              L->embedding_forward_rows == embedding_forward_rows &&
                              L->embedding_backward_rows == embedding_backward_rows &&
                              L->positional_forward == positional_forward &&
                              L->dropout_forward_window == dropout_forward_window &&
                              L->dropout_backward == dropout_backward &&
                              L->relu_forward == relu_forward && L->gelu_forward == gelu_forward &&
                              L->gelu_backward == gelu_backward && L->add_forward == add_forward &&
                              L->add_backward == add_backward,
                          "layer_ops(DEVICE_CPU) holds other functions than the layers'");
    Tensor x = rnd(91, -1, 1, 3, 8), w = rnd(92, -1, 1, 4, 8), b = rnd(93, -1, 1, 4, 0);
    Tensor xh = to16(&x), wh = to16(&w), bh = to16(&b);
    Tensor o1 = tensor_zeros_typed(DEVICE_CPU, FMT->dt, 2, 3, 4), o2 = zeros16_like(&o1);
    L->linear_forward(&o1, &xh, &wh, &bh);
    linear_forward(&o2, &xh, &wh, &bh);
    ok = same16("linear_forward through the table", &o1, &o2) && ok;
    FREE_ALL(&x, &w, &b, &xh, &wh, &bh, &o1, &o2);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ refusals */

static Tensor t16(DType dt, int a, int b) { return tensor_zeros_typed(DEVICE_CPU, dt, 2, a, b); }

static void mixed_linear(void *arg) { /* bfloat16 activations, a float32 weight */
    (void)arg;
    Tensor out = t16(DTYPE_BF16, 2, 3), in = t16(DTYPE_BF16, 2, 4), w = tensor_zeros(2, 3, 4);
    Tensor b = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 1, 3);
    linear_forward(&out, &in, &w, &b);
}
static void mixed_formats(void *arg) { /* bfloat16 and float16 in one call */
    (void)arg;
    Tensor out = t16(DTYPE_F16, 2, 4), a = t16(DTYPE_F16, 2, 4), b = t16(DTYPE_BF16, 2, 4);
    add_forward(&out, &a, &b);
}
static void grad16(void *arg) { /* a 16-bit parameter gradient */
    (void)arg;
    Tensor din = t16(DTYPE_BF16, 2, 4), dout = t16(DTYPE_BF16, 2, 3), in = t16(DTYPE_BF16, 2, 4);
    Tensor w = t16(DTYPE_BF16, 3, 4), dw = t16(DTYPE_BF16, 3, 4), db = tensor_zeros(1, 3);
    linear_backward(&din, &dw, &db, &dout, &in, &w);
}
static void stat16(void *arg) { /* a 16-bit layer-norm statistic */
    (void)arg;
    Tensor out = t16(DTYPE_F16, 2, 4), in = t16(DTYPE_F16, 2, 4), mean = tensor_zeros(1, 2);
    Tensor rstd = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 1, 2);
    Tensor g = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 1, 4), b = g;
    layernorm_forward(&out, &mean, &rstd, &in, &g, &b, 1e-5f);
}
static void mask16(void *arg) { /* a 16-bit dropout mask */
    (void)arg;
    Tensor out = t16(DTYPE_BF16, 2, 4), in = t16(DTYPE_BF16, 2, 4), mask = t16(DTYPE_BF16, 2, 4);
    Rng rng;
    rng_seed(&rng, 1, 0);
    dropout_forward(&out, &mask, &in, 0.5f, true, &rng);
}
static void conv16(void *arg) {
    (void)arg;
    Tensor out = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 4, 1, 2, 3, 3);
    Tensor in = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 4, 1, 1, 5, 5);
    Tensor w = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 4, 2, 1, 3, 3);
    Tensor b = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 1, 2);
    conv2d_forward(&out, &in, &w, &b, 1, 0);
}
static void pool16(void *arg) {
    (void)arg;
    Tensor out = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 4, 1, 1, 2, 2);
    Tensor in = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 4, 1, 1, 4, 4);
    int argmax[4];
    maxpool2d_forward(&out, argmax, &in, 2, 2);
}
static void attention16(void *arg) {
    (void)arg;
    const int B = 1, T = 3, H = 2, D = 4;
    Tensor ctx = t16(DTYPE_BF16, B * T, D), qkv = t16(DTYPE_BF16, B * T, 3 * D);
    Tensor probs = tensor_zeros(4, B, H, T, T);
    attention_forward(&ctx, &probs, NULL, &qkv, 0.0f, false, NULL);
}
static void attention16_backward(void *arg) {
    (void)arg;
    const int B = 1, T = 3, H = 2, D = 4;
    Tensor dqkv = t16(DTYPE_BF16, B * T, 3 * D), dctx = t16(DTYPE_BF16, B * T, D);
    Tensor qkv = t16(DTYPE_BF16, B * T, 3 * D), probs = tensor_zeros(4, B, H, T, T);
    Tensor ds = tensor_zeros(1, T * T);
    attention_backward(&dqkv, &ds, &dctx, &qkv, &probs, NULL);
}
static void xent16(void *arg) {
    (void)arg;
    Tensor logits = t16(DTYPE_BF16, 2, 3), dlogits = t16(DTYPE_BF16, 2, 3);
    int labels[2] = {0, 1};
    softmax_cross_entropy(&dlogits, &logits, labels);
}

static void xent_scale0(void *arg) {
    (void)arg;
    Tensor logits = t16(DTYPE_F16, 2, 3), dlogits = t16(DTYPE_F16, 2, 3);
    int labels[2] = {0, 1};
    softmax_cross_entropy_fast(&dlogits, &logits, labels, 0.0f);
}

static int check_refusals(void) {
    ChildResult r;
    run_child(mixed_linear, NULL, &r);
    bool ok = expect_exit("linear, bfloat16 activations and a float32 weight", &r, 2, "linear.c",
                          "linear_forward", "weight is a float32 tensor but out is a bfloat16 one",
                          "share one dtype", (const char *)NULL);
    run_child(mixed_formats, NULL, &r);
    ok = expect_exit("add, float16 and bfloat16", &r, 2, "add.c", "add_forward",
                     "b is a bfloat16 tensor but out is a float16 one", (const char *)NULL) && ok;
    run_child(grad16, NULL, &r);
    ok = expect_exit("linear_backward, a bfloat16 dweight", &r, 2, "linear.c", "linear_backward",
                     "dweight is a bfloat16 tensor but must be float32", (const char *)NULL) && ok;
    run_child(stat16, NULL, &r);
    ok = expect_exit("layernorm_forward, a float16 rstd", &r, 2, "layernorm.c", "layernorm_forward",
                     "rstd is a float16 tensor but must be float32", (const char *)NULL) && ok;
    run_child(mask16, NULL, &r);
    ok = expect_exit("dropout, a bfloat16 mask", &r, 2, "dropout.c", "mask is a bfloat16 tensor "
                     "but must be float32", (const char *)NULL) && ok;
    run_child(conv16, NULL, &r);
    ok = expect_exit("conv2d_forward of bfloat16", &r, 2, "conv2d.c", "conv2d_forward: out is a "
                     "bfloat16 tensor", "float32 only", (const char *)NULL) && ok;
    run_child(pool16, NULL, &r);
    ok = expect_exit("maxpool2d_forward of float16", &r, 2, "maxpool2d.c", "maxpool2d_forward: out "
                     "is a float16 tensor", "float32 only", (const char *)NULL) && ok;
    run_child(attention16, NULL, &r);
    ok = expect_exit("attention_forward of bfloat16", &r, 2, "attention.c", "ctx is a bfloat16 "
                     "tensor", "float32 only", "layers/flash_attention.h", (const char *)NULL) && ok;
    run_child(attention16_backward, NULL, &r);
    ok = expect_exit("attention_backward of bfloat16", &r, 2, "attention.c", "attention_backward: "
                     "dqkv is a bfloat16 tensor", "layers/flash_attention.h", (const char *)NULL) && ok;
    run_child(xent_scale0, NULL, &r);
    ok = expect_exit("softmax_cross_entropy_fast, a loss scale of 0", &r, 2, "softmax_xent.c",
                     "loss scale of 0", "finite and positive", (const char *)NULL) && ok;
    run_child(xent16, NULL, &r);
    ok = expect_exit("softmax_cross_entropy of bfloat16", &r, 2, "softmax_xent.c",
                     "dlogits is a bfloat16 tensor", "softmax_cross_entropy_fast",
                     (const char *)NULL) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("layers: bfloat16 and float16 on the CPU");
    static const struct {
        const char *name;
        CheckFn fn;
    } LAYERS[] = {
        {"linear forward and backward", check_linear},
        {"layer norm forward and backward", check_layernorm},
        {"softmax_cross_entropy_fast (+= and stored)", check_xent},
        {"softmax_cross_entropy_fast with a loss scale (1, 2^10, 2^16; the definition; fp16's "
         "underflow kept)", check_xent_scaled},
        {"embedding forward and backward, and the _rows slice", check_embedding},
        {"positional_forward", check_positional},
        {"dropout forward (whole and window), backward, evaluation", check_dropout},
        {"relu forward and backward", check_relu},
        {"gelu forward and backward", check_gelu},
        {"add forward and backward", check_add},
        {"in place (relu, positional, dropout, add, stored loss): one view, the same bits", check_in_place},
        {"layer_ops(DEVICE_CPU) keeps the layers' functions; a 16-bit call through it", check_table},
    };
    const Fmt *fmts[2] = {&BF16, &F16};
    for (int f = 0; f < 2; f++) {
        FMT = fmts[f];
        for (size_t i = 0; i < sizeof LAYERS / sizeof LAYERS[0]; i++) {
            char name[200];
            snprintf(name, sizeof name, "%s: %s: rounded once where stored (bit for bit), and "
                     "within the %s bound of the float32 layer", dtype_name(FMT->dt),
                     LAYERS[i].name, FMT->dt == DTYPE_BF16 ? "2^-8" : "2^-11");
            if (LAYERS[i].fn == check_in_place || LAYERS[i].fn == check_table)
                snprintf(name, sizeof name, "%s: %s", dtype_name(FMT->dt), LAYERS[i].name);
            check_run(NULL, name, LAYERS[i].fn, 20);
        }
    }
    check_run(NULL, "refused: mixed dtypes, a 16-bit gradient, statistic or mask, a loss scale of 0, 16-bit conv2d, "
              "max-pool, unfused attention (naming flash attention) and the CNN's loss",
              check_refusals, 20);
    return check_end();
}
