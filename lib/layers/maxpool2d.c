#include "maxpool2d.h"

#include "core/check.h"
#include "ops/vec8.h"
#include "rounded.h"

/* The common 2x2, stride 2 case, one output row: the four candidates of 8 outputs
 * at a time (even and odd columns of two input rows), compared in the same order
 * as the general loop below so that ties go to the first maximum; branch-free. */
static inline void take_larger(f8 *m, i32x8 *best, f8 v, i32x8 at) {
    i32x8 larger = *m < v; /* all bits set where v wins */
    *best = (at & larger) | (*best & ~larger);
    *m = (f8)(((i32x8)v & larger) | ((i32x8)*m & ~larger));
}

/* x: the row pair's top row, W floats before the bottom one; the argmax counts from
 * i0, rows IW apart (IW = W unless x is a wider buffer than the plane it stands for). */
static void pool2x2_row(float *restrict y, int *restrict arg, const float *restrict x, int W,
                        int i0, int IW, int OW) {
    const i32x8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
    /* A row that does not end on a vector ends on its last 8 outputs, overlapping some
     * done already (written again with the same values), not on a scalar tail: rows of
     * 12 for the CNN's first pool. done: the outputs written so far. */
    int done = 0;
    for (int ow = 0; OW >= 8 && done < OW; ow = done + 8 <= OW ? done : OW - 8) {
        const float *t = x + 2 * ow, *b = t + W;
        const int i = i0 + 2 * ow;
        f8 t0 = load8(t), t1 = load8(t + 8); /* top row */
        f8 b0 = load8(b), b1 = load8(b + 8); /* bottom row */
        f8 m = even_lanes8(t0, t1);
        i32x8 best = i + 2 * lane;
        take_larger(&m, &best, odd_lanes8(t0, t1), i + 2 * lane + 1);
        take_larger(&m, &best, even_lanes8(b0, b1), i + IW + 2 * lane);
        take_larger(&m, &best, odd_lanes8(b0, b1), i + IW + 2 * lane + 1);
        store8(y + ow, m);
        memcpy(arg + ow, &best, sizeof best);
        done = ow + 8;
    }
    for (int ow = done; ow < OW; ow++) {
        const float *t = x + 2 * ow;
        const int i = i0 + 2 * ow;
        float m = t[0];
        int best = i;
        const float v[3] = {t[1], t[W], t[W + 1]};
        const int at[3] = {i + 1, i + IW, i + IW + 1};
        for (int c = 0; c < 3; c++) {
            best = v[c] > m ? at[c] : best;
            m = v[c] > m ? v[c] : m;
        }
        y[ow] = m;
        arg[ow] = best;
    }
}

/* Rows of 4 outputs (the CNN's second pool, 8x8 -> 4x4): two output rows fill one
 * vector, the top candidates from input rows 2oh and 2oh + 2, the bottom ones from
 * 2oh + 1 and 2oh + 3; compared in the order of pool2x2_row. Returns the output rows
 * done (an even number; the last row of an odd count is pool2x2_row's). */
static int pool2x2_rows_of_4(float *restrict y, int *restrict arg, const float *restrict x,
                             int W, int IW, int OH) {
    const i32x8 at = {0, 2, 4, 6, 2 * IW, 2 * IW + 2, 2 * IW + 4, 2 * IW + 6};
    int oh = 0;
    for (; oh + 2 <= OH; oh += 2) {
        const float *r = x + (size_t)2 * oh * W;
        const f8 t0 = load8(r), b0 = load8(r + W), t1 = load8(r + 2 * W), b1 = load8(r + 3 * W);
        const i32x8 i = at + 2 * oh * IW;
        f8 m = even_lanes8(t0, t1);
        i32x8 best = i;
        take_larger(&m, &best, odd_lanes8(t0, t1), i + 1);
        take_larger(&m, &best, even_lanes8(b0, b1), i + IW);
        take_larger(&m, &best, odd_lanes8(b0, b1), i + IW + 1);
        store8(y + 4 * oh, m);
        memcpy(arg + 4 * oh, &best, sizeof best);
    }
    return oh;
}

