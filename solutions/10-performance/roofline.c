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
    const double N = (double)s->rows, size = (double)dtype_size(s->dtype);
    if (s->kind == LAYER_LINEAR) {
        const double K = (double)s->in, M = (double)s->out;
        return (LayerCost){.flop = 2 * N * K * M, .bytes = size * (N * K + M * K + M + N * M)};
    }
    CHECK(s->kind == LAYER_LAYERNORM, "lesson_layer_cost counts linear layers and layer norms; "
          "the %s is the library's (roofline_layer_cost)", roofline_kind_name(s->kind));
    const double D = (double)s->in;
    return (LayerCost){.flop = 8 * N * D, .bytes = size * (2 * N * D + 2 * D) + 4.0 * 2 * N};
}

RooflinePoint lesson_roofline_point(LayerCost c, double seconds, const MachineRoof *m) {
    RooflinePoint p;
    p.intensity = c.flop / c.bytes;                    /* FLOP per byte */
    p.gflops = c.flop / seconds / 1e9;                 /* attained */
    const double memory_roof = m->bandwidth_gbs * p.intensity; /* GB/s x FLOP/B = GFLOP/s */
    p.roof_gflops = memory_roof < m->peak_gflops ? memory_roof : m->peak_gflops;
    p.pct_of_roof = 100.0 * p.gflops / p.roof_gflops;
    p.bound = p.intensity < m->peak_gflops / m->bandwidth_gbs ? ROOF_MEMORY : ROOF_COMPUTE;
    return p;
}

double lesson_mfu(double forward_flop_per_token, double tokens, double step_seconds,
                  double peak_gflops) {
    const double step_flop = 3.0 * forward_flop_per_token * tokens; /* backward = 2 forwards */
    return step_flop / step_seconds / (peak_gflops * 1e9);
}
