/* Grader of lesson 09. TODOs 9.1 and 9.5 are checked in one process; 9.2-9.4 need
 * ranks: each such check starts
 *   mpirun -n 2 (and 3) <this grader> --worker NAME
 * whose ranks form one tensor group and run your function with the library's versions
 * of the others (so that a check tests one TODO), and print what they saw
 * (tests/graders/ranks.h). Such a check SKIPs where there is no mpirun, never PASSes;
 * every check has a time limit, so a deadlock fails that check and the rest go on. The
 * program's checks train on 1 rank, on 2 as --tp 2 and on 4 as 2 stages x 2 tensor
 * ranks, and compare the losses.
 * Run with `make check-lesson 9` (your code) or `make check-lesson 9 SOLUTION=1`. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "framework/check.h"
#include "graders/ranks.h"
#include "layers/softmax_xent.h"
#include "lesson.h"
#include "models/transformer.h"

#ifndef LESSON_PATH /* the lesson's directory, from the Makefile: lessons/... or solutions/... */
#define LESSON_PATH "lessons/09-tensor-parallel"
#endif

/* A TODO may not call the library's version of itself (linked with --wrap: the Makefile's
 * GRADE_WRAPPED_09): the caller's name is asked of the return address. */
#define WRAP_TWIN(type, name, twin, params, args)                                           \
    type __real_##name params;                                                              \
    type __wrap_##name params;                                                              \
    type __wrap_##name params {                                                             \
        Dl_info info;                                                                       \
        if (dladdr(__builtin_return_address(0), &info) && info.dli_sname &&                \
            strcmp(info.dli_sname, twin) == 0) {                                            \
            printf("%s calls the library's %s: write this TODO yourself (the library's "  \
                   "version is there to compare with once your checks pass)\n", twin, #name); \
            fflush(stdout);                                                                 \
            _exit(CHECK_FAIL);                                                              \
        }                                                                                   \
        return __real_##name args;                                                          \
    }
WRAP_TWIN(TpRange, tp_shard, "lesson_shard", (int n, int t, int r), (n, t, r))
WRAP_TWIN(void, tp_qkv_rows, "lesson_qkv_rows", (int D, int t, int r, int *rows), (D, t, r, rows))
WRAP_TWIN(void, tp_f, "lesson_f", (TensorParallel *tp, Tensor *x, BlockPass p), (tp, x, p))
WRAP_TWIN(void, tp_g, "lesson_g", (TensorParallel *tp, Tensor *x, BlockPass p), (tp, x, p))
WRAP_TWIN(void, tp_row_linear_forward, "lesson_row_linear_forward",
          (TensorParallel *tp, const LayerOps *o, Tensor *out, const Tensor *in, const Tensor *w, const Tensor *b),
          (tp, o, out, in, w, b))
WRAP_TWIN(float, tp_vocab_cross_entropy, "lesson_vocab_cross_entropy",
          (TensorParallel *tp, Tensor *d, const Tensor *z, const int *y), (tp, d, z, y))
WRAP_TWIN(int64_t, tensor_parallel_param_count, "lesson_param_count",
          (const TransformerConfig *c, int t, int first, int last), (c, t, first, last))
WRAP_TWIN(double, tensor_parallel_bytes, "lesson_tensor_bytes",
          (const TransformerConfig *c, int64_t rows, int t, int first, int last), (c, rows, t, first, last))

/* ================================================================ the ranks' side */

/* A rank that found a mistake says so and ends the job at once: the other ranks would
 * otherwise wait in a collective until their timeout and report a silent rank. */
#define FAIL(...)              \
    do {                       \
        say(false, __VA_ARGS__); \
        fflush(stdout);        \
        _exit(1);              \
    } while (0)

/* A model the worker's group of 2 or 3 ranks can cut: 6 heads, 12 wide, 41 words (padded
 * to 42 on both). */
static TransformerConfig worker_config(void) {
    return (TransformerConfig){.vocab = 41, .d_model = 12, .heads = 6, .d_ff = 12, .layers = 1,
                               .max_len = 16, .dropout = 0.0f};
}

/* The worker's group: the job's ranks, the library's parts in the table. */
static void worker_tp(TensorParallel *tp, const TransformerConfig *c) {
    tensor_parallel_init(tp, library_dist(), c);
}

/* Small integers over 4: exact in float, any order of adding gives the same sum. */
static float value_of(int rank, int64_t i) { return (float)((rank + 1) * (i % 13)) * 0.25f; }