void maxpool2d_check_forward(const Tensor *out, const Tensor *in, int kernel, int stride) {
    CHECK(kernel >= 1 && stride >= 1, "max-pool kernel %d, stride %d", kernel, stride);
    CHECK_SHAPE(in, -1, -1, -1, -1);
    const int H = in->shape[2], W = in->shape[3];
    CHECK(H >= kernel && W >= kernel, "max-pool kernel %d larger than the %dx%d input", kernel,
          H, W);
    CHECK_SHAPE(out, in->shape[0], in->shape[1], (H - kernel) / stride + 1,
                (W - kernel) / stride + 1);
}

void maxpool2d_check_backward(const Tensor *din, const Tensor *dout) {
    CHECK_SHAPE(din, -1, -1, -1, -1);
    CHECK_SHAPE(dout, din->shape[0], din->shape[1], -1, -1);
}

void maxpool2d_plane(float *y, int *arg, const float *x, int W, int IW, int OH, int OW, int kernel,
                     int stride) {
    if (kernel == 2 && stride == 2) {
        const int done = OW == 4 ? pool2x2_rows_of_4(y, arg, x, W, IW, OH) : 0;
        for (int oh = done; oh < OH; oh++)
            pool2x2_row(y + oh * OW, arg + oh * OW, x + 2 * oh * W, W, 2 * oh * IW, IW, OW);
        return;
    }
    for (int oh = 0; oh < OH; oh++)
        for (int ow = 0; ow < OW; ow++) {
            int best = (oh * stride) * W + ow * stride, best_at = (oh * stride) * IW + ow * stride;
            for (int kh = 0; kh < kernel; kh++)
                for (int kw = 0; kw < kernel; kw++) {
                    int idx = (oh * stride + kh) * W + ow * stride + kw;
                    if (x[idx] > x[best]) best = idx, best_at = (oh * stride + kh) * IW + ow * stride + kw;
                }
            y[oh * OW + ow] = x[best];
            arg[oh * OW + ow] = best_at;
        }
}

void maxpool2d_forward(Tensor *out, int *argmax, const Tensor *in, int kernel, int stride) {
    ROUNDED_REFUSE("the 16-bit path covers the transformer's layers; the CNN runs in float32", out, in);
    maxpool2d_check_forward(out, in, kernel, stride);
    CHECK_DEVICE(in, DEVICE_CPU);
    CHECK_DEVICE(out, DEVICE_CPU);
    const int N = in->shape[0], C = in->shape[1], H = in->shape[2], W = in->shape[3];
    const int OH = out->shape[2], OW = out->shape[3];

#pragma omp parallel for schedule(static)
    for (int plane = 0; plane < N * C; plane++)
        maxpool2d_plane(out->data + (size_t)plane * OH * OW, argmax + (size_t)plane * OH * OW,
                        in->data + (size_t)plane * H * W, W, W, OH, OW, kernel, stride);
}

void maxpool2d_backward(Tensor *din, const Tensor *dout, const int *argmax) {
    ROUNDED_REFUSE("the 16-bit path covers the transformer's layers; the CNN runs in float32", din, dout);
    maxpool2d_check_backward(din, dout);
    CHECK_DEVICE(din, DEVICE_CPU);
    CHECK_DEVICE(dout, DEVICE_CPU);
    const int planes = din->shape[0] * din->shape[1];
    const int HW = din->shape[2] * din->shape[3], OHW = dout->shape[2] * dout->shape[3];

#pragma omp parallel for schedule(static)
    for (int plane = 0; plane < planes; plane++) {
        float *dx = din->data + (size_t)plane * HW;
        const float *dy = dout->data + (size_t)plane * OHW;
        const int *arg = argmax + (size_t)plane * OHW;
        for (int i = 0; i < OHW; i++) dx[arg[i]] += dy[i];
    }
}
