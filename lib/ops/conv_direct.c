#include "conv_direct.h"

#include "core/check.h"
#include "ops/conv_direct16.h"
#include "ops/conv_plan.h"
#include "ops/plane_sum.h"
#include "ops/vec8.h"

/* One segment (ops/conv_plan.h): 8 output pixels of a row, one f8 (ops/vec8.h). */
enum { SEG = CONV_SEG };

/* Register blocks, in accumulators of 8 floats: the forward keeps OUT_CHANNELS x
 * ROWS of them, the weight gradient GRAD_CHANNELS x GRAD_TAPS, the input gradient
 * DIN_TAPS x ROWS, plus a few registers for the operands, of AVX2's 16. (AVX-512
 * builds, with 32 registers of 16 floats, take ops/conv_direct16.c instead.) */
enum { ROWS = 4, OUT_CHANNELS = 3, GRAD_CHANNELS = 3, GRAD_TAPS = 3, DIN_TAPS = 3 };

/* Keeps a loaded vector in a register: without it GCC re-reads it from memory as an
 * operand of every FMA that uses it, and the loads, not the FMAs, set the pace. */
static inline f8 in_register(f8 v) {
#if defined(__GNUC__) && defined(__AVX__)
    __asm__("" : "+x"(v));
#endif
    return v;
}

static inline int min_int(int a, int b) { return a < b ? a : b; }

bool conv_direct_fits(const ConvGeometry *g) {
    if (g->stride != 1 || g->pad != 0 || g->OW < SEG) return false;
    int nseg = (g->OW + SEG - 1) / SEG;
    return 4 * nseg * SEG <= 5 * g->OW; /* at most a quarter of the work repeated */
}

/* ------------------------------------------------------------------ forward */

/* ROWS segments x OUT_CHANNELS channels of one image. wt is the weight transposed,
 * [K, Cout], so the channels of one tap are adjacent. */
static void forward_block(float *out, const float *in, const float *wt, const float *bias,
                          int Cout, int OHW, const ConvPlan *p, int s0, int co0) {
    int xo[ROWS], yo[ROWS], co[OUT_CHANNELS];
    for (int r = 0; r < ROWS; r++) {
        int s = min_int(s0 + r, p->L - 1); /* past the end: redo the last one */
        xo[r] = p->seg_in[s];
        yo[r] = p->seg_out[s];
    }
    for (int j = 0; j < OUT_CHANNELS; j++) co[j] = min_int(co0 + j, Cout - 1);

    f8 acc[OUT_CHANNELS][ROWS];
    for (int j = 0; j < OUT_CHANNELS; j++)
        for (int r = 0; r < ROWS; r++) acc[j][r] = splat8(bias[co[j]]);
    for (int k = 0; k < p->K; k++) {
        const float *x = in + p->tap[k], *w = wt + (size_t)k * Cout;
        f8 wv[OUT_CHANNELS];
        for (int j = 0; j < OUT_CHANNELS; j++) wv[j] = splat8(w[co[j]]);
        for (int r = 0; r < ROWS; r++) {
            f8 xv = load8(x + xo[r]);
            for (int j = 0; j < OUT_CHANNELS; j++) acc[j][r] += wv[j] * xv;
        }
    }
    /* Stores of repeated rows and channels write the same values again. */
    for (int j = 0; j < OUT_CHANNELS; j++)
        for (int r = 0; r < ROWS; r++) store8(out + (size_t)co[j] * OHW + yo[r], acc[j][r]);
}

void conv_direct_forward(float *out, const float *in, const float *weight, const float *bias,
                         int N, int Cout, const ConvGeometry *g) {
    ConvPlan p = conv_plan_make(g);
    if (conv_direct16_takes(g)) {
        conv_direct16_forward(out, in, weight, bias, N, Cout, g, &p);
        conv_plan_free(&p);
        return;
    }
    const int OHW = g->OH * g->OW;
    const size_t in_img = (size_t)g->C * g->H * g->W, out_img = (size_t)Cout * OHW;
    float *wt = conv_weight_by_tap(weight, p.K, Cout, Cout);

#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        for (int s0 = 0; s0 < p.L; s0 += ROWS)
            for (int co0 = 0; co0 < Cout; co0 += OUT_CHANNELS)
                forward_block(out + n * out_img, in + n * in_img, wt, bias, Cout, OHW, &p, s0, co0);
    xfree(wt);
    conv_plan_free(&p);
}

/* ------------------------------------------------------------ weight gradient */

/* GRAD_CHANNELS x GRAD_TAPS weight gradients, summed over every segment of every
 * image: lanes hold the 8 pixels of a segment, added up at the end. */
static void weight_grad_block(float *dweight, const float *dout, const float *in, int N, int Cout,
                              size_t in_img, size_t out_img, int OHW, const ConvPlan *p, int co0,
                              int k0) {
    int co[GRAD_CHANNELS], tap[GRAD_TAPS];
    for (int j = 0; j < GRAD_CHANNELS; j++) co[j] = min_int(co0 + j, Cout - 1);
    for (int t = 0; t < GRAD_TAPS; t++) tap[t] = p->tap[min_int(k0 + t, p->K - 1)];

    f8 acc[GRAD_CHANNELS][GRAD_TAPS] = {{{0}}};
    for (int n = 0; n < N; n++) {
        const float *x = in + n * in_img, *dy = dout + n * out_img;
        for (int s = 0; s < p->L; s++) {
            f8 d[GRAD_CHANNELS];
            for (int j = 0; j < GRAD_CHANNELS; j++)
                d[j] = select8(load8(dy + (size_t)co[j] * OHW + p->seg_out[s]),
                               load_mask8(p->keep[s]));
            for (int t = 0; t < GRAD_TAPS; t++) {
                f8 xv = load8(x + tap[t] + p->seg_in[s]);
                for (int j = 0; j < GRAD_CHANNELS; j++) acc[j][t] += d[j] * xv;
            }
        }
    }
    for (int j = 0; j < GRAD_CHANNELS; j++)
        for (int t = 0; t < GRAD_TAPS; t++)
            if (co0 + j < Cout && k0 + t < p->K)
                dweight[(size_t)(co0 + j) * p->K + k0 + t] += lane_sum8(acc[j][t]);
}

