#include "conv_direct16.h"

#include "core/check.h"

#if defined(__AVX512F__)

#include <omp.h>
#include <string.h>

#include "ops/conv_direct.h"
#include "ops/conv_pairs16.h"
#include "ops/vec16.h"

enum {
    LANES = 16,
    MIN_TAPS = 64,     /* fewer taps: the transposes cost more than the wider FMAs win */
    MAX_J = 5,         /* channel vectors a register block holds (80 channels) */
    TAP_CHUNK = 48,    /* forward: a chunk's weights, 48 x 80 floats, stay in L1 */
    PIXEL_GROUP = 64,  /* forward: pixels whose sums a tile holds, 64 x 80 floats */
    WGRAD_GROUP_BYTES = 40 << 10, /* weight gradient: transposed output gradients a pass */
};

static inline int min_int(int a, int b) { return a < b ? a : b; }

/* Register blocks: J channel vectors times block_width(J) pixels (forward) or taps
 * (weight gradient), 12 to 24 accumulators of the 32 registers, the rest for the
 * operands. */
static inline int block_width(int J) { return J >= 5 ? 4 : J == 4 ? 6 : J == 3 ? 8 : 12; }
enum { MAX_WIDTH = 12 };

bool conv_direct16_takes(const ConvGeometry *g) {
    (void)g;
    return true;
}

bool conv_direct16_many_taps(const ConvGeometry *g) { return g->C * g->KH * g->KW >= MIN_TAPS; }

/* Offsets in an input plane of the first input pixel of each output pixel. */
static int *pixel_offsets(const ConvGeometry *g) {
    int *pix = xmalloc((size_t)g->OH * g->OW * sizeof(int));
    for (int oh = 0; oh < g->OH; oh++)
        for (int ow = 0; ow < g->OW; ow++) pix[oh * g->OW + ow] = oh * g->W + ow;
    return pix;
}

static inline int padded(int Cout) { return (Cout + LANES - 1) / LANES * LANES; }

/* dst [np, Cpad] from src [Cout, OHW] (np = OHW): 16 x 16 blocks in registers; the
 * padding channels zero. */
static void transpose_to_pixels(float *dst, int Cpad, const float *src, int Cout, int OHW) {
    const int full = OHW / LANES * LANES;
    for (int co0 = 0; co0 < Cpad; co0 += LANES)
        for (int p0 = 0; p0 < full; p0 += LANES)
            transpose16_block(dst + (size_t)p0 * Cpad + co0, Cpad, LANES,
                              src + (size_t)co0 * OHW + p0, OHW, min_int(LANES, Cout - co0));
    for (int co = 0; co < Cout; co++)
        for (int i = full; i < OHW; i++) dst[(size_t)i * Cpad + co] = src[(size_t)co * OHW + i];
}

/* dst [Cout, np] (rows dst_stride apart) from src [np, Cpad]. */
static void transpose_to_channels(float *dst, int dst_stride, const float *src, int Cpad, int Cout,
                                  int np) {
    const int full = np / LANES * LANES;
    for (int co0 = 0; co0 < Cout; co0 += LANES)
        for (int i0 = 0; i0 < full; i0 += LANES)
            transpose16_block(dst + (size_t)co0 * dst_stride + i0, dst_stride,
                              min_int(LANES, Cout - co0), src + (size_t)i0 * Cpad + co0, Cpad, LANES);
    for (int co = 0; co < Cout; co++)
        for (int i = full; i < np; i++) dst[(size_t)co * dst_stride + i] = src[(size_t)i * Cpad + co];
}

/* ------------------------------------------------------------------ forward */

/* tile[i][co] += sum over taps k < kc of w[k][co] x[tap[k] + pix[i]], for the np
 * pixels of the tile and J channel vectors, W pixels at a time. */
