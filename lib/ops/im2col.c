#include "im2col.h"

#include <string.h>

#include "core/check.h"
#include "ops/vec8.h"

ConvGeometry conv_geometry(int C, int H, int W, int KH, int KW, int stride, int pad) {
    CHECK(stride >= 1 && pad >= 0, "convolution stride %d, padding %d", stride, pad);
    CHECK(H + 2 * pad >= KH && W + 2 * pad >= KW,
          "a %dx%d kernel does not fit a %dx%d input with padding %d", KH, KW, H, W, pad);
    ConvGeometry g = {C, H, W, KH, KW, stride, pad, 0, 0};
    g.OH = (H + 2 * pad - KH) / stride + 1;
    g.OW = (W + 2 * pad - KW) / stride + 1;
    return g;
}

/* Rows here are short (8 floats for the CNN's second convolution), too short for a
 * vectorised loop to pay off: copy and add in blocks of 8 (one vector load and
 * store each, ops/vec8.h), then the tail one by one. */
static inline void copy_row(float *restrict dst, const float *restrict src, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) store8(dst + i, load8(src + i));
    for (; i < n; i++) dst[i] = src[i];
}

static inline void add_row(float *restrict dst, const float *restrict src, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) store8(dst + i, load8(dst + i) + load8(src + i));
    for (; i < n; i++) dst[i] += src[i];
}

/* Output columns ow whose input column iw = ow*stride - pad + kw lies inside [0, W). */
static void valid_range(int k, int stride, int pad, int in, int out, int *lo, int *hi) {
    int first = pad - k;          /* ow*stride >= pad - k */
    *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
    int last = in - 1 + pad - k;  /* ow*stride <= in - 1 + pad - k */
    *hi = last < 0 ? 0 : last / stride + 1;
    if (*hi > out) *hi = out;
    if (*lo > *hi) *lo = *hi;
}

void im2col(float *cols, const float *images, int nimg, const ConvGeometry *g) {
    const int OHW = g->OH * g->OW, ncols = nimg * OHW;
    for (int c = 0; c < g->C; c++)
        for (int kh = 0; kh < g->KH; kh++)
            for (int kw = 0; kw < g->KW; kw++) {
                float *row = cols + (size_t)((c * g->KH + kh) * g->KW + kw) * ncols;
                int ow_lo, ow_hi;
                valid_range(kw, g->stride, g->pad, g->W, g->OW, &ow_lo, &ow_hi);
                for (int n = 0; n < nimg; n++) {
                    const float *img = images + ((size_t)n * g->C + c) * g->H * g->W;
                    for (int oh = 0; oh < g->OH; oh++) {
                        float *dst = row + (size_t)n * OHW + (size_t)oh * g->OW;
                        int ih = oh * g->stride - g->pad + kh;
                        if (ih < 0 || ih >= g->H) {
                            memset(dst, 0, (size_t)g->OW * sizeof(float));
                            continue;
                        }
                        const float *src = img + (size_t)ih * g->W;
                        int shift = kw - g->pad; /* input column = ow * stride + shift */
                        for (int ow = 0; ow < ow_lo; ow++) dst[ow] = 0.0f;
                        if (g->stride == 1)
                            copy_row(dst + ow_lo, src + ow_lo + shift, ow_hi - ow_lo);
                        else
                            for (int ow = ow_lo; ow < ow_hi; ow++)
                                dst[ow] = src[ow * g->stride + shift];
                        for (int ow = ow_hi; ow < g->OW; ow++) dst[ow] = 0.0f;
                    }
                }
            }
}

void col2im(float *images, const float *cols, int nimg, const ConvGeometry *g) {
    const int OHW = g->OH * g->OW, ncols = nimg * OHW;
    /* Loop order (image, channel) outermost so each output pixel is written by one
     * (c, n) pair only: safe to parallelise over images by the caller. */
    for (int n = 0; n < nimg; n++)
        for (int c = 0; c < g->C; c++) {
            float *img = images + ((size_t)n * g->C + c) * g->H * g->W;
            for (int kh = 0; kh < g->KH; kh++)
                for (int kw = 0; kw < g->KW; kw++) {
                    const float *row = cols + (size_t)((c * g->KH + kh) * g->KW + kw) * ncols
                                       + (size_t)n * OHW;
                    int ow_lo, ow_hi;
                    valid_range(kw, g->stride, g->pad, g->W, g->OW, &ow_lo, &ow_hi);
                    for (int oh = 0; oh < g->OH; oh++) {
                        int ih = oh * g->stride - g->pad + kh;
                        if (ih < 0 || ih >= g->H) continue;
                        float *dst = img + (size_t)ih * g->W;
                        const float *src = row + (size_t)oh * g->OW;
                        int shift = kw - g->pad;
                        if (g->stride == 1)
                            add_row(dst + ow_lo + shift, src + ow_lo, ow_hi - ow_lo);
                        else
                            for (int ow = ow_lo; ow < ow_hi; ow++)
                                dst[ow * g->stride + shift] += src[ow];
                    }
                }
        }
}
