/* The CUDA kernels of the library, as host functions that launch them (defined in
 * the .cu files of this directory). Pointers are device memory; every launch is
 * checked. Layout and meaning are those of the CPU twin named in each comment, so
 * the tests can compare the two. */
#ifndef CUDA_KERNELS_H
#define CUDA_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/im2col.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Threads per block for the 1-D kernels: a multiple of the 32-thread warp. */
enum { CUDA_THREADS = 256 };

/* Blocks for n elements at `threads` per block, capped: the kernels loop over the
 * rest (grid-stride), so any n works with a bounded grid. */
int cuda_blocks_for(int64_t n, int threads);

void cuda_fill_raw(float *x, int64_t n, float value);
/* relu.c: out = max(0, in); din += dout * (out > 0) */
void cuda_relu_forward_raw(float *out, const float *in, int64_t n);
void cuda_relu_backward_raw(float *din, const float *dout, const float *out, int64_t n);

/* linear.c bias: out [rows, cols] = bias [cols] in every row; dbias [cols] += column sums */
void cuda_bias_rows_raw(float *out, const float *bias, int rows, int cols);
void cuda_bias_rows_backward_raw(float *dbias, const float *dout, int rows, int cols);

/* conv2d.c: out [N, Cout, OHW] = prod [Cout, N*OHW] regrouped + bias [Cout];
 * dy [Cout, N*OHW] = dout [N, Cout, OHW] regrouped; dbias [Cout] += sums of dy rows */
void cuda_conv_output_raw(float *out, const float *prod, const float *bias, int N, int Cout,
                          int OHW);
void cuda_conv_gather_dout_raw(float *dy, const float *dout, int N, int Cout, int OHW);
void cuda_rows_sum_add_raw(float *dbias, const float *dy, int rows, int cols);

/* im2col.c: cols [C*KH*KW, nimg*OH*OW]; images [nimg, C, H, W] += adjoint */
void cuda_im2col_raw(float *cols, const float *images, int nimg, const ConvGeometry *g);
void cuda_col2im_raw(float *images, const float *cols, int nimg, const ConvGeometry *g);

/* maxpool2d.c, on planes [planes, H, W] -> [planes, OH, OW]; argmax within the plane */
void cuda_maxpool_forward_raw(float *out, int *argmax, const float *in, int planes, int H,
                              int W, int kernel, int stride);
/* din [planes, HW] += dout [planes, OHW] routed through argmax */
void cuda_maxpool_backward_raw(float *din, const float *dout, const int *argmax, int planes,
                               int HW, int OHW);

/* softmax_xent.c: row_loss [N] in double (NaN for a label outside 0..K-1, whose row goes to
 * *bad_row, which starts at N); dlogits += gradient unless NULL. */
void cuda_softmax_xent_raw(double *row_loss, int *bad_row, float *dlogits, const float *logits,
                           const int *labels, int N, int K);

/* optim.c: one Adam update (the host computes the bias corrections, as adam_update
 * does) and one SGD update. */
void cuda_adam_raw(float *p, const float *g, float *m, float *v, int64_t n, float beta1,
                   float beta2, float step_size, float bias2_sqrt, float eps, float lr,
                   float weight_decay, bool decoupled);
void cuda_sgd_raw(float *p, const float *g, float *buf, int64_t n, float lr, float momentum,
                  float weight_decay, bool first_step);

#ifdef __cplusplus
}
#endif

#endif
