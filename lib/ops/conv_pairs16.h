/* The direct convolution on pairs of 8-pixel segments, one 16-float vector a pair
 * (AVX-512 builds; internal to ops/conv_direct16.c).
 *
 * The 8-lane kernels of ops/conv_direct.c with two segments (ops/conv_plan.h) in each
 * vector: the same register blocks, twice the work per FMA. Where a pair's two
 * segments are not side by side in memory (the next row), the vector is loaded or
 * stored as two halves. Used for the input gradient of every shape, and for the
 * forward and weight gradient of convolutions with few taps (the CNN's first), where
 * the channel-vector kernels of conv_direct16.c would spend more on transposes than
 * on FMAs.
 *
 * The forward sums in the 8-lane kernels' order (the same bits); the gradients in an
 * order fixed by the shapes (the same bits on any number of threads). */
#ifndef OPS_CONV_PAIRS16_H
#define OPS_CONV_PAIRS16_H

#include "ops/conv_plan.h"

void conv_pairs16_forward(float *out, const float *in, const float *weight, const float *bias,
                          int N, int Cout, const ConvGeometry *g, const ConvPlan *p);
/* with the bias gradient: its sums read dout while the first taps' do */
void conv_pairs16_weight_grad(float *dweight, float *dbias, const float *dout, const float *in,
                              int N, int Cout, const ConvGeometry *g, const ConvPlan *p);
void conv_pairs16_input_grad(float *din, const float *dout, const float *weight, int N,
                             int Cout, const ConvGeometry *g, const ConvPlan *p);

#endif
