/* A GPU's dense tensor-core peak for 16-bit training (bfloat16 or float16 inputs, float32
 * accumulation), from the numbers the CUDA runtime gives (compute capability, SM count,
 * clock): the denominator of the MFU of a bf16 or fp16 run (issue 28); and the float32
 * peak, on the FP32 lanes (gpu_fp32_peak_flops, below).
 *
 *   peak = dense FLOP per clock per SM  x  SMs  x  clock
 *
 * FLOP per clock per SM, dense (no 2:4 sparsity), float32 accumulation, derived from the
 * vendor's published peaks (their TFLOP/s / (SMs x boost clock)):
 *   7.0  V100:   125 TFLOP/s fp16 / (80 SMs x 1.53 GHz)   = 1,021 -> 1,024 (no bf16)
 *   7.5  T4:      65 TFLOP/s fp16 / (40 SMs x 1.59 GHz)   = 1,022 -> 1,024 (no bf16)
 *   8.0  A100:   312 TFLOP/s / (108 SMs x 1.41 GHz)       = 2,049 -> 2,048
 *   8.6  A40:  149.7 TFLOP/s / (84 SMs x 1.74 GHz)        = 1,024; A10: 125 / (72 x 1.695) = 1,024
 *   8.9  L40S:   362 TFLOP/s / (142 SMs x 2.52 GHz)       = 1,011 -> 1,024
 *   9.0  H100 SXM: 989 TFLOP/s / (132 SMs x 1.83 GHz)     = 4,094 -> 4,096
 * GeForce boards of 8.6 and 8.9 (RTX 3090, 4090) run float32 accumulation at half their
 * float16-accumulation rate (NVIDIA's Ampere and Ada GA102/AD102 whitepapers: 71 and
 * 165 TFLOP/s), 512 per clock per SM: against 1,024 their MFU reads half as large.
 * Later architectures (10.x, 12.x) are not in this table: 0 (unknown; --peak-tflops).
 * The clock is the runtime's (its boost clock, about 1.98 GHz on an H100 SXM: 1,070
 * TFLOP/s by this formula, where NVIDIA's 989 assumes 1.83). */
#ifndef CORE_GPU_PEAK_H
#define CORE_GPU_PEAK_H

#include <stdbool.h>

#include "core/dtype.h"

/* Dense FLOP per clock per SM of `dtype` (DTYPE_BF16 or DTYPE_F16) on tensor cores of
 * compute capability major.minor; 0 when unknown or not supported. */
int gpu_tensor_flop_per_clock_sm(int major, int minor, DType dtype);
/* FLOP/s: that x multiprocessors x clock (kHz); 0 when any of them is unknown. */
double gpu_tensor_peak_flops(int major, int minor, int multiprocessors, int clock_khz, DType dtype);
/* A GPU's FP32 peak in FLOP/s: multiprocessors x FP32 lanes x 2 (an FMA) x clock (kHz);
 * 0 when the clock or the architecture is unknown. Lanes per multiprocessor (NVIDIA's
 * CUDA programming guide, "arithmetic instructions"): 64 on 6.0, 7.x and 8.0 (P100,
 * V100, T4, A100), 128 on 6.1, 8.6, 8.9, 9.0 and later. Lessons 04 and 10 divide by it. */
double gpu_fp32_peak_flops(int major, int minor, int multiprocessors, int clock_khz);
/* Whether the tensor cores take `dtype`: bfloat16 from 8.0 (Ampere), float16 from 7.0
 * (Volta); float32 always. */
bool gpu_supports_precision(int major, int minor, DType dtype);

#endif
