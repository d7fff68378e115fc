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
    /* TODO 1.3 (forward): loop over the N*C planes, then over the output positions
     * (oh, ow). For each, find the largest of the kernel x kernel inputs starting at
     * row oh*stride, column ow*stride. Write it to out, and its index within the
     * H x W plane (row * W + column) to argmax. On a tie keep the first (use '>'). */
    TODO_STOP("1.3");
}

void lesson_maxpool2d_backward(Tensor *din, const Tensor *dout, const int *argmax) {
    const int planes = din->shape[0] * din->shape[1];
    const int HW = din->shape[2] * din->shape[3], OHW = dout->shape[2] * dout->shape[3];
    /* TODO 1.3 (backward): for every output position i of every plane, add
     * dout[plane][i] to din[plane][argmax[plane][i]]. Use +=: windows may overlap
     * when stride < kernel, and then one input can win several windows. */
    TODO_STOP("1.3");
}