/* TODO 9.2: f and g, each pass, on every rank's own values. */
static void worker_conjugate(void) {
    const TransformerConfig c = worker_config();
    TensorParallel tp;
    worker_tp(&tp, &c);
    const int t = tp.t, r = tp.rank, n = 37;
    Tensor x = tensor_zeros(1, n);
    const char *names[2] = {"f", "g"};
    void (*fns[2])(TensorParallel *, Tensor *, BlockPass) = {lesson_f, lesson_g};
    for (int which = 0; which < 2; which++)
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < n; i++) x.data[i] = value_of(r, i);
            fns[which](&tp, &x, (BlockPass)pass);
            const bool reduce = (which == 0) == (pass == BLOCK_BACKWARD); /* f back, g forward */
            for (int i = 0; i < n; i++) {
                float want = value_of(r, i);
                if (reduce) {
                    want = 0.0f;
                    for (int q = 0; q < t; q++) want += value_of(q, i);
                }
                if (x.data[i] == want) continue;
                const char *pass_name = pass == BLOCK_FORWARD ? "forward" : "backward";
                if (!reduce && x.data[i] != value_of(r, i))
                    FAIL("%s's %s changed x[%d] from %g to %g: it is the identity there (%s)", names[which],
                         pass_name, i, (double)value_of(r, i), (double)x.data[i],
                         which == 0 ? "the column-parallel part multiplies the whole x; only its gradient needs the sum"
                                    : "the gradient of a sum reaches every summand unchanged");
                if (reduce && x.data[i] == value_of(r, i))
                    FAIL("%s's %s left x unchanged: it must all-reduce (DIST_SUM) over tp->group (%s)",
                         names[which], pass_name,
                         which == 0 ? "each rank's rows of W gave only its share of dL/dx"
                                    : "each rank holds a partial sum of the output");
                if (reduce && fabsf(x.data[i] * (float)t - want) < 1e-6f * fabsf(want))
                    FAIL("%s's %s gave the average of the ranks' x (%g), not the sum (%g): DIST_SUM, "
                         "not DIST_AVG: the whole is the sum of the shares", names[which], pass_name,
                         (double)x.data[i], (double)want);
                FAIL("%s's %s: x[%d] = %g, expected %g", names[which], pass_name, i,
                     (double)x.data[i], (double)want);
            }
        }
    tensor_free(&x);
    tensor_parallel_free(&tp);
    say(true, "f and g on %d ranks", t);
}

/* TODO 9.3: the row-parallel linear against the unsplit one. */
static void worker_row_linear(void) {
    enum { N = 5, K = 12, OUT = 12 };
    const TransformerConfig c = worker_config();
    TensorParallel tp;
    worker_tp(&tp, &c);
    const int t = tp.t, r = tp.rank, kl = K / t;
    Rng rng;
    rng_seed(&rng, 4, 0); /* the same on every rank */
    Tensor x = tensor_zeros(2, N, K), w = tensor_zeros(2, OUT, K), b = tensor_zeros(1, OUT);
    for (int64_t i = 0; i < x.size; i++) x.data[i] = rng_uniform_range(&rng, -1, 1);
    for (int64_t i = 0; i < w.size; i++) w.data[i] = rng_uniform_range(&rng, -1, 1);
    for (int64_t i = 0; i < b.size; i++) b.data[i] = rng_uniform_range(&rng, 1, 2);
    Tensor want = tensor_zeros(2, N, OUT), got = tensor_zeros(2, N, OUT);
    Tensor xr = tensor_zeros(2, N, kl), wr = tensor_zeros(2, OUT, kl);
    const LayerOps *o = layer_ops(DEVICE_CPU);
    o->linear_forward(&want, &x, &w, &b);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < kl; k++) xr.data[n * kl + k] = x.data[n * K + r * kl + k];
    for (int i = 0; i < OUT; i++)
        for (int k = 0; k < kl; k++) wr.data[i * kl + k] = w.data[i * K + r * kl + k];
    lesson_row_linear_forward(&tp, o, &got, &xr, &wr, &b);
    double worst = 0, bias_off = 0;
    for (int n = 0; n < N; n++)
        for (int j = 0; j < OUT; j++) {
            const double d = got.data[n * OUT + j] - want.data[n * OUT + j];
            worst = fmax(worst, fabs(d));
            bias_off += d / b.data[j] / (N * OUT); /* how many biases too many, on average */
        }
    /* this rank's own product (its bias share as the solution adds it): what out holds
     * when nothing sums the ranks' partial products */
    Tensor own = tensor_zeros(2, N, OUT), none = tensor_zeros(1, OUT);
    o->linear_forward(&own, &xr, &wr, r == 0 ? &b : &none);
    double from_own = 0, from_own_nb = 0;
    for (int64_t i = 0; i < own.size; i++) {
        from_own = fmax(from_own, fabs(got.data[i] - own.data[i]));
        from_own_nb = fmax(from_own_nb, fabs(got.data[i] - (own.data[i] - (r == 0 ? b.data[i % OUT] : 0))));
    }
    tensor_free(&own), tensor_free(&none);
    double worsts[8] = {0}; /* every rank's: a bias that only rank 0's out has */
    dist_all_gather_double(tp.group, worst, worsts);
    if (worst > 1e-5) {
        if (from_own <= 1e-6 || from_own_nb <= 1e-6)
            FAIL("off by %g from the unsplit layer: out holds only this rank's own partial "
                 "product; the group's sum is missing: tp->ops.g(tp, out, BLOCK_FORWARD) after the "
                 "linear (g's forward is the all-reduce; with BLOCK_BACKWARD it does nothing)", worst);
        if (fabs(bias_off - (t - 1)) < 0.01)
            FAIL("off by %g: every rank added the bias before the sum, so it counts %d times; add "
                 "it on rank 0 only (tp->rank == 0), zeros elsewhere", worst, t);
        if (fabs(bias_off + 1) < 0.01 && r > 0 && worsts[0] <= 1e-5)
            FAIL("off by %g, by the bias exactly, while rank 0's output is right: the bias was added "
                 "after g, on rank 0 only, so no other rank has it; add it before g, in rank 0's "
                 "partial product (o->linear_forward with the bias on rank 0, zeros elsewhere), and "
                 "the sum brings it to every rank", worst);
        if (fabs(bias_off + 1) < 0.01)
            FAIL("off by %g, by the bias exactly: it is added by no rank; rank 0 adds it", worst);
        FAIL("off by %g from the unsplit layer: out must be the group's sum of the partial "
             "products (tp->ops.g(tp, out, BLOCK_FORWARD) after the linear)", worst);
    }
    Tensor *all[] = {&x, &w, &b, &want, &got, &xr, &wr};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
    tensor_parallel_free(&tp);
    say(true, "row-parallel linear on %d ranks, off by %g at most", t, worst);
}

