/* The GPU functions of a build without CUDA (nvcc was not found): gpu_init says
 * so, and anything that would need a GPU stops with the same message. */
#ifndef HAVE_CUDA
#include <stdio.h>

#include "core/check.h"
#include "gpu.h"

#define NO_CUDA_MSG                                                                       \
    "this build has no CUDA: nvcc was not found when the library was built (`make config` " \
    "shows what was found; set CUDA_HOME=/path/to/cuda, then rebuild)"

bool gpu_built(void) { return false; }

bool gpu_init(char *why, size_t why_cap) {
    snprintf(why, why_cap, "%s", NO_CUDA_MSG);
    return false;
}

int gpu_current_device(void) { return -1; }

int gpu_device_count(char *why, size_t why_cap) {
    snprintf(why, why_cap, "%s", NO_CUDA_MSG);
    return -1;
}

static _Noreturn void no_cuda(const char *what) { fatal("%s: %s", what, NO_CUDA_MSG); }

void gpu_device_info(int dev, GpuInfo *info) {
    (void)dev;
    (void)info;
    no_cuda(__func__);
}
void *gpu_malloc(size_t bytes) {
    (void)bytes;
    no_cuda(__func__);
}
void gpu_free(void *p) {
    if (p) no_cuda(__func__);
}
void gpu_copy_to_device(void *dst, const void *src, size_t bytes) {
    (void)dst, (void)src, (void)bytes;
    no_cuda(__func__);
}
void gpu_copy_to_host(void *dst, const void *src, size_t bytes) {
    (void)dst, (void)src, (void)bytes;
    no_cuda(__func__);
}
void gpu_copy_on_device(void *dst, const void *src, size_t bytes) {
    (void)dst, (void)src, (void)bytes;
    no_cuda(__func__);
}
void gpu_sync(void) { no_cuda(__func__); }
bool gpu_is_device_pointer(const void *p) {
    (void)p;
    return false;
}
#endif
