#include "gelu.h"

#include <math.h>

#include "core/check.h"
#include "rounded.h"

void gelu_check_forward(const Tensor *out, const Tensor *in) {
    CHECK(out->size == in->size, "gelu: %lld outputs for %lld inputs", (long long)out->size,
          (long long)in->size);
    CHECK(out->data != in->data || in->size == 0,
          "gelu: out must not be in (the backward needs the input)");
}

void gelu_check_backward(const Tensor *din, const Tensor *dout, const Tensor *in) {
    CHECK(din->size == dout->size && in->size == dout->size,
          "gelu backward: sizes %lld (din), %lld (dout), %lld (in)", (long long)din->size,
          (long long)dout->size, (long long)in->size);
}

void gelu_forward(Tensor *out, const Tensor *in) {
    RoundedCall rc; /* 16-bit tensors: this function on float32 views (layers/rounded.h) */
    if (ROUNDED_BEGIN(&rc, ROUNDED_OUT(out), ROUNDED_IN(in))) {
        gelu_forward(rounded(&rc, out), rounded(&rc, in));
        rounded_end(&rc);
        return;
    }
    gelu_check_forward(out, in);
    CHECK_DEVICE(out, DEVICE_CPU);
    CHECK_DEVICE(in, DEVICE_CPU);
    const int64_t n = in->size;
    const float *x = in->data;
    float *y = out->data;
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t i = 0; i < n; i++) y[i] = 0.5f * x[i] * erfcf(-x[i] * (float)M_SQRT1_2);
}

void gelu_backward(Tensor *din, const Tensor *dout, const Tensor *in) {
    RoundedCall rc;
    if (ROUNDED_BEGIN(&rc, ROUNDED_ADD(din), ROUNDED_IN(dout), ROUNDED_IN(in))) {
        gelu_backward(rounded(&rc, din), rounded(&rc, dout), rounded(&rc, in));
        rounded_end(&rc);
        return;
    }
    gelu_check_backward(din, dout, in);
    CHECK_DEVICE(din, DEVICE_CPU);
    CHECK_DEVICE(dout, DEVICE_CPU);
    CHECK_DEVICE(in, DEVICE_CPU);
    const int64_t n = in->size;
    const float *x = in->data, *dy = dout->data;
    float *dx = din->data;
    const float inv_sqrt_2pi = (float)(0.5 * M_2_SQRTPI * M_SQRT1_2); /* 1 / sqrt(2 pi) */
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t i = 0; i < n; i++) {
        const float cdf = 0.5f * erfcf(-x[i] * (float)M_SQRT1_2);
        const float pdf = inv_sqrt_2pi * expf(-0.5f * x[i] * x[i]);
        dx[i] += dy[i] * (cdf + x[i] * pdf);
    }
}
