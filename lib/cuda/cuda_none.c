/* The CUDA backend's entry points in a build without CUDA (nvcc was not found):
 * cuda_init says so, and anything that would need a GPU stops with the same message. */
#ifndef HAVE_CUDA
#include <stdio.h>

#include "core/check.h"
#include "cuda/clip.h"
#include "cuda/graph.h"
#include "cuda/loss_scale.h"
#include "cuda/optim.h"
#include "device.h"
#include "layers/dropout.h"
#include "layers/layer_ops.h"

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
uint64_t cuda_frees(void) { return 0; }
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
void cuda_memory_in_use(size_t *used, size_t *total) {
    (void)used, (void)total;
    no_cuda(__func__);
}
void cuda_sync(void) { no_cuda(__func__); }
void cuda_sync_compute(void) { no_cuda(__func__); }
bool cuda_is_device_pointer(const void *p) {
    (void)p;
    return false;
}

const LayerOps *layer_ops_cuda(void) { no_cuda("the CUDA layers"); }

void cuda_adam_update(float *p, const float *g, float *m, float *v, int64_t n, float b1, float b2,
                      float step_size, float bias2_sqrt, float eps, float lr, float wd,
                      bool decoupled) {
    (void)p, (void)g, (void)m, (void)v, (void)n, (void)b1, (void)b2, (void)step_size;
    (void)bias2_sqrt, (void)eps, (void)lr, (void)wd, (void)decoupled;
    no_cuda(__func__);
}
void cuda_sgd_update(float *p, const float *g, float *buf, int64_t n, float lr, float momentum,
                     float wd, bool first_step) {
    (void)p, (void)g, (void)buf, (void)n, (void)lr, (void)momentum, (void)wd, (void)first_step;
    no_cuda(__func__);
}
double cuda_sum_squares(const float *x, int64_t n, int64_t block) {
    (void)x, (void)n, (void)block;
    no_cuda(__func__);
}
bool cuda_unscale_find_inf(float *g, int64_t n, float inv_scale) {
    (void)g, (void)n, (void)inv_scale;
    no_cuda(__func__);
}

/* No graph ever records here: the key is drawn, the check runs now (graph.h). */
bool cuda_graph_recording(void) { return false; }
bool cuda_graph_stale(const CudaGraph *g) {
    (void)g;
    return true;
}
const uint64_t *cuda_graph_key(Rng *rng, uint64_t *key) {
    *key = dropout_draw_key(rng);
    return NULL;
}
void cuda_graph_after(void (*check)(const void *ctx), const void *ctx, size_t ctx_bytes) {
    (void)ctx_bytes;
    check(ctx);
}
void cuda_graph_begin(void) { no_cuda(__func__); }
CudaGraph *cuda_graph_end(void) { no_cuda(__func__); }
void cuda_graph_launch(CudaGraph *g) {
    (void)g;
    no_cuda(__func__);
}
void cuda_graph_free(CudaGraph *g) { (void)g; } /* there is none to free */

bool cuda_device_pci_bus_id(int dev, char *out, size_t cap) {
    (void)dev;
    if (cap > 0) out[0] = '\0';
    return false;
}
#endif
