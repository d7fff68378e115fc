/* Inside the CUDA backend: what its files (and lesson 02's cuBLAS call) share. */
#ifndef CUDA_BACKEND_H
#define CUDA_BACKEND_H

#include "cuda_check.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The cuBLAS handle of the device gpu_init picked (stops when gpu_init was not called). */
cublasHandle_t gpu_cublas(void);

#ifdef __cplusplus
}
#endif

#endif
