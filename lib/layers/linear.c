#include "linear.h"

#include "core/check.h"
#include "ops/gemm.h"

void linear_check_forward(const Tensor *out, const Tensor *in, const Tensor *weight,
                          const Tensor *bias) {
    CHECK_SHAPE(in, -1, -1);
    CHECK_SHAPE(weight, -1, in->shape[1]);
    CHECK_SHAPE(bias, weight->shape[0]);
    CHECK_SHAPE(out, in->shape[0], weight->shape[0]);
}

void linear_check_backward(const Tensor *din, const Tensor *dweight, const Tensor *dbias,
                           const Tensor *dout, const Tensor *in, const Tensor *weight) {
    CHECK_SHAPE(in, -1, -1);
    CHECK_SHAPE(weight, -1, in->shape[1]);
    CHECK_SHAPE(dout, in->shape[0], weight->shape[0]);
    CHECK_SAME_SHAPE(dweight, weight);
    CHECK_SHAPE(dbias, weight->shape[0]);
    if (din) CHECK_SAME_SHAPE(din, in);
}

void linear_forward(Tensor *out, const Tensor *in, const Tensor *weight, const Tensor *bias) {
    linear_check_forward(out, in, weight, bias);
    CHECK_DEVICE(in, DEVICE_CPU);
    CHECK_DEVICE(out, DEVICE_CPU);
    const int N = in->shape[0], IN = in->shape[1], OUT = weight->shape[0];
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OUT; o++) out->data[(size_t)n * OUT + o] = bias->data[o];
    gemm(false, true, N, OUT, IN, 1.0f, in->data, IN, weight->data, IN, 1.0f, out->data, OUT);
}

void linear_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                     const Tensor *in, const Tensor *weight) {
    linear_check_backward(din, dweight, dbias, dout, in, weight);
    CHECK_DEVICE(dout, DEVICE_CPU);
    CHECK_DEVICE(dweight, DEVICE_CPU);
    const int N = in->shape[0], IN = in->shape[1], OUT = weight->shape[0];
    gemm(true, false, OUT, IN, N, 1.0f, dout->data, OUT, in->data, IN, 1.0f, dweight->data, IN);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OUT; o++) dbias->data[o] += dout->data[(size_t)n * OUT + o];
    if (din)
        gemm(false, false, N, IN, OUT, 1.0f, dout->data, OUT, weight->data, IN, 1.0f, din->data, IN);
}
