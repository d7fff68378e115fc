// The linear layer on the GPU, as lib/layers/linear.c: the bias written into every
// row by a kernel, then the same GEMM calls through cuBLAS.
#include "cuda_check.h"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "kernels.h"
#include "layers/linear.h"
#include "ops/gemm.h"
}

// out [rows, cols]: every row = bias [cols]
static __global__ void bias_rows_kernel(float *out, const float *bias, int rows, int cols) {
    GRID_STRIDE_LOOP(i, (int64_t)rows * cols) out[i] = bias[i % cols];
}

// dbias [cols] += column sums of dout [rows, cols]: one thread per column, rows in
// order (the CPU's order: the same sums, bit for bit).
static __global__ void bias_rows_backward_kernel(float *dbias, const float *dout, int rows,
                                                 int cols) {
    GRID_STRIDE_LOOP(c, cols) {
        float acc = dbias[c];
        for (int r = 0; r < rows; r++) acc += dout[(int64_t)r * cols + c];
        dbias[c] = acc;
    }
}

extern "C" void cuda_linear_forward_with(const CudaKernels *k, Tensor *out, const Tensor *in,
                                         const Tensor *weight, const Tensor *bias) {
    CHECK_FLOAT32(out, in, weight, bias);
    linear_check_forward(out, in, weight, bias);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(weight);
    CHECK_ON_GPU(bias);
    const int N = in->shape[0], IN = in->shape[1], OUT = weight->shape[0];
    const int64_t n = (int64_t)N * OUT;
    if (n == 0) return;
    bias_rows_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS>>>(out->data, bias->data,
                                                                         N, OUT);
    CUDA_CHECK_LAUNCH();
    (k ? k->gemm : cuda_gemm)(false, true, N, OUT, IN, 1.0f, in->data, IN, weight->data, IN,
                              1.0f, out->data, OUT);
}

extern "C" void cuda_linear_backward_with(const CudaKernels *k, Tensor *din, Tensor *dweight,
                                          Tensor *dbias, const Tensor *dout, const Tensor *in,
                                          const Tensor *weight) {
    CHECK_FLOAT32(din, dweight, dbias, dout, in, weight);
    linear_check_backward(din, dweight, dbias, dout, in, weight);
    CHECK_ON_GPU(dout);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(weight);
    CHECK_ON_GPU(dweight);
    CHECK_ON_GPU(dbias);
    CHECK_ON_GPU(din);
    const int N = in->shape[0], IN = in->shape[1], OUT = weight->shape[0];
    auto gemm = k ? k->gemm : cuda_gemm;
    gemm(true, false, OUT, IN, N, 1.0f, dout->data, OUT, in->data, IN, 1.0f, dweight->data, IN);
    if (OUT > 0) {
        bias_rows_backward_kernel<<<cuda_blocks_for(OUT, CUDA_THREADS), CUDA_THREADS>>>(
            dbias->data, dout->data, N, OUT);
        CUDA_CHECK_LAUNCH();
    }
    if (din)
        gemm(false, false, N, IN, OUT, 1.0f, dout->data, OUT, weight->data, IN, 1.0f, din->data, IN);
}

extern "C" void cuda_linear_forward(Tensor *out, const Tensor *in, const Tensor *weight,
                                    const Tensor *bias) {
    cuda_linear_forward_with(NULL, out, in, weight, bias);
}

extern "C" void cuda_linear_backward(Tensor *din, Tensor *dweight, Tensor *dbias,
                                     const Tensor *dout, const Tensor *in, const Tensor *weight) {
    cuda_linear_backward_with(NULL, din, dweight, dbias, dout, in, weight);
}
