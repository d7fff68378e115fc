#include "core/gpu_peak.h"

bool gpu_supports_precision(int major, int minor, DType dtype) {
    (void)minor;
    if (dtype == DTYPE_BF16) return major >= 8;
    if (dtype == DTYPE_F16) return major >= 7;
    return true;
}

int gpu_tensor_flop_per_clock_sm(int major, int minor, DType dtype) {
    if ((dtype != DTYPE_BF16 && dtype != DTYPE_F16) || !gpu_supports_precision(major, minor, dtype))
        return 0;
    if (major == 7) return 1024;                  /* V100, T4 (float16 only) */
    if (major == 8) return minor == 0 ? 2048 : 1024; /* A100; A40, A10, L40S (see the header) */
    if (major == 9) return 4096;                  /* H100, H200 */
    return 0;
}

double gpu_tensor_peak_flops(int major, int minor, int multiprocessors, int clock_khz, DType dtype) {
    const int per = gpu_tensor_flop_per_clock_sm(major, minor, dtype);
    if (per == 0 || multiprocessors <= 0 || clock_khz <= 0) return 0.0;
    return (double)per * multiprocessors * clock_khz * 1e3;
}

double gpu_fp32_peak_flops(int major, int minor, int multiprocessors, int clock_khz) {
    int lanes = 0;
    if (major == 6 || major == 8) lanes = minor == 0 ? 64 : 128;
    else if (major == 7) lanes = 64;
    else if (major >= 9) lanes = 128;
    if (lanes == 0 || clock_khz <= 0 || multiprocessors <= 0) return 0.0;
    return (double)multiprocessors * lanes * 2.0 * clock_khz * 1e3;
}
