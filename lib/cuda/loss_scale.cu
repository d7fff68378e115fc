// Unscaling the gradients of dynamic loss scaling on the GPU (lib/train/loss_scale.c;
// its CPU loop is the twin): one grid-stride kernel multiplies every gradient by 1/S and
// notes whether any was inf or NaN, by the same bit test as the CPU; the flag lives in
// device memory, cleared by a one-thread kernel on the same stream and read back once,
// the step's one wait for the GPU (the host must know whether to step).
#include "cuda/loss_scale.h"
#include "cuda_check.h"
#include "launch.h"
extern "C" {
#include "device.h"
}

static __global__ void clear_flag_kernel(int *flag) { *flag = 0; }

static __global__ void unscale_kernel(float *g, int64_t n, float inv_scale, int *flag) {
    bool found = false; // each thread writes the flag at most once
    GRID_STRIDE_LOOP(k, n) {
        const float v = g[k];
        found |= (dtype_bits_of_f32(v) & 0x7f800000u) == 0x7f800000u;
        g[k] = v * inv_scale;
    }
    if (found) *flag = 1; // every writer writes 1: no atomic needed
}

// The flag, kept between calls (one step at a time per process).
static int *flag;

extern "C" bool cuda_unscale_find_inf(float *g, int64_t n, float inv_scale) {
    if (!flag) flag = (int *)cuda_malloc(sizeof *flag);
    clear_flag_kernel<<<1, 1, 0, cuda_stream()>>>(flag);
    CUDA_CHECK_LAUNCH();
    if (n > 0) {
        unscale_kernel<<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(g, n, inv_scale, flag);
        CUDA_CHECK_LAUNCH();
    }
    int found = 0;
    cuda_copy_to_host(&found, flag, sizeof found); // waits for both kernels
    return found != 0;
}