typedef struct {
    bool ok;
    float loss, want, none;   /* yours, the unsplit one's, the unsplit one without the
                               * target's term (the mean of log S) */
    double worst, pad;        /* the gradient's largest error, the padding's largest */
    double ratio_lo, ratio_hi; /* yours over the unsplit one where that is not small */
    double worst_target;      /* the gradient's largest error at the targets' columns */
    double firsts_dropped;    /* the unsplit loss without the target's term in the rows
                               * whose target is a rank's first word (k == 0 there), as
                               * when no rank counts it */
    bool first_uncounted;     /* this rank holds such targets, and at each its gradient
                               * lacks the -1/N: no rank counted it there either */
    bool added;               /* the gradient is the right one plus what dlogits held */
    char what[256];
} VocabCase;

/* Where the targets are: AT_EDGES puts rows 0 .. t-2's on the first word of ranks 1 ..
 * t-1 (the word one past the last of the rank before: `k <= valid` counts it twice);
 * INSIDE moves every target off a rank's first word. */
typedef enum { AT_EDGES, INSIDE } TargetsAt;

/* The larger of two errors; a NaN stays (fmax would drop it, and a NaN gradient pass). */
static double worse(double a, double b) { return isnan(a) || isnan(b) ? NAN : fmax(a, b); }

/* One case of TODO 9.4: logits [N, 42] whole (the same on every rank), each rank its
 * words; the loss and the gradient against the unsplit cross-entropy of the first V
 * columns. pad: the padding's logits (they must take no part). */
static VocabCase vocab_case(TensorParallel *tp, int V, float offset, float pad, bool same_max,
                            TargetsAt at) {
    enum { N = 6, VP = 42 };
    const int vl = VP / tp->t, first = tp->rank * vl;
    Rng rng;
    rng_seed(&rng, 8, (uint64_t)V);
    Tensor full = tensor_zeros(2, N, VP), mine = tensor_zeros(2, N, vl), dmine = tensor_zeros(2, N, vl);
    Tensor whole = tensor_zeros(2, N, V), dwhole = tensor_zeros(2, N, V);
    int targets[N];
    for (int n = 0; n < N; n++) {
        for (int j = 0; j < VP; j++)
            full.data[n * VP + j] = j >= V ? pad : offset + rng_uniform_range(&rng, -3, 3);
        targets[n] = (int)rng_below(&rng, (uint64_t)V);
        if (at == AT_EDGES && n + 1 < tp->t) targets[n] = (n + 1) * vl;
        if (at == INSIDE && targets[n] % vl == 0) targets[n]++;
        if (same_max) /* every rank's largest logit the same: a rank's own max is the row's */
            for (int q = 0; q < tp->t; q++) full.data[n * VP + q * vl] = offset + 4.0f;
        for (int j = 0; j < V; j++) whole.data[n * V + j] = full.data[n * VP + j];
        for (int j = 0; j < vl; j++) mine.data[n * vl + j] = full.data[n * VP + first + j];
    }
    tp->vocab = V, tp->vocab_padded = VP, tp->words = (TpRange){first, vl};
    const float want = softmax_cross_entropy(&dwhole, &whole, targets);
    /* the loss alone first (evaluation: dlogits NULL), then with its gradient */
    const float alone = lesson_vocab_cross_entropy(tp, NULL, &mine, targets);
    tensor_fill(&dmine, 7.0f); /* written, not added to */
    const float got = lesson_vocab_cross_entropy(tp, &dmine, &mine, targets);
    double losses[8] = {0}; /* every rank's: they must agree */
    dist_all_gather_double(tp->group, got, losses);
    for (int q = 1; q < tp->t; q++)
        if (losses[q] != losses[0])
            FAIL("rank %d returned the loss %.7g, rank 0 %.7g: every rank returns the same mean, "
                 "from the all-reduced sums (the program's ranks would train different steps)", q,
                 losses[q], losses[0]);
    if (alone != got)
        FAIL("the loss alone (dlogits NULL, as at evaluation) is %.7g, with its gradient %.7g: "
             "they must be the same number", (double)alone, (double)got);
    double dropped = want, none = 0, worst = 0, pad_grad = 0, ratio_lo = INFINITY, ratio_hi = -INFINITY, worst_target = 0;
    bool added = true;
    int firsts = 0, uncounted = 0; /* targets on this rank's first word; those lacking -1/N */
    for (int n = 0; n < N; n++) {
        double m = -INFINITY, sum = 0;
        for (int j = 0; j < V; j++) m = fmax(m, whole.data[n * V + j]);
        for (int j = 0; j < V; j++) sum += exp(whole.data[n * V + j] - m);
        none += log(sum) / N;
        /* the row's term is log S - (z_target - m): without its target, log S alone */
        if (targets[n] % vl == 0) dropped += (whole.data[n * V + targets[n]] - m) / N;
        for (int j = 0; j < vl; j++) {
            const float d = dmine.data[n * vl + j];
            if (first + j >= V) {
                pad_grad = worse(pad_grad, fabs(d));
                continue;
            }
            const float w = dwhole.data[n * V + first + j];
            if (first + j == targets[n]) {
                worst_target = worse(worst_target, fabs(d - w));
                if (j == 0) firsts++, uncounted += fabs(d - w - 1.0 / N) <= 1e-6;
            } else {
                worst = worse(worst, fabs(d - w));
            }
            added &= fabsf(d - (w + 7.0f)) <= 1e-5f;
            if (fabsf(w) > 1e-3f) ratio_lo = fmin(ratio_lo, d / w), ratio_hi = fmax(ratio_hi, d / w);
        }
    }
    VocabCase v = {.loss = got, .want = want, .none = (float)none, .worst = worse(worst, worst_target),
                   .pad = pad_grad, .ratio_lo = ratio_lo, .ratio_hi = ratio_hi, .worst_target = worst_target,
                   .added = added, .firsts_dropped = dropped, .first_uncounted = firsts > 0 && uncounted == firsts};
    v.ok = fabsf(got - want) <= 1e-5f * fabsf(want) + 1e-6f && v.worst <= 1e-6 && v.pad == 0;
    snprintf(v.what, sizeof v.what, "loss %.7g (unsplit %.7g), gradient off by %g", (double)got,
             (double)want, v.worst);
    if (V < VP)
        snprintf(v.what + strlen(v.what), sizeof v.what - strlen(v.what),
                 ", the padding's gradient up to %g", pad_grad);
    Tensor *all[] = {&full, &mine, &dmine, &whole, &dwhole};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
    return v;
}

