#include "relu.h"

#include "core/check.h"
#include "rounded.h"

void relu_check_forward(const Tensor *out, const Tensor *in) {
    CHECK(out->size == in->size, "relu: %lld outputs for %lld inputs", (long long)out->size,
          (long long)in->size);
}

void relu_check_backward(const Tensor *din, const Tensor *dout, const Tensor *out) {
    CHECK(din->size == dout->size && out->size == dout->size, "relu backward: sizes %lld, %lld, %lld",
          (long long)din->size, (long long)dout->size, (long long)out->size);
}

void relu_forward(Tensor *out, const Tensor *in) {
    RoundedCall rc; /* 16-bit tensors: this function on float32 views (layers/rounded.h) */
    if (ROUNDED_BEGIN(&rc, ROUNDED_OUT(out), ROUNDED_IN(in))) {
        relu_forward(rounded(&rc, out), rounded(&rc, in));
        rounded_end(&rc);
        return;
    }
    relu_check_forward(out, in);
    CHECK_DEVICE(in, DEVICE_CPU);
    CHECK_DEVICE(out, DEVICE_CPU);
    const int64_t n = in->size;
#pragma omp parallel for simd schedule(static) if (parallel : n > 65536)
    for (int64_t i = 0; i < n; i++) out->data[i] = in->data[i] > 0.0f ? in->data[i] : 0.0f;
}

void relu_backward(Tensor *din, const Tensor *dout, const Tensor *out) {
    RoundedCall rc;
    if (ROUNDED_BEGIN(&rc, ROUNDED_ADD(din), ROUNDED_IN(dout), ROUNDED_IN(out))) {
        relu_backward(rounded(&rc, din), rounded(&rc, dout), rounded(&rc, out));
        rounded_end(&rc);
        return;
    }
    relu_check_backward(din, dout, out);
    CHECK_DEVICE(din, DEVICE_CPU);
    CHECK_DEVICE(dout, DEVICE_CPU);
    const int64_t n = dout->size;
#pragma omp parallel for simd schedule(static) if (parallel : n > 65536)
    for (int64_t i = 0; i < n; i++)
        din->data[i] += out->data[i] > 0.0f ? dout->data[i] : 0.0f;
}
