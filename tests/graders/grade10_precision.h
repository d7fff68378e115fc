/* Lesson 10's grader, part 2: the mixed-precision TODOs 10.7-10.10, included by grade10.c
 * (which calls grade10_precision_checks() with its other checks). Each TODO is compared
 * bit for bit with the library's definition: lib/core/dtype.h's conversions (static
 * inline, so compared with directly, and a lesson file that calls them is refused by
 * reading its source), sgd_step + params_refresh_working, loss_scale_unscale /
 * loss_scale_update, and the library's order of a float16 step (lib/train/loss_scale.h).
 * Where a result is wrong, the mistakes participants make are run alongside (a rounding
 * by truncation, an update on the bf16 copy, a count not reset, ...) and the one that
 * gives the same numbers is named.
 *
 * A TODO may not call the library's twin: the Makefile links the grader with --wrap for
 * GRADE_WRAPPED_10_PRECISION, and the wrappers below ask the caller's name (dladdr). */
#ifndef GRADERS_GRADE10_PRECISION_H
#define GRADERS_GRADE10_PRECISION_H

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/rng.h"
#include "framework/check.h"
#include "graders/source_uses.h"
#include "lesson.h"
#include "train/clip.h"
#include "train/loss_scale.h"
#include "train/mixed_precision.h"
#include "train/optim.h"

#ifndef LESSON_PATH
#define LESSON_PATH "lessons/10-performance"
#endif

/* ---------------------------------------------------------------- the library's twins */

/* Stops the check when `fn` was called from one of the lesson functions in `callers`
 * (a space-separated list). */
static void p10_refuse(const char *fn, void *caller, const char *callers) {
    Dl_info info;
    if (!dladdr(caller, &info) || !info.dli_sname) return;
    const size_t n = strlen(info.dli_sname);
    for (const char *c = callers; (c = strstr(c, info.dli_sname)) != NULL; c += n) {
        if ((c == callers || c[-1] == ' ') && (c[n] == ' ' || c[n] == '\0')) {
            printf("%s calls the library's %s: write this TODO yourself (the library's version is "
                   "there to compare with once your checks pass)\n", info.dli_sname, fn);
            fflush(stdout);
            _exit(CHECK_FAIL);
        }
    }
}
#define P10_WRAP(type, name, callers, params, args)                                          \
    type __real_##name params;                                                               \
    type __wrap_##name params;                                                               \
    type __wrap_##name params {                                                              \
        p10_refuse(#name, __builtin_return_address(0), callers);                             \
        return __real_##name args;                                                           \
    }
#define P10_WRAP_VOID(name, callers, params, args)                                           \
    void __real_##name params;                                                               \
    void __wrap_##name params;                                                               \
    void __wrap_##name params {                                                              \
        p10_refuse(#name, __builtin_return_address(0), callers);                             \
        __real_##name args;                                                                  \
    }
#define P10_SCALERS "lesson_unscale lesson_scale_update lesson_fp16_step"
P10_WRAP(bool, loss_scale_unscale, P10_SCALERS, (LossScaler *ls, Tensor *g), (ls, g))
P10_WRAP_VOID(loss_scale_update, P10_SCALERS, (LossScaler *ls), (ls))
P10_WRAP(bool, mixed_precision_unscale, P10_SCALERS, (MixedPrecision *mp), (mp))
P10_WRAP_VOID(mixed_precision_step_done, P10_SCALERS, (MixedPrecision *mp), (mp))
P10_WRAP_VOID(dtype_convert_cpu, "lesson_bf16_from_f32 lesson_f32_from_bf16 lesson_master_step",
              (void *dst, DType dd, const void *src, DType sd, int64_t n), (dst, dd, src, sd, n))

/* dtype.h's converters are static inline: no wrapper sees them. The lesson's file is read
 * instead (source_uses.h); returns the first library name it uses (a family's prefix). */
static const char *p10_source_uses_converter(const char *file, bool *readable) {
    static const char *const names[] = {"dtype_bf16_from", "dtype_f32_from_bf16", "dtype_f32_bits_from_bf16",
                                        "dtype_bits16_from", "dtype_f32_bits_from_bits16", "dtype_convert",
                                        "tensor_convert", NULL};
    char path[512];
    snprintf(path, sizeof path, "%s/%s", LESSON_PATH, file);
    return source_uses(path, names, false, readable);
}

static bool p10_refuse_converter(const char *file, const char *why) {
    bool readable;
    const char *name = p10_source_uses_converter(file, &readable);
    if (!readable) {
        printf("cannot read %s/%s (run the grader from the repository's top: make check-lesson 10)\n",
               LESSON_PATH, file);
        return true;
    }
    if (name) {
        printf("%s uses the library's %s...: %s\n", file, name, why);
        return true;
    }
    return false;
}