/* A loss right unless a target is a rank's first word: the test of which rank holds it is
 * off by one there. No rank counted it (`k > 0`): the loss is the unsplit one without
 * those targets' terms, or the gradient at such a target lacks its -1/N. Else the rank
 * before counted it too (`k <= valid`, reading one column past its own). The sign of the
 * loss's error cannot tell the two apart: both lower it here. */
static const char *edge_words(const VocabCase *v) {
    static char said[400];
    const bool loss = fabs(v->loss - v->firsts_dropped) <= 1e-5 * fabs(v->firsts_dropped);
    if (!loss && !v->first_uncounted)
        return "the rank before it counted that target too, at k = targets[n] - tp->words.start == "
               "valid: a rank holds the target when 0 <= k < valid, not k <= valid";
    snprintf(said, sizeof said, "no rank counted that target, at k = targets[n] - tp->words.start "
             "== 0 on its rank (%s): a rank holds the target when 0 <= k < valid, k == 0 included",
             loss && v->first_uncounted ? "the loss lacks its term, and its gradient there lacks the -1/N"
             : loss ? "the loss lacks its term" : "its gradient there lacks the -1/N");
    return said;
}

/* The group's verdict on one case: every rank runs the same cases (collectives), so a
 * rank whose own part is right takes part in the others' probes before it stops. */
static bool group_ok(TensorParallel *tp, bool ok) { return dist_sum_double(tp->group, ok ? 0.0 : 1.0) == 0.0; }

