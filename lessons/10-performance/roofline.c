/* TODOs 10.4 and 10.5: a layer's cost and its place on the roofline, and MFU.
 *
 * A roofline (Williams, Waterman and Patterson, 2009) draws what a machine can attain
 * against the arithmetic intensity of the work, I = FLOP / bytes moved:
 *
 *   attainable GFLOP/s = min(peak GFLOP/s, bandwidth GB/s x I)
 *
 * Below the ridge, I < peak / bandwidth, memory cannot feed the arithmetic: the layer is
 * memory-bound, and only moving fewer bytes makes it faster. From the ridge up it is
 * compute-bound.
 *
 * The conventions of the counts (the library's roofline_layer_cost uses the same):
 *   - a multiply-add is 2 FLOP: a multiply and an add;
 *   - bytes are what the call reads and writes, each tensor once, dtype_size(s->dtype)
 *     bytes an element (the least the call can move; real kernels move more); the
 *     statistics a layer norm saves, mean and rstd, are float32 (4 bytes) whatever the
 *     dtype;
 *   - the forward only: one call, as the program times it.
 *
 *   linear      out [N, M] = in [N, K] W[M, K]^T + b [M]: each output is K multiply-adds
 *               (the bias's add left out); it reads in, W and b, writes out.
 *   layer norm  out [N, D] from in [N, D], gamma [D], beta [D], saving mean [N] and rstd
 *               [N]: 8 FLOP an element: 1 for the mean's sum, 3 for the variance's
 *               (subtract the mean, square, add), 4 for the output (subtract the mean,
 *               times rstd, times gamma, plus beta); the per-row division and square
 *               root left out. */
#include "lesson.h"

LayerCost lesson_layer_cost(const LayerShape *s) {
    /* TODO 10.4: for LAYER_LINEAR (N = s->rows, K = s->in, M = s->out) and LAYER_LAYERNORM
     * (N = s->rows, D = s->in), return {.flop = ..., .bytes = ...} by the conventions
     * above, in double (700 x 200 x 600 overflows no int64_t, but a larger model's
     * products can). Bytes: elements x dtype_size(s->dtype), mean and rstd 4 bytes each. */
    TODO_STOP("10.4");
}

RooflinePoint lesson_roofline_point(LayerCost c, double seconds, const MachineRoof *m) {
    /* TODO 10.5: fill intensity, gflops, roof_gflops, pct_of_roof and bound (ROOF_MEMORY
     * or ROOF_COMPUTE) for a call of c.flop FLOP and c.bytes bytes that took `seconds`,
     * on a machine of m->peak_gflops and m->bandwidth_gbs. */
    TODO_STOP("10.5");
}

double lesson_mfu(double forward_flop_per_token, double tokens, double step_seconds,
                  double peak_gflops) {
    /* TODO 10.5: the FLOP a training step needs per second, as a fraction of the peak. */
    TODO_STOP("10.5");
}
