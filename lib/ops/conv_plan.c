#include "conv_plan.h"

#include "core/check.h"
#include "ops/conv_direct.h"

enum { L2_BYTES = 1 << 20 };

static inline int min_int(int a, int b) { return a < b ? a : b; }

ConvPlan conv_plan_make(const ConvGeometry *g) {
    CHECK(conv_direct_fits(g), "direct convolution called for a shape it does not take");
    ConvPlan p;
    const int nseg = (g->OW + CONV_SEG - 1) / CONV_SEG;
    p.K = g->C * g->KH * g->KW;
    p.L = g->OH * nseg;
    p.tap = xmalloc((size_t)p.K * sizeof(int));
    p.seg_in = xmalloc((size_t)p.L * sizeof(int));
    p.seg_out = xmalloc((size_t)p.L * sizeof(int));
    p.keep = xmalloc((size_t)p.L * sizeof *p.keep);
    for (int c = 0, k = 0; c < g->C; c++)
        for (int kh = 0; kh < g->KH; kh++)
            for (int kw = 0; kw < g->KW; kw++) p.tap[k++] = (c * g->H + kh) * g->W + kw;
    for (int s = 0; s < p.L; s++) {
        int oh = s / nseg, first = s % nseg * CONV_SEG, ow0 = min_int(first, g->OW - CONV_SEG);
        p.seg_in[s] = oh * g->W + ow0;
        p.seg_out[s] = oh * g->OW + ow0;
        for (int i = 0; i < CONV_SEG; i++) p.keep[s][i] = ow0 + i >= first ? -1 : 0;
    }
    return p;
}

void conv_plan_free(ConvPlan *p) {
    xfree(p->tap);
    xfree(p->seg_in);
    xfree(p->seg_out);
    xfree(p->keep);
}

int conv_plan_image_group(const ConvGeometry *g, int Cout) {
    const size_t image_bytes = ((size_t)g->C * g->H * g->W + (size_t)Cout * g->OH * g->OW) * sizeof(float);
    return image_bytes < L2_BYTES ? (int)(L2_BYTES / image_bytes) : 1;
}

float *conv_weight_by_tap(const float *weight, int K, int Cout, int ld) {
    float *wt = xmalloc((size_t)K * ld * sizeof(float));
#pragma omp parallel for schedule(static) if (parallel : (int64_t)K * ld > 65536)
    for (int k = 0; k < K; k++)
        for (int co = 0; co < ld; co++) wt[(size_t)k * ld + co] = co < Cout ? weight[(size_t)co * K + k] : 0.0f;
    return wt;
}

float *conv_weight_tap_blocks(const float *weight, int K, int Cout, int taps) {
    const int blocks = (K + taps - 1) / taps;
    const size_t block_floats = (size_t)Cout * taps;
    float *wb = xmalloc((size_t)blocks * block_floats * sizeof(float));
#pragma omp parallel for schedule(static) if (parallel : (int64_t)blocks * block_floats > 65536)
    for (int tb = 0; tb < blocks; tb++)
        for (int co = 0; co < Cout; co++)
            for (int t = 0; t < taps; t++) {
                const int k = tb * taps + t;
                wb[tb * block_floats + (size_t)co * taps + t] = k < K ? weight[(size_t)co * K + k] : 0.0f;
            }
    return wb;
}
