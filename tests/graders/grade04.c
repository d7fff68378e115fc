/* Grader of lesson 04: one or more checks per TODO, each against the library's twin
 * (text_batchify, positional_table_fill, attention_forward/backward,
 * layernorm_forward/backward, a reference loop built from the library's pieces) or
 * finite differences, never against numbers typed in here; then the lesson's pieces
 * inside the real model, and a short run whose loss falls.
 * Run with `make check-lesson 4` (your code) or `make check-lesson 4 SOLUTION=1`. */
#include <math.h>
#include <signal.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "framework/check.h"
#include "framework/gradcheck.h"
#include "layers/attention.h"
#include "layers/layernorm.h"
#include "layers/positional.h"
#include "lesson.h"
#include "train/clip.h"
#include "train/loop.h"
#include "train/schedule.h"

/* ---------------------------------------------------------------- helpers */

/* Your TODOs must not call the library's versions of themselves (refuse_library.h). */
static bool lesson_function(const char *name) { return strncmp(name, "lesson_", 7) == 0; }
#include "graders/refuse_library.h"
WRAP_VOID(text_batchify, (const TokenStream *s, int b, const char *w, TextBatches *o), (s, b, w, o))
WRAP_VALUE(TextBatch, text_get_batch, (const TextBatches *b, int64_t i, int bptt), (b, i, bptt))
WRAP_VOID(positional_table_fill, (Tensor *t), (t))
WRAP_VOID(layernorm_forward, (Tensor *o, Tensor *m, Tensor *r, const Tensor *i, const Tensor *g,
                              const Tensor *b, float e), (o, m, r, i, g, b, e))
WRAP_VOID(layernorm_backward, (Tensor *di, Tensor *dg, Tensor *db, const Tensor *dout,
                               const Tensor *i, const Tensor *m, const Tensor *r, const Tensor *g),
          (di, dg, db, dout, i, m, r, g))
WRAP_VOID(attention_forward, (Tensor *c, Tensor *p, Tensor *d, const Tensor *q, float dp, bool t,
                              Rng *r), (c, p, d, q, dp, t, r))
WRAP_VOID(attention_backward, (Tensor *dq, Tensor *ds, const Tensor *dc, const Tensor *q,
                               const Tensor *p, const Tensor *d), (dq, ds, dc, q, p, d))

static Tensor random_tensor(uint64_t seed, int ndim, int a, int b, int c, int d, float scale) {
    Tensor t = ndim == 4 ? tensor_zeros(4, a, b, c, d) : ndim == 2 ? tensor_zeros(2, a, b)
                                                                   : tensor_zeros(1, a);
    fill_uniform(t.data, t.size, seed, -scale, scale);
    return t;
}

static Tensor copy_of(const Tensor *t) {
    Tensor c = tensor_zeros_like(t);
    tensor_copy(&c, t);
    return c;
}

/* Whether got is close to want everywhere (quietly). */
static bool all_close(const float *got, const float *want, int64_t n, float atol, float rtol) {
    for (int64_t i = 0; i < n; i++)
        if (!(fabsf(got[i] - want[i]) <= atol + rtol * fabsf(want[i]))) return false;
    return true;
}