static void worker_vocab_loss(void) {
    const TransformerConfig c = worker_config();
    TensorParallel tp;
    worker_tp(&tp, &c);
    /* plain: 42 words, none padding, logits near 0 */
    VocabCase v = vocab_case(&tp, 42, 0.0f, 0.0f, false, AT_EDGES);
    if (!group_ok(&tp, v.ok)) {
        /* the probes, on every rank: targets off the ranks' edges; every rank's largest logit the same */
        const bool inside = group_ok(&tp, vocab_case(&tp, 42, 0.0f, 0.0f, false, INSIDE).ok);
        const bool same_max = group_ok(&tp, vocab_case(&tp, 42, 0.0f, 0.0f, true, AT_EDGES).ok);
        if (v.ok)
            FAIL("42 words: this rank's loss and gradient are right (%s); another rank's are not: its "
                 "line says why", v.what);
        const bool loss_ok = fabsf(v.loss - v.want) <= 1e-5f * fabsf(v.want);
        if (v.added)
            FAIL("42 words: %s: the gradient is the right one plus what dlogits held before "
                 "(7): write it (=), do not add to it", v.what);
        if (isinf(v.loss) && v.loss < 0)
            FAIL("42 words: %s: every exp(z - m) underflowed to 0, so m is above every logit: the "
                 "maxima combined with DIST_SUM (t times too large), not DIST_MAX?", v.what);
        if (inside)
            FAIL("42 words: %s, where a target is the first word of rank 1 (or 2); right where no "
                 "target is on a rank's first word: %s", v.what, edge_words(&v));
        if (fabsf(v.loss - 6.0f * v.want) <= 1e-4f * fabsf(v.want))
            FAIL("42 words: %s: the sum over the 6 rows, not the mean: divide the loss by N", v.what);
        if (loss_ok && fabs(v.ratio_lo - 6.0) < 1e-3 && fabs(v.ratio_hi - 6.0) < 1e-3)
            FAIL("42 words: %s: the gradient is N = 6 times too large, at every column: divide by "
                 "N, the loss is a mean over the rows", v.what);
        if (!loss_ok && v.worst <= 1e-6 && fabsf(v.loss - v.none) <= 1e-5f * fabsf(v.none))
            FAIL("42 words: %s: the loss lacks the target's term: the rank that holds the target "
                 "(0 <= targets[n] - tp->words.start < valid) adds z_target - m, the others 0", v.what);
        if (!loss_ok && v.worst <= 1e-6)
            FAIL("42 words: %s; the gradient is right: the loss's target term is not: only the rank "
                 "that holds the target adds z[targets[n] - tp->words.start] - m, once", v.what);
        if (v.worst_target > 1e-6 && fabs(v.worst - v.worst_target) < 1e-12 && loss_ok)
            FAIL("42 words: %s, only at the targets' columns: subtract 1/N at this rank's column "
                 "of the target, targets[n] - tp->words.start, where 0 <= it < valid", v.what);
        if (same_max)
            FAIL("42 words: %s. With every rank's largest logit the same it is right: each rank "
                 "subtracted its own maximum; all-reduce the maxima first (DIST_MAX), so that all "
                 "subtract the row's", v.what);
        if (v.worst_target > 1e-6 && !loss_ok)
            FAIL("42 words: %s, the loss and the targets' columns both: is the target's column on "
                 "this rank targets[n] - tp->words.start (and only where 0 <= it < valid)?", v.what);
        FAIL("42 words, no padding: %s (the three steps: the row's max, the sum of exp, the "
             "target's logit from the rank that holds it)", v.what);
    }
    /* logits near 150: exp overflows unless the maximum comes off first */
    v = vocab_case(&tp, 42, 150.0f, 0.0f, false, AT_EDGES);
    if (!group_ok(&tp, v.ok)) {
        if (v.ok)
            FAIL("logits near 150: this rank's loss and gradient are right (%s); another rank's are "
                 "not: its line says why", v.what);
        if (isinf(v.loss) && v.loss < 0)
            FAIL("logits near 150: %s: every exp(z - m) underflowed to 0, so m is far above every "
                 "logit: the maxima combined with DIST_SUM (t times 150), not DIST_MAX? (near 0 that "
                 "went unnoticed: any m gives the same log-sum-exp)", v.what);
        FAIL("logits near 150: %s. exp(150) overflows a float: subtract the row's maximum before "
             "exp", v.what);
    }
    /* 41 words padded to 42, the padding's logit 50: it must take no part. In the sum it
     * shows; in the max alone it does not (log-sum-exp is the same whatever m, as long as
     * exp does not underflow): 200, far above the words, shows that */
    v = vocab_case(&tp, 41, 0.0f, 50.0f, false, AT_EDGES);
    if (!group_ok(&tp, v.ok)) {
        const bool inside = group_ok(&tp, vocab_case(&tp, 41, 0.0f, 50.0f, false, INSIDE).ok);
        /* at 200 the sum alone overflows (exp(197) is inf), the max and the sum together
         * give a finite loss near 200 */
        const VocabCase high = vocab_case(&tp, 41, 0.0f, 200.0f, false, AT_EDGES);
        if (v.ok)
            FAIL("41 words padded to 42: this rank's loss and gradient are right (%s); another "
                 "rank's are not: its line says why", v.what);
        if (inside)
            FAIL("41 words padded to 42: %s, where a target is the first word of rank 1 (or 2); "
                 "right where none is: %s", v.what, edge_words(&v));
        if (v.pad != 0 && v.worst <= 1e-6 && fabsf(v.loss - v.want) <= 1e-5f * fabsf(v.want))
            FAIL("41 words padded to 42: %s. The padding columns (at or past tp->vocab) get gradient 0", v.what);
        const char *pad_too = v.pad != 0 ? "; and they get gradient 0" : "";
        if (isinf(high.loss) && high.loss > 0)
            FAIL("41 words padded to 42, the padding's logit 50: %s. The padding takes part in the "
                 "sum of exponentials (at 200 the loss is inf: exp(200 - m) overflows): sum over "
                 "this rank's valid columns only, those before tp->vocab%s", v.what, pad_too);
        FAIL("41 words padded to 42, the padding's logit 50: %s. The padding takes part in the "
             "max and the sum (at 200: loss %.7g, near the padding's logit): leave the columns "
             "at or past tp->vocab out of both%s", v.what, (double)high.loss, pad_too);
    }
    v = vocab_case(&tp, 41, 0.0f, 200.0f, false, AT_EDGES);
    if (!group_ok(&tp, v.ok)) {
        if (v.ok)
            FAIL("41 words padded to 42, the padding's logit 200: this rank's loss and gradient are "
                 "right (%s); another rank's are not: its line says why", v.what);
        if (isinf(v.loss) || isnan(v.loss))
            FAIL("41 words padded to 42, the padding's logit 200 (the words' near 0): %s. The "
                 "padding takes part in the max: m = 200, so exp(z - m) of every word underflows "
                 "to 0 and log S is -inf; take the max over the columns before tp->vocab only (at "
                 "50 nothing showed: log-sum-exp is the same for any m that does not underflow)", v.what);
        FAIL("41 words padded to 42, the padding's logit 200 (the words' near 0): %s. The padding "
             "is no word: leave the columns at or past tp->vocab out of the max and the sum, and "
             "give them gradient 0", v.what);
    }
    const int t = tp.t;
    tensor_parallel_free(&tp);
    say(true, "vocabulary-parallel cross-entropy on %d ranks", t);
}