/* ---------------------------------------------------------------- TODO 10.7 */

static uint32_t p10_bits(float x) { return dtype_bits_of_f32(x); }

/* Why lesson_bf16_from_f32 gave `got` for the float32 bits u (the library's: want). */
static void p10_explain_down(uint32_t u, uint16_t got, uint16_t want) {
    const float x = dtype_f32_of_bits(u);
    const uint32_t low = u & 0xffffu, trunc = u >> 16;
    printf("lesson_bf16_from_f32(%.9g, bits 0x%08x) gave 0x%04x, expected 0x%04x\n", (double)x, u,
           got, want);
    if ((u & 0x7fffffffu) == 0x7f800000u && (got & 0x7fffu) > 0x7f80u) {
        printf("hint: infinity treated as a NaN: %s is made a NaN (0x%04x); a NaN has the exponent all "
               "ones AND a fraction not 0, so the test is (u & 0x7fffffff) > 0x7f800000, not >= "
               "(isnan(x), not !isfinite(x)); infinity rounds like any other value, to itself\n",
               u >> 31 ? "-inf" : "+inf", got);
    } else if ((u & 0x7fffffffu) > 0x7f800000u) {
        if ((got & 0x7fffu) == 0x7f80u)
            printf("hint: a NaN turned into infinity: a NaN whose payload sits in the low 16 bits "
                   "(0x7f800001) loses it when rounded; test for NaN first and keep it a NaN: "
                   "(u >> 16) | 0x0040 (the quiet bit)\n");
        else
            printf("hint: a NaN stays a NaN of the same sign with the top bits of its payload: "
                   "(u >> 16) | 0x0040 (the quiet bit set), tested before any rounding\n");
    } else if (low == 0x8000u && got == trunc && want != trunc) {
        printf("hint: a tie rounded down (towards zero): 0x%08x is exactly halfway between 0x%04x "
               "(last kept bit 1) and 0x%04x (0); ties go to the even pattern, here up. Adding 0x7fff "
               "alone never carries at exactly half: add 0x7fff plus the kept part's lowest bit, "
               "(u >> 16) & 1\n", u, trunc, want);
    } else if (low == 0x8000u && got != trunc && want == trunc) {
        printf("hint: a tie rounded away from zero: 0x%08x is exactly halfway between 0x%04x (last "
               "kept bit 0) and 0x%04x (1); ties go to the even pattern, here down. Adding 0x8000 "
               "always carries at half: add 0x7fff plus the kept part's lowest bit, (u >> 16) & 1\n",
               u, trunc, (uint16_t)(trunc + 1));
    } else if (low == 0x8000u) {
        printf("hint: ties go to the even pattern: a value exactly halfway (low 16 bits 0x8000, "
               "like 1 + 2^-8 between 1 and 1 + 2^-7) rounds to the neighbour whose last kept bit "
               "is 0: add 0x7fff plus the kept part's lowest bit\n");
    } else if (got == trunc && low > 0x8000u) {
        printf("hint: 1 + 2^-8 + 2^-16 rounded down: that is cutting the low 16 bits (truncation), "
               "which pulls every value towards zero; round to nearest: up when the dropped part "
               "is above half\n");
    } else if ((want & 0x7fffu) == 0x7f80u && (u & 0x7fffffffu) != 0x7f800000u) {
        printf("hint: from halfway past the largest finite bf16 on ((2 - 2^-8) 2^127) a value "
               "rounds to infinity: the carry out of the mantissa steps the exponent to 0xff\n");
    } else {
        printf("hint: round to nearest on the bits: (u + 0x7fff + ((u >> 16) & 1)) >> 16, the "
               "sign bit untouched\n");
    }
}

