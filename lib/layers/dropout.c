#include "dropout.h"

#include "core/check.h"
#include "rounded.h"

void dropout_check_forward(const Tensor *out, const Tensor *mask, const Tensor *in, float p,
                           bool training, const Rng *rng) {
    CHECK(p >= 0.0f && p <= 1.0f, "dropout probability %g outside [0, 1]", (double)p);
    CHECK(out->size == in->size, "dropout: %lld outputs for %lld inputs", (long long)out->size,
          (long long)in->size);
    if (mask)
        CHECK(mask->size == in->size, "dropout: a mask of %lld entries for %lld inputs",
              (long long)mask->size, (long long)in->size);
    if (dropout_active(p, training)) {
        CHECK(mask != NULL, "dropout at training (p = %g) needs a mask for the backward",
              (double)p);
        CHECK(rng != NULL, "dropout at training (p = %g) needs an Rng", (double)p);
    }
}

void dropout_check_backward(const Tensor *din, const Tensor *dout, const Tensor *mask) {
    CHECK(din->size == dout->size, "dropout backward: din has %lld entries, dout %lld",
          (long long)din->size, (long long)dout->size);
    if (mask)
        CHECK(mask->size == dout->size, "dropout backward: a mask of %lld entries for %lld",
              (long long)mask->size, (long long)dout->size);
}

void dropout_check_window(DropoutWindow w, int64_t size) {
    if (!w.cols) return;
    CHECK(w.cols > 0 && w.col0 >= 0 && w.col0 + w.cols <= w.full_cols,
          "dropout window: columns [%lld, %lld) of %lld", (long long)w.col0,
          (long long)(w.col0 + w.cols), (long long)w.full_cols);
    CHECK(size % w.cols == 0, "dropout window: %lld entries are not rows of %lld",
          (long long)size, (long long)w.cols);
}

uint64_t dropout_draw_key(Rng *rng) {
    const uint64_t hi = rng_u32(rng); /* two statements: the order of the draws is fixed */
    const uint64_t lo = rng_u32(rng);
    return hi << 32 | lo;
}

uint64_t dropout_threshold(float p) { return (uint64_t)((double)p * 4294967296.0 + 0.5); }

void dropout_forward(Tensor *out, Tensor *mask, const Tensor *in, float p, bool training,
                     Rng *rng) {
    dropout_forward_window(out, mask, in, p, training, rng, DROPOUT_WHOLE);
}

void dropout_forward_window(Tensor *out, Tensor *mask, const Tensor *in, float p, bool training,
                            Rng *rng, DropoutWindow window) {
    RoundedCall rc; /* 16-bit tensors: this function on float32 views (layers/rounded.h) */
    if (ROUNDED_BEGIN(&rc, ROUNDED_OUT(out), ROUNDED_F32(mask), ROUNDED_IN(in))) {
        dropout_forward_window(rounded(&rc, out), mask, rounded(&rc, in), p, training, rng,
                               window);
        rounded_end(&rc);
        return;
    }
    dropout_check_forward(out, mask, in, p, training, rng);
    dropout_check_window(window, in->size);
    CHECK_DEVICE(out, DEVICE_CPU);
    CHECK_DEVICE(mask, DEVICE_CPU);
    CHECK_DEVICE(in, DEVICE_CPU);
    const int64_t n = in->size;
    const float *x = in->data;
    float *y = out->data;
    if (!dropout_active(p, training)) {
        if (y != x)
            for (int64_t i = 0; i < n; i++) y[i] = x[i];
        if (mask)
            for (int64_t i = 0; i < n; i++) mask->data[i] = 1.0f;
        return;
    }
    const uint64_t key = dropout_draw_key(rng), threshold = dropout_threshold(p);
    const float keep_scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
    float *m = mask->data;
    if (window.cols) { /* a slice: the wider mask's entries, row by row */
        const int64_t cols = window.cols, rows = n / cols;
#pragma omp parallel for schedule(static) if (n > 65536)
        for (int64_t r = 0; r < rows; r++) {
            const uint64_t first = dropout_index(window, (uint64_t)(r * cols));
            for (int64_t c = 0; c < cols; c++) {
                const int64_t i = r * cols + c;
                m[i] = dropout_keeps(key, first + (uint64_t)c, threshold) ? keep_scale : 0.0f;
                y[i] = x[i] * m[i];
            }
        }
        return;
    }
#pragma omp parallel for simd schedule(static) if (parallel : n > 65536)
    for (int64_t i = 0; i < n; i++) {
        m[i] = dropout_keeps(key, (uint64_t)i, threshold) ? keep_scale : 0.0f;
        y[i] = x[i] * m[i];
    }
}

void dropout_backward(Tensor *din, const Tensor *dout, const Tensor *mask) {
    RoundedCall rc;
    if (ROUNDED_BEGIN(&rc, ROUNDED_ADD(din), ROUNDED_IN(dout), ROUNDED_F32(mask))) {
        dropout_backward(rounded(&rc, din), rounded(&rc, dout), mask);
        rounded_end(&rc);
        return;
    }
    dropout_check_backward(din, dout, mask);
    CHECK_DEVICE(din, DEVICE_CPU);
    CHECK_DEVICE(dout, DEVICE_CPU);
    CHECK_DEVICE(mask, DEVICE_CPU);
    const int64_t n = dout->size;
    float *dx = din->data;
    const float *dy = dout->data;
    if (!mask) {
#pragma omp parallel for simd schedule(static) if (parallel : n > 65536)
        for (int64_t i = 0; i < n; i++) dx[i] += dy[i];
        return;
    }
    const float *m = mask->data;
#pragma omp parallel for simd schedule(static) if (parallel : n > 65536)
    for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * m[i];
}
