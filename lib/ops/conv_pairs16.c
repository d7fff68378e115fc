#include "conv_pairs16.h"

#if defined(__AVX512F__)

#include <stdbool.h>

#include "core/check.h"
#include "ops/vec16.h"

enum {
    PAIRS = 4,          /* pairs of segments a block: the CNN's second layer, 8 rows of 8 */
    OUT_CHANNELS = 5,   /* forward: 5 channels x 4 pairs, 20 accumulators */
    GRAD_CHANNELS = 4,  /* weight gradient: 4 channels x 5 taps, 20 accumulators */
    GRAD_TAPS = 5,
    DIN_TAPS = 6,       /* input gradient: 6 taps x 4 pairs, 24 accumulators */
};

static inline int min_int(int a, int b) { return a < b ? a : b; }

/* Where PAIRS pairs of segments from segment s0 lie. Past the end the last pair is
 * redone (it starts at an even segment) with lanes that count for nothing. */
typedef struct {
    int lo_in[PAIRS], hi_in[PAIRS], lo_out[PAIRS], hi_out[PAIRS];
    const int32_t *lo_keep[PAIRS], *hi_keep[PAIRS];
} PairBlock;

static PairBlock pair_block(const ConvPlan *p, int s0) {
    static const int32_t none[CONV_SEG] = {0};
    PairBlock b;
    for (int r = 0; r < PAIRS; r++) {
        const int lo = s0 + 2 * r;
        const int sa = min_int(lo, (p->L - 1) & ~1), sb = min_int(sa + 1, p->L - 1);
        b.lo_in[r] = p->seg_in[sa];
        b.hi_in[r] = p->seg_in[sb];
        b.lo_out[r] = p->seg_out[sa];
        b.hi_out[r] = p->seg_out[sb];
        b.lo_keep[r] = lo < p->L ? p->keep[sa] : none;
        b.hi_keep[r] = lo + 1 < p->L ? p->keep[sb] : none;
    }
    return b;
}

/* Whether every pair's two segments lie side by side in an output plane (an even
 * count of segments, rows of 8, 16, 24 ... pixels): one load or store, not two. */
static bool pairs_adjacent(const ConvPlan *p) {
    bool adjacent = p->L % 2 == 0;
    for (int s = 0; adjacent && s + 1 < p->L; s += 2)
        adjacent = p->seg_out[s + 1] == p->seg_out[s] + CONV_SEG;
    return adjacent;
}

/* Whether no segment overlaps another (every lane its own). */
static bool no_overlap(const ConvPlan *p) {
    for (int s = 0; s < p->L; s++)
        if (p->keep[s][0] == 0) return false;
    return true;
}

/* ------------------------------------------------------------------ forward */

/* OUT_CHANNELS channels x PAIRS pairs of one image; wt is the weight as [K, Cout]. */
static inline __attribute__((always_inline)) void
forward_block(float *out, const float *in, const float *wt, const float *bias, int Cout, int OHW,
              const ConvPlan *p, const PairBlock *b, int co0, const bool adjacent) {
    int co[OUT_CHANNELS];
    for (int j = 0; j < OUT_CHANNELS; j++) co[j] = min_int(co0 + j, Cout - 1);
    v16 acc[OUT_CHANNELS][PAIRS];
    for (int j = 0; j < OUT_CHANNELS; j++)
        for (int r = 0; r < PAIRS; r++) acc[j][r] = splat16(bias[co[j]]);
    for (int k = 0; k < p->K; k++) {
        const float *x = in + p->tap[k], *w = wt + (size_t)k * Cout;
        v16 xv[PAIRS];
        for (int r = 0; r < PAIRS; r++) xv[r] = load_pair(x + b->lo_in[r], x + b->hi_in[r]);
        for (int j = 0; j < OUT_CHANNELS; j++) {
            v16 wv = splat16(w[co[j]]);
            for (int r = 0; r < PAIRS; r++) acc[j][r] += wv * xv[r];
        }
    }
    /* repeated pairs and channels, and overlapping lanes, store the same values again */
    for (int j = 0; j < OUT_CHANNELS; j++)
        for (int r = 0; r < PAIRS; r++) {
            float *y = out + (size_t)co[j] * OHW;
            if (adjacent)
                store16(y + b->lo_out[r], acc[j][r]);
            else
                store_pair(y + b->lo_out[r], y + b->hi_out[r], acc[j][r]);
        }
}