static bool worker(int argc, char **argv) {
    (void)argc;
    if (strcmp(argv[2], "conjugate") == 0) worker_conjugate();
    else if (strcmp(argv[2], "row_linear") == 0) worker_row_linear();
    else if (strcmp(argv[2], "vocab_loss") == 0) worker_vocab_loss();
    else return false;
    return true;
}

/* ================================================================ the checks */

/* TODO 9.1: the rows of n, t = 1-8, against the definition. */
static int check_shard(void) {
    for (int t = 1; t <= 8; t++)
        for (int n = t; n <= 64 * t; n += t)
            for (int r = 0; r < t; r++) {
                const TpRange got = lesson_shard(n, t, r), want = {r * (n / t), n / t};
                if (got.start == want.start && got.count == want.count) continue;
                printf("%d rows over %d ranks, rank %d: start %d, count %d; expected %d, %d\n", n,
                       t, r, got.start, got.count, want.start, want.count);
                if (got.count == n) printf("hint: each rank holds n / t rows, not all n\n");
                else if (got.start == r) printf("hint: rank r starts at r x count, not at row r\n");
                else if (got.start == r * n) printf("hint: rank r starts at r x (n / t): the rows before it are the other ranks'\n");
                return CHECK_FAIL;
            }
    return CHECK_PASS;
}

/* TODO 9.1, part 2: the q|k|v rows, D = 4-48, t dividing D; the last rank first (rank
 * 0's rows fit more than one mistake). */
static int check_qkv_rows(void) {
    int got[3 * 48], want[3 * 48];
    for (int D = 4; D <= 48; D += 4)
        for (int t = 1; t <= 4; t++) {
            if (D % t) continue;
            const int per = D / t;
            for (int r = t - 1; r >= 0; r--) {
                for (int i = 0; i < 3 * per; i++) got[i] = -1;
                lesson_qkv_rows(D, t, r, got);
                for (int p = 0; p < 3; p++)
                    for (int i = 0; i < per; i++) want[p * per + i] = p * D + r * per + i;
                if (memcmp(got, want, sizeof(int) * 3 * (size_t)per) == 0) continue;
                printf("D = %d over %d rank%s, rank %d: rows", D, t, t == 1 ? "" : "s", r);
                for (int i = 0; i < 3 * per && i < 12; i++) printf(" %d", got[i]);
                printf("%s; expected", 3 * per > 12 ? " ..." : "");
                for (int i = 0; i < 3 * per && i < 12; i++) printf(" %d", want[i]);
                printf("%s\n", 3 * per > 12 ? " ..." : "");
                bool after = true, block = true, same_rows = true, dealt = true; /* the known mistakes */
                for (int i = 0; i < 3 * per; i++) {
                    after &= got[i] == r * per + i;
                    block &= got[i] == r * 3 * per + i;
                    dealt &= got[i] == i / per * D + i % per * t + r;
                    bool found = false;
                    for (int k = 0; k < 3 * per; k++) found |= got[k] == want[i];
                    same_rows &= found;
                }
                if (dealt && t > 1)
                    printf("hint: rows dealt round-robin (r, r + t, r + 2t, ...) give every rank a "
                           "slice of every head; a rank holds whole heads, D/t consecutive rows of "
                           "each block: rows r x D/t .. (r+1) x D/t - 1 of q, the same of k and v\n");
                else if (after && t > 1)
                    printf("hint: q, k and v are three blocks of D rows each: this rank's keys start "
                           "at row D + r x D/t, not right after its queries (and its values at 2D + r x D/t)\n");
                else if (block && t > 1)
                    printf("hint: that is a contiguous third of in_proj_weight, which mixes queries "
                           "and keys of other heads: take D/t rows from each of the q, k and v blocks\n");
                else if (same_rows)
                    printf("hint: the right rows in another order: the attention layer reads a fused "
                           "q|k|v, all of this rank's queries first, then all its keys, then all its "
                           "values (not q, k, v of one head side by side)\n");
                return CHECK_FAIL;
            }
        }
    return CHECK_PASS;
}

