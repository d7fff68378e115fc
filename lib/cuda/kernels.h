/* The CUDA kernels a lesson can replace: lesson 02 writes its own ReLU, im2col and
 * GEMM and runs the library's CUDA layers with them. CudaKernels holds the raw
 * device-pointer forms; the *_with functions are the Tensor-level layers of
 * layers/conv2d.h, linear.h and relu.h with those kernels (k NULL: the library's). */
#ifndef CUDA_KERNELS_H
#define CUDA_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"
#include "ops/im2col.h"

typedef struct {
    /* relu.c: out = max(0, in); din += dout * (out > 0); n floats */
    void (*relu_forward)(float *out, const float *in, int64_t n);
    void (*relu_backward)(float *din, const float *dout, const float *out, int64_t n);
    /* ops/im2col.h: cols [C*KH*KW, nimg*OH*OW] from images [nimg, C, H, W] */
    void (*im2col)(float *cols, const float *images, int nimg, const ConvGeometry *g);
    /* ops/gemm.h: row-major C = alpha op(A) op(B) + beta C */
    void (*gemm)(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc);
} CudaKernels;

/* The library's raw ReLU kernels (relu.cu); im2col.cu and gemm.cu have the others. */
void cuda_relu_forward_raw(float *out, const float *in, int64_t n);
void cuda_relu_backward_raw(float *din, const float *dout, const float *out, int64_t n);

void cuda_relu_forward_with(const CudaKernels *k, Tensor *out, const Tensor *in);
void cuda_relu_backward_with(const CudaKernels *k, Tensor *din, const Tensor *dout,
                             const Tensor *out);
void cuda_conv2d_forward_with(const CudaKernels *k, Tensor *out, const Tensor *in,
                              const Tensor *weight, const Tensor *bias, int stride, int pad);
void cuda_conv2d_backward_with(const CudaKernels *k, Tensor *din, Tensor *dweight, Tensor *dbias,
                               const Tensor *dout, const Tensor *in, const Tensor *weight,
                               int stride, int pad);
void cuda_linear_forward_with(const CudaKernels *k, Tensor *out, const Tensor *in,
                              const Tensor *weight, const Tensor *bias);
void cuda_linear_backward_with(const CudaKernels *k, Tensor *din, Tensor *dweight, Tensor *dbias,
                               const Tensor *dout, const Tensor *in, const Tensor *weight);

/* Stops with a message when t is not a GPU tensor, or p not memory a kernel can read
 * (a host pointer would make the kernel fail with an illegal address). */
#define CHECK_ON_GPU(t) CHECK_DEVICE(t, DEVICE_CUDA)
void cuda_check_device_pointer_at(const char *file, int line, const char *name, const void *p);
#define CHECK_DEVICE_POINTER(p) cuda_check_device_pointer_at(__FILE__, __LINE__, #p, (p))

#ifdef __cplusplus
}
#endif

#endif
