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
    /* TODO 1.1: seven nested loops (n, co, oh, ow, then c, kh, kw). Start the sum at
     * bias[co]; skip the taps whose input row or column falls outside the image.
     * at4(t, a, b, c, d) gives a pointer to element (a, b, c, d). */
    TODO_STOP("1.1");
}

void lesson_conv2d_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                            const Tensor *in, const Tensor *weight, int stride, int pad) {
    const int N = in->shape[0], C = in->shape[1], H = in->shape[2], W = in->shape[3];
    const int Cout = weight->shape[0], KH = weight->shape[2], KW = weight->shape[3];
    const int OH = dout->shape[2], OW = dout->shape[3];
    CHECK_SAME_SHAPE(dweight, weight);
    if (din) CHECK_SAME_SHAPE(din, in);
    /* TODO 1.2: the same loops as the forward. Where the forward did
     *     sum += weight[co][c][kh][kw] * in[n][c][ih][iw]
     * the backward, with g = dout[n][co][oh][ow], does
     *     dweight[co][c][kh][kw] += g * in[n][c][ih][iw]
     *     din[n][c][ih][iw]      += g * weight[co][c][kh][kw]   (only when din != NULL)
     *     dbias[co]              += g
     * Add (+=), never assign: gradients from several steps or layers accumulate. */
    TODO_STOP("1.2");
}
