#include "linear.h"

#include "core/check.h"
#include "ops/gemm.h"
#include "rounded.h"

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

/* Element-wise work below this many entries stays on one thread. */
enum { LINEAR_PARALLEL_MIN = 1 << 16, LINEAR_COLUMN_BLOCK = 256 };

/* dbias += the column sums of dout [N, OUT]: each task owns a block of columns and adds
 * the rows in order, so the bits do not depend on the number of threads. */
static void bias_grad(Tensor *dbias, const Tensor *dout) {
    const int N = dout->shape[0], OUT = dout->shape[1];
    const int blocks = (OUT + LINEAR_COLUMN_BLOCK - 1) / LINEAR_COLUMN_BLOCK;
#pragma omp parallel for schedule(static) if ((int64_t)N * OUT > LINEAR_PARALLEL_MIN)
    for (int blk = 0; blk < blocks; blk++) {
        const int o0 = blk * LINEAR_COLUMN_BLOCK;
        const int w = OUT - o0 < LINEAR_COLUMN_BLOCK ? OUT - o0 : LINEAR_COLUMN_BLOCK;
        float *db = dbias->data + o0;
        for (int n = 0; n < N; n++) {
            const float *g = dout->data + (size_t)n * OUT + o0;
#pragma omp simd
            for (int o = 0; o < w; o++) db[o] += g[o];
        }
    }
}

void linear_forward(Tensor *out, const Tensor *in, const Tensor *weight, const Tensor *bias) {
    RoundedCall rc; /* 16-bit tensors: this function on float32 views (layers/rounded.h) */
    if (ROUNDED_BEGIN(&rc, ROUNDED_OUT(out), ROUNDED_IN(in), ROUNDED_IN(weight),
                      ROUNDED_IN(bias))) {
        linear_forward(rounded(&rc, out), rounded(&rc, in), rounded(&rc, weight),
                       rounded(&rc, bias));
        rounded_end(&rc);
        return;
    }
    linear_check_forward(out, in, weight, bias);
    CHECK_DEVICE(in, DEVICE_CPU);
    CHECK_DEVICE(out, DEVICE_CPU);
    const int N = in->shape[0], IN = in->shape[1], OUT = weight->shape[0];
    const float *b = bias->data;
#pragma omp parallel for schedule(static) if ((int64_t)N * OUT > LINEAR_PARALLEL_MIN)
    for (int n = 0; n < N; n++) {
        float *row = out->data + (size_t)n * OUT;
#pragma omp simd
        for (int o = 0; o < OUT; o++) row[o] = b[o];
    }
    gemm_tiled(false, true, N, OUT, IN, 1.0f, in->data, IN, weight->data, IN, 1.0f, out->data, OUT);
}

void linear_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                     const Tensor *in, const Tensor *weight) {
    RoundedCall rc;
    if (ROUNDED_BEGIN(&rc, ROUNDED_ADD(din), ROUNDED_F32(dweight), ROUNDED_F32(dbias),
                      ROUNDED_IN(dout), ROUNDED_IN(in), ROUNDED_IN(weight))) {
        linear_backward(rounded(&rc, din), dweight, dbias, rounded(&rc, dout), rounded(&rc, in),
                        rounded(&rc, weight));
        rounded_end(&rc);
        return;
    }
    linear_check_backward(din, dweight, dbias, dout, in, weight);
    CHECK_DEVICE(dout, DEVICE_CPU);
    CHECK_DEVICE(dweight, DEVICE_CPU);
    const int N = in->shape[0], IN = in->shape[1], OUT = weight->shape[0];
    gemm_tiled(true, false, OUT, IN, N, 1.0f, dout->data, OUT, in->data, IN, 1.0f, dweight->data, IN);
    bias_grad(dbias, dout);
    if (din)
        gemm_tiled(false, false, N, IN, OUT, 1.0f, dout->data, OUT, weight->data, IN, 1.0f, din->data, IN);
}
