/* Where the direct convolution's 8-pixel segments lie (internal to ops/conv_direct.c
 * and ops/conv_direct16.c).
 *
 * An output row is cut into segments of 8 pixels. Segment s covers output row
 * oh = s / (segments per row) from column ow0; the last segment of a row starts at
 * OW - 8 and overlaps the one before it: keep[s] marks the lanes that are its own,
 * which the gradients must count once. */
#ifndef OPS_CONV_PLAN_H
#define OPS_CONV_PLAN_H

#include <stdint.h>

#include "ops/im2col.h"

enum { CONV_SEG = 8 };

typedef struct {
    int K, L;          /* taps C*KH*KW; segments per image, OH * segments per row */
    int *tap;          /* [K] offset of tap (c, kh, kw) in an input image */
    int *seg_in;       /* [L] offset of the segment's first pixel in an input plane */
    int *seg_out;      /* [L] ... in an output plane */
    int32_t (*keep)[CONV_SEG]; /* [L][8]: -1 for a lane of its own, 0 for a shared one */
} ConvPlan;

/* For a geometry conv_direct_fits takes. */
ConvPlan conv_plan_make(const ConvGeometry *g);
void conv_plan_free(ConvPlan *p);

/* The weight gradient's images a group: as many as fill about a 1 MB L2 cache with
 * their input and output gradient (at least 1). A block of the kernel sweeps a group
 * from cache, and its lane sums are paid once per group; the size depends on the
 * shapes only, so the sums are the same on any number of threads. */
int conv_plan_image_group(const ConvGeometry *g, int Cout);

/* The weight [Cout, K] as [K, ld] (ld >= Cout, the columns past Cout zero): the
 * channels of one tap side by side, as the forward kernels read them. xfree it. */
float *conv_weight_by_tap(const float *weight, int K, int Cout, int ld);

/* The weight [Cout, K] as [tap block, Cout, taps], taps past K zero: one stream through
 * memory for each block of taps of the input gradient. xfree it. */
float *conv_weight_tap_blocks(const float *weight, int K, int Cout, int taps);

#endif
