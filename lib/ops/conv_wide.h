/* The direct convolution on wide rows, for a first layer with few taps (internal to
 * the fused block of layers/conv_pool_relu.c).
 *
 * The output is computed on rows as long as the input's: W columns, not OW = W - KW + 1,
 * the last KW - 1 of each row garbage. In exchange the outputs p, p + 1, ... of a plane
 * meet the inputs p + t, p + t + 1, ... at every tap t = (c*H + kh)*W + kw, so a vector
 * of outputs is one unaligned load a tap: no shuffles and no masks, where the segment
 * kernels of ops/conv_direct.h split rows of 24 into pairs of 8 that need both (and
 * ran the CNN's first layer at 40-50 % of the FMA peak). The price is the garbage
 * columns (4 of 28 for MNIST) and a layout only a fused caller can keep: it pools from
 * it, and writes the output gradient into it with zeros in the garbage columns.
 *
 * Vectors are 16 floats in AVX-512 builds and 8 otherwise (plain GCC vectors: any
 * x86-64 or other core). The forward sums like the other direct kernels (the bias,
 * then the taps in order: the same bits); the weight gradient in an order fixed by
 * the shapes (the same bits on any number of threads). */
#ifndef OPS_CONV_WIDE_H
#define OPS_CONV_WIDE_H

#include "ops/im2col.h"

typedef struct {
    int Cout, K;       /* output channels; taps C*KH*KW */
    int plane;         /* floats an output plane: OH*W rounded up to a block of vectors */
    int image;         /* floats an input image with its zero tail (conv_wide_pad) */
    int *tap;          /* [K] offset of tap (c, kh, kw) in an input image */
    float *wt;         /* the weight as [K, Cout] (the forward's, set by conv_wide_weights) */
} ConvWide;

/* For stride 1, no padding. Free with conv_wide_free. */
ConvWide conv_wide_plan(const ConvGeometry *g, int Cout);
void conv_wide_free(ConvWide *p);

/* The forward's copy of weight [Cout, K]. */
void conv_wide_weights(ConvWide *p, const float *weight);

/* dst [p->image] = the image src [C*H*W], then zeros: the tail the taps read past it. */
void conv_wide_pad(float *dst, const float *src, const ConvGeometry *g, const ConvWide *p);

/* out [Cout, plane] = the convolution of one padded image x, plus the bias; one thread. */
void conv_wide_forward(float *out, const float *x, const float *bias, const ConvWide *p);

/* dweight [Cout, K] += the weight gradient from N padded images x [N, image] and
 * their output gradients dout [N, Cout, plane] (zero in the garbage columns and the
 * tail). Parallel over blocks of 5 channels x 5 taps (AVX2: 3 x 4), 50 for the CNN's
 * first layer; call it for a few images at a time (about 1 MB of dout), so that they
 * stay in cache while every block reads them. */
void conv_wide_weight_grad(float *dweight, const float *dout, const float *x, int N,
                           const ConvWide *p);

#endif
