#include "conv_wide.h"

#include <string.h>

#include "core/check.h"
#include "ops/conv_plan.h"

/* Register blocks: accumulators plus the vectors loaded a step fill the 32 registers
 * of AVX-512 (16 of AVX2) without spilling. The vectors are ops/vec16.h's or vec8.h's. */
#if defined(__AVX512F__)
#include "ops/vec16.h"
typedef v16 vf;
#define loadv load16
#define storev store16
#define splatv splat16
enum { VW = 16, FWD_CHANNELS = 5, FWD_VECTORS = 4, GRAD_CHANNELS = 5, GRAD_TAPS = 5 };
#else
#include "ops/vec8.h"
typedef f8 vf;
#define loadv load8
#define storev store8
#define splatv splat8
enum { VW = 8, FWD_CHANNELS = 4, FWD_VECTORS = 3, GRAD_CHANNELS = 3, GRAD_TAPS = 4 };
#endif

/* The lanes added pairwise, halves first: a fixed order. */
static inline float lane_sum(vf v) {
    float a[VW];
    memcpy(a, &v, sizeof a);
    for (int w = VW / 2; w >= 1; w /= 2)
        for (int i = 0; i < w; i++) a[i] += a[i + w];
    return a[0];
}

static inline int min_int(int a, int b) { return a < b ? a : b; }

ConvWide conv_wide_plan(const ConvGeometry *g, int Cout) {
    CHECK(g->stride == 1 && g->pad == 0, "the wide-row convolution takes stride 1, no padding");
    ConvWide p = {.Cout = Cout, .K = g->C * g->KH * g->KW};
    const int block = FWD_VECTORS * VW;
    p.plane = (g->OH * g->W + block - 1) / block * block;
    p.tap = xmalloc((size_t)p.K * sizeof(int));
    int last = 0;
    for (int c = 0, k = 0; c < g->C; c++)
        for (int kh = 0; kh < g->KH; kh++)
            for (int kw = 0; kw < g->KW; kw++, k++) last = p.tap[k] = (c * g->H + kh) * g->W + kw;
    /* the last tap of the plane's last vector reads up to plane - 1 + last */
    const int need = p.plane + last, image = g->C * g->H * g->W;
    p.image = ((need > image ? need : image) + VW - 1) / VW * VW;
    return p;
}

void conv_wide_free(ConvWide *p) {
    xfree(p->tap);
    xfree(p->wt);
    *p = (ConvWide){0};
}

void conv_wide_weights(ConvWide *p, const float *weight) {
    xfree(p->wt);
    p->wt = conv_weight_by_tap(weight, p->K, p->Cout, p->Cout);
}

void conv_wide_pad(float *dst, const float *src, const ConvGeometry *g, const ConvWide *p) {
    const size_t image = (size_t)g->C * g->H * g->W;
    memcpy(dst, src, image * sizeof(float));
    memset(dst + image, 0, (p->image - image) * sizeof(float));
}

/* ------------------------------------------------------------------ forward */

void conv_wide_forward(float *out, const float *x, const float *bias, const ConvWide *p) {
    const int Cout = p->Cout;
    for (int p0 = 0; p0 < p->plane; p0 += FWD_VECTORS * VW)
        for (int co0 = 0; co0 < Cout; co0 += FWD_CHANNELS) {
            int co[FWD_CHANNELS]; /* past Cout: the last channel again, stored again */
            for (int j = 0; j < FWD_CHANNELS; j++) co[j] = min_int(co0 + j, Cout - 1);
            vf acc[FWD_CHANNELS][FWD_VECTORS];
            for (int j = 0; j < FWD_CHANNELS; j++)
                for (int r = 0; r < FWD_VECTORS; r++) acc[j][r] = splatv(bias[co[j]]);
            for (int k = 0; k < p->K; k++) {
                const float *xk = x + p->tap[k] + p0, *w = p->wt + (size_t)k * Cout;
                vf xv[FWD_VECTORS];
                for (int r = 0; r < FWD_VECTORS; r++) xv[r] = loadv(xk + r * VW);
                for (int j = 0; j < FWD_CHANNELS; j++) {
                    const vf wv = splatv(w[co[j]]);
                    for (int r = 0; r < FWD_VECTORS; r++) acc[j][r] += wv * xv[r];
                }
            }
            for (int j = 0; j < FWD_CHANNELS; j++)
                for (int r = 0; r < FWD_VECTORS; r++)
                    storev(out + (size_t)co[j] * p->plane + p0 + r * VW, acc[j][r]);
        }
}

/* ------------------------------------------------------------ weight gradient */

/* The GRAD_CHANNELS x GRAD_TAPS weight gradients from channel co0 and tap k0, summed
 * over the pixels of N images in lanes (in registers throughout), added up at the end. */
static void weight_grad_unit(float *dweight, const float *dout, const float *x, int N,
                             const ConvWide *p, int co0, int k0) {
    const int Cout = p->Cout, K = p->K, plane = p->plane;
    int co[GRAD_CHANNELS], tap[GRAD_TAPS]; /* past the end: the last again, counted nowhere */
    for (int j = 0; j < GRAD_CHANNELS; j++) co[j] = min_int(co0 + j, Cout - 1);
    for (int t = 0; t < GRAD_TAPS; t++) tap[t] = p->tap[min_int(k0 + t, K - 1)];
    vf acc[GRAD_CHANNELS][GRAD_TAPS];
    for (int j = 0; j < GRAD_CHANNELS; j++)
        for (int t = 0; t < GRAD_TAPS; t++) acc[j][t] = splatv(0.0f);
    for (int n = 0; n < N; n++) {
        const float *xn = x + (size_t)n * p->image, *dn = dout + (size_t)n * Cout * plane;
        for (int q = 0; q < plane; q += VW) {
            vf d[GRAD_CHANNELS];
            for (int j = 0; j < GRAD_CHANNELS; j++) d[j] = loadv(dn + (size_t)co[j] * plane + q);
            for (int t = 0; t < GRAD_TAPS; t++) {
                const vf xv = loadv(xn + tap[t] + q);
                for (int j = 0; j < GRAD_CHANNELS; j++) acc[j][t] += d[j] * xv;
            }
        }
    }
    for (int j = 0; j < GRAD_CHANNELS && co0 + j < Cout; j++)
        for (int t = 0; t < GRAD_TAPS && k0 + t < K; t++)
            dweight[(size_t)(co0 + j) * K + k0 + t] += lane_sum(acc[j][t]);
}

void conv_wide_weight_grad(float *dweight, const float *dout, const float *x, int N,
                           const ConvWide *p) {
    const int channel_blocks = (p->Cout + GRAD_CHANNELS - 1) / GRAD_CHANNELS;
    const int tap_blocks = (p->K + GRAD_TAPS - 1) / GRAD_TAPS;
    /* every unit owns its sums (no thread adds to another's), and takes the images
     * in order: the same bits on any number of threads */
#pragma omp parallel for collapse(2) schedule(static)
    for (int cb = 0; cb < channel_blocks; cb++)
        for (int tb = 0; tb < tap_blocks; tb++)
            weight_grad_unit(dweight, dout, x, N, p, cb * GRAD_CHANNELS, tb * GRAD_TAPS);
}