static int p10_check_bf16(void) {
    if (p10_refuse_converter("bf16.c", "that is this TODO's answer; write the rounding yourself "
                                       "on the bits (the library's is there to compare with)"))
        return CHECK_FAIL;
    /* the named cases first, then every upper half with 6 lower patterns, then random */
    static const uint32_t named[] = {
        0x3f808080u, /* 1 + 2^-8 + 2^-16: above half, up to 0x3f81 */
        0xbf808080u, /* its negative */
        0x3f808000u, /* 1 + 2^-8: a tie, kept part even: stays 0x3f80 */
        0x3f818000u, /* 1 + 3 2^-8: a tie, kept part odd: up to 0x3f82 */
        0xbf808000u, 0x7f7fffffu, /* the largest float: to infinity */
        0x7f7f7fffu, 0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7f810000u, 0xffffffffu,
        0x7f800000u, 0xff800000u, 0x80000000u, 0x00000001u, 0x00008000u, 0x00018000u, 0x007fffffu};
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
        const uint32_t u = named[k];
        const uint16_t got = lesson_bf16_from_f32(dtype_f32_of_bits(u)), want = dtype_bf16_from_f32_bits(u);
        if (got != want) return p10_explain_down(u, got, want), CHECK_FAIL;
    }
    static const uint32_t lows[] = {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu};
    for (uint32_t hi = 0; hi < 65536u; hi++)
        for (int k = 0; k < 6; k++) {
            const uint32_t u = hi << 16 | lows[k];
            const uint16_t got = lesson_bf16_from_f32(dtype_f32_of_bits(u)), want = dtype_bf16_from_f32_bits(u);
            if (got != want) return p10_explain_down(u, got, want), CHECK_FAIL;
        }
    Rng rng;
    rng_seed(&rng, 107, 0);
    for (int i = 0; i < 2000000; i++) {
        const uint32_t u = rng_u32(&rng);
        const uint16_t got = lesson_bf16_from_f32(dtype_f32_of_bits(u)), want = dtype_bf16_from_f32_bits(u);
        if (got != want) return p10_explain_down(u, got, want), CHECK_FAIL;
    }
    for (uint32_t h = 0; h < 65536u; h++) {
        const uint32_t got = p10_bits(lesson_f32_from_bf16((uint16_t)h)), want = dtype_f32_bits_from_bf16((uint16_t)h);
        if (got != want) {
            printf("lesson_f32_from_bf16(0x%04x) gave bits 0x%08x (%g), expected 0x%08x (%g)\n", h, got,
                   (double)dtype_f32_of_bits(got), want, (double)dtype_f32_of_bits(want));
            if (dtype_f32_of_bits(got) == (float)h)
                printf("hint: that converts the integer 0x%04x to a float; the bf16 bits are float32's "
                       "top half: shift them up by 16 and reinterpret the bits (memcpy)\n", h);
            else
                printf("hint: exact: the 16 bits become float32's top 16, the low 16 are zero\n");
            return CHECK_FAIL;
        }
        /* and back: every pattern comes home (a signalling NaN quiet) */
        const uint16_t back = lesson_bf16_from_f32(lesson_f32_from_bf16((uint16_t)h));
        if (back != dtype_bf16_from_f32_bits(want))
            return p10_explain_down(want, back, dtype_bf16_from_f32_bits(want)), CHECK_FAIL;
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 10.8 */

enum { P10_N = 640, P10_DOCS = 64, P10_STEPS = 100 };

/* Step s's gradient of weight k: 1 for the docs' weights (the first 64), else +-2^j,
 * j in [-6, 2]: lr x g is exact, so the update is one rounding however it is computed. */
static float p10_master_grad(Rng *rng, int k) {
    if (k < P10_DOCS) return 1.0f;
    const float g = ldexpf(1.0f, (int)rng_below(rng, 9) - 6);
    return rng_below(rng, 2) ? g : -g;
}

static int p10_check_master(void) {
    if (p10_refuse_converter("master.c", "round with your lesson_bf16_from_f32 (TODO 10.7)"))
        return CHECK_FAIL;
    const float lr = 1e-3f;
    ParamList ref = {0};
    params_add(&ref, "w", 2, (int[]){20, P10_N / 20});
    params_allocate(&ref);
    Rng rng;
    rng_seed(&rng, 108, 0);
    static float master[P10_N], start[P10_N], grad[P10_N], bf_master[P10_N], late_master[P10_N];
    static uint16_t work[P10_N], bf_work[P10_N], late_work[P10_N], stale[P10_N];
    for (int k = 0; k < P10_N; k++)
        start[k] = k < P10_DOCS ? 1.0f + (float)k / P10_DOCS : rng_uniform_range(&rng, -2.0f, 2.0f);
    memcpy(ref.values.data, start, sizeof start);
    params_set_working(&ref, DTYPE_BF16); /* rounded from the values */
    Sgd sgd;
    sgd_init(&sgd, &ref, lr, 0.0f, 0.0f);
    memcpy(master, start, sizeof start), memcpy(bf_master, start, sizeof start), memcpy(late_master, start, sizeof start);
    memcpy(work, ref.working.raw, sizeof work), memcpy(bf_work, work, sizeof work);
    memcpy(late_work, work, sizeof work), memcpy(stale, work, sizeof work);
    const uint16_t *ref_work = ref.working.raw;
    for (int s = 1; s <= P10_STEPS; s++) {
        for (int k = 0; k < P10_N; k++) grad[k] = ref.grads.data[k] = p10_master_grad(&rng, k);
        sgd_step(&sgd, &ref);
        params_refresh_working(&ref);
        for (int k = 0; k < P10_N; k++) { /* the mistakes, alongside */
            bf_work[k] = dtype_bf16_from_f32(dtype_f32_from_bf16(bf_work[k]) - lr * grad[k]);
            bf_master[k] = dtype_f32_from_bf16(bf_work[k]);
            late_work[k] = dtype_bf16_from_f32(late_master[k]); /* rounded before the update */
            late_master[k] -= lr * grad[k];
        }
        lesson_master_step(master, work, grad, P10_N, lr);
        const bool master_ok = memcmp(master, ref.values.data, sizeof master) == 0;
        const bool work_ok = memcmp(work, ref_work, sizeof work) == 0;
        if (master_ok && work_ok) continue;
        int k = 0;
        while (k < P10_N && p10_bits(master[k]) == p10_bits(ref.values.data[k]) && work[k] == ref_work[k]) k++;
        printf("step %d, weight %d (from %.7g, gradient %g, lr %g): master %.9g, work %.7g (0x%04x); "
               "expected master %.9g, work %.7g (0x%04x)\n", s, k, (double)start[k], (double)grad[k],
               (double)lr, (double)master[k], (double)dtype_f32_from_bf16(work[k]), work[k],
               (double)ref.values.data[k], (double)dtype_f32_from_bf16(ref_work[k]), ref_work[k]);
        bool behind = master_ok && memcmp(work, late_work, sizeof work) == 0;
        if (behind && memcmp(work, stale, sizeof work) == 0) {
            /* at the first step, rounded before the update and never rounded look alike: one
             * more call on copies tells them apart (rounded late, work[] catches up a step) */
            static float m2[P10_N];
            static uint16_t w2[P10_N];
            memcpy(m2, master, sizeof m2), memcpy(w2, work, sizeof w2);
            lesson_master_step(m2, w2, grad, P10_N, lr);
            behind = memcmp(w2, ref_work, sizeof w2) == 0;
        }
        if (memcmp(work, bf_work, sizeof work) == 0)
            printf("hint: the update was applied to the bf16 copy: lr 1e-3 on a weight in [1, 2) is "
                   "below half a bf16 step (2^-8) and rounds away every time; update master[k] in "
                   "float32, then round work[k] from it\n");
        else if (behind)
            printf("hint: work[] is one step stale: it was rounded from the master before the update, "
                   "so after step %d it holds the master as it was before that step's update, and "
                   "the forward reads work[]; round work[k] after master[k] -= lr * grad[k]\n", s);
        else if (master_ok && memcmp(work, stale, sizeof work) == 0)
            printf("hint: the working copy was not refreshed: the master moved but work[] still holds "
                   "the first weights, and the forward reads work[]; round it again after the update\n");
        else if (!master_ok)
            printf("hint: the float32 master takes the whole update: master[k] -= lr * grad[k]\n");
        else
            printf("hint: work[k] is master[k] rounded to nearest even (your lesson_bf16_from_f32)\n");
        params_free(&ref), sgd_free(&sgd);
        return CHECK_FAIL;
    }
    check_show("weight 23: %.7g -> master %.7g, its bf16 copy %.7g, after %d steps of lr 1e-3",
               (double)start[23], (double)master[23], (double)dtype_f32_from_bf16(work[23]), P10_STEPS);
    params_free(&ref), sgd_free(&sgd);
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 10.9: unscale */

static bool p10_unscale_case(const char *what, float scale, const float *g0, int64_t n) {
    float *mine = malloc((size_t)n * sizeof(float));
    Tensor ref = tensor_zeros(1, (int)n);
    memcpy(mine, g0, (size_t)n * sizeof(float)), memcpy(ref.data, g0, (size_t)n * sizeof(float));
    LossScaler ls;
    loss_scale_init_with(&ls, scale, 2.0f, 0.5f, 2000);
    const bool want = loss_scale_unscale(&ls, &ref), got = lesson_unscale(mine, n, scale);
    bool ok = true;
    if (got != want) {
        printf("%s, S = %g: returned %s, expected %s\n", what, (double)scale, got ? "true" : "false",
               want ? "true" : "false");
        bool has_nan = false, has_inf = false;
        for (int64_t k = 0; k < n; k++) has_nan |= isnan(g0[k]), has_inf |= isinf(g0[k]);
        bool overflowed = false; /* a finite g that the multiply by 1/S made inf */
        const float inv = (float)(1.0 / (double)scale);
        for (int64_t k = 0; k < n; k++) overflowed |= isfinite(g0[k]) && !isfinite(g0[k] * inv);
        if (!want && got && overflowed)
            printf("hint: the test came after the multiply: every gradient was finite, but with S = %g "
                   "one overflowed when multiplied by 1/S. The verdict is on the gradients as the "
                   "backward left them (GradScaler tests each g, then multiplies): an overflow of "
                   "the unscale itself says nothing about S being too large, and halving S would "
                   "make 1/S larger still\n", (double)scale);
        else if (want && has_nan && !has_inf)
            printf("hint: a NaN was missed: NaN compares false with everything (g > FLT_MAX, "
                   "g == INFINITY and isinf all miss it); test !isfinite(g) (or g != g as well)\n");
        else if (want)
            printf("hint: an inf was missed: found is true when any g is inf or NaN (!isfinite)\n");
        else
            printf("hint: every gradient was finite: only inf or NaN count\n");
        ok = false;
    } else if (!want) { /* finite: the values bit for bit (with an inf, only the verdict counts) */
        for (int64_t k = 0; ok && k < n; k++) {
            if (p10_bits(mine[k]) == p10_bits(ref.data[k])) continue;
            printf("%s, S = %g: g[%lld] = %.9g became %.9g, expected %.9g\n", what, (double)scale,
                   (long long)k, (double)g0[k], (double)mine[k], (double)ref.data[k]);
            if (mine[k] == g0[k] / scale)
                printf("hint: that is g / S; multiply by the inverse, computed in double and "
                       "rounded to float: g *= (float)(1.0 / (double)S), as GradScaler does\n");
            else if (mine[k] == g0[k])
                printf("hint: the gradients were not divided by the scale\n");
            else
                printf("hint: g *= (float)(1.0 / (double)S), every element\n");
            ok = false;
        }
    }
    free(mine);
    tensor_free(&ref);
    return ok;
}

static int p10_check_unscale(void) {
    enum { N = 5000 };
    static float g[N];
    Rng rng;
    rng_seed(&rng, 109, 0);
    for (int k = 0; k < N; k++) g[k] = ldexpf(rng_uniform_range(&rng, -1.0f, 1.0f), (int)rng_below(&rng, 60) - 40);
    g[3] = 0.0f, g[4] = -0.0f, g[5] = 1e-40f, g[6] = 65504.0f;
    const float scales[] = {65536.0f, 1000.0f, 0.125f, 3.0f};
    bool ok = true;
    for (int s = 0; ok && s < 4; s++) ok = p10_unscale_case("finite gradients", scales[s], g, N);
    const struct { const char *what; float value; } bad[] = {
        {"one gradient +inf", INFINITY}, {"one gradient -inf", -INFINITY}, {"one gradient NaN (and no inf)", NAN},
        {"one gradient -NaN (and no inf)", -NAN}};
    for (int b = 0; ok && b < 4; b++) {
        const float keep = g[4321];
        g[4321] = bad[b].value;
        ok = p10_unscale_case(bad[b].what, 65536.0f, g, N);
        g[4321] = keep;
    }
    /* finite, but x 8 overflows: found only by a test made after the multiply (wrong) */
    g[77] = 3e38f;
    if (ok) ok = p10_unscale_case("one gradient 3e38 (finite; x 1/S = x 8 overflows)", 0.125f, g, N);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- TODO 10.9: update */

/* The mistakes a scale update makes, run beside the library's to name one. */
enum { P10_RIGHT, P10_NO_RESET_ON_INF, P10_EVERY_STEP, P10_NO_RESET_AFTER_GROWTH, P10_TO_INF, P10_VARIANTS };

static void p10_update_variant(LossScaler *s, bool found, int variant) {
    if (found) {
        s->scale *= s->backoff_factor;
        if (variant != P10_NO_RESET_ON_INF) s->growth_tracker = 0;
        s->steps_skipped++;
        return;
    }
    s->steps_taken++;
    ++s->growth_tracker;
    if (variant == P10_EVERY_STEP || s->growth_tracker == s->growth_interval ||
        (variant == P10_NO_RESET_AFTER_GROWTH && s->growth_tracker > s->growth_interval)) {
        const float grown = s->scale * s->growth_factor;
        if (isfinite(grown) || variant == P10_TO_INF) s->scale = grown;
        if (variant != P10_NO_RESET_AFTER_GROWTH) s->growth_tracker = 0;
    }
}

static bool p10_same_scaler(const LossScaler *a, const LossScaler *b) {
    return p10_bits(a->scale) == p10_bits(b->scale) && a->growth_tracker == b->growth_tracker &&
           a->steps_taken == b->steps_taken && a->steps_skipped == b->steps_skipped;
}

/* One scripted run: 'I' an inf or NaN step, '.' a clean one. */
static bool p10_update_script(const char *script, float init, float growth, float backoff, int interval) {
    LossScaler ref, mine, var[P10_VARIANTS];
    loss_scale_init_with(&ref, init, growth, backoff, interval);
    mine = ref;
    for (int v = 0; v < P10_VARIANTS; v++) var[v] = ref;
    int last_inf = 0;
    for (int s = 1; script[s - 1]; s++) {
        const bool found = script[s - 1] == 'I';
        ref.unscaled = true, ref.found_inf = found;
        loss_scale_update(&ref);
        lesson_scale_update(&mine, found);
        for (int v = 0; v < P10_VARIANTS; v++) p10_update_variant(&var[v], found, v);
        if (found) last_inf = s;
        if (p10_same_scaler(&mine, &ref)) continue;
        printf("scripted run \"%s\" (S from %g, x%g after %d clean steps, x%g on inf/NaN), step %d (%s): "
               "scale %g, growth_tracker %d, taken %lld, skipped %lld; expected %g, %d, %lld, %lld\n",
               script, (double)init, (double)growth, interval, (double)backoff, s, found ? "inf/NaN" : "clean",
               (double)mine.scale, mine.growth_tracker, (long long)mine.steps_taken, (long long)mine.steps_skipped,
               (double)ref.scale, ref.growth_tracker, (long long)ref.steps_taken, (long long)ref.steps_skipped);
        if (p10_same_scaler(&mine, &var[P10_NO_RESET_ON_INF]))
            printf("hint: the growth count was not reset on the overflow at step %d: the clean steps "
                   "before it still counted; growth_tracker = 0 on an inf or NaN\n", last_inf);
        else if (p10_same_scaler(&mine, &var[P10_EVERY_STEP]))
            printf("hint: the scale doubled after every clean step: it grows only after "
                   "growth_interval (%d) clean steps in a row\n", interval);
        else if (p10_same_scaler(&mine, &var[P10_NO_RESET_AFTER_GROWTH]))
            printf("hint: the count was not restarted after the scale grew: growth_tracker = 0 then\n");
        else if (p10_same_scaler(&mine, &var[P10_TO_INF]))
            printf("hint: the scale grew to infinity: where scale x growth_factor overflows float, "
                   "keep the scale as it was (and still restart the count)\n");
        else if (mine.steps_skipped != ref.steps_skipped)
            printf("hint: a step with an inf or NaN is counted as skipped (steps_skipped), not taken\n");
        else if (mine.steps_taken != ref.steps_taken)
            printf("hint: a clean step is counted as taken (steps_taken)\n");
        else if (found)
            printf("hint: on an inf or NaN: scale *= backoff_factor, growth_tracker = 0\n");
        else
            printf("hint: a clean step: ++growth_tracker; at growth_interval, scale *= growth_factor "
                   "and growth_tracker = 0\n");
        return false;
    }
    return true;
}

static int p10_check_update(void) {
    const bool ok = p10_update_script("...I..I....I.I.........I.I.....I.......I", 65536.0f, 2.0f, 0.5f, 3) &&
                    p10_update_script("..I...........", 0x1p126f, 4.0f, 0.25f, 2) &&
                    p10_update_script("I..I.....", 1.0f, 2.0f, 0.5f, 1);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- TODO 10.10 */

enum { P10_STEP_COUNT = 12 };

/* A model of two parameters, float16 working copy, Adam, S = 1024 (growth after 2). */
static void p10_fp16_setup(ParamList *p, Adam *opt, LossScaler *ls) {
    *p = (ParamList){0};
    params_add(p, "a", 2, (int[]){10, 20});
    params_add(p, "b", 1, (int[]){100});
    params_allocate(p);
    Rng rng;
    rng_seed(&rng, 110, 0);
    for (int64_t k = 0; k < p->values.size; k++) p->values.data[k] = rng_uniform_range(&rng, -1, 1);
    params_set_working(p, DTYPE_F16);
    adam_init(opt, p, 1e-2f);
    loss_scale_init_with(ls, 1024.0f, 2.0f, 0.5f, 2);
}

/* Step s's gradients times S: norms alternately 0.3 and 5 (max_norm 1: clipped every other
 * step); step 3 holds an inf, step 7 a NaN. S is a power of two: g x S is exact. */
static void p10_fp16_grads(Tensor *g, int s, float S) {
    Rng rng;
    rng_seed(&rng, 111, (uint64_t)s);
    double sq = 0;
    for (int64_t k = 0; k < g->size; k++) g->data[k] = rng_normal(&rng), sq += (double)g->data[k] * g->data[k];
    const float scale = (float)((s % 2 ? 0.3 : 5.0) / sqrt(sq));
    for (int64_t k = 0; k < g->size; k++) g->data[k] = g->data[k] * scale * S;
    if (s == 3) g->data[42] = INFINITY;
    if (s == 7) g->data[250] = NAN;
}

/* The library's order (loss_scale.h). */
static bool p10_fp16_reference(ParamList *p, Adam *opt, LossScaler *ls, float max_norm,
                               double *norm) {
    const bool found = loss_scale_unscale(ls, &p->grads);
    if (found) tensor_fill(&p->grads, 0.0f);
    *norm = clip_grad_norm(p, max_norm); /* the true gradients' norm, before clipping */
    const bool step = loss_scale_should_step(ls);
    if (step) adam_step(opt, p), params_refresh_working(p);
    loss_scale_update(ls);
    return step;
}

static bool p10_same_bits(const void *a, const void *b, size_t bytes) { return memcmp(a, b, bytes) == 0; }

static int p10_check_fp16_step(void) {
    const float max_norm = 1.0f;
    ParamList mine, ref;
    Adam opt_mine, opt_ref;
    LossScaler ls_mine, ls_ref;
    p10_fp16_setup(&mine, &opt_mine, &ls_mine);
    p10_fp16_setup(&ref, &opt_ref, &ls_ref);
    const size_t vbytes = (size_t)ref.values.size * sizeof(float), wbytes = (size_t)ref.values.size * 2;
    float *before = malloc(vbytes);
    uint16_t *work_before = malloc(wbytes);
    bool ok = true;
    for (int s = 1; ok && s <= P10_STEP_COUNT; s++) {
        const float S = ls_ref.scale;
        p10_fp16_grads(&mine.grads, s, ls_mine.scale);
        p10_fp16_grads(&ref.grads, s, S);
        memcpy(before, mine.values.data, vbytes), memcpy(work_before, mine.working.raw, wbytes);
        const LossScaler scaler_before = ls_mine;
        double pre; /* the true norm before clipping */
        const bool want = p10_fp16_reference(&ref, &opt_ref, &ls_ref, max_norm, &pre);
        /* clipped while scaled (norm S x pre), then unscaled: */
        const double scaled_clip = fmin(S * pre, max_norm) / S;
        Fp16Step st = {.params = &mine, .opt = &opt_mine, .scaler = &ls_mine, .max_norm = max_norm};
        const bool got = lesson_fp16_step(&st);
        const bool grads_ok = p10_same_bits(mine.grads.data, ref.grads.data, vbytes);
        const bool values_ok = p10_same_bits(mine.values.data, ref.values.data, vbytes);
        const bool work_ok = p10_same_bits(mine.working.raw, ref.working.raw, wbytes);
        if (got == want && grads_ok && values_ok && work_ok && p10_same_scaler(&ls_mine, &ls_ref) &&
            opt_mine.step == opt_ref.step)
            continue;
        ok = false;
        const double norm = grad_norm(&mine), want_norm = grad_norm(&ref);
        printf("step %d (S %g, %s): returned %s (expected %s); gradients' norm after %.6g (expected "
               "%.6g); scale after %g (expected %g), %lld taken (expected %lld), %lld skipped (expected "
               "%lld), Adam steps %lld (expected %lld)\n", s, (double)S,
               want ? "clean" : "an inf or NaN in the gradients", got ? "true" : "false",
               want ? "true" : "false", norm, want_norm, (double)ls_mine.scale, (double)ls_ref.scale,
               (long long)ls_mine.steps_taken, (long long)ls_ref.steps_taken,
               (long long)ls_mine.steps_skipped, (long long)ls_ref.steps_skipped,
               (long long)opt_mine.step, (long long)opt_ref.step);
        const long long counted = (ls_mine.steps_taken - scaler_before.steps_taken) +
                                  (ls_mine.steps_skipped - scaler_before.steps_skipped);
        LossScaler twice = scaler_before; /* lesson_scale_update run twice in this step */
        p10_update_variant(&twice, !want, P10_RIGHT), p10_update_variant(&twice, !want, P10_RIGHT);
        if (p10_same_scaler(&ls_mine, &twice))
            printf("hint: lesson_scale_update ran twice in this step: your scaler is what two calls "
                   "make (S %g -> %g, taken %lld -> %lld, skipped %lld -> %lld). Call it once, at the "
                   "end of lesson_fp16_step, on every path: taken or skipped, it counts the step "
                   "and moves S\n", (double)scaler_before.scale, (double)ls_mine.scale,
                   (long long)scaler_before.steps_taken, (long long)ls_mine.steps_taken,
                   (long long)scaler_before.steps_skipped, (long long)ls_mine.steps_skipped);
        else if (counted > 1)
            printf("hint: the step was counted %lld times (taken %lld -> %lld, skipped %lld -> %lld in "
                   "this one step): lesson_scale_update counts it, taken or skipped; do not add to "
                   "steps_taken or steps_skipped in lesson_fp16_step as well\n", counted,
                   (long long)scaler_before.steps_taken, (long long)ls_mine.steps_taken,
                   (long long)scaler_before.steps_skipped, (long long)ls_mine.steps_skipped);
        else if (!want && (got || opt_mine.step != opt_ref.step || !p10_same_bits(before, mine.values.data, vbytes)))
            printf("hint: stepped on inf: this step's gradients held an inf or NaN (an overflow of "
                   "float16), so the optimiser must not step: skip it (the scale is halved instead)\n");
        else if (!want && !isfinite(norm))
            printf("hint: a skipped step's gradients are set to zero (tensor_fill), so that clipping "
                   "and a divergence check read 0, not float16's overflow\n");
        else if (want && fabs(norm - scaled_clip) <= 1e-3 * scaled_clip)
            printf("hint: clipped the scaled gradients: unscale first. Their norm was S = %g times "
                   "the true one, so clipping fired at S x the bound, and unscaling shrank them S "
                   "times more (a norm of %.3g, not %.3g)\n", (double)S, norm, want_norm);
        else if (want && fabs(norm - fmin(S * pre, max_norm)) <= 1e-3 * fmin(S * pre, max_norm))
            printf("hint: the gradients were not unscaled (their norm %.3g is that of the scaled ones, "
                   "S = %g): lesson_unscale first\n", norm, (double)S);
        else if (want && !grads_ok && norm > max_norm * 1.001)
            printf("hint: not clipped: clip_grad_norm(params, max_norm) after unscaling, before the step\n");
        else if (values_ok && !work_ok && p10_same_bits(work_before, mine.working.raw, wbytes))
            printf("hint: the working copy was not refreshed after the step (params_refresh_working): "
                   "the forward reads it\n");
        else if (p10_same_scaler(&ls_mine, &scaler_before))
            printf("hint: the scale was not updated: lesson_scale_update(scaler, found) ends every "
                   "step, taken or skipped\n");
        else if (got != want)
            printf("hint: return whether the step was taken (false on an inf or NaN)\n");
        else
            printf("hint: the library's order: unscale, zero on inf/NaN, clip, step + refresh (or "
                   "skip), update the scale (clip before the step: Adam reads the clipped gradients; "
                   "lesson_scale_update counts the skip, do not count it again)\n");
    }
    if (ok)
        check_show("%lld steps taken, %lld skipped, S %g after %d steps", (long long)ls_mine.steps_taken,
                   (long long)ls_mine.steps_skipped, (double)ls_mine.scale, P10_STEP_COUNT);
    free(before), free(work_before);
    adam_free(&opt_mine), adam_free(&opt_ref);
    params_free(&mine), params_free(&ref);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- the checks */

static void grade10_precision_checks(void) {
    check_needs("TODO 10.8", "10.7");
    check_needs("TODO 10.10", "10.9");
    check_run("TODO 10.7", "bf16 rounding both ways: every upper half x 6 lower patterns, 2M random values and all 65,536 back, bit for bit = dtype.h's", p10_check_bf16, 20);
    check_run("TODO 10.8", "master weights: 100 SGD steps = sgd_step + params_refresh_working bit for bit (lr 1e-3 on [1, 2) kept)", p10_check_master, 20);
    check_run("TODO 10.9", "unscale: g x (1/S) bit for bit = loss_scale_unscale (S 65536, 1000, 1/8, 3); inf, -inf, NaN found, tested before the multiply", p10_check_unscale, 20);
    check_run("TODO 10.9", "scale update: 3 scripted runs (overflows, growth, a growth to inf) = loss_scale_update", p10_check_update, 20);
    check_run("TODO 10.10", "the fp16 step in the library's order: S, skips, clipped gradients and weights bit for bit over 12 steps", p10_check_fp16_step, 20);
}

#endif
