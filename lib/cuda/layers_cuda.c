/* The layers on the GPU: shape checks on the host (as the CPU layers do them),
 * then kernels and cuBLAS. */
#ifdef HAVE_CUDA
#include "core/check.h"
#include "gpu.h"
#include "kernels.h"
#include "ops_cuda.h"

#define CHECK_ON_GPU(t) \
    CHECK((t)->device == DEVICE_CUDA, "%s is a %s tensor; the CUDA layer needs it on the GPU " \
          "(tensor_to(t, DEVICE_CUDA))", #t, device_name((t)->device))

/* The raw int pointers (argmax) must be memory a kernel can read. */
#define CHECK_DEVICE_POINTER(p) \
    CHECK(gpu_is_device_pointer(p), "%s (%p) is not GPU memory: allocate it with gpu_malloc " \
          "(a host pointer would make the kernel fail with an illegal address)", #p, (const void *)(p))

CudaKernels cuda_library_kernels(void) {
    CudaKernels k = {cuda_relu_forward_raw, cuda_relu_backward_raw, cuda_im2col_raw, cuda_gemm};
    return k;
}

static const CudaKernels *kernels_or_library(const CudaKernels *k) {
    static CudaKernels lib;
    static bool have;
    if (k) return k;
    if (!have) lib = cuda_library_kernels(), have = true;
    return &lib;
}

void cuda_im2col(float *cols, const float *images, int nimg, const ConvGeometry *g) {
    cuda_im2col_raw(cols, images, nimg, g);
}

void cuda_col2im(float *images, const float *cols, int nimg, const ConvGeometry *g) {
    cuda_col2im_raw(images, cols, nimg, g);
}

/* ---------------------------------------------------------------- ReLU */

void cuda_relu_forward(Tensor *out, const Tensor *in) {
    CHECK(out->size == in->size, "relu: %lld outputs for %lld inputs", (long long)out->size,
          (long long)in->size);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(in);
    cuda_relu_forward_raw(out->data, in->data, in->size);
}

void cuda_relu_backward(Tensor *din, const Tensor *dout, const Tensor *out) {
    CHECK(din->size == dout->size && out->size == dout->size, "relu backward: sizes %lld, %lld, %lld",
          (long long)din->size, (long long)dout->size, (long long)out->size);
    CHECK_ON_GPU(din);
    CHECK_ON_GPU(dout);
    CHECK_ON_GPU(out);
    cuda_relu_backward_raw(din->data, dout->data, out->data, dout->size);
}

/* ---------------------------------------------------------------- linear */

void cuda_linear_forward_with(const CudaKernels *k, Tensor *out, const Tensor *in,
                              const Tensor *weight, const Tensor *bias) {
    k = kernels_or_library(k);
    CHECK_SHAPE(in, -1, -1);
    const int N = in->shape[0], IN = in->shape[1];
    CHECK_SHAPE(weight, -1, IN);
    const int OUT = weight->shape[0];
    CHECK_SHAPE(bias, OUT);
    CHECK_SHAPE(out, N, OUT);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(weight);
    CHECK_ON_GPU(bias);
    cuda_bias_rows_raw(out->data, bias->data, N, OUT);
    k->gemm(false, true, N, OUT, IN, 1.0f, in->data, IN, weight->data, IN, 1.0f, out->data, OUT);
}

void cuda_linear_backward_with(const CudaKernels *k, Tensor *din, Tensor *dweight, Tensor *dbias,
                               const Tensor *dout, const Tensor *in, const Tensor *weight) {
    k = kernels_or_library(k);
    CHECK_SHAPE(in, -1, -1);
    const int N = in->shape[0], IN = in->shape[1], OUT = weight->shape[0];
    CHECK_SHAPE(dout, N, OUT);
    CHECK_SAME_SHAPE(dweight, weight);
    CHECK_SHAPE(dbias, OUT);
    CHECK_ON_GPU(dout);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(weight);
    CHECK_ON_GPU(dweight);
    CHECK_ON_GPU(dbias);
    if (din) CHECK_ON_GPU(din);
    k->gemm(true, false, OUT, IN, N, 1.0f, dout->data, OUT, in->data, IN, 1.0f, dweight->data, IN);
    cuda_bias_rows_backward_raw(dbias->data, dout->data, N, OUT);
    if (din) {
        CHECK_SAME_SHAPE(din, in);
        k->gemm(false, false, N, IN, OUT, 1.0f, dout->data, OUT, weight->data, IN, 1.0f, din->data, IN);
    }
}

void cuda_linear_forward(Tensor *out, const Tensor *in, const Tensor *weight, const Tensor *bias) {
    cuda_linear_forward_with(NULL, out, in, weight, bias);
}

void cuda_linear_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                          const Tensor *in, const Tensor *weight) {
    cuda_linear_backward_with(NULL, din, dweight, dbias, dout, in, weight);
}

/* ---------------------------------------------------------------- conv2d */

/* One device buffer, grown as needed and reused (cudaMalloc is slow, and it
 * synchronises the device). */
static float *g_workspace;
static size_t g_workspace_floats;

static float *workspace(size_t floats) {
    if (g_workspace_floats < floats) {
        gpu_free(g_workspace);
        g_workspace = gpu_malloc(floats * sizeof(float));
        g_workspace_floats = floats;
    }
    return g_workspace;
}

void cuda_conv2d_release_workspace(void) {
    gpu_free(g_workspace);
    g_workspace = NULL;
    g_workspace_floats = 0;
}

static ConvGeometry check_conv(const Tensor *out, const Tensor *in, const Tensor *weight,
                               int stride, int pad) {
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(weight);
    CHECK_ON_GPU(out);
    CHECK_SHAPE(in, -1, -1, -1, -1);
    CHECK_SHAPE(weight, -1, in->shape[1], -1, -1);
    ConvGeometry g = conv_geometry(in->shape[1], in->shape[2], in->shape[3], weight->shape[2],
                                   weight->shape[3], stride, pad);
    CHECK_SHAPE(out, in->shape[0], weight->shape[0], g.OH, g.OW);
    return g;
}

void cuda_conv2d_forward_with(const CudaKernels *k, Tensor *out, const Tensor *in,
                              const Tensor *weight, const Tensor *bias, int stride, int pad) {
    k = kernels_or_library(k);
    ConvGeometry g = check_conv(out, in, weight, stride, pad);
    const int N = in->shape[0], Cout = weight->shape[0];
    CHECK_SHAPE(bias, Cout);
    CHECK_ON_GPU(bias);
    const int K = g.C * g.KH * g.KW, OHW = g.OH * g.OW, ncols = N * OHW;
    float *cols = workspace((size_t)K * ncols + (size_t)Cout * ncols); /* [K, N*OHW] */
    float *prod = cols + (size_t)K * ncols;                            /* [Cout, N*OHW] */
    k->im2col(cols, in->data, N, &g);
    k->gemm(false, false, Cout, ncols, K, 1.0f, weight->data, K, cols, ncols, 0.0f, prod, ncols);
    cuda_conv_output_raw(out->data, prod, bias->data, N, Cout, OHW);
}

void cuda_conv2d_backward_with(const CudaKernels *k, Tensor *din, Tensor *dweight, Tensor *dbias,
                               const Tensor *dout, const Tensor *in, const Tensor *weight,
                               int stride, int pad) {
    k = kernels_or_library(k);
    ConvGeometry g = check_conv(dout, in, weight, stride, pad);
    CHECK_SAME_SHAPE(dweight, weight);
    const int N = in->shape[0], Cout = weight->shape[0];
    CHECK_SHAPE(dbias, Cout);
    CHECK_ON_GPU(dweight);
    CHECK_ON_GPU(dbias);
    if (din) CHECK_SAME_SHAPE(din, in);
    if (din) CHECK_ON_GPU(din);
    const int K = g.C * g.KH * g.KW, OHW = g.OH * g.OW, ncols = N * OHW;
    float *cols = workspace((size_t)(2 * K + Cout) * ncols); /* [K, N*OHW] */
    float *dy = cols + (size_t)K * ncols;                    /* [Cout, N*OHW] */
    float *dcols = dy + (size_t)Cout * ncols;                /* [K, N*OHW] */
    cuda_conv_gather_dout_raw(dy, dout->data, N, Cout, OHW);
    cuda_rows_sum_add_raw(dbias->data, dy, Cout, ncols);
    k->im2col(cols, in->data, N, &g);
    /* dweight [Cout, K] += dy x cols^T: beta 1 adds, as every backward does */
    k->gemm(false, true, Cout, K, ncols, 1.0f, dy, ncols, cols, ncols, 1.0f, dweight->data, K);
    if (din) {
        k->gemm(true, false, K, ncols, Cout, 1.0f, weight->data, K, dy, ncols, 0.0f, dcols, ncols);
        cuda_col2im_raw(din->data, dcols, N, &g);
    }
}

void cuda_conv2d_forward(Tensor *out, const Tensor *in, const Tensor *weight, const Tensor *bias,
                         int stride, int pad) {
    cuda_conv2d_forward_with(NULL, out, in, weight, bias, stride, pad);
}

void cuda_conv2d_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                          const Tensor *in, const Tensor *weight, int stride, int pad) {
    cuda_conv2d_backward_with(NULL, din, dweight, dbias, dout, in, weight, stride, pad);
}

