/* Lesson 02: the CNN on a GPU. The GPU functions you write, as C functions on raw
 * device pointers; read by C (the rest of the lesson) and CUDA C++ (the .cu files). */
#ifndef LESSON02_GPU_H
#define LESSON02_GPU_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "core/todo.h"
#include "cuda/gemm_map.h"
#include "ops/im2col.h"

#define LESSON_DIR "lessons/02-gpu-cnn"
#define TODO_STOP(id) todo_stop(id, LESSON_DIR, __func__)

/* One batch in GPU memory, allocated once and refilled every step. */
typedef struct {
    int size;           /* images it can hold */
    int image_floats;   /* C * H * W */
    float *images;      /* device [size, C, H, W] */
    int *labels;        /* device [size] */
} DeviceBatch;

/* TODO 2.1 (gpu_calls.cu): allocate / free the device buffers; copy n images
 * (n * image_floats floats) and n labels from host memory into them. */
void lesson_device_batch_init(DeviceBatch *d, int size, int image_floats);
void lesson_device_batch_free(DeviceBatch *d);
void lesson_upload_batch(DeviceBatch *d, const float *images, const int *labels, int n);

/* TODO 2.2 (kernels.cu): ReLU kernels, as lib/layers/relu.c:
 * out = max(0, in); din += dout * (out > 0). n floats, device pointers. */
void lesson_relu_forward(float *out, const float *in, int64_t n);
void lesson_relu_backward(float *din, const float *dout, const float *out, int64_t n);

/* TODO 2.3 (kernels.cu): im2col on the GPU, the layout of lib/ops/im2col.h:
 * cols [C*KH*KW, nimg*OH*OW] from images [nimg, C, H, W]. */
void lesson_im2col(float *cols, const float *images, int nimg, const ConvGeometry *g);

/* TODO 2.4 (gemm_map.c): the cuBLAS arguments for the row-major
 * C [M, N] = alpha op(A) op(B) + beta C of ops/gemm.h. Host code. */
CublasGemm lesson_gemm_to_cublas(bool trans_a, bool trans_b, int M, int N, int K, int lda,
                                 int ldb, int ldc);
/* TODO 2.4 (gpu_calls.cu): that GEMM on device pointers, through cublasSgemm. */
void lesson_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc);

#ifdef __cplusplus
}
#endif

#endif