void conv_pairs16_forward(float *out, const float *in, const float *weight, const float *bias,
                          int N, int Cout, const ConvGeometry *g, const ConvPlan *p) {
    const int OHW = g->OH * g->OW;
    const size_t in_img = (size_t)g->C * g->H * g->W, out_img = (size_t)Cout * OHW;
    const bool adjacent = pairs_adjacent(p);
    float *wt = conv_weight_by_tap(weight, p->K, Cout, Cout);

#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        for (int s0 = 0; s0 < p->L; s0 += 2 * PAIRS) {
            const PairBlock b = pair_block(p, s0);
            for (int co0 = 0; co0 < Cout; co0 += OUT_CHANNELS) {
                float *y = out + n * out_img;
                const float *x = in + n * in_img;
                if (adjacent)
                    forward_block(y, x, wt, bias, Cout, OHW, p, &b, co0, true);
                else
                    forward_block(y, x, wt, bias, Cout, OHW, p, &b, co0, false);
            }
        }
    xfree(wt);
}

/* ------------------------------------------------------------ weight gradient */

/* GRAD_CHANNELS x GRAD_TAPS weight gradients, summed over every pair of count images:
 * lanes hold the 16 pixels of a pair, added up at the end. simple: pairs adjacent and
 * no overlap, so every lane is loaded whole and counts. */
static inline __attribute__((always_inline)) void
weight_grad_block(float *dweight, float *dbias, const float *dout, const float *in, int count,
                  int Cout, size_t in_img, size_t out_img, int OHW, const ConvPlan *p, int co0,
                  int k0, const bool simple, const bool with_bias) {
    int co[GRAD_CHANNELS], tap[GRAD_TAPS];
    for (int j = 0; j < GRAD_CHANNELS; j++) co[j] = min_int(co0 + j, Cout - 1);
    for (int t = 0; t < GRAD_TAPS; t++) tap[t] = p->tap[min_int(k0 + t, p->K - 1)];
    v16 acc[GRAD_CHANNELS][GRAD_TAPS];
    v16 bias_acc[GRAD_CHANNELS];
    for (int j = 0; j < GRAD_CHANNELS; j++) {
        bias_acc[j] = splat16(0.0f);
        for (int t = 0; t < GRAD_TAPS; t++) acc[j][t] = splat16(0.0f);
    }
    static const int32_t none[CONV_SEG] = {0};
    for (int n = 0; n < count; n++) {
        const float *x = in + n * in_img, *dy = dout + n * out_img;
        for (int a = 0; a < p->L; a += 2) {
            const int b = min_int(a + 1, p->L - 1); /* an odd last segment: lanes 8-15 count nothing */
            const int lo_in = p->seg_in[a], hi_in = p->seg_in[b];
            v16 d[GRAD_CHANNELS];
            for (int j = 0; j < GRAD_CHANNELS; j++) {
                const float *dyc = dy + (size_t)co[j] * OHW;
                d[j] = simple ? load16(dyc + p->seg_out[a])
                              : select_pair(load_pair(dyc + p->seg_out[a], dyc + p->seg_out[b]),
                                            p->keep[a], a + 1 < p->L ? p->keep[b] : none);
                if (with_bias) bias_acc[j] += d[j];
            }
            for (int t = 0; t < GRAD_TAPS; t++) {
                v16 xv = load_pair(x + tap[t] + lo_in, x + tap[t] + hi_in);
                for (int j = 0; j < GRAD_CHANNELS; j++) acc[j][t] += d[j] * xv;
            }
        }
    }
    for (int j = 0; j < GRAD_CHANNELS; j++)
        for (int t = 0; t < GRAD_TAPS; t++)
            if (co0 + j < Cout && k0 + t < p->K)
                dweight[(size_t)(co0 + j) * p->K + k0 + t] += _mm512_reduce_add_ps((__m512)acc[j][t]);
    for (int j = 0; with_bias && j < GRAD_CHANNELS && co0 + j < Cout; j++)
        dbias[co0 + j] += _mm512_reduce_add_ps((__m512)bias_acc[j]);
}