static bool all_finite(const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

/* A token stream of count ids below V, from a seed. */
static TokenStream random_stream(int64_t count, int V, uint64_t seed) {
    TokenStream s = {.ids = xmalloc((size_t)count * sizeof(int)), .count = count, .lines = 1};
    Rng rng;
    rng_seed(&rng, seed, 0);
    for (int64_t i = 0; i < count; i++) s.ids[i] = (int)rng_below(&rng, (uint32_t)V);
    return s;
}

/* Models this small gain nothing from threads, and on a machine shared with other jobs
 * OpenMP's waiting threads can make them 10 times slower: the checks that train or take
 * finite differences use one (those that look for data races ask for two). */
static void quiet_threads(void) { omp_set_num_threads(1); }

/* ---------------------------------------------------------------- TODO 4.1 */

static int check_batchify(void) {
    Rng rng;
    rng_seed(&rng, 41, 0);
    for (int t = 0; t < 12; t++) {
        const int B = 1 + (int)rng_below(&rng, 9);
        const int64_t count = 2 * B + (int64_t)rng_below(&rng, 200); /* rarely a multiple of B */
        TokenStream s = random_stream(count, 1000, 100 + (uint64_t)t);
        TextBatches mine = {0}, ref = {0};
        lesson_batchify(&s, B, "train", &mine);
        text_batchify(&s, B, "train", &ref);
        if (!expect_true(mine.rows == ref.rows && mine.cols == ref.cols,
                         "%lld tokens in %d columns: your batchify gives [%lld, %d], expected [%lld, %d]"
                         "\nhint: rows = count / batch_size (integer division: the tail is dropped), "
                         "cols = batch_size", (long long)count, B, (long long)mine.rows, mine.cols,
                         (long long)ref.rows, ref.cols))
            return CHECK_FAIL;
        for (int64_t k = 0; k < ref.rows * ref.cols; k++)
            if (mine.data[k] != ref.data[k]) {
                const int64_t i = k / B, b = k % B;
                printf("%lld tokens, batch size %d: data[%lld][%lld] is %d, expected %d (token %lld "
                       "of the stream)\n", (long long)count, B, (long long)i, (long long)b,
                       mine.data[k], ref.data[k], (long long)(b * ref.rows + i));
                bool rowwise = true; /* filled row by row from the stream instead */
                for (int64_t j = 0; j < ref.rows * B && rowwise; j++) rowwise = mine.data[j] == s.ids[j];
                printf("hint: %s\n", rowwise
                           ? "you copied the stream row by row: column b must be the b-th contiguous "
                             "piece, data[i * B + b] = stream[b * rows + i]"
                           : "data[i * batch_size + b] = stream[b * rows + i]");
                return CHECK_FAIL;
            }
        text_batches_free(&ref);
    }
    return CHECK_PASS;
}

static int check_get_batch(void) {
    Rng rng;
    rng_seed(&rng, 42, 0);
    for (int t = 0; t < 10; t++) {
        const int B = 1 + (int)rng_below(&rng, 6), bptt = 1 + (int)rng_below(&rng, 9);
        TokenStream s = random_stream(2 * B + (int64_t)rng_below(&rng, 150), 500, 200 + (uint64_t)t);
        TextBatches d;
        text_batchify(&s, B, "train", &d);
        for (int64_t i = 0; i < d.rows - 1; i += bptt) {
            TextBatch mine = lesson_get_batch(&d, i, bptt), ref = text_get_batch(&d, i, bptt);
            char where[128];
            snprintf(where, sizeof where, "[%lld, %d] data, bptt %d, i = %lld", (long long)d.rows, B,
                     bptt, (long long)i);
            if (!expect_true(mine.seq_len == ref.seq_len && mine.cols == ref.cols,
                             "%s: seq_len %d and cols %d, expected %d and %d%s", where, mine.seq_len,
                             mine.cols, ref.seq_len, ref.cols,
                             mine.seq_len > ref.seq_len
                                 ? "\nhint: the last batch is shorter: seq_len = min(bptt, rows - 1 - i), "
                                   "the last row has no row after it for its target"
                                 : ""))
                return CHECK_FAIL;
            if (!mine.input || !mine.target) {
                printf("%s: input or target is NULL\n", where);
                return CHECK_FAIL;
            }
            for (int k = 0; k < ref.seq_len * ref.cols; k++)
                if (mine.input[k] != ref.input[k] || mine.target[k] != ref.target[k]) {
                    printf("%s: element %d (row %d, column %d): input %d and target %d, expected %d "
                           "and %d\nhint: input = row i (b->data + i * b->cols), target = row i + 1 "
                           "(b->data + (i + 1) * b->cols): the next token of each column\n", where, k, k / ref.cols, k % ref.cols,
                           mine.input[k], mine.target[k], ref.input[k], ref.target[k]);
                    return CHECK_FAIL;
                }
        }
        text_batches_free(&d);
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 4.2 */

/* 2e-3: the library rounds t * w to float as PyTorch does (an error up to 3e-4 at
 * t = 5000); a wrong column, frequency or function is off by O(1). */
static int check_positional(void) {
    const int sizes[][2] = {{5000, 200}, {64, 2}, {300, 6}, {50, 1024}};
    for (int c = 0; c < 4; c++) {
        const int L = sizes[c][0], D = sizes[c][1];
        Tensor mine = tensor_zeros(2, L, D), ref = tensor_zeros(2, L, D);
        tensor_fill(&mine, NAN); /* every entry must be written */
        lesson_positional_table(&mine);
        positional_table_fill(&ref);
        if (all_close(mine.data, ref.data, ref.size, 2e-3f, 0)) continue;
        printf("table [%d, %d]:\n", L, D);
        expect_close("table", mine.data, ref.data, ref.size, 2e-3f, 0);
        /* which mistake: sin and cos swapped, a frequency per column, the exponent's sign
         * flipped, or -(2i)/D in integers (0, so w = 1 for every pair) */
        bool swapped = true, per_column = true, rising = true, all_one = true;
        for (int t = 0; t < (L < 50 ? L : 50); t++)
            for (int j = 0; j < D; j++) {
                const double w = exp(-(double)j * log(10000.0) / D);
                const double up = exp((double)(j & ~1) * log(10000.0) / D);
                const float got = mine.data[(size_t)t * D + j];
                const float swap = ref.data[(size_t)t * D + (j ^ 1)];
                swapped &= fabsf(got - swap) < 2e-3f;
                per_column &= fabs(got - (j % 2 ? cos(t * w) : sin(t * w))) < 2e-3;
                rising &= fabs(got - (j % 2 ? cos(t * up) : sin(t * up))) < 2e-3;
                all_one &= fabs(got - (j % 2 ? cos((double)t) : sin((double)t))) < 2e-3;
            }
        if (swapped) printf("hint: sin and cos are swapped: sin in the even columns 2i, cos in 2i + 1\n");
        else if (all_one && D > 2)
            printf("hint: every pair has the frequency w = 1 of pair 0: -(2 * i) / D in integers is 0 "
                   "(2i < D); divide in floating point, w = exp(-(double)(2 * i) * log(10000.0) / D)\n");
        else if (rising && D > 2)
            printf("hint: the frequencies rise with i (w = 10000^(+2i/D), up to 10000 radians a position): "
                   "the exponent is negative, w = exp(-2i ln(10000) / D)\n");
        else if (per_column)
            printf("hint: both columns of a pair share one frequency: w = 10000^(-2i/D) with the "
                   "pair's first column 2i, not the column j itself\n");
        else if (!all_finite(mine.data, mine.size))
            printf("hint: some entries were not written (NaN): every row t < max_len and every column\n");
        else
            printf("hint: table[t][2i] = sin(t w), table[t][2i + 1] = cos(t w), w = exp(-2i ln(10000) / D)\n");
        return CHECK_FAIL;
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 4.3 */

typedef struct {
    int B, H, T, dh;
} AttnCase;

static AttnCase attn_case(Rng *rng) {
    AttnCase c = {1 + (int)rng_below(rng, 3), 1 + (int)rng_below(rng, 3), 1 + (int)rng_below(rng, 9),
                  1 + (int)rng_below(rng, 7)};
    return c;
}

static void describe_attn(const AttnCase *c) {
    printf("case: %d sequences, %d heads, %d positions, head width %d (qkv [%d, %d])\n", c->B, c->H,
           c->T, c->dh, c->B * c->T, 3 * c->H * c->dh);
}

/* The head (0, 0)'s probabilities computed the usual wrong ways, to name the mistake. */
enum {
    P_NO_SCALE,       /* the scores not divided by sqrt(dh) */
    P_SCALE_D,        /* divided by sqrt(D) */
    P_NO_MASK,        /* the softmax over all T */
    P_ALL_T_ZEROED,   /* normalised over all T, then the future zeroed */
    P_STRIDE_DH,      /* q_i = q + i * dh, k_j = k + j * dh: rows of dh, not of ld */
    P_Q_STRIDE_DH,    /* the queries' rows only */
    P_K_STRIDE_DH,    /* the keys' rows only */
    P_FUTURE_IN_SUM,  /* the masked scores as 0 in the sum: exp(0 - max) each */
    P_KINDS
};

static const char *attention_mistake(const AttnCase *c, const float *mine, const Tensor *qkv) {
    const int T = c->T, D = c->H * c->dh, ld = 3 * D;
    float *alt = xmalloc(sizeof(float) * (size_t)T * T);
    const char *named = NULL;
    for (int kind = 0; kind < P_KINDS && !named; kind++) {
        if (kind >= P_STRIDE_DH && kind <= P_K_STRIDE_DH && c->dh == ld) continue;
        const float scale = kind == P_NO_SCALE  ? 1.0f
                            : kind == P_SCALE_D ? 1.0f / sqrtf((float)D)
                                                : 1.0f / sqrtf((float)c->dh);
        const int qs = kind == P_STRIDE_DH || kind == P_Q_STRIDE_DH ? c->dh : ld;
        const int ks = kind == P_STRIDE_DH || kind == P_K_STRIDE_DH ? c->dh : ld;
        for (int i = 0; i < T; i++) {
            const int len = kind == P_NO_MASK || kind == P_ALL_T_ZEROED ? T : i + 1;
            float max = -INFINITY, sum = 0.0f;
            for (int j = 0; j < len; j++) {
                float s = 0.0f;
                for (int d = 0; d < c->dh; d++) s += qkv->data[i * qs + d] * qkv->data[D + j * ks + d];
                alt[i * T + j] = s * scale;
                max = fmaxf(max, alt[i * T + j]);
            }
            for (int j = 0; j < len; j++) sum += alt[i * T + j] = expf(alt[i * T + j] - max);
            if (kind == P_FUTURE_IN_SUM) sum += (float)(T - 1 - i) * expf(-max);
            for (int j = 0; j < len; j++) alt[i * T + j] /= sum;
            for (int j = len; j < T; j++) alt[i * T + j] = 0.0f;
            if (kind == P_ALL_T_ZEROED)
                for (int j = i + 1; j < T; j++) alt[i * T + j] = 0.0f;
        }
        if (T > 1 && all_close(mine, alt, (int64_t)T * T, 1e-5f, 1e-4f)) switch (kind) {
            case P_NO_SCALE: named = "the scores are not divided by sqrt(dh)"; break;
            case P_SCALE_D: named = "the scores are divided by sqrt(D), the model width: use the head's width dh"; break;
            case P_NO_MASK:
                named = "position i has weight on later positions: the causal mask is missing "
                        "(scores for j <= i only, p = 0 above the diagonal)";
                break;
            case P_ALL_T_ZEROED: named = "the softmax sums over all T positions: normalise over j <= i only"; break;
            case P_STRIDE_DH: case P_Q_STRIDE_DH: case P_K_STRIDE_DH:
                named = kind == P_STRIDE_DH ? "the queries and keys were read as rows of dh floats: "
                                              "q_i = q + i * ld and k_j = k + j * ld, ld = 3D (a row of qkv "
                                              "holds every head's q, k and v), not + i * dh"
                        : kind == P_Q_STRIDE_DH ? "the queries were read as rows of dh floats: q_i = q + i * ld, "
                                                  "ld = 3D (a row of qkv holds every head's q, k and v), not q + i * dh"
                                                : "the keys were read as rows of dh floats: k_j = k + j * ld, "
                                                  "ld = 3D (a row of qkv holds every head's q, k and v), not k + j * dh";
                break;
            default:
                named = "the masked entries (j > i) were counted in the sum of exponentials (as scores of 0, "
                        "exp(0 - max) each): sum exp(s_ij - max) over j <= i only";
            }
    }
    xfree(alt);
    return named;
}

/* p [B, H, T, T] from qkv with a layout of its own: head h's columns at h * hstep, the
 * queries at column qcol with row stride qs, the keys at kcol with stride ks. */
static void probs_of_layout(const AttnCase *c, const Tensor *qkv, int hstep, int qcol, int kcol, int qs,
                            int ks, float *out) {
    const int T = c->T, dh = c->dh, ld = 3 * c->H * dh;
    const float scale = 1.0f / sqrtf((float)dh);
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++) {
            const float *base = qkv->data + (size_t)b * T * ld + (size_t)h * hstep;
            float *p = out + ((size_t)b * c->H + h) * T * T;
            for (int i = 0; i < T; i++) {
                float *row = p + (size_t)i * T, max = -INFINITY, sum = 0.0f;
                for (int j = 0; j <= i; j++) {
                    float sc = 0.0f;
                    for (int d = 0; d < dh; d++) sc += base[qcol + (size_t)i * qs + d] * base[kcol + (size_t)j * ks + d];
                    row[j] = sc * scale, max = fmaxf(max, row[j]);
                }
                for (int j = 0; j <= i; j++) sum += row[j] = expf(row[j] - max);
                for (int j = 0; j < T; j++) row[j] = j <= i ? row[j] / sum : 0.0f;
            }
        }
}

/* The mistakes in where the heads' queries and keys are read (the given slicing, or the
 * strides), which head (0, 0) alone cannot show; NULL when none gives mine. */
static const char *layout_mistake(const AttnCase *c, const float *mine, const Tensor *qkv) {
    const int dh = c->dh, D = c->H * dh, ld = 3 * D;
    const int64_t n = (int64_t)c->B * c->H * c->T * c->T;
    const struct {
        int hstep, qcol, kcol, qs, ks;
        bool differs;
        const char *hint;
    } kinds[] = {
        {1, 0, D, ld, ld, c->H > 1 && dh > 1, "head h's columns were taken at h, not h * dh: head h's "
                                              "queries start at column h * dh of qkv's rows (the keys D "
                                              "later, the values 2D later)"},
        {dh, D, 0, ld, ld, c->T > 1, "the queries and the keys are swapped: scores[i][j] = q_i . k_j, "
                                     "q = the first D columns of a row of qkv, k the next D"},
        {dh, 0, D, D, ld, c->T > 1, "the queries were read with a row stride of ld / 3 = D: q_i = q + i * ld, "
                                    "ld = 3D (a row of qkv holds every head's q, k and v)"},
        {dh, 0, D, ld, D, c->T > 1, "the keys were read with a row stride of ld / 3 = D: k_j = k + j * ld, "
                                    "ld = 3D (a row of qkv holds every head's q, k and v)"},
    };
    float *alt = xmalloc(sizeof(float) * (size_t)n);
    const char *named = NULL;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0] && !named; k++) {
        if (!kinds[k].differs) continue;
        probs_of_layout(c, qkv, kinds[k].hstep, kinds[k].qcol, kinds[k].kcol, kinds[k].qs, kinds[k].ks, alt);
        if (all_close(mine, alt, n, 1e-5f, 1e-4f)) named = kinds[k].hint;
    }
    xfree(alt);
    return named;
}

/* Set while the max-trick check runs a case whose scores of order 1 fail already: its
 * hints could only guess. */
static const char *attention_hint_instead = NULL;

/* The first row (position) at which got and want, [heads][T][T], differ in any head, or
 * -1; where: that head and the row's first wrong column. A mistake that sets in at some
 * position (a loop that ends early, an array of fixed size) leaves the rows before it right. */
static int first_wrong_row(const float *got, const float *want, int heads, int T, float atol,
                           float rtol, int *head_at, int *col_at) {
    int row = -1;
    for (int h = 0; h < heads; h++)
        for (int i = 0; i < T && (row < 0 || i < row); i++) {
            const float *g = got + ((size_t)h * T + i) * T, *w = want + ((size_t)h * T + i) * T;
            int j = 0;
            while (j < T && fabsf(g[j] - w[j]) <= atol + rtol * fabsf(w[j])) j++;
            if (j < T) {
                row = i, *head_at = h, *col_at = j;
                break;
            }
        }
    return row;
}

/* Rows right up to this position and wrong from it on say "a bound at this position". */
enum { ROW_BOUND_FROM = 4 };

/* ctx from weights w [B, H, T, T] (p, or p after the dropout) and the value vectors at
 * column voff of qkv's rows (2D: the values; D: the keys, the given code's slip). */
static void context_of(const AttnCase *c, const float *w, const Tensor *qkv, int voff, Tensor *ctx) {
    const int T = c->T, dh = c->dh, D = c->H * dh, ld = 3 * D;
    tensor_fill(ctx, 0.0f);
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++) {
            const float *wh = w + ((size_t)b * c->H + h) * T * T;
            const float *v = qkv->data + (size_t)b * T * ld + voff + (size_t)h * dh;
            for (int i = 0; i < T; i++) {
                float *ci = ctx->data + ((size_t)b * T + i) * D + (size_t)h * dh;
                for (int j = 0; j <= i; j++)
                    for (int d = 0; d < dh; d++) ci[d] += wh[(size_t)i * T + j] * v[(size_t)j * ld + d];
            }
        }
}

/* p matches, ctx does not: the given code's context or its dropout was changed. */
static void context_hint(const AttnCase *c, const Tensor *qkv, const Tensor *ctx, const Tensor *ref_w,
                         float dropout) {
    const int D = c->H * c->dh;
    Tensor alt = tensor_zeros_like(ctx), w = copy_of(ref_w);
    const char *named = NULL;
    context_of(c, ref_w->data, qkv, D, &alt);
    if (all_close(ctx->data, alt.data, alt.size, 1e-5f, 1e-4f))
        named = "ctx is built from the keys' columns (v = q + D): the values are v = q + 2 * D in qkv's rows";
    if (!named && dropout > 0) { /* kept weights scaled by the dropout rate, not by 1 / (1 - rate) */
        for (int64_t e = 0; e < w.size; e++) w.data[e] *= (1.0f - dropout) * dropout;
        context_of(c, w.data, qkv, 2 * D, &alt);
        if (all_close(ctx->data, alt.data, alt.size, 1e-5f, 1e-4f))
            named = "the kept weights were scaled by the dropout rate p: the scale is 1 / (1 - p), so "
                    "that each weight keeps its mean";
    }
    printf("hint: the weights p match the library's, the context does not: %s\n",
           named ? named
                 : "ctx_i = sum over j <= i of w_ij v_j, with v_j the values' columns (v = q + 2 * D) "
                   "and w = p, or p * mask / (1 - dropout) with dropout (the given part of head_forward: "
                   "did it change?)");
    tensor_free(&alt), tensor_free(&w);
}

static bool compare_attention(const AttnCase *c, uint64_t seed, float dropout, float scale) {
    const int N = c->B * c->T, D = c->H * c->dh;
    Tensor qkv = random_tensor(seed, 2, N, 3 * D, 0, 0, scale);
    Tensor ctx[2], probs[2], dropped[2];
    for (int k = 0; k < 2; k++) {
        ctx[k] = tensor_zeros(2, N, D);
        probs[k] = tensor_zeros(4, c->B, c->H, c->T, c->T);
        dropped[k] = tensor_zeros(4, c->B, c->H, c->T, c->T);
        tensor_fill(&probs[k], NAN); /* every entry must be written, 0 above the diagonal too */
    }
    Rng r0, r1;
    rng_seed(&r0, seed, 7);
    rng_seed(&r1, seed, 7);
    const bool long_case = c->T > 9; /* said first: a crash there then shows its T */
    if (long_case) describe_attn(c);
    lesson_attention_forward(&ctx[0], &probs[0], &dropped[0], &qkv, dropout, true, &r0);
    attention_forward(&ctx[1], &probs[1], &dropped[1], &qkv, dropout, true, &r1);
    if (all_close(probs[0].data, probs[1].data, probs[1].size, 1e-5f, 1e-4f) &&
        all_close(ctx[0].data, ctx[1].data, ctx[1].size, 1e-5f, 1e-4f))
        return true;
    if (!long_case) describe_attn(c);
    if (dropout > 0) printf("attention dropout %g\n", (double)dropout);
    if (expect_close("probs", probs[0].data, probs[1].data, probs[1].size, 1e-5f, 1e-4f)) {
        expect_close("ctx", ctx[0].data, ctx[1].data, ctx[1].size, 1e-5f, 1e-4f);
        context_hint(c, &qkv, &ctx[0], dropout > 0 ? &dropped[1] : &probs[1], dropout);
        return false;
    }
    if (attention_hint_instead) {
        printf("hint: %s\n", attention_hint_instead);
        return false;
    }
    const char *m = attention_mistake(c, probs[0].data, &qkv);
    if (!m) m = layout_mistake(c, probs[0].data, &qkv);
    int64_t above = -1; /* the first p[i][j], j > i, that holds a weight */
    for (int64_t e = 0; e < probs[0].size && above < 0; e++) {
        const int i = (int)(e / c->T % c->T), j = (int)(e % c->T);
        if (j > i && isfinite(probs[0].data[e]) && probs[0].data[e] != 0.0f) above = e;
    }
    /* the diagonal left out of the mask (j < i instead of j <= i): row 0 then has no key
     * at all, where it must put all its weight on itself */
    bool no_diagonal = false; /* and something was written (an unwritten table is NaN) */
    for (int64_t e = 0; e < probs[0].size && !no_diagonal; e++) no_diagonal = probs[0].data[e] > 0;
    for (int64_t head = 0; head < (int64_t)c->B * c->H && no_diagonal; head++)
        for (int i = 0; i < c->T && no_diagonal; i++) {
            const float pii = probs[0].data[(head * c->T + i) * c->T + i];
            no_diagonal = pii == 0.0f || isnan(pii);
        }
    int head = 0, col = 0;
    const int row = first_wrong_row(probs[0].data, probs[1].data, c->B * c->H, c->T, 1e-5f, 1e-4f, &head, &col);
    if (m) printf("hint: %s\n", m);
    else if (row >= ROW_BOUND_FROM)
        printf("p is right in rows 0..%d of every head and wrong from row %d on (T = %d positions; "
               "first p[%d][%d] of head %d, sequence %d: got %g, expected %g)\nhint: your softmax stops "
               "working at position %d, column %d: a loop that ends early or an array of fixed size "
               "(the program trains with T = 35 positions, up to max_len)\n", row - 1, row, c->T, row,
               col, head % c->H, head / c->H, (double)probs[0].data[((size_t)head * c->T + row) * c->T + col],
               (double)probs[1].data[((size_t)head * c->T + row) * c->T + col], row, col);
    else if (no_diagonal)
        printf("p[0][0] is %g, the diagonal holds no weight\nhint: row 0 must have p = 1 (query 0 sees "
               "key 0, itself): the mask keeps j <= i, include j = i\n", (double)probs[0].data[0]);
    else if (above >= 0)
        printf("p[%d][%d] of head %d, sequence %d is %g\nhint: p[i][j] for j > i must be 0: query i may "
               "only see keys 0..i (the causal mask)\n", (int)(above / c->T % c->T), (int)(above % c->T),
               (int)(above / ((int64_t)c->T * c->T) % c->H), (int)(above / ((int64_t)c->T * c->T * c->H)),
               (double)probs[0].data[above]);
    else if (!all_finite(probs[0].data, probs[0].size))
        printf("hint: NaN or inf in p: %s\n", scale > 10 ? "subtract the largest score of the row (j <= i) before "
               "exp(): exp of a score of 1000 is inf in float" : "every entry of the row must be "
               "written, 0 above the diagonal");
    else
        printf("hint: p[i][j] = exp(s_ij - max_i) / sum_j' exp(s_ij' - max_i) for j <= i, s_ij = q_i . k_j / sqrt(dh)\n");
    return false;
}

/* Longer sequences than the random cases' 1 to 9 positions: the program's T = 35, one
 * that is not a power of two, and 64 (a bound or an array of 10, 16 or 32 shows there). */
static const AttnCase LONG_CASES[] = {{1, 2, 35, 4}, {2, 3, 50, 5}, {1, 1, 64, 2}};

static int check_attention_forward(void) {
    Rng rng;
    rng_seed(&rng, 43, 0);
    for (int t = 0; t < 10; t++) {
        AttnCase c = attn_case(&rng);
        if (!compare_attention(&c, 300 + (uint64_t)t, 0.0f, 1.0f)) return CHECK_FAIL;
    }
    AttnCase big = {2, 2, 6, 4};
    if (!compare_attention(&big, 310, 0.0f, 1.0f)) return CHECK_FAIL;
    for (int t = 0; t < 3; t++)
        if (!compare_attention(&LONG_CASES[t], 320 + (uint64_t)t, 0.0f, 1.0f)) return CHECK_FAIL;
    return CHECK_PASS;
}

static int check_attention_dropout(void) {
    Rng rng;
    rng_seed(&rng, 44, 0);
    for (int t = 0; t < 6; t++) {
        AttnCase c = attn_case(&rng);
        if (!compare_attention(&c, 400 + (uint64_t)t, 0.3f, 1.0f)) return CHECK_FAIL;
    }
    return compare_attention(&LONG_CASES[0], 410, 0.3f, 1.0f) ? CHECK_PASS : CHECK_FAIL;
}

/* Scores of a few hundred: exp overflows in float without the max trick. */
static int check_attention_large(void) {
    AttnCase c = {1, 2, 5, 4};
    /* the same case at scores of order 1 first, quietly: if it fails, so does the forward
     * check, and whatever fails here need not be the max trick */
    const int N = c.B * c.T, D = c.H * c.dh;
    Tensor qkv = random_tensor(500, 2, N, 3 * D, 0, 0, 1.0f), ctx[2], probs[2];
    for (int k = 0; k < 2; k++) {
        ctx[k] = tensor_zeros(2, N, D), probs[k] = tensor_zeros(4, c.B, c.H, c.T, c.T);
        tensor_fill(&probs[k], NAN);
    }
    lesson_attention_forward(&ctx[0], &probs[0], NULL, &qkv, 0.0f, false, NULL);
    attention_forward(&ctx[1], &probs[1], NULL, &qkv, 0.0f, false, NULL);
    attention_hint_instead = all_close(probs[0].data, probs[1].data, probs[1].size, 1e-5f, 1e-4f) &&
                                     all_close(ctx[0].data, ctx[1].data, ctx[1].size, 1e-5f, 1e-4f)
                                 ? NULL
                                 : "this case fails at scores of order 1 too, as the forward check above "
                                   "does: fix that first (its hint names the mistake); the max trick can be "
                                   "judged once the plain scores are right";
    const bool ok = compare_attention(&c, 500, 0.0f, 30.0f);
    attention_hint_instead = NULL;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- TODO 4.4 */

/* The queries' and keys' gradients (init plus) computed the usual wrong ways, from the
 * same dL/dp as the given code hands TODO 4.4 (BK_RIGHT: the right way, for a dL/dp
 * without the dropout mask). */
enum {
    BK_NO_SCALE,    /* without the 1/sqrt(dh) scale */
    BK_SCALE_TWICE, /* with it twice */
    BK_TIMES_SQRT,  /* times sqrt(dh) instead of divided by it */
    BK_RUNNING_DOT, /* the row's dot product summed while the row is overwritten */
    BK_DOT_AFTER,   /* the dot product taken after the row was overwritten with p * dp */
    BK_NO_DOT,      /* ds = p * dp: the dot product left out */
    BK_RIGHT
};
static void attention_backward_variant(const AttnCase *c, int kind, const Tensor *qkv,
                                       const Tensor *dctx, const Tensor *probs,
                                       const Tensor *dropped, Tensor *out) {
    const int T = c->T, dh = c->dh, D = c->H * dh, ld = 3 * D;
    const float scale = kind == BK_NO_SCALE      ? 1.0f
                        : kind == BK_SCALE_TWICE ? 1.0f / (float)dh
                        : kind == BK_TIMES_SQRT  ? sqrtf((float)dh)
                                                 : 1.0f / sqrtf((float)dh);
    float *ds = xmalloc(sizeof(float) * (size_t)T * T);
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++) {
            const size_t off = (size_t)b * T * ld + (size_t)h * dh;
            const size_t first = ((size_t)b * c->H + h) * T * T;
            const float *q = qkv->data + off, *k = q + D, *v = q + 2 * D;
            const float *p = probs->data + first, *w = dropped ? dropped->data + first : p;
            const float *dc = dctx->data + (size_t)b * T * D + (size_t)h * dh;
            float *dq = out->data + off, *dk = dq + D;
            for (int i = 0; i < T; i++) {
                float *di = ds + (size_t)i * T;
                const float *pi = p + (size_t)i * T;
                for (int j = 0; j <= i; j++) { /* dL/dp, as the given code computes it */
                    float g = 0.0f;
                    for (int d = 0; d < dh; d++) g += dc[(size_t)i * D + d] * v[(size_t)j * ld + d];
                    const float pij = pi[j], wij = w[(size_t)i * T + j];
                    di[j] = w != p ? (pij != 0.0f ? g * (wij / pij) : 0.0f) : g;
                }
                float dot = 0.0f;
                if (kind == BK_RUNNING_DOT) {
                    for (int j = 0; j <= i; j++) {
                        dot += pi[j] * di[j];
                        di[j] = pi[j] * (di[j] - dot);
                    }
                } else if (kind == BK_NO_DOT) {
                    for (int j = 0; j <= i; j++) di[j] *= pi[j];
                } else if (kind == BK_DOT_AFTER) {
                    for (int j = 0; j <= i; j++) di[j] *= pi[j];
                    for (int j = 0; j <= i; j++) dot += pi[j] * di[j];
                    for (int j = 0; j <= i; j++) di[j] -= pi[j] * dot;
                } else {
                    for (int j = 0; j <= i; j++) dot += pi[j] * di[j];
                    for (int j = 0; j <= i; j++) di[j] = pi[j] * (di[j] - dot);
                }
                for (int j = 0; j <= i; j++)
                    for (int d = 0; d < dh; d++) {
                        dq[(size_t)i * ld + d] += scale * di[j] * k[(size_t)j * ld + d];
                        dk[(size_t)j * ld + d] += scale * di[j] * q[(size_t)i * ld + d];
                    }
            }
        }
    xfree(ds);
}

/* Whether the queries' and keys' columns of a and b agree. */
static bool qk_close(const float *a, const float *b, int N, int D) {
    for (int n = 0; n < N; n++)
        if (!all_close(a + (int64_t)n * 3 * D, b + (int64_t)n * 3 * D, 2 * D, 1e-4f, 1e-4f)) return false;
    return true;
}

static bool compare_attention_backward(const AttnCase *c, uint64_t seed, float dropout, bool plain_passed) {
    const int N = c->B * c->T, D = c->H * c->dh;
    Tensor qkv = random_tensor(seed, 2, N, 3 * D, 0, 0, 1.0f), dctx = random_tensor(seed + 1, 2, N, D, 0, 0, 1.0f);
    Tensor ctx = tensor_zeros(2, N, D), probs = tensor_zeros(4, c->B, c->H, c->T, c->T);
    Tensor dropped = tensor_zeros_like(&probs);
    Rng r;
    rng_seed(&r, seed, 9);
    attention_forward(&ctx, &probs, &dropped, &qkv, dropout, true, &r); /* the library's p: 4.4 alone */
    Tensor init = random_tensor(seed + 2, 2, N, 3 * D, 0, 0, 1.0f);
    Tensor mine = copy_of(&init), ref = copy_of(&init);
    Tensor ds_mine = tensor_zeros_like(&probs), ds_ref = tensor_zeros_like(&probs);
    const Tensor *drop = dropout > 0 ? &dropped : NULL;
    const bool long_case = c->T > 9; /* said first: a crash there then shows its T */
    if (long_case) describe_attn(c);
    lesson_attention_backward(&mine, &ds_mine, &dctx, &qkv, &probs, drop);
    attention_backward(&ref, &ds_ref, &dctx, &qkv, &probs, drop);
    if (all_close(mine.data, ref.data, ref.size, 1e-4f, 1e-4f)) return true;
    if (!long_case) describe_attn(c);
    if (dropout > 0) printf("attention dropout %g\n", (double)dropout);
    expect_close("dqkv", mine.data, ref.data, ref.size, 1e-4f, 1e-4f);
    /* where: the queries' columns, the keys', or the values' (given: only q and k are yours) */
    bool q_ok = true, k_ok = true, added = true;
    for (int n = 0; n < N; n++)
        for (int d = 0; d < D; d++) {
            const int64_t iq = (int64_t)n * 3 * D + d, ik = iq + D;
            q_ok &= fabsf(mine.data[iq] - ref.data[iq]) <= 1e-4f + 1e-4f * fabsf(ref.data[iq]);
            k_ok &= fabsf(mine.data[ik] - ref.data[ik]) <= 1e-4f + 1e-4f * fabsf(ref.data[ik]);
            /* "=" instead of "+=": mine is ref less the pre-filled value */
            added &= !(fabsf(mine.data[iq] - (ref.data[iq] - init.data[iq])) < 1e-5f) || init.data[iq] == 0;
        }
    bool flipped = true; /* dq and dk with the wrong sign: mine - init = -(ref - init) */
    for (int n = 0; n < N && flipped; n++)
        for (int d = 0; d < 2 * D && flipped; d++) {
            const int64_t e = (int64_t)n * 3 * D + d;
            const float want = 2.0f * init.data[e] - ref.data[e];
            flipped = fabsf(mine.data[e] - want) <= 1e-4f + 1e-4f * fabsf(want);
        }
    int variant = -1; /* which usual mistake gives your numbers */
    for (int kind = 0; kind < BK_RIGHT && variant < 0 && added && !flipped; kind++) {
        if (kind <= BK_TIMES_SQRT && c->dh == 1) continue; /* sqrt(1) = 1: no difference */
        Tensor alt = copy_of(&init);
        attention_backward_variant(c, kind, &qkv, &dctx, &probs, drop, &alt);
        if (qk_close(mine.data, alt.data, N, D)) variant = kind;
        tensor_free(&alt);
    }
    bool no_mask = false; /* dL/dp without the dropout mask: the gradients of attention without dropout */
    if (variant < 0 && added && !flipped && drop) {
        Tensor alt = copy_of(&init);
        attention_backward_variant(c, BK_RIGHT, &qkv, &dctx, &probs, NULL, &alt);
        no_mask = qk_close(mine.data, alt.data, N, D);
        tensor_free(&alt);
    }
    /* the first position whose queries' gradient is wrong (rows before it right): a row
     * i's dq comes from row i of ds alone, while every key gets its gradient from the rows
     * after it, so dk is off everywhere once some row is */
    int bound = c->T;
    for (int b = 0; b < c->B; b++)
        for (int i = 0; i < bound; i++) {
            const int64_t e = ((int64_t)b * c->T + i) * 3 * D;
            if (!all_close(mine.data + e, ref.data + e, D, 1e-4f, 1e-4f)) {
                bound = i;
                break;
            }
        }
    int head = 0, col = 0;
    const int ds_row = first_wrong_row(ds_mine.data, ds_ref.data, c->B * c->H, c->T, 1e-4f, 1e-4f, &head, &col);
    if (!added) printf("hint: dq was assigned (=): it starts non-zero here, add (+=) into it\n");
    else if (flipped)
        printf("hint: your dq and dk have the wrong sign (they are the library's, negated): dq += g * k_j "
               "and dk += g * q_i with g = +ds[i][j] * scale, and ds = p * (dp - dot), not p * (dot - dp)\n");
    else if (no_mask)
        printf("hint: your dq and dk are those of attention without dropout: the dropout mask was left out "
               "of dL/dp (the given part of head_backward: dL/dp_ij = dL/dw_ij * w_ij / p_ij, 0 where "
               "an entry was dropped); the softmax's backward itself is right\n");
    else if (variant == BK_NO_SCALE)
        printf("hint: your dq and dk are sqrt(dh) = %.3g times too large: the 1/sqrt(dh) scale of the "
               "scores is missing (g = ds[i][j] * scale)\n", sqrt((double)c->dh));
    else if (variant == BK_SCALE_TWICE)
        printf("hint: your dq and dk are sqrt(dh) = %.3g times too small: the 1/sqrt(dh) scale was "
               "applied twice\n", sqrt((double)c->dh));
    else if (variant == BK_TIMES_SQRT)
        printf("hint: your dq and dk are dh = %d times too large: they were multiplied by sqrt(dh), the "
               "scale is 1 / sqrt(dh) (g = ds[i][j] / sqrt(dh)), as in the forward\n", c->dh);
    else if (variant == BK_NO_DOT)
        printf("hint: the softmax's backward lacks the row's dot product: ds[i][j] = p[i][j] * (ds[i][j] - dot), "
               "dot = sum over j <= i of p[i][j] * ds[i][j] (each p depends on every score of its row), "
               "not p[i][j] * ds[i][j]\n");
    else if (variant == BK_RUNNING_DOT || variant == BK_DOT_AFTER)
        printf("hint: the row's dot product sum_j p[i][j] * ds[i][j] was taken %s: compute it over the "
               "whole row first, then overwrite ds[i][j] = p[i][j] * (ds[i][j] - dot)\n",
               variant == BK_RUNNING_DOT ? "while the row was being overwritten (a running sum)"
                                         : "after the row was overwritten with p * dp");
    else if (bound >= ROW_BOUND_FROM && bound < c->T)
        printf("the queries' gradient is right at positions 0..%d and wrong from position %d on (T = %d "
               "positions)%s; the keys' is off wherever a later row's share is missing\nhint: your backward "
               "stops working at row %d: a loop that ends early or an array of fixed size (the program "
               "trains with T = 35 positions)\n", bound - 1, bound, c->T,
               ds_row == bound ? ", as is ds (dL/dscores) from that row on" : "", bound);
    else if (drop && plain_passed)
        printf("hint: the cases without dropout above passed, this one with dropout %g does not: look at "
               "how the dropout mask enters dL/dp (0 where an entry was dropped, w / p elsewhere), not at "
               "the softmax's backward\n", (double)dropout);
    else if (!q_ok && k_ok) printf("hint: the keys' gradient is right, the queries' is not: dq_i += g * k_j\n");
    else if (q_ok && !k_ok)
        printf("hint: the queries' gradient is right, the keys' is not: dk_j += g * q_i (j is the key's row)\n");
    else
        printf("hint: first the softmax's backward, ds = p * (dp - sum_j p dp) per row (the sum before "
               "you overwrite the row), then both factors of the scores, times 1 / sqrt(dh)\n");
    return false;
}

/* lesson.h's promise: ds is dL/dscores on return, 0 above the diagonal. The given layer
 * hands TODO 4.4 zeros there, so the layer's checks cannot see it; here ds comes with
 * garbage above the diagonal (finite: p is 0 there, so a dot product over the whole row
 * is still right), as another caller may hand it. */
static bool ds_zero_above(void) {
    const AttnCase c = {1, 1, 35, 4};
    const int T = c.T, D = c.dh;
    Tensor qkv = random_tensor(760, 2, T, 3 * D, 0, 0, 1.0f), ctx = tensor_zeros(2, T, D);
    Tensor probs = tensor_zeros(4, 1, 1, T, T), ds = random_tensor(761, 4, 1, 1, T, T, 1.0f);
    Tensor dqk = tensor_zeros(2, T, 3 * D);
    attention_forward(&ctx, &probs, NULL, &qkv, 0.0f, false, NULL);
    for (int i = 0; i < T; i++)
        for (int j = i + 1; j < T; j++) ds.data[i * T + j] = 1000.0f + (float)j; /* dL/dp's garbage */
    lesson_causal_softmax_backward(dqk.data, dqk.data + D, ds.data, probs.data, qkv.data, qkv.data + D, T,
                                   c.dh, 3 * D);
    for (int i = 0; i < T; i++)
        for (int j = i + 1; j < T; j++)
            if (ds.data[i * T + j] != 0.0f) {
                describe_attn(&c);
                printf("ds came in with %g at [%d][%d], above the diagonal, and left with %g\nhint: ds[i][j] = 0 "
                       "for j > i on return: ds becomes dL/dscores, and the masked scores get no gradient "
                       "(lesson.h; the given layer happens to pass zeros there, another caller need not)\n",
                       1000.0 + j, i, j, (double)ds.data[i * T + j]);
                return false;
            }
    return true;
}

static int check_attention_backward(void) {
    if (omp_get_max_threads() < 2) omp_set_num_threads(2);
    Rng rng;
    rng_seed(&rng, 45, 0);
    for (int t = 0; t < 10; t++) {
        AttnCase c = attn_case(&rng);
        /* even t without dropout, odd t with: those before passed where t >= 1 */
        if (!compare_attention_backward(&c, 600 + 10 * (uint64_t)t, t % 2 ? 0.25f : 0.0f, t >= 1))
            return CHECK_FAIL;
    }
    for (int t = 0; t < 3; t++) /* the long sequences, the second with dropout */
        if (!compare_attention_backward(&LONG_CASES[t], 700 + 10 * (uint64_t)t, t == 1 ? 0.25f : 0.0f, true))
            return CHECK_FAIL;
    return ds_zero_above() ? CHECK_PASS : CHECK_FAIL;
}

/* L = sum(ctx * R) through the library's forward, the same dropout mask every time. */
typedef struct {
    Tensor *qkv, *ctx, *probs, *dropped, *R;
    float dropout;
} AttnObjective;
static double attention_objective(void *arg) {
    AttnObjective *o = arg;
    Rng r;
    rng_seed(&r, 77, 1); /* the same key: the same mask */
    attention_forward(o->ctx, o->probs, o->dropped, o->qkv, o->dropout, true, &r);
    return weighted_sum(o->ctx, o->R);
}

static int check_attention_numeric(void) {
    quiet_threads();
    const AttnCase c = {2, 2, 4, 3};
    const int N = c.B * c.T, D = c.H * c.dh;
    for (int pass = 0; pass < 2; pass++) {
        const float dropout = pass ? 0.3f : 0.0f;
        Tensor qkv = random_tensor(700 + (uint64_t)pass, 2, N, 3 * D, 0, 0, 1.0f);
        Tensor R = random_tensor(710, 2, N, D, 0, 0, 1.0f), ctx = tensor_zeros(2, N, D);
        Tensor probs = tensor_zeros(4, c.B, c.H, c.T, c.T), dropped = tensor_zeros_like(&probs);
        AttnObjective o = {&qkv, &ctx, &probs, &dropped, &R, dropout};
        attention_objective(&o);
        Tensor dqkv = tensor_zeros_like(&qkv), ds = tensor_zeros_like(&probs);
        lesson_attention_backward(&dqkv, &ds, &R, &qkv, &probs, pass ? &dropped : NULL);
        /* eps 1e-2, as lesson 01's: float noise ~1e-5, a wrong term O(0.1) */
        if (!fd_check(pass ? "dqkv (dropout 0.3)" : "dqkv", qkv.data, dqkv.data, qkv.size,
                      attention_objective, &o, 1e-2f, 1e-3, 1e-2)) {
            printf("(columns 0..%d of a row are the queries, %d..%d the keys, %d..%d the values: "
                   "the values' gradient is the given code's)\n", D - 1, D, 2 * D - 1, 2 * D, 3 * D - 1);
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 4.5 */

static const int LN_SIZES[][2] = {{7, 5}, {1, 16}, {13, 200}, {4, 1}, {33, 3}};

/* Whether rstd is the one-pass float variance's, var = mean(x^2) - mean^2 (the way it
 * is usually written: both sums in one loop, or the mean's square from the sum), and
 * that is not the library's: it cancels where the mean is far from 0. */
static bool one_pass_variance(const float *got, const float *want, const Tensor *in, float eps) {
    const int N = in->shape[0], D = in->shape[1];
    bool wrong = false, same[2] = {true, true};
    for (int n = 0; n < N; n++) {
        const float *x = in->data + (size_t)n * D;
        float sum = 0.0f, sq = 0.0f;
        for (int j = 0; j < D; j++) sum += x[j], sq += x[j] * x[j];
        const float mu = sum / (float)D;
        const float var[2] = {sq / (float)D - mu * mu, (sq - sum * mu) / (float)D};
        for (int k = 0; k < 2; k++) {
            const float r = 1.0f / sqrtf(var[k] + eps);
            same[k] &= fabsf(got[n] - r) <= 2e-7f * fabsf(r) || (isnan(got[n]) && isnan(r));
        }
        wrong |= !(fabsf(got[n] - want[n]) <= 1e-5f + 1e-4f * fabsf(want[n]));
    }
    return wrong && (same[0] || same[1]);
}

static int check_layernorm_forward(void) {
    for (int t = 0; t < 5; t++) {
        const int N = LN_SIZES[t][0], D = LN_SIZES[t][1];
        Tensor in = random_tensor(800 + (uint64_t)t, 2, N, D, 0, 0, 2.0f);
        for (int64_t i = 0; i < in.size; i++) in.data[i] += 3.0f; /* a mean far from 0 */
        Tensor g = random_tensor(810 + (uint64_t)t, 1, D, 0, 0, 0, 1.0f), b = random_tensor(820 + (uint64_t)t, 1, D, 0, 0, 0, 1.0f);
        Tensor out[2], mean[2], rstd[2];
        for (int k = 0; k < 2; k++) {
            out[k] = tensor_zeros(2, N, D), mean[k] = tensor_zeros(1, N), rstd[k] = tensor_zeros(1, N);
            tensor_fill(&mean[k], NAN), tensor_fill(&rstd[k], NAN);
        }
        const float eps = t == 3 ? 0.5f : LAYERNORM_EPS; /* D = 1: var 0, only eps */
        lesson_layernorm_forward(&out[0], &mean[0], &rstd[0], &in, &g, &b, eps);
        layernorm_forward(&out[1], &mean[1], &rstd[1], &in, &g, &b, eps);
        if (all_close(out[0].data, out[1].data, out[1].size, 1e-4f, 1e-4f) &&
            all_close(mean[0].data, mean[1].data, N, 1e-5f, 1e-5f) &&
            all_close(rstd[0].data, rstd[1].data, N, 1e-5f, 1e-4f))
            continue;
        printf("in [%d, %d], eps %g\n", N, D, (double)eps);
        if (expect_close("out", out[0].data, out[1].data, out[1].size, 1e-4f, 1e-4f) &&
            expect_close("mean", mean[0].data, mean[1].data, N, 1e-5f, 1e-5f))
            expect_close("rstd", rstd[0].data, rstd[1].data, N, 1e-5f, 1e-4f);
        /* the usual mistakes, on row 0, or on the first row whose rstd is wrong */
        int row = 0;
        while (row < N - 1 && fabsf(rstd[0].data[row] - rstd[1].data[row]) <= 1e-5f + 1e-4f * fabsf(rstd[1].data[row]))
            row++;
        const float *x0 = in.data + (size_t)row * D;
        double mu = 0, var = 0;
        for (int j = 0; j < D; j++) mu += x0[j];
        mu /= D;
        for (int j = 0; j < D; j++) var += (x0[j] - mu) * (x0[j] - mu);
        const float r = rstd[0].data[row];
        if (D > 1 && one_pass_variance(rstd[0].data, rstd[1].data, &in, eps))
            printf("rstd is wrong: row %d has %.9g, expected %.9g\nhint: your variance is the one-pass "
                   "mean(x^2) - mean^2 in float (the sheet warns of it): two close numbers subtracted "
                   "cancel (here mean %.3g, var %.3g); take the mean first, then var = sum (x_j - mean)^2 / D\n",
                   row, (double)r, (double)rstd[1].data[row], mu, var / D);
        else if (D > 1 && fabs(r - 1.0 / sqrt(var / (D - 1) + eps)) < 1e-5 * fabs(r))
            printf("hint: the variance is divided by D - 1: layer norm uses the biased one, / D\n");
        else if (fabs(r - 1.0 / (sqrt(var / D) + eps)) < 1e-6 * fabs(r) && fabs(1.0 / (sqrt(var / D) + eps) - 1.0 / sqrt(var / D + eps)) > 1e-5 * fabs(r))
            printf("hint: eps goes inside the square root: 1 / sqrt(var + eps)\n");
        else if (fabs(r - sqrt(var / D + eps)) < 1e-5 * fabs(r))
            printf("hint: rstd is the reciprocal: 1 / sqrt(var + eps), not sqrt(var + eps)\n");
        else if (!all_finite(mean[0].data, N) || !all_finite(rstd[0].data, N))
            printf("hint: save each row's mean and rstd (mean->data[n], rstd->data[n]): the backward needs them\n");
        else if (all_close(mean[0].data, mean[1].data, N, 1e-5f, 1e-5f) &&
                 !all_close(rstd[0].data, rstd[1].data, N, 1e-5f, 1e-4f)) {
            /* which eps gives your rstd: 1 / r^2 - var (exact where var = 0, as at D = 1) */
            const double used = 1.0 / ((double)r * r) - var / D;
            printf("rstd is wrong: row %d has %.9g, expected %.9g (var %.9g, eps %g)\nhint: ", row,
                   (double)r, (double)rstd[1].data[row], var / D, (double)eps);
            if (fabs(used - eps) > 1e-3 * eps && used > -1e-7)
                printf("your rstd is 1 / sqrt(var + %.3g): eps is the function's argument (here %g), not a "
                       "constant of your own\n", used, (double)eps);
            else
                printf("rstd = 1 / sqrt(var + eps), var = sum (x_j - mean)^2 / D\n");
        } else {
            /* out without gamma, with the row's own statistics */
            bool no_gamma = true;
            for (int n = 0; n < N && no_gamma; n++)
                for (int j = 0; j < D && no_gamma; j++) {
                    const float want = (in.data[(size_t)n * D + j] - mean[1].data[n]) * rstd[1].data[n] + b.data[j];
                    no_gamma = fabsf(out[0].data[(size_t)n * D + j] - want) <= 1e-4f + 1e-4f * fabsf(want);
                }
            printf("hint: %s\n", no_gamma && D > 1 ? "gamma is missing: out = (x - mean) * rstd * gamma[j] + beta[j]"
                                                  : "out = (x - mean) * rstd * gamma[j] + beta[j]");
        }
        return CHECK_FAIL;
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 4.6 */

/* din computed the usual wrong ways (added to init); which one gives got, or -1. */
static const char *const DIN_MISTAKES[] = {
    "din lacks both mean terms (every x_j moves its row's mean and variance too)",
    "din lacks the term - xhat_j * mean(dxhat * xhat) (the path through the variance)",
    "din lacks the term - mean(dxhat) (the path through the mean)",
    "dxhat lacks gamma (dxhat_j = dout_j * gamma_j)",
    "din lacks the factor rstd in front",
};
static int din_mistake(const float *got, const Tensor *init, const Tensor *dout, const Tensor *in,
                       const Tensor *mean, const Tensor *rstd, const Tensor *gamma) {
    const int N = in->shape[0], D = in->shape[1];
    float *alt = xmalloc(sizeof(float) * (size_t)D);
    int found = -1;
    for (int v = 0; v < (int)(sizeof DIN_MISTAKES / sizeof DIN_MISTAKES[0]) && found < 0; v++) {
        bool same = true;
        for (int n = 0; n < N && same; n++) {
            const float *x = in->data + (size_t)n * D, *g = dout->data + (size_t)n * D;
            const float mu = mean->data[n], r = rstd->data[n];
            double m1 = 0, m2 = 0;
            for (int j = 0; j < D; j++) {
                const double dxhat = g[j] * (v == 3 ? 1.0f : gamma->data[j]);
                m1 += dxhat, m2 += dxhat * (x[j] - mu) * r;
            }
            m1 /= D, m2 /= D;
            for (int j = 0; j < D; j++) {
                const double dxhat = g[j] * (v == 3 ? 1.0f : gamma->data[j]), xhat = (x[j] - mu) * r;
                const double inner = dxhat - (v == 0 || v == 2 ? 0 : m1) - (v == 0 || v == 1 ? 0 : xhat * m2);
                alt[j] = init->data[(size_t)n * D + j] + (float)((v == 4 ? 1.0 : r) * inner);
            }
            same = all_close(got + (size_t)n * D, alt, D, 1e-4f, 1e-4f);
        }
        if (same) found = v;
    }
    xfree(alt);
    return found;
}

static int check_layernorm_backward(void) {
    if (omp_get_max_threads() < 2) omp_set_num_threads(2);
    for (int t = 0; t < 5; t++) {
        const int N = LN_SIZES[t][0], D = LN_SIZES[t][1];
        const bool with_din = t != 1;
        Tensor in = random_tensor(900 + (uint64_t)t, 2, N, D, 0, 0, 2.0f);
        Tensor g = random_tensor(910 + (uint64_t)t, 1, D, 0, 0, 0, 1.0f), b = tensor_zeros(1, D);
        Tensor out = tensor_zeros(2, N, D), mean = tensor_zeros(1, N), rstd = tensor_zeros(1, N);
        layernorm_forward(&out, &mean, &rstd, &in, &g, &b, LAYERNORM_EPS); /* the library's: 4.6 alone */
        Tensor dout = random_tensor(920 + (uint64_t)t, 2, N, D, 0, 0, 1.0f);
        Tensor din0 = random_tensor(930, 2, N, D, 0, 0, 1.0f), dg0 = random_tensor(931, 1, D, 0, 0, 0, 1.0f);
        Tensor db0 = random_tensor(932, 1, D, 0, 0, 0, 1.0f);
        Tensor din[2] = {copy_of(&din0), copy_of(&din0)}, dg[2] = {copy_of(&dg0), copy_of(&dg0)};
        Tensor db[2] = {copy_of(&db0), copy_of(&db0)};
        lesson_layernorm_backward(with_din ? &din[0] : NULL, &dg[0], &db[0], &dout, &in, &mean, &rstd, &g);
        layernorm_backward(with_din ? &din[1] : NULL, &dg[1], &db[1], &dout, &in, &mean, &rstd, &g);
        const Tensor *mine[3] = {&db[0], &dg[0], &din[0]}, *ref[3] = {&db[1], &dg[1], &din[1]};
        const Tensor *init[3] = {&db0, &dg0, &din0};
        const char *names[3] = {"dbeta", "dgamma", "din"};
        for (int k = 0; k < 3; k++) {
            if (all_close(mine[k]->data, ref[k]->data, ref[k]->size, 1e-4f, 1e-4f)) continue;
            printf("in [%d, %d]%s\n", N, D, with_din ? "" : ", din NULL (skip it)");
            expect_close(names[k], mine[k]->data, ref[k]->data, ref[k]->size, 1e-4f, 1e-4f);
            Tensor assigned = copy_of(ref[k]);
            for (int64_t i = 0; i < assigned.size; i++) assigned.data[i] -= init[k]->data[i];
            /* dbeta, dgamma assigned inside the loop over rows: the last row's share alone */
            Tensor last = tensor_zeros(1, D);
            for (int j = 0; j < D && k < 2; j++) {
                const float g_ = dout.data[(size_t)(N - 1) * D + j];
                const float xhat = (in.data[(size_t)(N - 1) * D + j] - mean.data[N - 1]) * rstd.data[N - 1];
                last.data[j] = k == 0 ? g_ : g_ * xhat;
            }
            if (all_close(mine[k]->data, assigned.data, assigned.size, 1e-4f, 1e-4f))
                printf("hint: %s was assigned (=): it starts non-zero here, add (+=) into it\n", names[k]);
            else if (k < 2 && N > 1 && all_close(mine[k]->data, last.data, D, 1e-4f, 1e-4f))
                printf("hint: %s holds the last row's share only: it was assigned (=) inside the loop over "
                       "the rows, so each row overwrote the one before; add (+=) every row's share into "
                       "it (it starts non-zero here too)\n", names[k]);
            else if (k == 2) {
                const int v = din_mistake(din[0].data, &din0, &dout, &in, &mean, &rstd, &g);
                printf("hint: %s%sdin = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dout * gamma: "
                       "every x_j also moves its row's mean and variance\n", v >= 0 ? DIN_MISTAKES[v] : "",
                       v >= 0 ? ": " : "");
            } else {
                bool no_xhat = k == 1; /* dgamma summed like dbeta: without xhat */
                for (int j = 0; j < D && no_xhat; j++) {
                    float want = dg0.data[j];
                    for (int n = 0; n < N; n++) want += dout.data[(size_t)n * D + j];
                    no_xhat = fabsf(dg[0].data[j] - want) <= 1e-4f + 1e-4f * fabsf(want);
                }
                printf("hint: %sdbeta[j] sums dout[n][j] over the rows n, dgamma[j] sums dout[n][j] * xhat[n][j]\n",
                       no_xhat ? "dgamma lacks the factor xhat[n][j] (it is summed like dbeta): " : "");
            }
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

typedef struct {
    Tensor *in, *g, *b, *out, *mean, *rstd, *R;
} LnObjective;
static double layernorm_objective(void *arg) {
    LnObjective *o = arg;
    layernorm_forward(o->out, o->mean, o->rstd, o->in, o->g, o->b, LAYERNORM_EPS);
    return weighted_sum(o->out, o->R);
}

static int check_layernorm_numeric(void) {
    quiet_threads();
    const int N = 5, D = 7;
    Tensor in = random_tensor(950, 2, N, D, 0, 0, 2.0f), g = random_tensor(951, 1, D, 0, 0, 0, 1.5f);
    Tensor b = random_tensor(952, 1, D, 0, 0, 0, 1.0f), R = random_tensor(953, 2, N, D, 0, 0, 1.0f);
    Tensor out = tensor_zeros(2, N, D), mean = tensor_zeros(1, N), rstd = tensor_zeros(1, N);
    LnObjective o = {&in, &g, &b, &out, &mean, &rstd, &R};
    layernorm_objective(&o);
    Tensor din = tensor_zeros_like(&in), dg = tensor_zeros_like(&g), db = tensor_zeros_like(&b);
    lesson_layernorm_backward(&din, &dg, &db, &R, &in, &mean, &rstd, &g);
    Tensor *wrt[] = {&in, &g, &b}, *grad[] = {&din, &dg, &db};
    const char *names[] = {"din", "dgamma", "dbeta"};
    for (int k = 0; k < 3; k++) {
        /* the statistics come from the same forward: layernorm_objective reruns it */
        if (!fd_check(names[k], wrt[k]->data, grad[k]->data, wrt[k]->size, layernorm_objective, &o,
                      1e-2f, 1e-3, 1e-2))
            return CHECK_FAIL;
        layernorm_objective(&o);
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- the model */

static TransformerConfig tiny_config(int vocab, float dropout) {
    return (TransformerConfig){.vocab = vocab, .d_model = 16, .heads = 2, .d_ff = 24, .layers = 2,
                               .max_len = 64, .dropout = dropout};
}

/* Training steps of the model with your layers and table against the library's: the
 * same loss, logits and gradients (dropout on: the same masks, drawn the same way), at 7
 * positions, then at the program's length and beyond (37, not a power of two; 64). */
static int check_layers_in_model(void) {
    quiet_threads();
    const TransformerConfig cfg = tiny_config(37, 0.2f);
    const int B = 3, lengths[] = {7, 37, 64}, steps = 3, T = 64;
    Transformer mine, ref;
    transformer_init(&mine, &cfg, B, T, 5);
    transformer_init(&ref, &cfg, B, T, 5);
    lesson_positional_table(transformer_positions(&mine));
    lesson_use_my_layers(&mine);
    TokenStream s = random_stream(2 * B * T, cfg.vocab, 17);
    for (int step = 0; step < steps; step++) {
        const int t = lengths[step];
        transformer_set_seq_len(&mine, t), transformer_set_seq_len(&ref, t);
        if (t > 9) printf("step %d: %d sequences of %d positions\n", step + 1, B, t); /* shown on a crash */
        params_zero_grad(&mine.params), params_zero_grad(&ref.params);
        const float a = transformer_forward_backward(&mine, s.ids, s.ids + B * t);
        const float b = transformer_forward_backward(&ref, s.ids, s.ids + B * t);
        const char *earlier = step == 0 ? "" : step == 1 ? " (at 7 positions it matched)"
                                                         : " (at 7 and 37 positions it matched)";
        if (!expect_close("loss", &a, &b, 1, 1e-5f, 1e-5f)) {
            printf("hint: at T = %d positions%s: the checks above say which of your layers differs%s\n", t,
                   earlier, step ? ", or, if they passed, your layers go wrong at this length: a loop "
                                   "bound or an array of fixed size" : "");
            return CHECK_FAIL;
        }
        for (int i = 0; i < ref.params.count; i++) {
            const Param *p = mine.params.items[i], *q = ref.params.items[i];
            if (!expect_close(q->name, p->grad.data, q->grad.data, q->grad.size, 1e-5f, 1e-3f)) {
                printf("(the gradient of %s after your layers' backward, step %d, T = %d positions)\n"
                       "hint: the loss matches, a gradient does not%s: your backward (4.4, 4.6)%s\n",
                       q->name, step + 1, t, earlier,
                       step ? " goes wrong at this length: a loop bound or an array of fixed size" : "");
                return CHECK_FAIL;
            }
        }
        /* a plain SGD step on both, so the next step starts elsewhere */
        for (int64_t k = 0; k < ref.params.total; k++) {
            mine.params.values.data[k] -= 0.5f * mine.params.grads.data[k];
            ref.params.values.data[k] -= 0.5f * ref.params.grads.data[k];
        }
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 4.7 */

/* The schedule's usual mistakes: StepLR counted from epoch instead of epoch - 1, or
 * stepped after every batch (PyTorch's scheduler.step() in the batch loop): from the base
 * rate over all epochs, from each epoch's rate, or from the base rate each epoch. */
typedef enum { LR_RIGHT, LR_EPOCH, LR_PER_BATCH, LR_PER_BATCH_EPOCH, LR_PER_BATCH_RESTART } LrMistake;

typedef struct {
    bool no_clip, no_schedule, no_zero_grad, unweighted, skip_last;
    bool clip_per_tensor, no_set_seq_len, bptt_weighted, no_train_mode, norm_after_clip;
    LrMistake lr;
} Variant;

/* A small run: model, optimiser, token buffers and the [23, 4] training data (the last
 * batch of 5 rows is 2 long). */
typedef struct {
    TransformerConfig cfg;
    Transformer m;
    Optimizer opt;
    TokenBatch tb;
    TextBatches data;
    TrainSettings s;
} Run;

static void run_init(Run *r, bool adamw, float lr, float clip, int B, int bptt, int64_t tokens,
                     uint64_t seed) {
    memset(r, 0, sizeof *r);
    r->cfg = tiny_config(29, 0.1f);
    transformer_init(&r->m, &r->cfg, B, bptt, seed);
    optimizer_init(&r->opt, &r->m.params, adamw, lr, 0.01f);
    token_batch_init(&r->tb, B, bptt, DEVICE_CPU);
    TokenStream s = random_stream(tokens, r->cfg.vocab, seed + 1);
    text_batchify(&s, B, "train", &r->data);
    xfree(s.ids);
    r->s = (TrainSettings){.bptt = bptt, .clip = clip, .gamma = 0.5f, .max_steps = 0};
}

/* Each parameter's gradient clipped alone to max_norm (the mistake: one global norm is
 * right), with clip_grad_norm's arithmetic; returns the global norm before. */
static float clip_each_tensor(ParamList *params, float max_norm) {
    const float total = grad_norm(params);
    for (int k = 0; k < params->count; k++) {
        Tensor *g = &params->items[k]->grad;
        double sq = 0;
        for (int64_t e = 0; e < g->size; e++) sq += (double)g->data[e] * g->data[e];
        const float coef = max_norm / ((float)sqrt(sq) + 1e-6f);
        if (coef < 1.0f)
            for (int64_t e = 0; e < g->size; e++) g->data[e] *= coef;
    }
    return total;
}

/* The training loop as the lesson describes it, from the library's pieces. */
static TrainStats reference_epoch(Run *r, int epoch, Variant v) {
    TrainStats st = {0};
    const float base = r->opt.base_lr, gamma = r->s.gamma;
    const int64_t batches = text_batch_count(&r->data, r->s.bptt);
    float lr = v.no_schedule ? base : step_lr(base, gamma, 1, v.lr == LR_EPOCH ? epoch : epoch - 1);
    optimizer_set_lr(&r->opt, lr);
    if (v.no_train_mode) transformer_eval(&r->m); /* as left by an evaluation */
    else transformer_train(&r->m);
    double sum = 0, norms = 0;
    for (int64_t i = 0; i < r->data.rows - 1; i += r->s.bptt) {
        if (r->s.max_steps && st.steps >= r->s.max_steps) break;
        TextBatch b = text_get_batch(&r->data, i, r->s.bptt);
        if (v.skip_last && b.seq_len < r->s.bptt) break;
        token_batch_load(&r->tb, &b);
        if (!v.no_set_seq_len) transformer_set_seq_len(&r->m, b.seq_len);
        if (!v.no_zero_grad) params_zero_grad(&r->m.params);
        if (v.lr == LR_PER_BATCH) lr = step_lr(base, gamma, 1, (epoch - 1) * batches + st.steps);
        if (v.lr == LR_PER_BATCH_EPOCH) lr = step_lr(base, gamma, 1, epoch - 1) * powf(gamma, (float)st.steps);
        if (v.lr == LR_PER_BATCH_RESTART) lr = step_lr(base, gamma, 1, st.steps);
        optimizer_set_lr(&r->opt, lr);
        const float loss = transformer_forward_backward(&r->m, r->tb.tokens, r->tb.targets);
        const float norm = r->s.clip > 0 && !v.no_clip
                               ? (v.clip_per_tensor ? clip_each_tensor(&r->m.params, r->s.clip)
                                                    : clip_grad_norm(&r->m.params, r->s.clip))
                               : grad_norm(&r->m.params);
        const float after = v.norm_after_clip ? grad_norm(&r->m.params) : norm;
        optimizer_step(&r->opt, &r->m.params);
        const int64_t n = (int64_t)b.seq_len * b.cols;
        sum += v.unweighted ? loss : (double)loss * (v.bptt_weighted ? (int64_t)r->s.bptt * b.cols : n);
        norms += after;
        st.tokens += n;
        st.steps++;
    }
    st.loss = v.unweighted ? sum / st.steps : sum / st.tokens;
    st.grad_norm = norms / st.steps;
    return st;
}

static bool same_params(const Run *a, const Run *b) {
    return all_close(a->m.params.values.data, b->m.params.values.data, b->m.params.total, 1e-5f, 1e-4f);
}

#define LR_PER_BATCH_HINT                                                                          \
    "the learning rate changed from batch to batch: StepLR steps once per epoch, "                    \
    "lr = step_lr(opt->base_lr, s->gamma, 1, epoch - 1) set once before the loop over the batches"

/* Your epochs against the reference's variants: which mistake gives your numbers. */
static void diagnose_train(const TrainStats mine[2], const TrainStats ref[2], Run *yours, const Run *theirs) {
    static const struct {
        Variant v;
        const char *hint;
    } variants[] = {
        {{.no_zero_grad = true}, "the gradients were not zeroed before each backward "
                                 "(params_zero_grad): the backward adds (+=) into them"},
        {{.no_clip = true}, "the gradients were not clipped: clip_grad_norm(&m->params, s->clip) "
                            "between the backward and the optimiser step"},
        {{.no_schedule = true}, "epoch 2 trained with the learning rate of epoch 1: set "
                                "step_lr(opt->base_lr, s->gamma, 1, epoch - 1) at the start of each epoch"},
        {{.skip_last = true}, "the short last batch (2 rows of 5) was skipped: get_batch's "
                              "seq_len is shorter there, and transformer_set_seq_len takes it"},
        {{.unweighted = true}, "the loss is the mean of the batches' losses: weight each by its "
                               "seq_len * cols tokens (the last batch is shorter)"},
        {{.lr = LR_EPOCH}, "the learning rate is one epoch ahead: epoch 1 must train with the base rate, "
                           "step_lr(opt->base_lr, s->gamma, 1, epoch - 1) (StepLR counts from 0)"},
        {{.lr = LR_PER_BATCH}, LR_PER_BATCH_HINT},
        {{.lr = LR_PER_BATCH_EPOCH}, LR_PER_BATCH_HINT},
        {{.lr = LR_PER_BATCH_RESTART}, LR_PER_BATCH_HINT},
        {{.clip_per_tensor = true}, "each parameter's gradient was clipped alone: clip_grad_norm(&m->params, "
                                    "s->clip) scales all of them together, by one global norm over every "
                                    "gradient, so that the direction of the step stays"},
        {{.no_set_seq_len = true}, "the short last batch (2 rows of 5) ran with the model's full length: "
                                   "transformer_set_seq_len(m, b.seq_len) before every forward"},
        {{.bptt_weighted = true}, "each batch's loss was weighted by bptt * cols: weight it by its real "
                                  "b.seq_len * b.cols tokens (the last batch has 2 rows of 5)"},
        {{.no_train_mode = true}, "the epochs trained with dropout off: the model came in evaluation mode "
                                  "(as lesson_evaluate leaves it when it forgets transformer_train, or any "
                                  "caller's transformer_eval), and the loop must switch dropout on, "
                                  "transformer_train(m), before its first batch"},
    };
    /* the weights never moved: the gradients were zero at every step */
    Run fresh;
    run_init(&fresh, false, 0.5f, 0.3f, 4, 5, 95, 21);
    if (memcmp(fresh.m.params.values.data, yours->m.params.values.data,
               sizeof(float) * (size_t)fresh.m.params.total) == 0) {
        printf("the weights did not change in 2 epochs (mean gradient norm %g)\nhint: the optimiser "
               "stepped with zero gradients: params_zero_grad after transformer_forward_backward wipes "
               "what it computed; zero the gradients before it, and clip and step after it\n",
               mine[1].grad_norm);
        return;
    }
    /* the training itself right (losses and weights): the rate left behind, or the norm */
    const bool same_loss = fabs(mine[0].loss - ref[0].loss) <= 1e-5 * fabs(ref[0].loss) &&
                           fabs(mine[1].loss - ref[1].loss) <= 1e-5 * fabs(ref[1].loss);
    if (same_loss && same_params(theirs, yours)) {
        const float lr = optimizer_lr(&yours->opt);
        Run r;
        run_init(&r, false, 0.5f, 0.3f, 4, 5, 95, 21);
        const Variant after = {.norm_after_clip = true};
        reference_epoch(&r, 1, after);
        const TrainStats clipped = reference_epoch(&r, 2, after);
        const double per_token = ref[1].grad_norm * (double)ref[1].steps / (double)ref[1].tokens;
        if (fabsf(lr - 0.25f) > 1e-6f)
            printf("hint: the epochs trained with the right rates, but epoch 2 left the optimiser at %g: "
                   "the rate was set after the epoch, for the next one; set it at the start of each epoch, "
                   "optimizer_set_lr(opt, step_lr(opt->base_lr, s->gamma, 1, epoch - 1)), before the batches "
                   "(the program prints and logs the epoch's rate from the optimiser)\n", (double)lr);
        else if (fabs(mine[1].grad_norm - per_token) <= 1e-4 * per_token)
            printf("hint: the mean gradient norm was divided by st.tokens: it is a mean per step, the sum "
                   "of the norms / st.steps (the loss is the one weighted by tokens)\n");
        else if (fabs(mine[1].grad_norm - clipped.grad_norm) <= 1e-4 * clipped.grad_norm)
            printf("hint: the gradient norm was taken after clipping (at most s->clip = 0.3): use the norm "
                   "before it, as clip_grad_norm returns it (norm = clip_grad_norm(&m->params, s->clip))\n");
        else
            printf("hint: the losses and weights are right: st.grad_norm = the sum of each step's norm "
                   "(as clip_grad_norm returns it, before clipping) / st.steps\n");
        return;
    }
    for (size_t k = 0; k < sizeof variants / sizeof variants[0]; k++) {
        Run r;
        run_init(&r, false, 0.5f, 0.3f, 4, 5, 95, 21);
        TrainStats a = reference_epoch(&r, 1, variants[k].v), b = reference_epoch(&r, 2, variants[k].v);
        const bool loss_same = fabs(a.loss - mine[0].loss) <= 1e-5 * fabs(a.loss) &&
                               fabs(b.loss - mine[1].loss) <= 1e-5 * fabs(b.loss);
        if (loss_same && (variants[k].v.unweighted || variants[k].v.bptt_weighted || same_params(&r, yours))) {
            printf("hint: %s\n", variants[k].hint);
            return;
        }
    }
    printf("hint: per batch: get_batch, token_batch_load, transformer_set_seq_len, "
           "params_zero_grad, transformer_forward_backward, clip_grad_norm, optimizer_step\n");
}

static int check_train_epoch(void) {
    quiet_threads();
    Run mine, ref;
    run_init(&mine, false, 0.5f, 0.3f, 4, 5, 95, 21);
    run_init(&ref, false, 0.5f, 0.3f, 4, 5, 95, 21);
    TrainStats m[2], r[2];
    for (int e = 1; e <= 2; e++) {
        /* the model comes as an evaluation may leave it: dropout off (the loop turns it on) */
        transformer_eval(&mine.m);
        m[e - 1] = lesson_train_epoch(&mine.m, &mine.opt, &mine.data, &mine.s, e, &mine.tb);
        r[e - 1] = reference_epoch(&ref, e, (Variant){0});
        const TrainStats *a = &m[e - 1], *b = &r[e - 1];
        if (a->steps == b->steps && a->tokens == b->tokens) continue;
        const int64_t last = b->tokens - (b->steps - 1) * ref.s.bptt * ref.data.cols; /* 2 rows of 4 */
        printf("epoch %d on [%lld, %d] data, bptt 5: %lld steps and %lld tokens, expected %lld and %lld "
               "(the last batch has 2 rows)\nhint: %s\n", e, (long long)ref.data.rows, ref.data.cols,
               (long long)a->steps, (long long)a->tokens, (long long)b->steps, (long long)b->tokens,
               a->steps == b->steps && a->tokens == a->steps * ref.s.bptt * ref.data.cols
                   ? "each batch was counted as bptt * cols tokens: count its real b.seq_len * b.cols "
                     "(the last batch has 2 rows of 5), and weight its loss by the same"
               : a->steps == b->steps - 1 && a->tokens == b->tokens - last
                   ? "the short last batch (2 rows of 5) was skipped: it is a batch too, get_batch gives "
                     "it seq_len 2 (transformer_set_seq_len takes it); loop while i < rows - 1"
               : a->steps == b->steps - 1
                   ? "one batch too few: i = 0, bptt, 2 bptt, ... while i < rows - 1, the last one shorter"
               : a->steps == b->steps + 1
                   ? "one batch too many: i = 0, bptt, 2 bptt, ... while i < rows - 1 (the last row is "
                     "no input: it has no target)"
                   : "one step per batch, i = 0, bptt, 2 bptt, ... while i < rows - 1; st.tokens adds "
                     "b.seq_len * b.cols per step");
        return CHECK_FAIL;
    }
    bool ok = true;
    for (int e = 0; e < 2 && ok; e++) {
        const float a = (float)m[e].loss, b = (float)r[e].loss;
        char what[64];
        snprintf(what, sizeof what, "epoch %d: mean training loss", e + 1);
        ok = expect_close(what, &a, &b, 1, 1e-5f, 1e-5f);
    }
    ok = ok && expect_true(fabsf(optimizer_lr(&mine.opt) - 0.25f) < 1e-6f,
                           "the learning rate in epoch 2 is %g, expected 0.25 (0.5 x gamma 0.5)",
                           (double)optimizer_lr(&mine.opt));
    ok = ok && expect_close("the weights after 2 epochs", mine.m.params.values.data,
                            ref.m.params.values.data, ref.m.params.total, 1e-5f, 1e-4f);
    ok = ok && expect_true(fabs(m[1].grad_norm - r[1].grad_norm) <= 1e-4 * r[1].grad_norm,
                           "mean gradient norm %g, expected %g (before clipping)", m[1].grad_norm,
                           r[1].grad_norm);
    if (!ok) diagnose_train(m, r, &mine, &ref);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_max_steps(void) {
    quiet_threads();
    Run r;
    run_init(&r, true, 1e-3f, 0.5f, 4, 5, 95, 22);
    r.s.max_steps = 3;
    TrainStats st = lesson_train_epoch(&r.m, &r.opt, &r.data, &r.s, 1, &r.tb);
    if (st.steps == 3 && st.tokens == 3 * 5 * 4) return CHECK_PASS;
    printf("with max_steps 3: %lld steps, %lld tokens (expected 3 and 60)\nhint: %s\n", (long long)st.steps,
           (long long)st.tokens,
           st.steps == 4 ? "one step too many: stop before a step when st.steps >= s->max_steps (st.steps "
                           "counts the steps already taken), not when st.steps > s->max_steps"
           : st.steps == 2 ? "one step too few: stop before a step when st.steps >= s->max_steps, with "
                             "st.steps counted after each step (not before)"
           : st.steps == 3 ? "the steps are right, the tokens not: each step adds b.seq_len * b.cols"
                           : "before each batch: if (s->max_steps > 0 && st.steps >= s->max_steps) break;");
    return CHECK_FAIL;
}

/* The program's LossWatch (s->watch) sees every step's loss: a finite loss that climbs far
 * above its start stops the run only if the loop feeds it. */
static int check_watch(void) {
    quiet_threads();
    Run mine, ref;
    run_init(&mine, false, 0.5f, 0.3f, 4, 5, 95, 21);
    run_init(&ref, false, 0.5f, 0.3f, 4, 5, 95, 21);
    LossWatch w;
    loss_watch_init(&w, mine.cfg.vocab);
    mine.s.watch = &w;
    const TrainStats st = lesson_train_epoch(&mine.m, &mine.opt, &mine.data, &mine.s, 1, &mine.tb);
    ref.s.max_steps = 1;
    const TrainStats first = reference_epoch(&ref, 1, (Variant){0}); /* its loss: step 1's */
    if (!expect_true(w.seen == st.steps,
                     "the run's watch (s->watch) saw %d of the epoch's %lld steps\nhint: %s", w.seen,
                     (long long)st.steps,
                     w.seen == 0 ? "when s->watch is not NULL, loss_watch_step(s->watch, loss, st.steps + 1, lr) "
                                   "after each forward and backward (lib/train/loss_watch.h)"
                                 : "call loss_watch_step once per step, with that step's loss"))
        return CHECK_FAIL;
    return expect_true(fabs(w.first - first.loss) <= 1e-5 * fabs(first.loss),
                       "the watch's first loss is %g, the first step's loss is %g\nhint: pass "
                       "loss_watch_step the step's loss as the forward and backward returned it (not the "
                       "gradient norm or a running mean)", w.first, first.loss)
               ? CHECK_PASS
               : CHECK_FAIL;
}

/* The watch's message names the step it was given: the epoch's first step is step 1. A
 * watch that has seen a low first loss, then 18 far above it, stops the run at the
 * epoch's first step, with that step's number in its line. */
static void body_watch_step(void *arg) {
    (void)arg;
    quiet_threads();
    Run r;
    run_init(&r, false, 0.5f, 0.3f, 4, 5, 95, 21);
    LossWatch w;
    loss_watch_init(&w, r.cfg.vocab);
    loss_watch_step(&w, 1.0, 1, 0.5);
    for (int k = 2; k < LOSS_WATCH_STEPS; k++) loss_watch_step(&w, 1e6, k, 0.5);
    r.s.watch = &w;
    lesson_train_epoch(&r.m, &r.opt, &r.data, &r.s, 1, &r.tb);
    printf("the epoch went through\n");
}

static int check_watch_step(void) {
    ChildResult c;
    run_child(body_watch_step, NULL, &c);
    const char *line = strstr(c.out, "calls the library's");
    if (line) {
        printf("%.*s\n", (int)strcspn(line, "\n"), line);
        return CHECK_FAIL;
    }
    if (WIFEXITED(c.status) && WEXITSTATUS(c.status) == 1 && strstr(c.out, "at step 1)")) return CHECK_PASS;
    const char *at = strstr(c.out, "at step ");
    if (WIFEXITED(c.status) && WEXITSTATUS(c.status) == 1 && at) {
        printf("the watch stopped the run at the epoch's first step, and its message says \"%.*s\"\n"
               "hint: the step number goes to loss_watch_step counted from 1: st.steps + 1 (st.steps "
               "counts the steps before this one), as in \"where\" for train_stop_if_diverged\n",
               (int)strcspn(at, ")"), at);
        return CHECK_FAIL;
    }
    expect_exit("a watch that has seen a loss far above its start", &c, 1, "at step 1)", (const char *)NULL);
    return CHECK_FAIL;
}

/* A NaN loss: SGD at an absurd rate without clipping. Says when the weights never moved
 * (then no rate could make the loss NaN). */
static void body_diverge(void *arg) {
    (void)arg;
    quiet_threads();
    Run r;
    run_init(&r, false, 1e30f, 0.0f, 4, 5, 95, 23); /* no clipping, an absurd rate */
    Tensor start = copy_of(&r.m.params.values);
    lesson_train_epoch(&r.m, &r.opt, &r.data, &r.s, 1, &r.tb);
    lesson_train_epoch(&r.m, &r.opt, &r.data, &r.s, 2, &r.tb);
    printf("two epochs went through\n");
    if (memcmp(start.data, r.m.params.values.data, sizeof(float) * (size_t)start.size) == 0)
        printf("the weights never changed in them\n");
}

/* One step with clipping on (s->clip 0.3): whether clip_grad_norm gets s->clip. */
static void body_clip_step(void *arg) {
    (void)arg;
    quiet_threads();
    Run r;
    run_init(&r, false, 0.5f, 0.3f, 4, 5, 95, 21);
    r.s.max_steps = 1;
    lesson_train_epoch(&r.m, &r.opt, &r.data, &r.s, 1, &r.tb);
}

static int check_diverge(void) {
    ChildResult c;
    run_child(body_diverge, NULL, &c);
    /* a refused twin ends the child too: say that, not this check's own hint */
    const char *twin = strstr(c.out, "calls the library's");
    if (twin) {
        printf("%.*s\n(not judged: your loop stopped there, before a loss could become NaN)\n",
               (int)strcspn(twin, "\n"), twin);
        return CHECK_FAIL;
    }
    if (expect_exit("an SGD learning rate of 1e30 without clipping", &c, 1, "diverged", (const char *)NULL))
        return CHECK_PASS;
    if (strstr(c.out, "clip_grad_norm with max_norm 0:")) {
        ChildResult on;
        run_child(body_clip_step, NULL, &on);
        if (strstr(on.out, "clip_grad_norm with max_norm 0:"))
            printf("hint: clip_grad_norm was called with max_norm 0 (the library stops there) although "
                   "s->clip is 0.3 in a run that clips: pass the clip value, clip_grad_norm(&m->params, "
                   "s->clip)\n");
        else
            printf("hint: clip_grad_norm was called with this run's s->clip = 0 (the library stops there): "
                   "0 means no clipping, so clip only when s->clip > 0, else norm = grad_norm(&m->params)\n");
    } else if (strstr(c.out, "the weights never changed"))
        printf("hint: the loss could not become NaN because the weights never moved: the optimiser "
               "stepped with zero gradients (params_zero_grad after transformer_forward_backward wipes "
               "them; zero them before it)\n");
    else if (!(WIFEXITED(c.status) && WEXITSTATUS(c.status) == EXIT_TODO))
        printf("hint: after the forward and backward, train_stop_if_diverged(loss, \"epoch E, step S\", "
               "lr) (lib/train/loop.h) stops with a message when the loss is NaN or inf\n");
    return CHECK_FAIL;
}

/* ---------------------------------------------------------------- TODO 4.8 */

/* The evaluation the lesson describes, and its usual slips, on a fresh model: each its
 * loss per token (or the mean of the batches' means, or the full batches' alone). */
typedef enum { EV_RIGHT, EV_DROPOUT_ON, EV_NO_SEQ_LEN, EV_LOSS_FIRST, EV_INPUTS, EV_KINDS } EvalSlip;
typedef struct {
    double per_token, unweighted, full_only;
    int64_t tokens;
} EvalRef;

static EvalRef reference_evaluate(const TransformerConfig *cfg, const TextBatches *d, int bptt, EvalSlip slip) {
    Transformer m;
    transformer_init(&m, cfg, d->cols, bptt, 8);
    TokenBatch tb;
    token_batch_init(&tb, d->cols, bptt, DEVICE_CPU);
    if (slip == EV_DROPOUT_ON) transformer_train(&m);
    else transformer_eval(&m);
    const int blocks = transformer_block_count(cfg);
    double sum = 0, unweighted = 0, full_sum = 0;
    int64_t tokens = 0, batches = 0, full = 0;
    for (int64_t i = 0; i < d->rows - 1; i += bptt) {
        TextBatch b = text_get_batch(d, i, bptt);
        token_batch_load(&tb, &b);
        if (slip != EV_NO_SEQ_LEN) transformer_set_seq_len(&m, b.seq_len);
        double loss = slip == EV_LOSS_FIRST ? transformer_loss(&m, tb.targets) : 0; /* the last forward's logits */
        transformer_forward(&m, 0, blocks, tb.tokens, NULL);
        if (slip != EV_LOSS_FIRST) loss = transformer_loss(&m, slip == EV_INPUTS ? tb.tokens : tb.targets);
        const int64_t n = (int64_t)b.seq_len * b.cols;
        sum += loss * (double)n, unweighted += loss, batches++, tokens += n;
        if (b.seq_len == bptt) full_sum += loss * (double)n, full += n;
    }
    token_batch_free(&tb);
    transformer_free(&m);
    return (EvalRef){sum / (double)tokens, unweighted / (double)batches, full ? full_sum / (double)full : 0, tokens};
}

static int check_evaluate(void) {
    quiet_threads();
    const TransformerConfig cfg = tiny_config(31, 0.3f); /* dropout on: evaluation must turn it off */
    const int B = 3, bptt = 5;
    Transformer mine;
    transformer_init(&mine, &cfg, B, bptt, 8);
    TokenStream s = random_stream(3 * 17 + 2, cfg.vocab, 9); /* [17, 3]: the last batch 1 row */
    TextBatches d;
    text_batchify(&s, B, "valid", &d);
    TokenBatch tb;
    token_batch_init(&tb, B, bptt, DEVICE_CPU);
    EvalResult got = lesson_evaluate(&mine, &d, bptt, &tb);
    /* the reference: forward only, dropout off, each batch weighted by its tokens */
    EvalRef ref[EV_KINDS];
    for (int k = 0; k < EV_KINDS; k++) ref[k] = reference_evaluate(&cfg, &d, bptt, (EvalSlip)k);
    const float want = (float)ref[EV_RIGHT].per_token, loss = (float)got.loss;
    const float ppl = (float)got.ppl, want_ppl = expf(want);
    bool ok = expect_true(got.tokens == ref[EV_RIGHT].tokens, "%lld tokens evaluated, expected %lld (all of "
                          "[%lld, %d] data, the last batch of 1 row too)", (long long)got.tokens,
                          (long long)ref[EV_RIGHT].tokens, (long long)d.rows, d.cols);
    if (ok && !expect_close("loss", &loss, &want, 1, 1e-5f, 1e-5f)) {
        ok = false;
        const double tol = 1e-5 * fabs(want);
        if (fabs(got.loss - ref[EV_RIGHT].unweighted) < tol)
            printf("hint: the mean of the batches' losses: weight each by its seq_len * cols tokens\n");
        else if (fabs(got.loss - ref[EV_RIGHT].full_only) < tol)
            printf("hint: the short last batch was left out\n");
        else if (fabs(got.loss - ref[EV_INPUTS].per_token) < tol)
            printf("hint: that is the loss of predicting each input token itself: the targets are "
                   "tb->targets (each the next token), transformer_loss(m, tb->targets)\n");
        else if (fabs(got.loss - ref[EV_DROPOUT_ON].per_token) < tol)
            printf("hint: that is the loss with dropout on: transformer_eval(m) before the first batch\n");
        else if (fabs(got.loss - ref[EV_NO_SEQ_LEN].per_token) < tol)
            printf("hint: the short last batch (1 row of the [17, 3] data) was evaluated at the model's "
                   "length of 5 rows, 4 of them the previous batch's stale tokens: "
                   "transformer_set_seq_len(m, b.seq_len) before each forward\n");
        else if (fabs(got.loss - ref[EV_LOSS_FIRST].per_token) < tol)
            printf("hint: each batch's loss was taken before its forward: transformer_loss reads the "
                   "logits of the last transformer_forward (the batch before); forward first, then "
                   "transformer_loss(m, tb->targets)\n");
        else
            printf("hint: per batch: lesson_get_batch, token_batch_load, transformer_set_seq_len, "
                   "transformer_forward, then transformer_loss(m, tb->targets), with dropout off "
                   "(transformer_eval(m) first)\n");
    }
    ok = ok && expect_close("perplexity", &ppl, &want_ppl, 1, 0, 1e-4f);
    if (!ok && fabsf(ppl - want_ppl) > 1e-4f * want_ppl && fabs(got.ppl - exp(got.loss)) > 1e-4 * got.ppl)
        printf("hint: the perplexity is exp(mean loss per token)\n");
    ok = ok && expect_true(mine.blocks.training, "the model is still in evaluation mode afterwards: "
                           "transformer_train(m) at the end");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- all together */

/* A text a small model can learn: each token follows from the one before (x -> 7x + 3
 * mod V) four times in five, else a random one. Its best possible perplexity is
 * about 3 (of 24 words). */
static TokenStream learnable_stream(int64_t count, int V, uint64_t seed) {
    TokenStream s = {.ids = xmalloc((size_t)count * sizeof(int)), .count = count, .lines = 1};
    Rng rng;
    rng_seed(&rng, seed, 0);
    int x = 0;
    for (int64_t i = 0; i < count; i++) {
        x = rng_below(&rng, 5) ? (7 * x + 3) % V : (int)rng_below(&rng, (uint32_t)V);
        s.ids[i] = x;
    }
    return s;
}

static int check_learns(void) {
    quiet_threads();
    const TransformerConfig cfg = {.vocab = 24, .d_model = 32, .heads = 2, .d_ff = 48, .layers = 1,
                                   .max_len = 64, .dropout = 0.1f};
    const int B = 8, bptt = 12, eval_B = 4;
    TokenStream train_s = learnable_stream(6000, cfg.vocab, 1), valid_s = learnable_stream(1200, cfg.vocab, 2);
    TextBatches train, valid;
    lesson_batchify(&train_s, B, "train", &train);
    lesson_batchify(&valid_s, eval_B, "valid", &valid);
    Transformer m, e;
    transformer_init(&m, &cfg, B, bptt, 3);
    transformer_init(&e, &cfg, eval_B, bptt, 3);
    Transformer *both[2] = {&m, &e};
    for (int k = 0; k < 2; k++) {
        lesson_positional_table(transformer_positions(both[k]));
        lesson_use_my_layers(both[k]);
    }
    Optimizer opt;
    optimizer_init(&opt, &m.params, true, 6e-4f, 0.01f);
    TokenBatch tb, eb;
    token_batch_init(&tb, B, bptt, DEVICE_CPU);
    token_batch_init(&eb, eval_B, bptt, DEVICE_CPU);
    const TrainSettings s = {.bptt = bptt, .clip = 0.5f, .gamma = 0.95f};
    EvalResult before = lesson_evaluate(&e, &valid, bptt, &eb);
    printf("valid ppl before training %.2f\n", before.ppl);
    double last_train = INFINITY, last_ppl = before.ppl;
    bool ok = true;
    for (int epoch = 1; epoch <= 3 && ok; epoch++) {
        TrainStats tr = lesson_train_epoch(&m, &opt, &train, &s, epoch, &tb);
        tensor_copy(&e.params.values, &m.params.values);
        EvalResult v = lesson_evaluate(&e, &valid, bptt, &eb);
        printf("epoch %d: train loss %.4f, valid loss %.4f, valid ppl %.2f\n", epoch, tr.loss, v.loss, v.ppl);
        ok = expect_true(tr.loss < last_train, "the training loss did not fall in epoch %d", epoch) &&
             expect_true(v.ppl < last_ppl, "the valid perplexity did not fall in epoch %d", epoch);
        last_train = tr.loss, last_ppl = v.ppl;
    }
    ok = ok && expect_true(last_ppl < 6.0, "valid perplexity %.2f after 3 epochs: the text allows "
                           "about 3 (of 24 words), a model that learns gets below 6", last_ppl);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- given: FLOPs */

static int check_flops(void) {
    /* by hand, per token of the forward, multiply-adds: D=4, F=6, V=10, T=3, 2 layers:
     *   in_proj 4*12 + out_proj 4*4 + linear1 4*6 + linear2 6*4 = 112, attention
     *   4 * (3 + 1) = 16: 128 a layer; decoder 40; 2 * 128 + 40 = 296 -> x 6 = 1776 */
    const TransformerConfig tiny = {.vocab = 10, .d_model = 4, .heads = 2, .d_ff = 6, .layers = 2,
                                    .max_len = 8, .dropout = 0};
    const double got = transformer_train_flops_per_token(&tiny, 3);
    /* the seed's model with WikiText-2's 28,782 words at T = 35:
     *   per layer 4 * 1024^2 + 2 * 1024^2 + 1024 * 36 = 6,328,320; decoder 29,472,768 */
    const TransformerConfig seed = transformer_config_seed(28782);
    const double want_seed = 6.0 * (3 * 6328320.0 + 29472768.0);
    bool ok = expect_true(got == 1776.0, "tiny model: %g FLOPs per token, counted by hand 1776", got) &&
              expect_true(fabs(transformer_train_flops_per_token(&seed, 35) - want_seed) < 1.0,
                          "the seed's model: %g, expected %g", transformer_train_flops_per_token(&seed, 35), want_seed);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_signal_hint(SIGSEGV, "an optional gradient like din (NULL where no gradient is wanted) used "
                               "without a check, or a row past the batch's T rows");
    /* 4.7 and 4.8 take their batches from your get_batch */
    check_needs("TODO 4.7", "4.1");
    check_needs("TODO 4.8", "4.1");
    check_begin("lesson 04: transformer");
    check_run("TODO 4.1", "batchify matches the library on 12 odd sizes", check_batchify, 30);
    check_run("TODO 4.1", "get_batch: input, target and seq_len at every i, the last batch shorter", check_get_batch, 30);
    check_run("TODO 4.2", "positional table matches the library (sin even, cos odd columns)", check_positional, 30);
    check_run("TODO 4.3", "attention forward matches the library on 14 shapes, 1 to 64 positions", check_attention_forward, 30);
    check_run("TODO 4.3", "attention forward with dropout: the same weights as the library", check_attention_dropout, 30);
    check_run("TODO 4.3", "scores of several hundred stay finite (the max trick)", check_attention_large, 30);
    check_run("TODO 4.4", "attention backward matches the library on 13 shapes, 1 to 64 positions (dqkv added to, dropout on and off)", check_attention_backward, 30);
    check_run("TODO 4.4", "attention backward agrees with finite differences", check_attention_numeric, 30);
    check_run("TODO 4.5", "layer norm forward: out, mean and rstd match the library", check_layernorm_forward, 30);
    check_run("TODO 4.6", "layer norm backward matches the library (added to; din NULL)", check_layernorm_backward, 30);
    check_run("TODO 4.6", "layer norm backward agrees with finite differences", check_layernorm_numeric, 30);
    check_run("TODO 4.2-4.6", "your layers inside the model: the library's loss and gradients at 7, 37 and 64 positions", check_layers_in_model, 30);
    check_run("TODO 4.7", "train_epoch: the reference loop's losses and weights (clip, StepLR, short batch)", check_train_epoch, 30);
    check_run("TODO 4.7", "max_steps stops the epoch", check_max_steps, 30);
    check_run("TODO 4.7", "a NaN loss stops the training with a message", check_diverge, 30);
    check_run("TODO 4.7", "every step's loss goes to the run's watch (a finite divergence stops it)", check_watch, 30);
    check_run("TODO 4.7", "the watch's message names the step from 1", check_watch_step, 30);
    check_run("TODO 4.8", "evaluate: loss and perplexity of a split, the short last batch weighted", check_evaluate, 30);
    check_run("TODO 4.1-4.8", "3 epochs on a learnable text: loss and valid perplexity fall", check_learns, 40);
    check_run(NULL, "given: model FLOPs per token from the shapes", check_flops, 30);
    return check_end();
}
