// The linear layer on the GPU, as lib/layers/linear.c: the bias written into every
// row by a kernel, then the same GEMM calls through cuBLAS.
//
// bfloat16 / float16 (in, weight, bias, out, dout, din of the run's dtype; dweight and
// dbias float32): the GEMMs are cublasGemmEx with float32 sums, so
//   out  = round(bias + in w^T)     the bias rows written into out, then beta = 1:
//                                   the bias inside the one rounding
//   din  = round(din + dout w)      beta = 1, one rounding
//   dweight += dout^T in            float32 C; dbias += column sums in float32.
// A lesson's kernels (CudaKernels) are float32 only.
#include "cuda_check.h"
#include "elem.cuh"
#include "gemm_map.h"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "kernels.h"
#include "layers/linear.h"
#include "ops/gemm.h"
}

// out [rows, cols]: every row = bias [cols] (of one dtype: a copy)
template <class T>
static __global__ void bias_rows_kernel(T *out, const T *bias, int rows, int cols) {
    GRID_STRIDE_LOOP(i, (int64_t)rows * cols) out[i] = bias[i % cols];
}

// dbias [cols] (float32) += column sums of dout [rows, cols]: one thread per column, rows
// in order (the CPU's order: the same sums, bit for bit).
template <class T>
static __global__ void bias_rows_backward_kernel(float *dbias, const T *dout, int rows, int cols) {
    GRID_STRIDE_LOOP(c, cols) {
        float acc = dbias[c];
        for (int r = 0; r < rows; r++) acc += elem_load(dout, (int64_t)r * cols + c);
        dbias[c] = acc;
    }
}

// A lesson's kernels compute in float32.
static void check_kernels_dtype(const CudaKernels *k, DType dtype) {
    CHECK(!k || dtype == DTYPE_F32, "the linear layer with a lesson's CUDA kernels takes float32 "
          "tensors, not %s (the library's kernels take 16-bit ones)", dtype_name(dtype));
}

extern "C" void cuda_linear_forward_with(const CudaKernels *k, Tensor *out, const Tensor *in,
                                         const Tensor *weight, const Tensor *bias) {
    const DType dt = ONE_DTYPE(out, in, weight, bias);
    check_kernels_dtype(k, dt);
    linear_check_forward(out, in, weight, bias);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(weight);
    CHECK_ON_GPU(bias);
    const int N = in->shape[0], IN = in->shape[1], OUT = weight->shape[0];
    const int64_t n = (int64_t)N * OUT;
    if (n == 0) return;
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        bias_rows_kernel<T><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            elems<T>(out), elems<T>(bias), N, OUT);
        CUDA_CHECK_LAUNCH();
    });
    if (dt == DTYPE_F32)
        (k ? k->gemm : cuda_gemm)(false, true, N, OUT, IN, 1.0f, in->data, IN, weight->data, IN,
                                  1.0f, out->data, OUT);
    else
        cuda_gemm_ex(false, true, N, OUT, IN, 1.0f, in->raw, IN, weight->raw, IN, dt, 1.0f,
                     out->raw, OUT, dt);
}

extern "C" void cuda_linear_backward_with(const CudaKernels *k, Tensor *din, Tensor *dweight,
                                          Tensor *dbias, const Tensor *dout, const Tensor *in,
                                          const Tensor *weight) {
    const DType dt = ONE_DTYPE(din, dout, in, weight);
    CHECK_FLOAT32(dweight, dbias);
    check_kernels_dtype(k, dt);
    linear_check_backward(din, dweight, dbias, dout, in, weight);
    CHECK_ON_GPU(dout);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(weight);
    CHECK_ON_GPU(dweight);
    CHECK_ON_GPU(dbias);
    CHECK_ON_GPU(din);
    const int N = in->shape[0], IN = in->shape[1], OUT = weight->shape[0];
    if (dt == DTYPE_F32)
        (k ? k->gemm : cuda_gemm)(true, false, OUT, IN, N, 1.0f, dout->data, OUT, in->data, IN,
                                  1.0f, dweight->data, IN);
    else
        cuda_gemm_ex(true, false, OUT, IN, N, 1.0f, dout->raw, OUT, in->raw, IN, dt, 1.0f,
                     dweight->data, IN, DTYPE_F32);
    if (OUT > 0)
        elem_dispatch(dt, [&](auto tag) {
            using T = decltype(tag);
            bias_rows_backward_kernel<T><<<cuda_blocks_for(OUT, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
                dbias->data, elems<T>(dout), N, OUT);
            CUDA_CHECK_LAUNCH();
        });
    if (!din) return;
    if (dt == DTYPE_F32)
        (k ? k->gemm : cuda_gemm)(false, false, N, IN, OUT, 1.0f, dout->data, OUT, weight->data,
                                  IN, 1.0f, din->data, IN);
    else
        cuda_gemm_ex(false, false, N, IN, OUT, 1.0f, dout->raw, OUT, weight->raw, IN, dt, 1.0f,
                     din->raw, IN, dt);
}

extern "C" void cuda_linear_forward(Tensor *out, const Tensor *in, const Tensor *weight,
                                    const Tensor *bias) {
    cuda_linear_forward_with(NULL, out, in, weight, bias);
}

extern "C" void cuda_linear_backward(Tensor *din, Tensor *dweight, Tensor *dbias,
                                     const Tensor *dout, const Tensor *in, const Tensor *weight) {
    cuda_linear_backward_with(NULL, din, dweight, dbias, dout, in, weight);
}
