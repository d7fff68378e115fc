/* Inside the CUDA backend (and lesson 02's CUDA files): checking every CUDA and cuBLAS
 * call, from C and from CUDA C++ alike, and the cuBLAS handle.
 *
 *   CUDA_CHECK(cudaMalloc(&p, bytes));
 *   kernel<<<blocks, threads, 0, cuda_stream()>>>(...); CUDA_CHECK_LAUNCH();
 *   CUBLAS_CHECK(cublasSgemm(cuda_cublas(), ...));
 *
 * A failure stops the program with file, line, the call, CUDA's error name and
 * text, and a hint about the usual cause (exit status 2, like CHECK). Kernels run
 * asynchronously: an error inside one shows up at a later call. Run with
 * COURSE_CUDA_SYNC=1 to wait after every launch, so the error points at its kernel. */
#ifndef CUDA_CUDA_CHECK_H
#define CUDA_CUDA_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "core/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

__attribute__((noreturn)) void cuda_fail_at(const char *file, int line, const char *call,
                                            int code, const char *name, const char *text);
__attribute__((noreturn)) void cublas_fail_at(const char *file, int line, const char *call,
                                              int status);
/* After a launch: the launch error, and with COURSE_CUDA_SYNC=1 the kernel's own. */
void cuda_check_launch_at(const char *file, int line);

/* The stream every library kernel, copy on the device and cuBLAS call goes to (made
 * by cuda_init): kernel<<<blocks, threads, 0, cuda_stream()>>>. Not the legacy default
 * stream, which a CUDA graph cannot record (graph.h). */
cudaStream_t cuda_stream(void);

/* The cuBLAS handle of the device cuda_init picked (stops when it was not called). */
cublasHandle_t cuda_cublas(void);

/* x[0..n) = value, device memory (lib/cuda/tensor.cu: DEVICE_CUDA tensors' fill). */
void cuda_fill(float *x, int64_t n, float value);
/* x[0..n) *= factor, device memory (DEVICE_CUDA tensors' tensor_scale). */
void cuda_scale(float *x, int64_t n, float factor);
/* 16-bit tensors (tensor.cu): x[0..n) = bits; dst = src converted (core/dtype.h) */
void cuda_fill16(uint16_t *x, int64_t n, uint16_t bits);
void cuda_convert(void *dst, DType dst_dtype, const void *src, DType src_dtype, int64_t n);

#ifdef __cplusplus
}
#endif

#define CUDA_CHECK(call)                                                                \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess)                                                          \
            cuda_fail_at(__FILE__, __LINE__, #call, (int)e_, cudaGetErrorName(e_),      \
                         cudaGetErrorString(e_));                                       \
    } while (0)

#define CUBLAS_CHECK(call)                                                              \
    do {                                                                                \
        cublasStatus_t s_ = (call);                                                     \
        if (s_ != CUBLAS_STATUS_SUCCESS) cublas_fail_at(__FILE__, __LINE__, #call, (int)s_); \
    } while (0)

#define CUDA_CHECK_LAUNCH() cuda_check_launch_at(__FILE__, __LINE__)

#endif
