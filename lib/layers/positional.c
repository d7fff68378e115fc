#include "positional.h"

#include <math.h>

#include "core/check.h"
#include "rounded.h"

void positional_table_fill(Tensor *table) {
    CHECK_FLOAT32(table);
    CHECK_SHAPE(table, -1, -1);
    CHECK_DEVICE(table, DEVICE_CPU);
    const int max_len = table->shape[0], D = table->shape[1];
    CHECK(D % 2 == 0, "positional encoding: d_model %d is odd (sin and cos come in pairs)", D);
    const float step = (float)(-log(10000.0) / D); /* PyTorch: a float32 product */
    for (int i = 0; 2 * i < D; i++) {
        const float w = (float)exp((double)((float)(2 * i) * step));
        for (int t = 0; t < max_len; t++) {
            const float angle = (float)t * w;
            table->data[(size_t)t * D + 2 * i] = (float)sin((double)angle);
            table->data[(size_t)t * D + 2 * i + 1] = (float)cos((double)angle);
        }
    }
}

void positional_check_forward(const Tensor *out, const Tensor *in, const Tensor *table, int T) {
    CHECK_SHAPE(in, -1, -1);
    CHECK_SAME_SHAPE(out, in);
    CHECK_SHAPE(table, -1, in->shape[1]);
    CHECK(T >= 1 && T <= table->shape[0],
          "positional encoding: sequence length %d, but the table has %d positions", T,
          table->shape[0]);
    CHECK(in->shape[0] % T == 0,
          "positional encoding: %d rows are not whole sequences of length %d", in->shape[0], T);
}

void positional_forward(Tensor *out, const Tensor *in, const Tensor *table, int T) {
    RoundedCall rc; /* 16-bit tensors: this function on float32 views (layers/rounded.h) */
    if (ROUNDED_BEGIN(&rc, ROUNDED_OUT(out), ROUNDED_IN(in), ROUNDED_F32(table))) {
        positional_forward(rounded(&rc, out), rounded(&rc, in), table, T);
        rounded_end(&rc);
        return;
    }
    positional_check_forward(out, in, table, T);
    CHECK_DEVICE(out, DEVICE_CPU);
    CHECK_DEVICE(in, DEVICE_CPU);
    CHECK_DEVICE(table, DEVICE_CPU);
    const int rows = in->shape[0], D = in->shape[1];
#pragma omp parallel for schedule(static) if ((int64_t)rows * D > 65536)
    for (int r = 0; r < rows; r++) {
        const float *x = in->data + (size_t)r * D, *pe = table->data + (size_t)(r % T) * D;
        float *y = out->data + (size_t)r * D;
#pragma omp simd
        for (int d = 0; d < D; d++) y[d] = x[d] + pe[d];
    }
}