static int check_conjugate(void) { return on_2_and_3("conjugate", "f and g", 60); }
static int check_row_linear(void) { return on_2_and_3("row_linear", "the row-parallel linear", 60); }
static int check_vocab_loss(void) { return on_2_and_3("vocab_loss", "the vocabulary-parallel loss", 90); }

/* TODO 9.5 against the library's counts of the same shapes. */
static int check_plan(void) {
    static const TransformerConfig configs[] = {
        {.vocab = 28782, .d_model = 200, .heads = 2, .d_ff = 200, .layers = 2, .max_len = 64},
        {.vocab = 28782, .d_model = 1024, .heads = 4, .d_ff = 1024, .layers = 3, .max_len = 64},
        {.vocab = 50257, .d_model = 48, .heads = 12, .d_ff = 96, .layers = 5, .max_len = 64}};
    for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++) {
        const TransformerConfig *c = &configs[k];
        const int blocks = transformer_block_count(c);
        for (int t = 1; t <= c->heads; t++) {
            if (c->heads % t || c->d_ff % t) continue;
            for (int first = 0; first < blocks; first++)
                for (int last = first + 1; last <= blocks; last++) {
                    const int64_t got = lesson_param_count(c, t, first, last);
                    const int64_t want = tensor_parallel_param_count(c, t, first, last);
                    const double gb = lesson_tensor_bytes(c, 700, t, first, last);
                    const double wb = tensor_parallel_bytes(c, 700, t, first, last);
                    if (got == want && fabs(gb - wb) <= 1e-9 * wb) continue;
                    printf("%d words, %d wide, %d layers, t = %d, blocks [%d, %d): %lld parameters, "
                           "%.0f bytes for 700 tokens; the shapes give %lld and %.0f\n", c->vocab,
                           c->d_model, c->layers, t, first, last, (long long)got, gb,
                           (long long)want, wb);
                    const bool inclusive = last < blocks &&
                        (got != want ? got == tensor_parallel_param_count(c, t, first, last + 1)
                                     : fabs(gb - tensor_parallel_bytes(c, 700, t, first, last + 1)) <= 1e-9 * gb);
                    if (inclusive) {
                        printf("hint: that is blocks [%d, %d], block %d included: a stage holds blocks "
                               "first .. last - 1 (for k = first; k < last), as a C range\n", first,
                               last, last);
                    } else if (got != want) {
                        const int64_t Vp = (c->vocab + t - 1) / t * t;
                        if (first == 0 && last == 1 && got == (int64_t)c->vocab / t * c->d_model)
                            printf("hint: the vocabulary is padded to a multiple of t: Vp / t rows, "
                                   "Vp = %lld\n", (long long)Vp);
                        else if (first > 0 && got == tensor_parallel_param_count(c, t, 0, last))
                            printf("hint: count blocks [first, last) only: a pipeline stage holds "
                                   "those; the ones before first are another stage's\n");
                        else if (last == blocks && want - got == Vp / t)
                            printf("hint: the decoder has a bias too: Vp/t of them, cut with its rows\n");
                        else if (got < want)
                            printf("hint: some parameters are whole on every rank: the out-projection's "
                                   "and linear2's biases (D each) and both layer norms (2 x 2D)\n");
                        else printf("hint: the in-projection, out-projection, linear1 and linear2 "
                                    "weights and the in-projection's and linear1's biases are cut t ways\n");
                    } else if (t > 1 && fabs(gb * t / (2.0 * (t - 1)) - wb * t / (2.0 * (t - 1))) > 0 &&
                               fabs(gb - wb * t / (2.0 * (t - 1))) < 1e-6 * gb) {
                        printf("hint: an all-reduce of B bytes sends 2 (t - 1) / t x B (a reduce-scatter "
                               "and an all-gather), not B\n");
                    } else {
                        printf("hint: a layer all-reduces [rows, D] 4 times (2 forward, 2 backward), "
                               "the embedding and the decoder once each, the loss [rows] and [2 rows]\n");
                    }
                    return CHECK_FAIL;
                }
        }
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- the program */

static const char *text_file(void) { return "/usr/share/common-licenses/GPL-3"; }

/* Runs the program on `ranks` ranks with the layout options, writing metrics into dir;
 * reads the per-step losses of rank 0 into loss[0..steps) and checks every rank's
 * digest line is the same. */
static bool run_program(int ranks, const char *const *layout, const char *dir, float *loss,
                        int steps, char *digest, size_t cap) {
    char metrics[1024];
    snprintf(metrics, sizeof metrics, "%s/m%d.jsonl", dir, ranks);
    const char *args[48] = {"main", "--dataset", "text", "--data", text_file(), "--d-model", "24",
                            "--heads", "2", "--d-hid", "32", "--layers", "2", "--bptt", "8",
                            "--batch-size", "4", "--max-steps", "3", "--dropout", "0.1", "--lr",
                            "0.5", "--valid-batches", "1", "--metrics", metrics};
    int k = 27;
    for (int i = 0; layout[i]; i++) args[k++] = layout[i];
    args[k] = NULL;
    CommandResult r;
    run_ranks(ranks, args, 180, &r);
    char end[96];
    if (r.timed_out || !WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
        printf("the program on %d rank%s (", ranks, ranks == 1 ? "" : "s");
        for (int i = 0; layout[i]; i++) printf("%s%s", i ? " " : "", layout[i]);
        printf("%s) ended: %s. It said:\n", layout[0] ? "" : "no layout options",
               describe_end(&r, end, sizeof end));
        print_job_output(&r);
        return false;
    }
    if (strstr(r.out, "<- not what the shapes give")) {
        printf("on %d ranks the parameters a rank holds are not your count (TODO 9.5):\n", ranks);
        print_ranks_output(r.out);
        return false;
    }
    digest[0] = '\0';
    for (int rank = 0; rank < ranks; rank++) {
        char key[64], got[64] = "";
        snprintf(key, sizeof key, "rank %d parameter digest: ", rank);
        const char *at = strstr(r.out, key);
        if (at) sscanf(at + strlen(key), "%63s", got);
        if (!*got) {
            printf("on %d ranks: no line \"%s...\"\n", ranks, key);
            return false;
        }
        if (!*digest) snprintf(digest, cap, "%s", got);
        else if (strcmp(got, digest) != 0) {
            printf("on %d ranks: rank %d's digest of the whole model %s, rank 0's %s: every rank "
                   "gathers the same model\n", ranks, rank, got, digest);
            return false;
        }
    }
    FILE *f = fopen(metrics, "r");
    int n = 0;
    char line[4096];
    while (f && n < steps && fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "\"loss\":");
        if (at) loss[n++] = strtof(at + 7, NULL);
    }
    if (f) fclose(f);
    if (n != steps) {
        printf("on %d ranks: %d losses in %s, expected %d\n", ranks, n, metrics, steps);
        return false;
    }
    return true;
}