void conv_direct_bias_grad(float *dbias, const float *dout, int N, int Cout, int OHW) {
#pragma omp parallel for schedule(static)
    for (int co = 0; co < Cout; co++) {
        float sum = 0.0f;
        for (int n = 0; n < N; n++) sum += plane_sum(dout + ((size_t)n * Cout + co) * OHW, OHW);
        dbias[co] += sum;
    }
}

void conv_direct_weight_grad(float *dweight, float *dbias, const float *dout, const float *in,
                             int N, int Cout, const ConvGeometry *g) {
    ConvPlan p = conv_plan_make(g);
    if (conv_direct16_takes(g)) {
        conv_direct16_weight_grad(dweight, dbias, dout, in, N, Cout, g, &p);
        conv_plan_free(&p);
        return;
    }
    const int OHW = g->OH * g->OW;
    conv_direct_bias_grad(dbias, dout, N, Cout, OHW);
    const size_t in_img = (size_t)g->C * g->H * g->W, out_img = (size_t)Cout * OHW;
    const int co_blocks = (Cout + GRAD_CHANNELS - 1) / GRAD_CHANNELS;
    const int tap_blocks = (p.K + GRAD_TAPS - 1) / GRAD_TAPS;
    const int group = conv_plan_image_group(g, Cout); /* (smaller groups measured slower) */

#pragma omp parallel
    for (int n0 = 0; n0 < N; n0 += group) {
        const int count = min_int(group, N - n0);
#pragma omp for collapse(2) schedule(static)
        for (int cb = 0; cb < co_blocks; cb++)
            for (int tb = 0; tb < tap_blocks; tb++)
                weight_grad_block(dweight, dout + n0 * out_img, in + n0 * in_img, count, Cout,
                                  in_img, out_img, OHW, &p, cb * GRAD_CHANNELS, tb * GRAD_TAPS);
    }
    conv_plan_free(&p);
}

/* ------------------------------------------------------------- input gradient */

/* For ROWS segments and DIN_TAPS taps of one image: sum over output channels of
 * weight x output gradient (one block of im2col's column gradient), added at once
 * onto the input pixels the taps met (col2im's job). wb holds this block's weights
 * as [Cout, DIN_TAPS]: one stream through memory. */
static void input_grad_block(float *din, const float *dout, const float *wb, int Cout, int OHW,
                             const ConvPlan *p, int s0, int k0) {
    int yo[ROWS], xo[ROWS];
    i32x8 keep[ROWS];
    for (int r = 0; r < ROWS; r++) {
        int s = min_int(s0 + r, p->L - 1);
        yo[r] = p->seg_out[s];
        xo[r] = p->seg_in[s];
        keep[r] = s0 + r < p->L ? load_mask8(p->keep[s]) : (i32x8){0}; /* a repeat adds nothing */
    }

    f8 acc[DIN_TAPS][ROWS] = {{{0}}};
    for (int co = 0; co < Cout; co++) {
        const float *w = wb + (size_t)co * DIN_TAPS, *dy = dout + (size_t)co * OHW;
        f8 wv[DIN_TAPS];
        for (int t = 0; t < DIN_TAPS; t++) wv[t] = splat8(w[t]);
        for (int r = 0; r < ROWS; r++) {
            f8 dv = in_register(load8(dy + yo[r]));
            for (int t = 0; t < DIN_TAPS; t++) acc[t][r] += wv[t] * dv;
        }
    }
    for (int t = 0; t < DIN_TAPS; t++) {
        if (k0 + t >= p->K) break;
        float *dx = din + p->tap[k0 + t];
        for (int r = 0; r < ROWS; r++)
            store8(dx + xo[r], load8(dx + xo[r]) + select8(acc[t][r], keep[r]));
    }
}

void conv_direct_input_grad(float *din, const float *dout, const float *weight, int N,
                            int Cout, const ConvGeometry *g) {
    ConvPlan p = conv_plan_make(g);
    if (conv_direct16_takes(g)) {
        conv_direct16_input_grad(din, dout, weight, N, Cout, g, &p);
        conv_plan_free(&p);
        return;
    }
    const int OHW = g->OH * g->OW;
    const size_t in_img = (size_t)g->C * g->H * g->W, out_img = (size_t)Cout * OHW;
    const int tap_blocks = (p.K + DIN_TAPS - 1) / DIN_TAPS;
    const size_t block_floats = (size_t)Cout * DIN_TAPS;
    float *wb = conv_weight_tap_blocks(weight, p.K, Cout, DIN_TAPS);

    /* one image per thread at a time: the blocks of an image add onto the same pixels */
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        for (int s0 = 0; s0 < p.L; s0 += ROWS)
            for (int tb = 0; tb < tap_blocks; tb++)
                input_grad_block(din + n * in_img, dout + n * out_img, wb + tb * block_floats,
                                 Cout, OHW, &p, s0, tb * DIN_TAPS);
    xfree(wb);
    conv_plan_free(&p);
}
