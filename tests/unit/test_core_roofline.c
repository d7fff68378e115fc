/* Unit tests of lib/core/roofline: each layer's FLOP and bytes against the counts done by
 * hand on small shapes (written out below, or counted element by element), the roofline
 * point and MFU against their definitions on round numbers. */
#include <math.h>

#include "core/check.h"
#include "core/roofline.h"
#include "framework/check.h"

static bool same_cost(const char *what, LayerCost got, double flop, double bytes) {
    return expect_true(got.flop == flop && got.bytes == bytes, "%s: %g FLOP, %g bytes; want %g, %g",
                       what, got.flop, got.bytes, flop, bytes);
}

/* in [4, 3] x W [2, 3]^T + b [2] = out [4, 2]: 4 x 2 outputs of 3 multiply-adds (2 FLOP
 * each) = 48 FLOP; 12 + 6 + 2 + 8 = 28 elements, 112 bytes in float32, 56 in bfloat16. */
static int check_linear(void) {
    LayerShape s = {LAYER_LINEAR, .rows = 4, .in = 3, .out = 2, .dtype = DTYPE_F32};
    bool ok = same_cost("linear 4 x 3 -> 2, float32", roofline_layer_cost(&s), 48, 112);
    s.dtype = DTYPE_BF16;
    ok = ok && same_cost("linear 4 x 3 -> 2, bfloat16", roofline_layer_cost(&s), 48, 56);
    /* lesson 04's in-projection: 700 rows, 200 -> 600: 2 x 700 x 200 x 600 = 168,000,000;
     * 140,000 + 120,000 + 600 + 420,000 = 680,600 elements */
    LayerShape qkv = {LAYER_LINEAR, .rows = 700, .in = 200, .out = 600, .dtype = DTYPE_F32};
    ok = ok && same_cost("linear 700 x 200 -> 600", roofline_layer_cost(&qkv), 168e6, 4 * 680600.0);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* 2 rows of 3: 6 elements x 8 FLOP = 48; in and out 12 elements, gamma and beta 6
 * (float32: 72 bytes), mean and rstd 2 x 2 float32 (16): 88 bytes; bfloat16 36 + 16. */
static int check_layernorm(void) {
    LayerShape s = {LAYER_LAYERNORM, .rows = 2, .in = 3, .dtype = DTYPE_F32};
    bool ok = same_cost("layer norm 2 x 3, float32", roofline_layer_cost(&s), 48, 88);
    s.dtype = DTYPE_BF16;
    ok = ok && same_cost("layer norm 2 x 3, bfloat16", roofline_layer_cost(&s), 48, 52);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Causal attention counted pair by pair: every (sequence, head, i, j <= i) costs a dot
 * product of dh for the score and dh multiply-adds for the context. */
static int check_attention(void) {
    bool ok = true;
    const int shapes[][3] = {{1, 2, 1}, {3, 5, 2}, {20, 35, 2}}; /* B, T, H */
    for (int k = 0; k < 3 && ok; k++) {
        const int B = shapes[k][0], T = shapes[k][1], H = shapes[k][2], dh = 4, D = H * dh;
        double flop = 0;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < T; i++)
                    for (int j = 0; j <= i; j++) flop += 2.0 * dh + 2.0 * dh;
        /* qkv [B T, 3D] read, ctx [B T, D] written, probs [B, H, T, T] float32 written */
        const double bytes = 4.0 * (3.0 * B * T * D + (double)B * T * D) + 4.0 * B * H * T * T;
        const LayerShape s = {LAYER_ATTENTION, .rows = B * T, .in = D, .seq = T, .heads = H,
                              .dtype = DTYPE_F32};
        ok = same_cost("attention", roofline_layer_cost(&s), flop, bytes);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* logits [2, 5]: 10 elements x 5 = 50 FLOP; logits read and dlogits written (80 bytes) and
 * 2 int32 labels: 88. Embedding of 3 tokens, 4 wide: 12 FLOP (the scale), 12 bytes of
 * tokens, 3 x 4 read and written (96). */
static int check_softmax_embedding(void) {
    const LayerShape x = {LAYER_SOFTMAX_XENT, .rows = 2, .in = 5, .dtype = DTYPE_F32};
    const LayerShape e = {LAYER_EMBEDDING, .rows = 3, .in = 4, .out = 1000, .dtype = DTYPE_F32};
    bool ok = same_cost("softmax + cross-entropy 2 x 5", roofline_layer_cost(&x), 50, 88);
    ok = ok && same_cost("embedding of 3 tokens, 4 wide", roofline_layer_cost(&e), 12, 108);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static bool same_point(const char *what, RooflinePoint p, double ai, double gflops, double roof,
                       double pct, RooflineBound bound) {
    const double tol = 1e-12;
    return expect_true(fabs(p.intensity - ai) <= tol * ai && fabs(p.gflops - gflops) <= tol * gflops &&
                           fabs(p.roof_gflops - roof) <= tol * roof && fabs(p.pct_of_roof - pct) <= tol * pct &&
                           p.bound == bound,
                       "%s: intensity %g, %g GFLOP/s, roof %g, %g%%, %s; want %g, %g, %g, %g%%, %s", what,
                       p.intensity, p.gflops, p.roof_gflops, p.pct_of_roof, roofline_bound_name(p.bound), ai,
                       gflops, roof, pct, roofline_bound_name(bound));
}

/* A machine of 100 GFLOP/s and 10 GB/s: ridge at 10 FLOP a byte. */
static int check_point(void) {
    const MachineRoof m = {.device = "cpu", .threads = 1, .peak_gflops = 100, .bandwidth_gbs = 10};
    /* 1 FLOP a byte: roof 10 x 1 = 10 GFLOP/s; 1e9 FLOP in 0.5 s = 2 GFLOP/s, 20% */
    bool ok = same_point("1 FLOP/B", roofline_point((LayerCost){1e9, 1e9}, 0.5, &m), 1, 2, 10, 20, ROOF_MEMORY);
    /* 100 FLOP a byte: roof the peak; 1e10 FLOP in 0.2 s = 50 GFLOP/s, 50% */
    ok = ok && same_point("100 FLOP/B", roofline_point((LayerCost){1e10, 1e8}, 0.2, &m), 100, 50, 100, 50,
                          ROOF_COMPUTE);
    /* just under the ridge: memory; at it: both roofs meet (100), compute */
    ok = ok && same_point("9.5 FLOP/B", roofline_point((LayerCost){9.5e9, 1e9}, 1.0, &m), 9.5, 9.5, 95, 10,
                          ROOF_MEMORY);
    ok = ok && same_point("10 FLOP/B", roofline_point((LayerCost){1e10, 1e9}, 1.0, &m), 10, 10, 100, 10,
                          ROOF_COMPUTE);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* 1e6 FLOP a token forward, 1000 tokens, 0.1 s a step on 100 GFLOP/s:
 * 3 x 1e9 FLOP / 0.1 s = 3e10 FLOP/s = 30% of 1e11. */
static int check_mfu(void) {
    const double got = roofline_mfu(1e6, 1000, 0.1, 100);
    return expect_true(fabs(got - 0.3) < 1e-12, "MFU %g, want 0.3", got) ? CHECK_PASS : CHECK_FAIL;
}

static void point_no_time(void *arg) {
    (void)arg;
    const MachineRoof m = {.device = "cpu", .threads = 1, .peak_gflops = 100, .bandwidth_gbs = 10};
    roofline_point((LayerCost){1, 1}, 0.0, &m);
}

static int check_bad_point(void) {
    ChildResult r;
    run_child(point_no_time, NULL, &r);
    return expect_exit("a point timed at 0 s", &r, EXIT_BUG, "roofline.c", "in 0 s", (const char *)NULL)
               ? CHECK_PASS
               : CHECK_FAIL;
}

int main(void) {
    check_begin("core: roofline");
    check_run(NULL, "roofline: linear FLOP and bytes counted by hand (float32, bfloat16)", check_linear, 10);
    check_run(NULL, "roofline: layer norm FLOP and bytes counted by hand", check_layernorm, 10);
    check_run(NULL, "roofline: causal attention counted pair by pair", check_attention, 10);
    check_run(NULL, "roofline: softmax + cross-entropy and embedding counted by hand", check_softmax_embedding, 10);
    check_run(NULL, "roofline: point against min(peak, bandwidth x intensity), both sides of the ridge", check_point, 10);
    check_run(NULL, "roofline: MFU = 3 x forward FLOP / step / peak", check_mfu, 10);
    check_run(NULL, "roofline: a point timed at 0 s stops with file and line", check_bad_point, 10);
    return check_end();
}