static inline __attribute__((always_inline)) void
forward_kernel(float *tile, int Cpad, const float *x, const int *tap, int kc, const float *w,
               const int *pix, int np, const int J, const int W) {
    for (int i0 = 0; i0 < np; i0 += W) {
        int off[MAX_WIDTH];
        float *row[MAX_WIDTH];
        for (int i = 0; i < W; i++) {
            int q = min_int(i0 + i, np - 1); /* past the end: redo the last pixel */
            off[i] = pix[q];
            row[i] = tile + (size_t)q * Cpad;
        }
        v16 acc[MAX_WIDTH][MAX_J];
#pragma GCC unroll 12
        for (int i = 0; i < W; i++)
#pragma GCC unroll 5
            for (int j = 0; j < J; j++) acc[i][j] = load16(row[i] + j * LANES);
        for (int k = 0; k < kc; k++) {
            const float *xk = x + tap[k], *wk = w + (size_t)k * Cpad;
            v16 wv[MAX_J];
#pragma GCC unroll 5
            for (int j = 0; j < J; j++) wv[j] = load16(wk + j * LANES);
#pragma GCC unroll 12
            for (int i = 0; i < W; i++) {
                v16 xb = splat16(xk[off[i]]);
#pragma GCC unroll 5
                for (int j = 0; j < J; j++) acc[i][j] += wv[j] * xb;
            }
        }
        /* a repeated pixel stores the same values again */
#pragma GCC unroll 12
        for (int i = 0; i < W; i++)
#pragma GCC unroll 5
            for (int j = 0; j < J; j++) store16(row[i] + j * LANES, acc[i][j]);
    }
}

static void forward_chunk(float *tile, int Cpad, const float *x, const int *tap, int kc,
                          const float *w, const int *pix, int np) {
    for (int j0 = 0; j0 < Cpad / LANES; j0 += MAX_J) {
        float *t = tile + j0 * LANES;
        const float *wj = w + j0 * LANES;
        switch (min_int(MAX_J, Cpad / LANES - j0)) {
        case 5: forward_kernel(t, Cpad, x, tap, kc, wj, pix, np, 5, block_width(5)); break;
        case 4: forward_kernel(t, Cpad, x, tap, kc, wj, pix, np, 4, block_width(4)); break;
        case 3: forward_kernel(t, Cpad, x, tap, kc, wj, pix, np, 3, block_width(3)); break;
        case 2: forward_kernel(t, Cpad, x, tap, kc, wj, pix, np, 2, block_width(2)); break;
        default: forward_kernel(t, Cpad, x, tap, kc, wj, pix, np, 1, block_width(1)); break;
        }
    }
}

void conv_direct16_forward(float *out, const float *in, const float *weight, const float *bias,
                           int N, int Cout, const ConvGeometry *g, const ConvPlan *p) {
    if (!conv_direct16_many_taps(g)) {
        conv_pairs16_forward(out, in, weight, bias, N, Cout, g, p);
        return;
    }
    const int K = g->C * g->KH * g->KW, OHW = g->OH * g->OW, Cpad = padded(Cout);
    const size_t in_img = (size_t)g->C * g->H * g->W, out_img = (size_t)Cout * OHW;
    const int *tap = p->tap;
    int *pix = pixel_offsets(g);
    /* the weight as [K, Cpad] and the bias as [Cpad], the padding zero */
    float *wt = conv_weight_by_tap(weight, K, Cout, Cpad);
    float *bias_pad = xcalloc((size_t)Cpad, sizeof(float));
    memcpy(bias_pad, bias, (size_t)Cout * sizeof(float));

#pragma omp parallel
    {
        float *tile = xmalloc((size_t)PIXEL_GROUP * Cpad * sizeof(float));
#pragma omp for schedule(static)
        for (int n = 0; n < N; n++) {
            const float *x = in + n * in_img;
            float *y = out + n * out_img;
            for (int p0 = 0; p0 < OHW; p0 += PIXEL_GROUP) {
                const int np = min_int(PIXEL_GROUP, OHW - p0);
                for (int i = 0; i < np; i++) memcpy(tile + (size_t)i * Cpad, bias_pad, Cpad * sizeof(float));
                /* bias, then the taps in order: the 8-lane kernels' sums, bit for bit */
                for (int k0 = 0; k0 < K; k0 += TAP_CHUNK)
                    forward_chunk(tile, Cpad, x, tap + k0, min_int(TAP_CHUNK, K - k0),
                                  wt + (size_t)k0 * Cpad, pix + p0, np);
                transpose_to_channels(y + p0, OHW, tile, Cpad, Cout, np);
            }
        }
        xfree(tile);
    }
    xfree(wt);
    xfree(bias_pad);
    xfree(pix);
}

