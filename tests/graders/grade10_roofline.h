/* Lesson 10's checks of TODOs 10.4 and 10.5 (course/10-performance/roofline.c), included
 * once by tests/graders/grade10.c, which defines lesson_function (refuse_library.h) before
 * including this: the grader is linked with --wrap for the library's twins
 * (GRADE_WRAPPED_10_ROOFLINE in the Makefile), and a TODO that calls its twin fails.
 * Each TODO is compared with the library's function (core/roofline.h) on shapes and
 * machines chosen so that each plausible mistake gives another number, which the hint
 * then names. grade10_roofline_checks() registers them. */
#ifndef GRADERS_GRADE10_ROOFLINE_H
#define GRADERS_GRADE10_ROOFLINE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/roofline.h"
#include "framework/check.h"
#include "graders/refuse_library.h"
#include "lesson.h"

WRAP_VALUE(LayerCost, roofline_layer_cost, (const LayerShape *s), (s))
WRAP_VALUE(RooflinePoint, roofline_point, (LayerCost c, double seconds, const MachineRoof *m), (c, seconds, m))
WRAP_VALUE(double, roofline_mfu, (double f, double tokens, double s, double peak), (f, tokens, s, peak))

/* a and b equal to 1e-9 of b (the same formula in another order rounds differently) */
static bool r10_same(double a, double b) { return fabs(a - b) <= 1e-9 * fabs(b); }

static const char *r10_dtype(DType d) { return d == DTYPE_F32 ? "float32" : "bfloat16"; }

/* The hint for a layer cost that is not the library's: which mistake gives `got`. */
static void r10_cost_hint(const LayerShape *s, LayerCost got, LayerCost want) {
    const double N = (double)s->rows, K = (double)s->in, M = (double)s->out, D = (double)s->in;
    const double size = (double)dtype_size(s->dtype);
    const bool linear = s->kind == LAYER_LINEAR;
    const double elements = linear ? N * K + M * K + M + N * M : 2 * N * D + 2 * D + 2 * N;
    if (!r10_same(got.flop, want.flop)) {
        if (r10_same(got.flop, want.flop / 2))
            printf("hint: an FMA counted as 1 FLOP: a multiply-add is 2 FLOP (a multiply and an add), "
                   "%s\n", linear ? "2 N K M" : "and the layer norm's 8 an element count each operation");
        else if (!linear)
            printf("hint: a layer norm is 8 FLOP an element (1 for the mean's sum, 3 for the variance's, "
                   "4 for the output): 8 N D\n");
        else
            printf("hint: each of the N x M outputs is K multiply-adds, 2 FLOP each: 2 N K M\n");
        return;
    }
    if (r10_same(got.bytes, elements))
        printf("hint: elements counted, not bytes: times dtype_size(s->dtype) (%g bytes for %s)%s\n", size,
               r10_dtype(s->dtype), linear ? "" : "; mean and rstd 4 bytes each");
    else if (s->dtype != DTYPE_F32 && r10_same(got.bytes, want.bytes + (4 - size) * (elements - (linear ? 0 : 2 * N))))
        printf("hint: 4 bytes an element is float32's; this call is %s: dtype_size(s->dtype)\n", r10_dtype(s->dtype));
    else if (linear && r10_same(got.bytes, size * (N * K + N * M * K + M + N * M)))
        printf("hint: the weights counted once per row: one call reads W [M, K] once (M K elements), "
               "not N times\n");
    else if (linear && r10_same(got.bytes, want.bytes - size * M))
        printf("hint: the bias is read too: M elements\n");
    else if (linear && r10_same(got.bytes, want.bytes - size * N * M))
        printf("hint: the output is written: N M elements count too\n");
    else if (!linear && r10_same(got.bytes, size * elements))
        printf("hint: mean and rstd are float32 whatever the dtype: 4 bytes each\n");
    else if (!linear && r10_same(got.bytes, want.bytes - 8 * N))
        printf("hint: the forward writes mean [N] and rstd [N] (float32) for the backward: they count\n");
    else if (!linear && r10_same(got.bytes, want.bytes - 2 * size * D))
        printf("hint: gamma [D] and beta [D] are read too\n");
    else
        printf("hint: %s\n", linear ? "bytes = dtype_size x (N K in + M K weights + M bias + N M out)"
                                    : "bytes = dtype_size x (2 N D + 2 D) + 4 x 2 N (mean, rstd)");
}

