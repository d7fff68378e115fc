/* TODO 1.1 and 1.2: the convolution, written straight from its definition.
 *
 *   out[n][co][oh][ow] = bias[co] + sum over c, kh, kw of
 *                        weight[co][c][kh][kw] * in[n][c][oh*stride - pad + kh][ow*stride - pad + kw]
 *
 * where a pixel outside the image (in the padding) counts as 0. The library does
 * the same sum as one matrix multiplication (lib/layers/conv2d.c); the grader
 * compares the two. */
#include "lesson.h"

/* Element (a, b, c, d) of a 4-D tensor. */
static inline float *at4(const Tensor *t, int a, int b, int c, int d) {
    return t->data + (((size_t)a * t->shape[1] + b) * t->shape[2] + c) * t->shape[3] + d;
}

void lesson_conv2d_forward(Tensor *out, const Tensor *in, const Tensor *weight,
                           const Tensor *bias, int stride, int pad) {
    const int N = in->shape[0], C = in->shape[1], H = in->shape[2], W = in->shape[3];
    const int Cout = weight->shape[0], KH = weight->shape[2], KW = weight->shape[3];
    const int OH = out->shape[2], OW = out->shape[3];
    CHECK_SHAPE(out, N, Cout, (H + 2 * pad - KH) / stride + 1, (W + 2 * pad - KW) / stride + 1);
#pragma omp parallel for collapse(2) schedule(static)
    for (int n = 0; n < N; n++)
        for (int co = 0; co < Cout; co++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    float sum = bias->data[co];
                    for (int c = 0; c < C; c++)
                        for (int kh = 0; kh < KH; kh++) {
                            int ih = oh * stride - pad + kh;
                            if (ih < 0 || ih >= H) continue; /* padding row: adds 0 */
                            for (int kw = 0; kw < KW; kw++) {
                                int iw = ow * stride - pad + kw;
                                if (iw < 0 || iw >= W) continue;
                                sum += *at4(weight, co, c, kh, kw) * *at4(in, n, c, ih, iw);
                            }
                        }
                    *at4(out, n, co, oh, ow) = sum;
                }
}

void lesson_conv2d_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                            const Tensor *in, const Tensor *weight, int stride, int pad) {
    const int N = in->shape[0], C = in->shape[1], H = in->shape[2], W = in->shape[3];
    const int Cout = weight->shape[0], KH = weight->shape[2], KW = weight->shape[3];
    const int OH = dout->shape[2], OW = dout->shape[3];
    CHECK_SAME_SHAPE(dweight, weight);
    if (din) CHECK_SAME_SHAPE(din, in);
    /* Every product weight * input in the forward sends the output's gradient back
     * to both factors. Threads split the output channels for dweight and dbias, and
     * the images for din, so no two threads ever add into the same element. */
#pragma omp parallel for schedule(static)
    for (int co = 0; co < Cout; co++)
        for (int n = 0; n < N; n++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    float g = *at4(dout, n, co, oh, ow);
                    dbias->data[co] += g;
                    for (int c = 0; c < C; c++)
                        for (int kh = 0; kh < KH; kh++) {
                            int ih = oh * stride - pad + kh;
                            if (ih < 0 || ih >= H) continue;
                            for (int kw = 0; kw < KW; kw++) {
                                int iw = ow * stride - pad + kw;
                                if (iw < 0 || iw >= W) continue;
                                *at4(dweight, co, c, kh, kw) += g * *at4(in, n, c, ih, iw);
                            }
                        }
                }
    if (!din) return;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        for (int co = 0; co < Cout; co++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    float g = *at4(dout, n, co, oh, ow);
                    for (int c = 0; c < C; c++)
                        for (int kh = 0; kh < KH; kh++) {
                            int ih = oh * stride - pad + kh;
                            if (ih < 0 || ih >= H) continue;
                            for (int kw = 0; kw < KW; kw++) {
                                int iw = ow * stride - pad + kw;
                                if (iw < 0 || iw >= W) continue;
                                *at4(din, n, c, ih, iw) += g * *at4(weight, co, c, kh, kw);
                            }
                        }
                }
}
