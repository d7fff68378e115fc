/* --precision bf16 or fp16 on a GPU: its tensor cores must take the type (bfloat16 from
 * compute capability 8.0, float16 from 7.0: core/gpu_peak.h). One check for every
 * training program, so that each says the same thing.
 *
 *   precision_require_gpu(dist, DTYPE_BF16, "bf16", NULL);   // after the ranks joined
 *
 * Every rank checks its own GPU (one per rank); when any lacks the tensor cores, the job
 * stops: that rank names its GPU and what to use instead, the others exit quietly with
 * the same status. d NULL: a program of one process. Float32, or no GPU in use
 * (cuda_current_device() < 0), passes. */
#ifndef TRAIN_PRECISION_GPU_H
#define TRAIN_PRECISION_GPU_H

#include "core/dtype.h"
#include "dist/dist.h"

/* instead: what the message suggests (NULL: "fp16 or fp32" where the GPU takes fp16, else
 * "fp32"). */
void precision_require_gpu(Dist *d, DType dtype, const char *precision, const char *instead);

#endif