/* ------------------------------------------------------------ weight gradient */

/* dwt[k][co] += sum over the pixels p of count images of x[tap[k] + pix[p]] dyt[p][co],
 * for the taps k0 .. k0 + T - 1 and J channel vectors; images in_img floats apart in
 * x, OHW x Cpad in dyt. */
static inline __attribute__((always_inline)) void
weight_grad_kernel(float *dwt, int Cpad, const float *x, size_t in_img, int count,
                   const int *tap, int k0, int K, const float *dyt, const int *pix, int OHW,
                   const int J, const int T) {
    int tp[MAX_WIDTH];
    for (int t = 0; t < T; t++) tp[t] = tap[min_int(k0 + t, K - 1)]; /* past the end: a repeat */
    v16 acc[MAX_WIDTH][MAX_J];
#pragma GCC unroll 12
    for (int t = 0; t < T; t++)
#pragma GCC unroll 5
        for (int j = 0; j < J; j++) acc[t][j] = splat16(0.0f);
    for (int n = 0; n < count; n++)
        for (int p = 0; p < OHW; p++) {
            const float *d = dyt + ((size_t)n * OHW + p) * Cpad, *xp = x + n * in_img + pix[p];
            v16 dv[MAX_J];
#pragma GCC unroll 5
            for (int j = 0; j < J; j++) dv[j] = load16(d + j * LANES);
#pragma GCC unroll 12
            for (int t = 0; t < T; t++) {
                v16 xb = splat16(xp[tp[t]]);
#pragma GCC unroll 5
                for (int j = 0; j < J; j++) acc[t][j] += dv[j] * xb;
            }
        }
    for (int t = 0; t < T && k0 + t < K; t++)
        for (int j = 0; j < J; j++) {
            float *dst = dwt + (size_t)(k0 + t) * Cpad + j * LANES;
            store16(dst, load16(dst) + acc[t][j]);
        }
}

/* A unit of work: J channel vectors from j0, taps from k0. */
typedef struct {
    int j0, J, k0;
} Unit;

static void weight_grad_unit(float *dwt, int Cpad, const float *x, size_t in_img, int count,
                             const int *tap, int K, const float *dyt, const int *pix, int OHW,
                             Unit u) {
    float *dw = dwt + u.j0 * LANES;
    const float *d = dyt + u.j0 * LANES;
    switch (u.J) {
    case 5: weight_grad_kernel(dw, Cpad, x, in_img, count, tap, u.k0, K, d, pix, OHW, 5, block_width(5)); break;
    case 4: weight_grad_kernel(dw, Cpad, x, in_img, count, tap, u.k0, K, d, pix, OHW, 4, block_width(4)); break;
    case 3: weight_grad_kernel(dw, Cpad, x, in_img, count, tap, u.k0, K, d, pix, OHW, 3, block_width(3)); break;
    case 2: weight_grad_kernel(dw, Cpad, x, in_img, count, tap, u.k0, K, d, pix, OHW, 2, block_width(2)); break;
    default: weight_grad_kernel(dw, Cpad, x, in_img, count, tap, u.k0, K, d, pix, OHW, 1, block_width(1)); break;
    }
}

static Unit *weight_grad_units(int Cpad, int K, int *count) {
    int n = 0;
    for (int j0 = 0; j0 < Cpad / LANES; j0 += MAX_J) {
        int T = block_width(min_int(MAX_J, Cpad / LANES - j0));
        n += (K + T - 1) / T;
    }
    Unit *units = xmalloc((size_t)n * sizeof(Unit));
    n = 0;
    for (int j0 = 0; j0 < Cpad / LANES; j0 += MAX_J) {
        int J = min_int(MAX_J, Cpad / LANES - j0), T = block_width(J);
        for (int k0 = 0; k0 < K; k0 += T) units[n++] = (Unit){j0, J, k0};
    }
    *count = n;
    return units;
}