/* TODO 10.4: the library's counts, float32 and bfloat16, from one row up to lesson 04's
 * decoder. */
static int check_layer_cost(void) {
    static const int64_t linear[][3] = {{4, 3, 2}, {1, 1, 1}, {700, 200, 600}, {700, 200, 28782}, {13, 1024, 4096}};
    static const int64_t norm[][2] = {{2, 3}, {1, 1}, {700, 200}, {37, 1024}};
    for (int dt = 0; dt < 2; dt++) {
        const DType d = dt == 0 ? DTYPE_F32 : DTYPE_BF16;
        for (int k = 0; k < 5 + 4; k++) {
            LayerShape s = k < 5 ? (LayerShape){LAYER_LINEAR, .rows = linear[k][0], .in = linear[k][1],
                                                .out = linear[k][2], .dtype = d}
                                 : (LayerShape){LAYER_LAYERNORM, .rows = norm[k - 5][0], .in = norm[k - 5][1],
                                                .dtype = d};
            const LayerCost got = lesson_layer_cost(&s), want = roofline_layer_cost(&s);
            if (r10_same(got.flop, want.flop) && r10_same(got.bytes, want.bytes)) continue;
            if (s.kind == LAYER_LINEAR)
                printf("linear, %lld rows, %lld -> %lld, %s: %.17g FLOP, %.17g bytes; expected %.17g, %.17g\n",
                       (long long)s.rows, (long long)s.in, (long long)s.out, r10_dtype(d), got.flop, got.bytes,
                       want.flop, want.bytes);
            else
                printf("layer norm, %lld rows of %lld, %s: %.17g FLOP, %.17g bytes; expected %.17g, %.17g\n",
                       (long long)s.rows, (long long)s.in, r10_dtype(d), got.flop, got.bytes, want.flop, want.bytes);
            r10_cost_hint(&s, got, want);
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* The hint for a point that is not the library's. */
static void r10_point_hint(LayerCost c, double s, const MachineRoof *m, RooflinePoint got, RooflinePoint want) {
    const double ai = c.flop / c.bytes, ridge = m->peak_gflops / m->bandwidth_gbs;
    const double slope = m->bandwidth_gbs * ai, higher = slope > m->peak_gflops ? slope : m->peak_gflops;
    if (!r10_same(got.intensity, want.intensity))
        printf("hint: %s\n", r10_same(got.intensity, c.bytes / c.flop)
                                 ? "the intensity is FLOP per byte: flop / bytes, not bytes / flop"
                                 : "the intensity is flop / bytes");
    else if (!r10_same(got.gflops, want.gflops))
        printf("hint: %s\n", r10_same(got.gflops, c.flop / s) ? "GFLOP vs FLOP: the attained rate is in GFLOP/s, flop / seconds / 1e9"
                             : "attained GFLOP/s = flop / seconds / 1e9");
    else if (!r10_same(got.roof_gflops, want.roof_gflops)) {
        if (r10_same(got.roof_gflops, higher))
            printf("hint: max for min: the roof is the lower of the two, min(peak, bandwidth x intensity); "
                   "the higher one is more than the machine can do\n");
        else if (r10_same(got.roof_gflops, want.roof_gflops * 1e9) || r10_same(got.roof_gflops * 1e9, want.roof_gflops))
            printf("hint: GFLOP vs FLOP: GB/s x FLOP/B is already GFLOP/s, like the peak\n");
        else
            printf("hint: roof = min(peak GFLOP/s, bandwidth GB/s x intensity FLOP/B)\n");
    } else if (!r10_same(got.pct_of_roof, want.pct_of_roof))
        printf("hint: %s\n", r10_same(got.pct_of_roof * 100, want.pct_of_roof)
                                 ? "a percentage: 100 x attained / roof"
                                 : "the share of the roof: 100 x attained GFLOP/s / roof GFLOP/s");
    else if (got.bound != want.bound) {
        const double inverted = 1.0 / ridge;
        if ((got.bound == ROOF_MEMORY) == (ai < inverted))
            printf("hint: the ridge inverted: memory-bound when the intensity < peak / bandwidth (%g FLOP/B "
                   "here); bandwidth / peak (%g) is bytes per FLOP\n", ridge, inverted);
        else if (ai == ridge)
            printf("hint: at the ridge itself both roofs meet: below it (intensity < peak / bandwidth) memory, "
                   "from it up compute\n");
        else
            printf("hint: below the ridge (intensity < peak / bandwidth) the layer is memory-bound "
                   "(ROOF_MEMORY), above it compute-bound\n");
    }
}

/* TODO 10.5, the point: machines with the ridge above and below 1 FLOP/B, intensities
 * around the ridge and far from it. */
static int check_roofline_point(void) {
    static const double machines[][2] = {{100, 10}, {3000, 50}, {19500, 2000}, {4, 8}}; /* GFLOP/s, GB/s */
    static const double around[] = {0.001, 0.1, 0.3, 0.5, 0.99, 1.0, 1.01, 3, 1000};
    for (int k = 0; k < 4; k++) {
        const MachineRoof m = {.device = "cpu", .threads = 1, .peak_gflops = machines[k][0],
                               .bandwidth_gbs = machines[k][1]};
        const double ridge = m.peak_gflops / m.bandwidth_gbs;
        for (int j = 0; j < (int)(sizeof around / sizeof around[0]); j++) {
            const LayerCost c = {.flop = 1e9 * ridge * around[j], .bytes = 1e9};
            const double seconds = 0.01 * (j + 1);
            const RooflinePoint got = lesson_roofline_point(c, seconds, &m), want = roofline_point(c, seconds, &m);
            if (r10_same(got.intensity, want.intensity) && r10_same(got.gflops, want.gflops) &&
                r10_same(got.roof_gflops, want.roof_gflops) && r10_same(got.pct_of_roof, want.pct_of_roof) &&
                got.bound == want.bound)
                continue;
            printf("%g FLOP, %g bytes in %g s on %g GFLOP/s, %g GB/s (ridge %g FLOP/B): intensity %g, %g GFLOP/s, "
                   "roof %g, %g%%, %s; expected %g, %g, %g, %g%%, %s\n", c.flop, c.bytes, seconds, m.peak_gflops,
                   m.bandwidth_gbs, ridge, got.intensity, got.gflops, got.roof_gflops, got.pct_of_roof,
                   got.bound == ROOF_MEMORY ? "memory" : got.bound == ROOF_COMPUTE ? "compute" : "(not a bound)",
                   want.intensity, want.gflops, want.roof_gflops, want.pct_of_roof, roofline_bound_name(want.bound));
            r10_point_hint(c, seconds, &m, got, want);
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* TODO 10.5, MFU: the library's on steps of lesson 04's sizes and round numbers. */
static int check_mfu(void) {
    static const double cases[][4] = {/* forward FLOP a token, tokens, seconds, peak GFLOP/s */
                                      {1e6, 1000, 0.1, 100}, {12.4e6, 700, 0.35, 95.3}, {1.6e8, 8192, 0.9, 989000}};
    for (int k = 0; k < 3; k++) {
        const double *c = cases[k];
        const double got = lesson_mfu(c[0], c[1], c[2], c[3]), want = roofline_mfu(c[0], c[1], c[2], c[3]);
        if (r10_same(got, want)) continue;
        printf("%g forward FLOP a token, %g tokens, a step of %g s on %g GFLOP/s: MFU %g, expected %g\n", c[0],
               c[1], c[2], c[3], got, want);
        const double third = want / 3;
        if (r10_same(got, third))
            printf("hint: forward-only FLOP for a training step: the backward costs 2 forwards, a step 3 x the "
                   "forward FLOP\n");
        else if (r10_same(got, want * 1e9) || r10_same(got, want * 1e-9) || r10_same(got, third * 1e9) ||
                 r10_same(got, third * 1e-9))
            printf("hint: GFLOP vs FLOP: the peak is in GFLOP/s, x 1e9 for FLOP/s%s\n",
                   r10_same(got, third * 1e9) || r10_same(got, third * 1e-9) ? "; and a step is 3 x the forward FLOP" : "");
        else if (r10_same(got, want * 100))
            printf("hint: a fraction (0.3 for 30%%), not a percentage\n");
        else if (r10_same(got, want / 2))
            printf("hint: half the library's: against twice the peak? The peak is already in FLOP (an "
                   "FMA counted as 2, GFLOP/s x 1e9): do not double it; a step's FLOP are 3 x the "
                   "forward's, not 1.5 x\n");
        else if (r10_same(got, want * 2))
            printf("hint: twice the library's: a step counted as 6 forwards? forward_flop_per_token is one "
                   "forward's (the 6N rule's 6 is 3 x its 2): a step is 3 x it\n");
        else
            printf("hint: MFU = 3 x forward FLOP a token x tokens / step seconds / (peak GFLOP/s x 1e9)\n");
        return CHECK_FAIL;
    }
    return CHECK_PASS;
}

/* The --roofline program on a small model: a table row and a metrics line per layer. */
static void r10_run(void *path) {
    char *argv[] = {"train", "--roofline", "--threads", "1", "--repeats", "1", "--batch-size", "2",
                    "--bptt", "8", "--vocab", "300", "--metrics", (char *)path, NULL};
    exit(roofline_main(ARRAY_LEN(argv) - 1, argv));
}

static int r10_program(const char *dir) {
    char path[512];
    path_in(path, sizeof path, dir, "roofline.jsonl");
    ChildResult r;
    run_child(r10_run, path, &r);
    if (!expect_exit("train --roofline --metrics FILE (small model)", &r, 0, "machine: cpu", "linear: decoder",
                     "layer norm", "softmax + cross-entropy", (const char *)NULL))
        return CHECK_FAIL;
    /* a layer over 100 % of its roof is explained by its bound: memory-bound, a cache;
     * compute-bound, a peak measured low on a busy machine (never a cache) */
    bool over[2] = {false, false}; /* memory, compute */
    for (const char *line = r.out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *eol = strchr(line, '\n');
        const int len = eol ? (int)(eol - line) : (int)strlen(line);
        char row[256];
        snprintf(row, sizeof row, "%.*s", len, line);
        char *pct = strrchr(row, ' '), *bound;
        double share;
        if (!pct || len < 8 || row[len - 1] != '%' || sscanf(pct, " %lf%%", &share) != 1) continue;
        *pct = '\0';
        while (pct > row && pct[-1] == ' ') *--pct = '\0';
        bound = strrchr(row, ' ');
        if (bound && share > 100) over[strcmp(bound + 1, "compute") == 0] = true;
    }
    const bool cache_said = strstr(r.out, "a memory-bound layer over 100% of the roof: its bytes came from a cache");
    const bool busy_said = strstr(r.out, "a compute-bound layer over 100% of the roof: no layer beats the FMA "
                                         "peak, so the peak was measured low: the machine was busy");
    if (!expect_true(over[0] == cache_said && over[1] == busy_said, "train --roofline: %s memory-bound and %s "
                     "compute-bound layer over 100%% of its roof, but the notes under the table say %s and %s:\n%s",
                     over[0] ? "a" : "no", over[1] ? "a" : "no", cache_said ? "a cache" : "no cache",
                     busy_said ? "a busy machine" : "no busy machine", r.out))
        return CHECK_FAIL;
    if (over[1]) check_show("a compute-bound layer beat the roof: the machine was busy (the program says so)");
    FILE *f = fopen(path, "r");
    if (!expect_true(f != NULL, "%s was not written", path)) return CHECK_FAIL;
    char line[2048];
    int rows = 0;
    bool keys = true;
    while (fgets(line, sizeof line, f)) {
        rows++;
        keys = keys && strstr(line, "\"intensity\"") && strstr(line, "\"gflops\"") &&
               strstr(line, "\"peak_gflops\"") && strstr(line, "\"bandwidth_gbs\"") && strstr(line, "\"layer\"");
    }
    fclose(f);
    return expect_true(rows == 9 && keys, "%d metrics lines (want 9, one a layer), %s", rows,
                       keys ? "each with layer, intensity, gflops, peak_gflops, bandwidth_gbs"
                            : "some without layer, intensity, gflops, peak_gflops or bandwidth_gbs")
               ? CHECK_PASS
               : CHECK_FAIL;
}
static int check_roofline_program(void) { return with_tmpdir("grade10", r10_program); }

static void grade10_roofline_checks(void) {
    check_run("TODO 10.4", "layer cost: linear and layer norm FLOP and bytes, float32 and bfloat16, as the library counts", check_layer_cost, 10);
    check_run("TODO 10.5", "roofline point: intensity, GFLOP/s, roof, % of roof and bound on both sides of the ridge", check_roofline_point, 10);
    check_run("TODO 10.5", "MFU of a training step: 3 x the forward FLOP over the peak", check_mfu, 10);
    check_run("TODO 10.4-10.5", "train --roofline: the machine measured, every layer of lesson 04's model placed, --metrics lines", check_roofline_program, 60);
}

#endif
