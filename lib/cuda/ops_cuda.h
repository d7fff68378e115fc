/* The CUDA twins of the library's operations: the same signature as the CPU
 * function named in each comment, on DEVICE_CUDA tensors (and device pointers where
 * the CPU takes a raw pointer: argmax, labels). They exist only in builds with CUDA
 * (HAVE_CUDA); gpu_init() must have succeeded first. Results match the CPU within
 * the tolerances stated in tests/gpu/check_gpu.c. */
#ifndef CUDA_OPS_CUDA_H
#define CUDA_OPS_CUDA_H

#include <stdbool.h>

#include "core/tensor.h"
#include "ops/im2col.h"
#include "train/optim.h"

/* ops/gemm.h: row-major C = alpha op(A) op(B) + beta C, through cuBLAS (full FP32:
 * the default math mode, no TF32). */
void cuda_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A,
               int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* ops/im2col.h */
void cuda_im2col(float *cols, const float *images, int nimg, const ConvGeometry *g);
void cuda_col2im(float *images, const float *cols, int nimg, const ConvGeometry *g);

/* layers/relu.h */
void cuda_relu_forward(Tensor *out, const Tensor *in);
void cuda_relu_backward(Tensor *din, const Tensor *dout, const Tensor *out);

/* layers/linear.h */
void cuda_linear_forward(Tensor *out, const Tensor *in, const Tensor *weight, const Tensor *bias);
void cuda_linear_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                          const Tensor *in, const Tensor *weight);

/* layers/conv2d.h: the whole batch as one im2col and one GEMM */
void cuda_conv2d_forward(Tensor *out, const Tensor *in, const Tensor *weight, const Tensor *bias,
                         int stride, int pad);
void cuda_conv2d_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                          const Tensor *in, const Tensor *weight, int stride, int pad);
void cuda_conv2d_release_workspace(void);

/* layers/maxpool2d.h; argmax is device memory [N*C*OH*OW] */
void cuda_maxpool2d_forward(Tensor *out, int *argmax, const Tensor *in, int kernel, int stride);
void cuda_maxpool2d_backward(Tensor *din, const Tensor *dout, const int *argmax);

/* layers/softmax_xent.h; labels are device memory [N]. Returns the mean loss (the
 * host waits for it). */
float cuda_softmax_cross_entropy(Tensor *dlogits, const Tensor *logits, const int *labels);

/* train/optim.h, for parameters (and optimiser state) on the GPU */
void cuda_adam_step(Adam *opt, ParamList *params);
void cuda_sgd_step(Sgd *opt, ParamList *params);

/* The kernels a model on the GPU uses, replaceable one by one (lesson 02 plugs in
 * its own): the raw device-pointer forms of the functions above. */
typedef struct {
    void (*relu_forward)(float *out, const float *in, int64_t n);
    void (*relu_backward)(float *din, const float *dout, const float *out, int64_t n);
    void (*im2col)(float *cols, const float *images, int nimg, const ConvGeometry *g);
    void (*gemm)(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc);
} CudaKernels;

CudaKernels cuda_library_kernels(void);

/* The layers above with some kernels replaced (NULL k: the library's). */
void cuda_conv2d_forward_with(const CudaKernels *k, Tensor *out, const Tensor *in,
                              const Tensor *weight, const Tensor *bias, int stride, int pad);
void cuda_conv2d_backward_with(const CudaKernels *k, Tensor *din, Tensor *dweight, Tensor *dbias,
                               const Tensor *dout, const Tensor *in, const Tensor *weight,
                               int stride, int pad);
void cuda_linear_forward_with(const CudaKernels *k, Tensor *out, const Tensor *in,
                              const Tensor *weight, const Tensor *bias);
void cuda_linear_backward_with(const CudaKernels *k, Tensor *din, Tensor *dweight, Tensor *dbias,
                               const Tensor *dout, const Tensor *in, const Tensor *weight);

#endif
