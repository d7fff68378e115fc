#include "maxpool2d.h"

#include "core/check.h"

void maxpool2d_forward(Tensor *out, int *argmax, const Tensor *in, int kernel, int stride) {
    CHECK(kernel >= 1 && stride >= 1, "max-pool kernel %d, stride %d", kernel, stride);
    CHECK_SHAPE(in, -1, -1, -1, -1);
    const int N = in->shape[0], C = in->shape[1], H = in->shape[2], W = in->shape[3];
    CHECK(H >= kernel && W >= kernel, "max-pool kernel %d larger than the %dx%d input", kernel,
          H, W);
    const int OH = (H - kernel) / stride + 1, OW = (W - kernel) / stride + 1;
    CHECK_SHAPE(out, N, C, OH, OW);

#pragma omp parallel for schedule(static)
    for (int plane = 0; plane < N * C; plane++) {
        const float *x = in->data + (size_t)plane * H * W;
        float *y = out->data + (size_t)plane * OH * OW;
        int *arg = argmax + (size_t)plane * OH * OW;
        if (kernel == 2 && stride == 2) { /* the common case: branch-free selects */
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    const int i0 = 2 * oh * W + 2 * ow;
                    float m = x[i0];
                    int best = i0;
                    float v = x[i0 + 1];
                    best = v > m ? i0 + 1 : best;
                    m = v > m ? v : m;
                    v = x[i0 + W];
                    best = v > m ? i0 + W : best;
                    m = v > m ? v : m;
                    v = x[i0 + W + 1];
                    best = v > m ? i0 + W + 1 : best;
                    m = v > m ? v : m;
                    y[oh * OW + ow] = m;
                    arg[oh * OW + ow] = best;
                }
            continue;
        }
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++) {
                int best = (oh * stride) * W + ow * stride;
                for (int kh = 0; kh < kernel; kh++)
                    for (int kw = 0; kw < kernel; kw++) {
                        int idx = (oh * stride + kh) * W + ow * stride + kw;
                        if (x[idx] > x[best]) best = idx;
                    }
                y[oh * OW + ow] = x[best];
                arg[oh * OW + ow] = best;
            }
    }
}

void maxpool2d_backward(Tensor *din, const Tensor *dout, const int *argmax) {
    CHECK_SHAPE(din, -1, -1, -1, -1);
    CHECK_SHAPE(dout, din->shape[0], din->shape[1], -1, -1);
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
