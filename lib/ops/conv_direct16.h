/* The direct convolution on 16-float vectors, for cores with AVX-512 (internal to
 * ops/conv_direct.c, which calls these when conv_direct16_takes says so).
 *
 * An 8-float kernel can use at most half of such a core: each FMA instruction does 16
 * multiply-adds where an AVX2 one does 8. The CNN's second convolution has rows of 8
 * output pixels, so a 16-lane vector cannot simply hold a longer run of a row. Instead:
 *
 * - forward and weight gradient: a vector holds 16 output channels of one pixel; the
 *   input pixel a tap meets is broadcast to all lanes. Any geometry works, and no
 *   shuffles compete with the FMAs for the two 512-bit units. The output (forward) and
 *   output gradient (weight gradient) are transposed to and from pixel-major tiles
 *   (each thread transposes the output gradients it reads), which costs little when
 *   there are many taps (K >= 64). Fewer taps (the CNN's first layer) go to the pair
 *   kernels below.
 * - input gradient, and the rest: a vector holds two 8-pixel segments
 *   (ops/conv_pairs16.h; two rows of 8 for the CNN, adjacent in memory).
 *
 * The forward sums every output in the same order as the 8-lane kernels (the bias,
 * then the taps in order), so it gives the same bits. The gradients sum in another
 * order, fixed by the shapes alone: the same bits on any number of threads. */
#ifndef OPS_CONV_DIRECT16_H
#define OPS_CONV_DIRECT16_H

#include <stdbool.h>

#include "ops/conv_plan.h"
#include "ops/im2col.h"

/* Whether this build has the 16-lane kernels (AVX-512) for a shape conv_direct_fits. */
bool conv_direct16_takes(const ConvGeometry *g);

/* Whether the forward and weight gradient take the channel-vector kernels (64 taps or
 * more); fewer taps go to the pair kernels of ops/conv_pairs16.c. */
bool conv_direct16_many_taps(const ConvGeometry *g);

void conv_direct16_forward(float *out, const float *in, const float *weight, const float *bias,
                           int N, int Cout, const ConvGeometry *g, const ConvPlan *p);
void conv_direct16_weight_grad(float *dweight, float *dbias, const float *dout, const float *in,
                               int N, int Cout, const ConvGeometry *g, const ConvPlan *p);
void conv_direct16_input_grad(float *din, const float *dout, const float *weight, int N,
                              int Cout, const ConvGeometry *g, const ConvPlan *p);

#endif