/* ---------------------------------------------------------------- max-pool */

void cuda_maxpool2d_forward(Tensor *out, int *argmax, const Tensor *in, int kernel, int stride) {
    CHECK(kernel >= 1 && stride >= 1, "max-pool kernel %d, stride %d", kernel, stride);
    CHECK_SHAPE(in, -1, -1, -1, -1);
    const int N = in->shape[0], C = in->shape[1], H = in->shape[2], W = in->shape[3];
    CHECK(H >= kernel && W >= kernel, "max-pool kernel %d larger than the %dx%d input", kernel,
          H, W);
    CHECK_SHAPE(out, N, C, (H - kernel) / stride + 1, (W - kernel) / stride + 1);
    CHECK_ON_GPU(in);
    CHECK_ON_GPU(out);
    CHECK_DEVICE_POINTER(argmax);
    cuda_maxpool_forward_raw(out->data, argmax, in->data, N * C, H, W, kernel, stride);
}

void cuda_maxpool2d_backward(Tensor *din, const Tensor *dout, const int *argmax) {
    CHECK_SHAPE(din, -1, -1, -1, -1);
    CHECK_SHAPE(dout, din->shape[0], din->shape[1], -1, -1);
    CHECK_ON_GPU(din);
    CHECK_ON_GPU(dout);
    CHECK_DEVICE_POINTER(argmax);
    cuda_maxpool_backward_raw(din->data, dout->data, argmax, din->shape[0] * din->shape[1],
                              din->shape[2] * din->shape[3], dout->shape[2] * dout->shape[3]);
}
#endif
