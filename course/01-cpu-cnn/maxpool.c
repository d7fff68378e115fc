/* TODO 1.3: max pooling, forward and backward.
 *
 * Each output value is the largest of a kernel x kernel window of its input plane;
 * windows start every `stride` pixels. Only that largest input influenced the
 * output, so in the backward the whole gradient goes to it and the other inputs of
 * the window get nothing. The forward records the winner's position (argmax) so the
 * backward need not search again. */
#include "lesson.h"

void lesson_maxpool2d_forward(Tensor *out, int *argmax, const Tensor *in, int kernel, int stride) {
    const int N = in->shape[0], C = in->shape[1], H = in->shape[2], W = in->shape[3];
    const int OH = (H - kernel) / stride + 1, OW = (W - kernel) / stride + 1;
    CHECK_SHAPE(out, N, C, OH, OW);
#ifdef SOLUTION
#pragma omp parallel for schedule(static)
    for (int plane = 0; plane < N * C; plane++) { /* plane = one (image, channel) pair */
        const float *x = in->data + (size_t)plane * H * W;
        float *y = out->data + (size_t)plane * OH * OW;
        int *arg = argmax + (size_t)plane * OH * OW;
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++) {
                int best = oh * stride * W + ow * stride; /* the window's top-left pixel */
                for (int kh = 0; kh < kernel; kh++)
                    for (int kw = 0; kw < kernel; kw++) {
                        int i = (oh * stride + kh) * W + ow * stride + kw;
                        if (x[i] > x[best]) best = i; /* '>' keeps the first of equal values */
                    }
                y[oh * OW + ow] = x[best];
                arg[oh * OW + ow] = best;
            }
    }
#else
    /* TODO 1.3 (forward): loop over the N*C planes, then over the output positions
     * (oh, ow). For each, find the largest of the kernel x kernel inputs starting at
     * row oh*stride, column ow*stride. Write it to out, and its index within the
     * H x W plane (row * W + column) to argmax. On a tie keep the first (use '>'). */
    TODO_STOP("1.3");
#endif
}

void lesson_maxpool2d_backward(Tensor *din, const Tensor *dout, const int *argmax) {
    const int planes = din->shape[0] * din->shape[1];
    const int HW = din->shape[2] * din->shape[3], OHW = dout->shape[2] * dout->shape[3];
#ifdef SOLUTION
#pragma omp parallel for schedule(static)
    for (int plane = 0; plane < planes; plane++)
        for (int i = 0; i < OHW; i++)
            din->data[(size_t)plane * HW + argmax[(size_t)plane * OHW + i]] +=
                dout->data[(size_t)plane * OHW + i];
#else
    /* TODO 1.3 (backward): for every output position i of every plane, add
     * dout[plane][i] to din[plane][argmax[plane][i]]. Use +=: windows may overlap
     * when stride < kernel, and then one input can win several windows. */
    TODO_STOP("1.3");
#endif
}
