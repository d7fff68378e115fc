/* Direct convolution for stride 1 and no padding (the CNN's layers), without im2col.
 *
 * im2col + GEMM copies every input pixel KH*KW times into a column matrix, and the
 * backward writes a second one and adds it back with col2im; for the CNN's second
 * convolution that is 32 MB of traffic per batch around each GEMM. Here the
 * kernels read the input where it lies: an output row is cut into segments of 8
 * pixels, one 8-float vector each, and the input a kernel tap meets for a segment
 * is again 8 consecutive floats, at a fixed offset from the segment. A block of
 * output vectors stays in registers while the sum runs over the taps. Builds for
 * AVX-512 cores run 16-float twins of these kernels (ops/conv_direct16.h).
 *
 * Results are the same on any number of threads: every output value, weight and
 * input gradient is summed by one thread in a fixed order. */
#ifndef OPS_CONV_DIRECT_H
#define OPS_CONV_DIRECT_H

#include <stdbool.h>

#include "ops/im2col.h"

/* Whether these kernels take the convolution: stride 1, no padding, and output rows
 * of at least 8 pixels that cut into 8-pixel segments with little overlap. */
bool conv_direct_fits(const ConvGeometry *g);

/* out [N, Cout, OH, OW] = in [N, C, H, W] (*) weight [Cout, C, KH, KW] + bias */
void conv_direct_forward(float *out, const float *in, const float *weight, const float *bias,
                         int N, int Cout, const ConvGeometry *g);

/* dweight [Cout, C*KH*KW] and dbias [Cout] += the weight and bias gradients, given
 * dout [N, Cout, OH, OW] */
void conv_direct_weight_grad(float *dweight, float *dbias, const float *dout, const float *in,
                             int N, int Cout, const ConvGeometry *g);

/* dbias [Cout] += the sum of each channel's planes of dout [N, Cout, OHW] (for the
 * kernels that do not sum it with the weight gradient) */
void conv_direct_bias_grad(float *dbias, const float *dout, int N, int Cout, int OHW);

/* din [N, C, H, W] += the input gradient */
void conv_direct_input_grad(float *din, const float *dout, const float *weight, int N,
                            int Cout, const ConvGeometry *g);

#endif
