/* Inside the CUDA backend: what its C files share. */
#ifndef CUDA_BACKEND_H
#define CUDA_BACKEND_H

#include "cuda_check.h"

/* The cuBLAS handle of the device gpu_init picked (stops when gpu_init was not called). */
cublasHandle_t gpu_cublas(void);

#endif
