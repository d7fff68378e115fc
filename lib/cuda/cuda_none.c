/* The CUDA backend's entry points in a build without CUDA (nvcc was not found):
 * cuda_init says so, and anything that would need a GPU stops with the same message. */
#ifndef HAVE_CUDA
#include <stdio.h>

#include "core/check.h"
#include "device.h"
#include "layers/layer_ops.h"
#include "train/clip.h"
#include "train/optim.h"

#define NO_CUDA_MSG                                                                       \
    "this build has no CUDA: nvcc was not found when the library was built (`make config` " \
    "shows what was found; set CUDA_HOME=/path/to/cuda, then rebuild)"

bool cuda_built(void) { return false; }

bool cuda_init(char *why, size_t why_cap) {
    snprintf(why, why_cap, "%s", NO_CUDA_MSG);
    return false;
}

int cuda_current_device(void) { return -1; }

int cuda_device_count(char *why, size_t why_cap) {
    snprintf(why, why_cap, "%s", NO_CUDA_MSG);
    return -1;
}

static __attribute__((noreturn)) void no_cuda(const char *what) {
    fatal("%s: %s", what, NO_CUDA_MSG);
}

void cuda_device_info(int dev, CudaDeviceInfo *info) {
    (void)dev;
    (void)info;
    no_cuda(__func__);
}
void *cuda_malloc(size_t bytes) {
    (void)bytes;
    no_cuda(__func__);
}
void cuda_free(void *p) {
    if (p) no_cuda(__func__);
}
void cuda_copy_to_device(void *dst, const void *src, size_t bytes) {
    (void)dst, (void)src, (void)bytes;
    no_cuda(__func__);
}
void cuda_copy_to_host(void *dst, const void *src, size_t bytes) {
    (void)dst, (void)src, (void)bytes;
    no_cuda(__func__);
}
void cuda_copy_on_device(void *dst, const void *src, size_t bytes) {
    (void)dst, (void)src, (void)bytes;
    no_cuda(__func__);
}
void cuda_sync(void) { no_cuda(__func__); }
void cuda_sync_compute(void) { no_cuda(__func__); }
bool cuda_is_device_pointer(const void *p) {
    (void)p;
    return false;
}

const LayerOps *layer_ops_cuda(void) { no_cuda("the CUDA layers"); }

void cuda_adam_step(Adam *opt, ParamList *params) {
    (void)opt, (void)params;
    no_cuda(__func__);
}
void cuda_sgd_step(Sgd *opt, ParamList *params) {
    (void)opt, (void)params;
    no_cuda(__func__);
}
float cuda_grad_norm(const ParamList *params) {
    (void)params;
    no_cuda(__func__);
}
float cuda_clip_grad_norm(ParamList *params, float max_norm) {
    (void)params, (void)max_norm;
    no_cuda(__func__);
}
#endif