void conv_direct16_weight_grad(float *dweight, float *dbias, const float *dout, const float *in,
                               int N, int Cout, const ConvGeometry *g, const ConvPlan *p) {
    if (!conv_direct16_many_taps(g)) {
        conv_pairs16_weight_grad(dweight, dbias, dout, in, N, Cout, g, p);
        return;
    }
    conv_direct_bias_grad(dbias, dout, N, Cout, g->OH * g->OW);
    const int K = g->C * g->KH * g->KW, OHW = g->OH * g->OW, Cpad = padded(Cout);
    const size_t in_img = (size_t)g->C * g->H * g->W, out_img = (size_t)Cout * OHW;
    const int *tap = p->tap;
    int *pix = pixel_offsets(g), nunits;
    Unit *units = weight_grad_units(Cpad, K, &nunits);
    float *dwt = xcalloc((size_t)K * Cpad, sizeof(float)); /* the sums as [K, Cpad] */

    /* Images in groups whose transposed output gradient fills about half of L1: a
     * unit's sums go back to memory once a group. The group depends on the shapes. */
    const size_t image_bytes = (size_t)OHW * Cpad * sizeof(float);
    const int group = image_bytes < WGRAD_GROUP_BYTES ? (int)(WGRAD_GROUP_BYTES / image_bytes) : 1;

    /* Each thread owns a fixed range of units and runs it over every group in order:
     * every sum is taken in the same order on any number of threads, and no thread
     * waits for another. Each transposes the group's output gradient itself. */
#pragma omp parallel
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int u0 = (int)((int64_t)nunits * t / nt), u1 = (int)((int64_t)nunits * (t + 1) / nt);
        float *dyt = xcalloc((size_t)group * OHW * Cpad, sizeof(float)); /* [group, OHW, Cpad] */
        for (int n0 = 0; u0 < u1 && n0 < N; n0 += group) {
            const int count = min_int(group, N - n0);
            for (int i = 0; i < count; i++)
                transpose_to_pixels(dyt + (size_t)i * OHW * Cpad, Cpad, dout + (n0 + i) * out_img, Cout, OHW);
            for (int u = u0; u < u1; u++)
                weight_grad_unit(dwt, Cpad, in + n0 * in_img, in_img, count, tap, K, dyt, pix, OHW, units[u]);
        }
        xfree(dyt);
#pragma omp barrier
#pragma omp for schedule(static)
        for (int co = 0; co < Cout; co++)
            for (int k = 0; k < K; k++) dweight[(size_t)co * K + k] += dwt[(size_t)k * Cpad + co];
    }
    xfree(dwt);
    xfree(units);
    xfree(pix);
}

/* ------------------------------------------------------------- input gradient */

void conv_direct16_input_grad(float *din, const float *dout, const float *weight, int N,
                              int Cout, const ConvGeometry *g, const ConvPlan *p) {
    conv_pairs16_input_grad(din, dout, weight, N, Cout, g, p);
}

#else /* no AVX-512: the 8-lane kernels of ops/conv_direct.c do all the work */

bool conv_direct16_takes(const ConvGeometry *g) {
    (void)g;
    return false;
}

bool conv_direct16_many_taps(const ConvGeometry *g) {
    (void)g;
    return false;
}

void conv_direct16_forward(float *out, const float *in, const float *weight, const float *bias,
                           int N, int Cout, const ConvGeometry *g, const ConvPlan *p) {
    (void)out, (void)in, (void)weight, (void)bias, (void)N, (void)Cout, (void)g, (void)p;
    CHECK(false, "16-lane convolution called in a build without AVX-512");
}

void conv_direct16_weight_grad(float *dweight, float *dbias, const float *dout, const float *in,
                               int N, int Cout, const ConvGeometry *g, const ConvPlan *p) {
    (void)dweight, (void)dbias, (void)dout, (void)in, (void)N, (void)Cout, (void)g, (void)p;
    CHECK(false, "16-lane convolution called in a build without AVX-512");
}

void conv_direct16_input_grad(float *din, const float *dout, const float *weight, int N,
                              int Cout, const ConvGeometry *g, const ConvPlan *p) {
    (void)din, (void)dout, (void)weight, (void)N, (void)Cout, (void)g, (void)p;
    CHECK(false, "16-lane convolution called in a build without AVX-512");
}

#endif
