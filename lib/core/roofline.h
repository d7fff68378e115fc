/* A layer on the roofline: what one call of its forward costs, counted from its shapes
 * (FLOP and the bytes it must move at least), and where its measured time puts it
 * against the machine's two roofs (core/machine.h).
 *
 *   LayerShape s = {LAYER_LINEAR, .rows = B * T, .in = D, .out = 3 * D, .dtype = DTYPE_F32};
 *   LayerCost c = roofline_layer_cost(&s);
 *   RooflinePoint p = roofline_point(c, seconds_of_one_call, &machine);
 *
 * The conventions (the sheet of lesson 10 gives them too; its TODO 10.4 is this for the
 * linear layer and layer norm):
 *   - FLOP: a multiply-add is 2 FLOP (a multiply and an add); exp, division and square
 *     root count 1 each where counted; per-row work (a row's division, square root) is
 *     left out, it is D times smaller than the per-element work.
 *   - bytes: each tensor the call reads or writes, once, dtype_size bytes an element
 *     (float32 always for the saved statistics and int32 tokens): the least traffic the
 *     call can have, with perfect reuse in the caches. Real kernels move more.
 *   - the forward only: a training step's backward costs about 2 forwards (core/roofline's
 *     MFU counts 3 x the forward). */
#ifndef CORE_ROOFLINE_H
#define CORE_ROOFLINE_H

#include <stdint.h>

#include "core/dtype.h"
#include "core/machine.h"

typedef enum {
    LAYER_LINEAR,        /* out [N, M] = in [N, K] W[M, K]^T + b [M]: rows N, in K, out M */
    LAYER_LAYERNORM,     /* out [N, D] from in [N, D], gamma, beta [D]; mean, rstd [N]
                          * saved (float32): rows N, in D */
    LAYER_ATTENTION,     /* causal: ctx [N, D] from qkv [N, 3D], probs [B, H, T, T] saved
                          * (float32), N = B T: rows N, in D, seq T, heads H */
    LAYER_SOFTMAX_XENT,  /* loss and dlogits [N, V] from logits [N, V] and labels [N]
                          * (int32): rows N, in V */
    LAYER_EMBEDDING,     /* out [N, D] = table rows of tokens [N] (int32) x scale: rows N,
                          * in D, out V (the table's rows; only N of them are read) */
} LayerKind;

typedef struct {
    LayerKind kind;
    int64_t rows, in, out; /* as the kind says above */
    int64_t seq, heads;    /* attention only */
    DType dtype;           /* of the activations and weights */
} LayerShape;

typedef struct {
    double flop;  /* of one forward call */
    double bytes; /* read and written by it, at least */
} LayerCost;

/* One call's forward cost:
 *   linear      flop 2 N K M             bytes s (N K + M K + M + N M)
 *   layer norm  flop 8 N D               bytes s (2 N D + 2 D) + 4 x 2 N
 *               (per element: 1 for the mean's sum, 3 for the variance's (subtract,
 *               square, add), 4 for the output (subtract, times rstd, times gamma, plus
 *               beta))
 *   attention   flop 2 x 2 dh x B H T (T + 1) / 2 = 2 N D (T + 1)   (scores and context
 *               over the causal triangle, dh = D / H; the softmax left out)
 *               bytes s (3 N D + N D) + 4 B H T T
 *   softmax_xent flop 5 N V (max, subtract, exp, sum, scale)   bytes s 2 N V + 4 N
 *   embedding   flop N D (the scale)     bytes 4 N + s 2 N D
 * with s = dtype_size(dtype). */
LayerCost roofline_layer_cost(const LayerShape *s);

typedef enum { ROOF_MEMORY, ROOF_COMPUTE } RooflineBound;

typedef struct {
    double intensity;     /* arithmetic intensity, FLOP per byte: flop / bytes */
    double gflops;        /* attained: flop / seconds / 1e9 */
    double roof_gflops;   /* attainable at this intensity: min(peak, bandwidth x intensity) */
    double pct_of_roof;   /* 100 x gflops / roof_gflops (over 100: the bytes came from a
                           * cache, not from memory) */
    RooflineBound bound;  /* ROOF_MEMORY where intensity < the ridge (peak / bandwidth),
                           * else ROOF_COMPUTE */
} RooflinePoint;

/* Where a call that cost c and took `seconds` sits under machine m's roofs. */
RooflinePoint roofline_point(LayerCost c, double seconds, const MachineRoof *m);

/* Model FLOPs utilisation of a training step: the FLOP the model needs (3 x the forward:
 * the backward costs 2 forwards) over the step's time, as a fraction of the peak:
 *   3 x forward_flop_per_token x tokens / step_seconds / (peak_gflops x 1e9)   */
double roofline_mfu(double forward_flop_per_token, double tokens, double step_seconds,
                    double peak_gflops);

/* "linear", "layer norm", ... and "memory" / "compute", for tables. */
const char *roofline_kind_name(LayerKind kind);
const char *roofline_bound_name(RooflineBound bound);

#endif