void conv_pairs16_weight_grad(float *dweight, float *dbias, const float *dout, const float *in,
                              int N, int Cout, const ConvGeometry *g, const ConvPlan *p) {
    const int OHW = g->OH * g->OW;
    const size_t in_img = (size_t)g->C * g->H * g->W, out_img = (size_t)Cout * OHW;
    const int co_blocks = (Cout + GRAD_CHANNELS - 1) / GRAD_CHANNELS;
    const int tap_blocks = (p->K + GRAD_TAPS - 1) / GRAD_TAPS;
    const bool simple = pairs_adjacent(p) && no_overlap(p);
    const int group = conv_plan_image_group(g, Cout);

#pragma omp parallel
    for (int n0 = 0; n0 < N; n0 += group) {
        const int count = min_int(group, N - n0);
#pragma omp for collapse(2) schedule(static)
        for (int cb = 0; cb < co_blocks; cb++)
            for (int tb = 0; tb < tap_blocks; tb++) {
                const float *dy = dout + n0 * out_img, *x = in + n0 * in_img;
                const int co0 = cb * GRAD_CHANNELS, k0 = tb * GRAD_TAPS;
                /* the first tap block of a channel block sums the bias gradient too */
#define BLOCK(simple, with_bias)                                                          \
    weight_grad_block(dweight, dbias, dy, x, count, Cout, in_img, out_img, OHW, p, co0, k0, \
                      simple, with_bias)
                if (simple)
                    tb == 0 ? BLOCK(true, true) : BLOCK(true, false);
                else
                    tb == 0 ? BLOCK(false, true) : BLOCK(false, false);
#undef BLOCK
            }
    }
}

/* ------------------------------------------------------------- input gradient */

/* For PAIRS pairs of segments and DIN_TAPS taps from k0 of one image: the sum over
 * output channels of weight x output gradient, added onto the input pixels the taps
 * met, each segment's own lanes once. wb holds the block's weights as [Cout, DIN_TAPS]. */
static inline __attribute__((always_inline)) void
input_grad_block(float *din, const float *dout, const float *wb, int Cout, int OHW,
                 const ConvPlan *p, const PairBlock *b, int k0, const bool adjacent) {
    v16 acc[DIN_TAPS][PAIRS];
    for (int t = 0; t < DIN_TAPS; t++)
        for (int r = 0; r < PAIRS; r++) acc[t][r] = splat16(0.0f);
    for (int co = 0; co < Cout; co++) {
        const float *w = wb + (size_t)co * DIN_TAPS, *dy = dout + (size_t)co * OHW;
        v16 wv[DIN_TAPS];
        for (int t = 0; t < DIN_TAPS; t++) wv[t] = splat16(w[t]);
        for (int r = 0; r < PAIRS; r++) {
            v16 dv = adjacent ? load16(dy + b->lo_out[r]) : load_pair(dy + b->lo_out[r], dy + b->hi_out[r]);
            for (int t = 0; t < DIN_TAPS; t++) acc[t][r] += wv[t] * dv;
        }
    }
    for (int t = 0; t < DIN_TAPS && k0 + t < p->K; t++) {
        float *dx = din + p->tap[k0 + t];
        for (int r = 0; r < PAIRS; r++) {
            add_half(dx + b->lo_in[r], acc[t][r], 0, b->lo_keep[r]);
            add_half(dx + b->hi_in[r], acc[t][r], 1, b->hi_keep[r]);
        }
    }
}

void conv_pairs16_input_grad(float *din, const float *dout, const float *weight, int N,
                             int Cout, const ConvGeometry *g, const ConvPlan *p) {
    const int OHW = g->OH * g->OW;
    const size_t in_img = (size_t)g->C * g->H * g->W, out_img = (size_t)Cout * OHW;
    const int tap_blocks = (p->K + DIN_TAPS - 1) / DIN_TAPS;
    const size_t block_floats = (size_t)Cout * DIN_TAPS;
    float *wb = conv_weight_tap_blocks(weight, p->K, Cout, DIN_TAPS);
    const bool adjacent = pairs_adjacent(p);

    /* one image per thread at a time: the blocks of an image add onto the same pixels */
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        for (int s0 = 0; s0 < p->L; s0 += 2 * PAIRS) {
            const PairBlock b = pair_block(p, s0);
            for (int tb = 0; tb < tap_blocks; tb++) {
                float *dx = din + n * in_img;
                const float *dy = dout + n * out_img, *w = wb + tb * block_floats;
                if (adjacent)
                    input_grad_block(dx, dy, w, Cout, OHW, p, &b, tb * DIN_TAPS, true);
                else
                    input_grad_block(dx, dy, w, Cout, OHW, p, &b, tb * DIN_TAPS, false);
            }
        }
    xfree(wb);
}

#endif
