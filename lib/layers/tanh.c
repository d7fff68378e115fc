/* No floating-point traps: with them GCC keeps the float-to-int conversion and the
 * select below as branches, and the loop is not vectorised. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "tanh.h"

#include <math.h>
#include <string.h>

#include "core/check.h"

/* 2^n for a whole n in [0, 26]: a shifted integer, exact as a float (a power of two). */
static inline float pow2i(float n) { return (float)(1 << (int32_t)n); }

/* tanh of one value; written so that a loop over it becomes vector code (no calls, no
 * branches: the select, rintf and copysignf are single instructions; fminf is not). */
static inline float tanh_one(float x) {
    const float LOG2E = 1.44269504f;
    /* ln 2 in two parts: n * LN2_HI is exact for the n here (few bits each) */
    const float LN2_HI = 0.693145751953125f, LN2_LO = 1.42860677e-6f;
    const float ax = fabsf(x), a = ax > 9.0f ? 9.0f : ax; /* tanh(9) rounds to 1; NaN stays NaN */
    const float y = 2.0f * a;              /* in [0, 18] */
    const float n = rintf(y * LOG2E);      /* y = n ln 2 + r */
    const float r = (y - n * LN2_HI) - n * LN2_LO;
    /* expm1(r) = r + r^2/2! + ... + r^8/8!, |r| <= 0.35: the next term is below 1e-8 r */
    float p = 1.0f / 40320.0f;
    p = p * r + 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r * r + r;
    const float s = pow2i(n > 0.0f ? n : 0.0f); /* (the select keeps a NaN from the shift) */
    const float e = s * p + (s - 1.0f); /* expm1(y) = 2^n expm1(r) + (2^n - 1) */
    return copysignf(e / (e + 2.0f), x);
}

void tanh_values(float *out, const float *in, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) out[i] = tanh_one(in[i]);
}

void tanh_backward_values(float *din, const float *dout, const float *out, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) din[i] += dout[i] * (1.0f - out[i] * out[i]);
}

void tanh_forward(Tensor *out, const Tensor *in) {
    CHECK_FLOAT32(out, in);
    CHECK(out->size == in->size, "tanh: %lld outputs for %lld inputs", (long long)out->size,
          (long long)in->size);
    CHECK_DEVICE(in, DEVICE_CPU);
    CHECK_DEVICE(out, DEVICE_CPU);
    tanh_values(out->data, in->data, in->size);
}

void tanh_backward(Tensor *din, const Tensor *dout, const Tensor *out) {
    CHECK_FLOAT32(din, dout, out);
    CHECK(din->size == dout->size && out->size == dout->size, "tanh backward: sizes %lld, %lld, %lld",
          (long long)din->size, (long long)dout->size, (long long)out->size);
    CHECK(din->data != dout->data, "tanh backward: din and dout are the same buffer (it adds into din)");
    CHECK_DEVICE(din, DEVICE_CPU);
    CHECK_DEVICE(dout, DEVICE_CPU);
    CHECK_DEVICE(out, DEVICE_CPU);
    tanh_backward_values(din->data, dout->data, out->data, dout->size);
}