/* --tp 2 on 2 ranks, and 2 stages x 2 tensor ranks on 4, take 1 rank's steps. */
static int check_program(void) {
    REQUIRE_RANKS();
    if (access(text_file(), R_OK) != 0) {
        printf("needs a text: %s is not there\n", text_file());
        return CHECK_SKIP;
    }
    char dir[] = "/tmp/grade09-XXXXXX";
    if (!mkdtemp(dir)) return CHECK_FAIL;
    float base[3], other[3];
    char digest[64];
    const char *one[] = {NULL}, *two[] = {"--tp", "2", NULL}, *four[] = {"--tp", "2", "--pp", "2", "--micro", "1", NULL};
    bool ok = run_program(1, one, dir, base, 3, digest, sizeof digest);
    const char *const *layouts[] = {two, four};
    const int ranks[] = {2, 4};
    for (int k = 0; ok && k < 2; k++) {
        ok = run_program(ranks[k], layouts[k], dir, other, 3, digest, sizeof digest);
        for (int s = 0; ok && s < 3; s++)
            if (fabsf(other[s] - base[s]) > 1e-5f * fabsf(base[s])) {
                printf("step %d: loss %.7g on %d ranks (%s), %.7g on 1 rank: a layout must take "
                       "the unsplit model's steps (to 1e-5)\n", s + 1, (double)other[s], ranks[k],
                       k ? "--tp 2 --pp 2 --micro 1" : "--tp 2", (double)base[s]);
                if (s == 0) printf("hint: the first step differs: the forward, or the loss (9.1-9.4)\n");
                else printf("hint: the first step agrees, a later one not: the gradients (f's backward, 9.2)\n");
                ok = false;
            }
    }
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    if (system(rm) != 0) printf("note: could not remove %s\n", dir);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void checks(void) {
    /* a crash's lesson words only where they can be the cause: the checks that run TODO 9.4 */
    static const char *const null_dlogits = "dlogits may be NULL (the loss alone, at evaluation): write the gradient only when it is not";
    check_needs("TODO 9.1-9.5", "9.1-9.5");
    check_signal_hint(SIGSEGV, NULL);
    check_run("TODO 9.1", "which rows a rank holds: n / t each, in rank order (t = 1-8)", check_shard, 10);
    check_run("TODO 9.1", "the q|k|v rows of a rank's heads: its queries, keys, values (D = 4-48)", check_qkv_rows, 10);
    check_run("TODO 9.2", "f: identity forward, all-reduce backward; g: the reverse (2 and 3 ranks)", check_conjugate, 120);
    check_run("TODO 9.3", "row-parallel linear = the unsplit layer, its bias once (2 and 3 ranks)", check_row_linear, 120);
    check_signal_hint(SIGSEGV, null_dlogits);
    check_run("TODO 9.4", "vocabulary-parallel cross-entropy = the unsplit loss and gradient; large logits; padding (2 and 3 ranks)", check_vocab_loss, 180);
    check_signal_hint(SIGSEGV, NULL);
    check_run("TODO 9.5", "parameters per rank and tensor bytes per step: the counts from the shapes", check_plan, 10);
    check_signal_hint(SIGSEGV, null_dlogits);
    check_run("TODO 9.1-9.5", "the program: --tp 2 on 2 ranks and --tp 2 --pp 2 (one micro-batch) on 4 take 1 rank's 3 steps (dropout on)", check_program, 400);
}

int main(int argc, char **argv) {
    return ranks_main(argc, argv, "lesson 09: tensor parallel", checks, worker, lesson_main);
}
