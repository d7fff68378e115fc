/* Unit tests of the transformer's layers (lib/layers: embedding, positional, layernorm,
 * dropout, gelu, add), each against its definition and its backward against finite
 * differences (tests/framework/gradcheck.h); the attention and the fast cross-entropy
 * are in test_layers_attention.c, the comparisons with PyTorch in
 * test_layers_transformer_reference.c. Also: repeated tokens, a token outside the
 * vocabulary, dropout's statistics and its determinism, backward passes that add (+=),
 * and the same bits on 1 and 2 threads.
 *
 * Tolerances of the gradient checks (eps = 1e-2, 1e-3 absolute + 2e-3 relative, as
 * gradcheck.h explains): the embedding, positional encoding, dropout and addition are
 * linear in each input, so the central difference has no truncation error; layer norm
 * and GELU are smooth with third derivatives of order 10 at these inputs, so eps^2/6
 * of it stays near 1e-4, under the tolerance. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/tensor.h"
#include "framework/check.h"
#include "framework/gradcheck.h"
#include "framework/tensors.h"
#include "layers/add.h"
#include "layers/dropout.h"
#include "layers/embedding.h"
#include "layers/gelu.h"
#include "layers/layernorm.h"
#include "layers/positional.h"

/* The gradient checks run thousands of tiny forwards on one thread (each parallel
 * region's barrier can cost a scheduler tick on a loaded machine); what several
 * threads do is checked by check_threads. Each check is a child process, so the
 * setting does not leak. */

/* ------------------------------------------------------------ embedding */

typedef struct {
    Tensor table, out, R;
    const int *tokens;
    float scale;
} EmbSetup;

static double emb_objective(void *ctx) {
    EmbSetup *s = ctx;
    embedding_forward(&s->out, s->tokens, &s->table, s->scale);
    return weighted_sum(&s->out, &s->R);
}

static int check_embedding(void) {
    omp_set_num_threads(1);
    enum { V = 6, D = 5, N = 8 };
    const int tokens[N] = {2, 0, 2, 5, 2, 1, 0, 3}; /* 2 three times, 0 twice, 4 never */
    EmbSetup s = {random2(1, V, D), tensor_zeros(2, N, D), random2(2, N, D), tokens, 1.7f};
    embedding_forward(&s.out, tokens, &s.table, s.scale);
    bool ok = true;
    for (int n = 0; ok && n < N; n++)
        for (int d = 0; ok && d < D; d++)
            ok = expect_true(s.out.data[n * D + d] == s.table.data[tokens[n] * D + d] * s.scale,
                             "out[%d][%d] = %g, expected table[%d][%d] * %g", n, d,
                             s.out.data[n * D + d], tokens[n], d, s.scale);
    /* backward: each row of dtable is scale times the sum of dout over its occurrences */
    Tensor dtable = tensor_zeros(2, V, D);
    embedding_backward(&dtable, &s.R, tokens, s.scale);
    for (int v = 0; ok && v < V; v++)
        for (int d = 0; ok && d < D; d++) {
            double want = 0;
            for (int n = 0; n < N; n++)
                if (tokens[n] == v) want += (double)s.scale * s.R.data[n * D + d];
            ok = expect_true(fabs(dtable.data[v * D + d] - want) <= 1e-6,
                             "dtable[%d][%d] = %.7g, expected %.7g (token %d occurs %s)", v, d,
                             dtable.data[v * D + d], want, v, v == 2 ? "3 times" : "once or never");
        }
    ok = ok && fd_check("embedding d table", s.table.data, dtable.data, s.table.size,
                        emb_objective, &s, 1e-2f, 1e-3, 2e-3);
    FREE_ALL(&s.table, &s.out, &s.R, &dtable);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void embed_bad_token(void *arg) {
    (void)arg;
    Tensor table = tensor_zeros(2, 7, 3), out = tensor_zeros(2, 3, 3);
    const int tokens[3] = {0, 6, 7};
    embedding_forward(&out, tokens, &table, 1.0f);
}

static void embed_negative_token_backward(void *arg) {
    (void)arg;
    Tensor dtable = tensor_zeros(2, 7, 3), dout = tensor_zeros(2, 2, 3);
    const int tokens[2] = {-1, 0};
    embedding_backward(&dtable, &dout, tokens, 1.0f);
}

static int check_embedding_bad_token(void) {
    ChildResult r;
    run_child(embed_bad_token, NULL, &r);
    bool ok = expect_exit("token 7 with a vocabulary of 7", &r, 2, "embedding.c",
                          "token 7 at position 2", "0..6", (const char *)NULL);
    run_child(embed_negative_token_backward, NULL, &r);
    ok = expect_exit("token -1 in the backward", &r, 2, "token -1 at position 0",
                     (const char *)NULL) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ positional encoding */

static int check_positional(void) {
    enum { MAX_LEN = 50, D = 12, B = 3, T = 7 };
    Tensor table = tensor_zeros(2, MAX_LEN, D);
    positional_table_fill(&table);
    bool ok = true;
    /* the definition in double: the float rounding of t * w_i moves the angle by at
     * most 2^-24 * 50 here, sin and cos by as much */
    for (int t = 0; ok && t < MAX_LEN; t++)
        for (int i = 0; ok && 2 * i < D; i++) {
            double w = exp(2.0 * i * -log(10000.0) / D);
            ok = expect_true(fabs(table.data[t * D + 2 * i] - sin(t * w)) < 1e-5 &&
                                 fabs(table.data[t * D + 2 * i + 1] - cos(t * w)) < 1e-5,
                             "pe[%d][%d..%d] = %.7g, %.7g; expected sin %.7g, cos %.7g", t,
                             2 * i, 2 * i + 1, table.data[t * D + 2 * i],
                             table.data[t * D + 2 * i + 1], sin(t * w), cos(t * w));
        }
    /* row b*T + t gets table row t; in place works */
    Tensor in = random2(10, B * T, D), out = tensor_zeros(2, B * T, D), copy = tensor_zeros(2, B * T, D);
    tensor_copy(&copy, &in);
    positional_forward(&out, &in, &table, T);
    positional_forward(&copy, &copy, &table, T);
    for (int r = 0; ok && r < B * T; r++)
        for (int d = 0; ok && d < D; d++)
            ok = expect_true(out.data[r * D + d] == in.data[r * D + d] + table.data[(r % T) * D + d],
                             "row %d (sequence %d, position %d), column %d wrong", r, r / T, r % T, d);
    ok = ok && expect_close("positional encoding in place", copy.data, out.data, out.size, 0, 0);
    FREE_ALL(&table, &in, &out, &copy);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void positional_odd(void *arg) {
    (void)arg;
    Tensor table = tensor_zeros(2, 10, 7);
    positional_table_fill(&table);
}

static void positional_too_long(void *arg) {
    (void)arg;
    Tensor table = tensor_zeros(2, 10, 8), x = tensor_zeros(2, 22, 8);
    positional_forward(&x, &x, &table, 11);
}

static int check_positional_errors(void) {
    ChildResult r;
    run_child(positional_odd, NULL, &r);
    bool ok = expect_exit("odd d_model", &r, 2, "d_model 7 is odd", (const char *)NULL);
    run_child(positional_too_long, NULL, &r);
    ok = expect_exit("sequence longer than the table", &r, 2, "sequence length 11",
                     "10 positions", (const char *)NULL) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ layer norm */

typedef struct {
    Tensor in, gamma, beta, out, mean, rstd, R;
} LnSetup;

static LnSetup ln_setup(uint64_t seed, int N, int D) {
    LnSetup s = {random2(seed, N, D), random1(seed + 1, D), random1(seed + 2, D),
                 tensor_zeros(2, N, D), tensor_zeros(1, N), tensor_zeros(1, N),
                 random2(seed + 3, N, D)};
    for (int64_t i = 0; i < s.in.size; i++) s.in.data[i] = 2.0f * s.in.data[i] + 0.5f;
    for (int j = 0; j < D; j++) s.gamma.data[j] += 1.5f; /* gains in [0.5, 2.5) */
    return s;
}

static void ln_free(LnSetup *s) { FREE_ALL(&s->in, &s->gamma, &s->beta, &s->out, &s->mean, &s->rstd, &s->R); }

static double ln_objective(void *ctx) {
    LnSetup *s = ctx;
    layernorm_forward(&s->out, &s->mean, &s->rstd, &s->in, &s->gamma, &s->beta, LAYERNORM_EPS);
    return weighted_sum(&s->out, &s->R);
}

static int check_layernorm(void) {
    omp_set_num_threads(1);
    const int cases[][2] = {{5, 7}, {3, 64}, {2, 1}, {4, 33}};
    bool ok = true;
    for (size_t k = 0; ok && k < sizeof cases / sizeof cases[0]; k++) {
        const int N = cases[k][0], D = cases[k][1];
        LnSetup s = ln_setup(100 + 10 * k, N, D);
        layernorm_forward(&s.out, &s.mean, &s.rstd, &s.in, &s.gamma, &s.beta, LAYERNORM_EPS);
        for (int n = 0; ok && n < N; n++) { /* the definition in double */
            double mu = 0, var = 0;
            for (int j = 0; j < D; j++) mu += s.in.data[n * D + j];
            mu /= D;
            for (int j = 0; j < D; j++) var += (s.in.data[n * D + j] - mu) * (s.in.data[n * D + j] - mu);
            var /= D;
            const double rstd = 1.0 / sqrt(var + 1e-5);
            ok = expect_true(fabs(s.mean.data[n] - mu) <= 1e-6 * (1 + fabs(mu)) &&
                                 fabs(s.rstd.data[n] - rstd) <= 1e-6 * rstd,
                             "row %d: mean %.8g rstd %.8g, expected %.8g and %.8g", n,
                             s.mean.data[n], s.rstd.data[n], mu, rstd);
            for (int j = 0; ok && j < D; j++) {
                double want = (s.in.data[n * D + j] - mu) * rstd * s.gamma.data[j] + s.beta.data[j];
                ok = expect_true(fabs(s.out.data[n * D + j] - want) <= 2e-6 * (1 + fabs(want)),
                                 "out[%d][%d] = %.8g, expected %.8g", n, j, s.out.data[n * D + j], want);
            }
        }
        Tensor din = tensor_zeros(2, N, D), dg = tensor_zeros(1, D), db = tensor_zeros(1, D);
        Tensor dg2 = tensor_zeros(1, D), db2 = tensor_zeros(1, D);
        layernorm_backward(&din, &dg, &db, &s.R, &s.in, &s.mean, &s.rstd, &s.gamma);
        ok = ok && fd_check("layer norm d input", s.in.data, din.data, din.size, ln_objective, &s, 1e-2f, 1e-3, 2e-3);
        ok = ok && fd_check("layer norm d gamma", s.gamma.data, dg.data, D, ln_objective, &s, 1e-2f, 1e-3, 2e-3);
        ok = ok && fd_check("layer norm d beta", s.beta.data, db.data, D, ln_objective, &s, 1e-2f, 1e-3, 2e-3);
        /* din = NULL: the same parameter gradients */
        layernorm_backward(NULL, &dg2, &db2, &s.R, &s.in, &s.mean, &s.rstd, &s.gamma);
        ok = ok && expect_close("d gamma without din", dg2.data, dg.data, D, 0, 0);
        ok = ok && expect_close("d beta without din", db2.data, db.data, D, 0, 0);
        if (!ok) printf("case: in [%d, %d]\n", N, D);
        FREE_ALL(&din, &dg, &db, &dg2, &db2);
        ln_free(&s);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ GELU */

typedef struct {
    Tensor in, out, R;
} GeluSetup;

static double gelu_objective(void *ctx) {
    GeluSetup *s = ctx;
    gelu_forward(&s->out, &s->in);
    return weighted_sum(&s->out, &s->R);
}

static int check_gelu(void) {
    omp_set_num_threads(1);
    GeluSetup s = {random2(200, 9, 11), tensor_zeros(2, 9, 11), random2(201, 9, 11)};
    for (int64_t i = 0; i < s.in.size; i++) s.in.data[i] *= 4.0f; /* [-4, 4): both tails */
    gelu_forward(&s.out, &s.in);
    bool ok = true;
    for (int64_t i = 0; ok && i < s.in.size; i++) {
        const double x = s.in.data[i], want = 0.5 * x * (1 + erf(x / sqrt(2.0)));
        ok = expect_true(fabs(s.out.data[i] - want) <= 1e-6 * (1 + fabs(want)),
                         "gelu(%.7g) = %.8g, expected %.8g", x, s.out.data[i], want);
    }
    Tensor din = tensor_zeros(2, 9, 11);
    gelu_backward(&din, &s.R, &s.in);
    ok = ok && fd_check("gelu d input", s.in.data, din.data, din.size, gelu_objective, &s, 1e-2f, 1e-3, 2e-3);
    FREE_ALL(&s.in, &s.out, &s.R, &din);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ add */

static int check_add(void) {
    Tensor a = random2(300, 6, 5), b = random2(301, 6, 5), out = tensor_zeros(2, 6, 5);
    Tensor dout = random2(302, 6, 5), da = random2(303, 6, 5), db = tensor_zeros(2, 6, 5);
    Tensor da0 = tensor_zeros(2, 6, 5);
    tensor_copy(&da0, &da);
    add_forward(&out, &a, &b);
    bool ok = true;
    for (int64_t i = 0; ok && i < a.size; i++)
        ok = expect_true(out.data[i] == a.data[i] + b.data[i], "out[%lld] wrong", (long long)i);
    add_backward(&da, &db, &dout);
    for (int64_t i = 0; ok && i < a.size; i++)
        ok = expect_true(da.data[i] == da0.data[i] + dout.data[i] && db.data[i] == dout.data[i],
                         "add backward: entry %lld does not add dout", (long long)i);
    add_backward(NULL, &db, &dout); /* one summand without a gradient */
    for (int64_t i = 0; ok && i < a.size; i++)
        ok = expect_true(db.data[i] == dout.data[i] + dout.data[i], "db after two backwards wrong");
    add_forward(&a, &a, &b); /* in place: a += b */
    ok = ok && expect_close("add in place", a.data, out.data, a.size, 0, 0);
    FREE_ALL(&a, &b, &out, &dout, &da, &db, &da0);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ dropout */

/* Runs dropout with a fresh Rng(seed) and returns the share of dropped entries;
 * checks that every output is 0 or in * 1/(1-p) and that the mask says which. */
static bool dropout_run(Tensor *out, Tensor *mask, const Tensor *in, float p, uint64_t seed,
                        double *dropped) {
    Rng rng;
    rng_seed(&rng, seed, 3);
    dropout_forward(out, mask, in, p, true, &rng);
    const float keep = 1.0f / (1.0f - p);
    int64_t zeros = 0;
    for (int64_t i = 0; i < in->size; i++) {
        const bool kept = mask->data[i] != 0.0f;
        zeros += !kept;
        if (!expect_true(kept ? mask->data[i] == keep && out->data[i] == in->data[i] * keep
                              : out->data[i] == 0.0f,
                         "p = %g, entry %lld: in %g, mask %g, out %g (keep scale %g)", p,
                         (long long)i, in->data[i], mask->data[i], out->data[i], keep))
            return false;
    }
    *dropped = (double)zeros / (double)in->size;
    return true;
}

static int check_dropout_statistics(void) {
    enum { N = 200000 };
    Tensor in = tensor_zeros(1, N), out = tensor_zeros(1, N), mask = tensor_zeros(1, N);
    fill_uniform(in.data, N, 400, 0.5f, 1.5f);
    bool ok = true;
    const float ps[] = {0.1f, 0.2f, 0.5f, 0.9f};
    for (size_t k = 0; ok && k < sizeof ps / sizeof ps[0]; k++) {
        const float p = ps[k];
        double dropped;
        ok = dropout_run(&out, &mask, &in, p, 41 + k, &dropped);
        /* binomial: standard deviation sqrt(p (1-p) / N) <= 1.2e-3; 5 of them */
        const double sigma = sqrt(p * (1.0 - p) / N);
        ok = ok && expect_true(fabs(dropped - p) < 5 * sigma,
                               "p = %g: %.5f of the entries dropped (5 sigma: %.5f)", p, dropped, 5 * sigma);
        /* neighbours independent: both of a pair dropped with probability p^2 */
        int64_t both = 0;
        for (int64_t i = 0; i + 1 < N; i += 2) both += mask.data[i] == 0.0f && mask.data[i + 1] == 0.0f;
        const double pairs = N / 2, share = both / pairs, s2 = sqrt(p * p * (1 - p * p) / pairs);
        ok = ok && expect_true(fabs(share - (double)p * p) < 5 * s2,
                               "p = %g: %.5f of neighbour pairs both dropped, expected %.5f", p,
                               share, (double)p * p);
        /* the mean is kept (inverted dropout): E[out] = E[in] = 1 */
        double mean = 0;
        for (int64_t i = 0; i < N; i++) mean += out.data[i];
        mean /= N;
        ok = ok && expect_true(fabs(mean - 1.0) < 6 * sqrt((double)p / (1 - p) / N) + 1e-3,
                               "p = %g: mean output %.5f, expected 1 (inverted scaling)", p, mean);
    }
    FREE_ALL(&in, &out, &mask);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_dropout_determinism(void) {
    enum { N = 100000 };
    Tensor in = tensor_zeros(1, N), m1 = tensor_zeros(1, N), m2 = tensor_zeros(1, N);
    Tensor m3 = tensor_zeros(1, N), out = tensor_zeros(1, N);
    fill_uniform(in.data, N, 500, -1, 1);
    Rng a, b;
    rng_seed(&a, 9, 1);
    rng_seed(&b, 9, 1);
    omp_set_num_threads(1);
    dropout_forward(&out, &m1, &in, 0.3f, true, &a);
    omp_set_num_threads(2);
    dropout_forward(&out, &m2, &in, 0.3f, true, &b);
    bool ok = expect_true(memcmp(m1.data, m2.data, sizeof(float) * N) == 0,
                          "the same seed on 1 and 2 threads gives different masks");
    ok = ok && expect_true(a.state == b.state, "the Rng advanced differently");
    dropout_forward(&out, &m3, &in, 0.3f, true, &a); /* the next call: a new mask */
    int64_t same = 0;
    for (int64_t i = 0; i < N; i++) same += m1.data[i] == m3.data[i];
    ok = ok && expect_true(same < N * 0.7, "two calls in a row gave %.1f%% the same mask entries "
                                           "(independent masks: 58%%)", 100.0 * same / N);
    /* evaluation and p = 0: the identity, mask all 1, nothing drawn */
    const Rng before = a;
    dropout_forward(&out, &m3, &in, 0.3f, false, &a);
    ok = ok && expect_close("evaluation output", out.data, in.data, N, 0, 0);
    for (int64_t i = 0; ok && i < N; i++) ok = expect_true(m3.data[i] == 1.0f, "evaluation mask not 1");
    fill_uniform(out.data, N, 501, -1, 1);
    dropout_forward(&out, NULL, &in, 0.0f, true, &a);
    ok = ok && expect_close("p = 0 output", out.data, in.data, N, 0, 0);
    ok = ok && expect_true(a.state == before.state, "the identity drew from the Rng");
    /* p = 1: everything dropped */
    dropout_forward(&out, &m3, &in, 1.0f, true, &a);
    for (int64_t i = 0; ok && i < N; i++)
        ok = expect_true(out.data[i] == 0.0f && m3.data[i] == 0.0f, "p = 1 kept entry %lld", (long long)i);
    FREE_ALL(&in, &m1, &m2, &m3, &out);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

typedef struct {
    Tensor in, out, mask, R;
    float p;
} DropSetup;

static double drop_objective(void *ctx) {
    DropSetup *s = ctx;
    Rng rng;
    rng_seed(&rng, 77, 0); /* the same mask at every probe */
    dropout_forward(&s->out, &s->mask, &s->in, s->p, true, &rng);
    return weighted_sum(&s->out, &s->R);
}

static int check_dropout_grad(void) {
    omp_set_num_threads(1);
    DropSetup s = {random2(600, 7, 9), tensor_zeros(2, 7, 9), tensor_zeros(2, 7, 9), random2(601, 7, 9), 0.4f};
    drop_objective(&s);
    Tensor din = random2(602, 7, 9), din0 = tensor_zeros(2, 7, 9);
    tensor_copy(&din0, &din);
    dropout_backward(&din, &s.R, &s.mask);
    bool ok = true;
    for (int64_t i = 0; ok && i < din.size; i++)
        ok = expect_true(din.data[i] == din0.data[i] + s.R.data[i] * s.mask.data[i],
                         "din[%lld] is not din + dout * mask", (long long)i);
    Tensor g = tensor_zeros(2, 7, 9);
    dropout_backward(&g, &s.R, &s.mask);
    ok = ok && fd_check("dropout d input", s.in.data, g.data, g.size, drop_objective, &s, 1e-2f, 1e-3, 2e-3);
    tensor_fill(&g, 0.0f);
    dropout_backward(&g, &s.R, NULL); /* no mask: the identity */
    ok = ok && expect_close("dropout backward without a mask", g.data, s.R.data, g.size, 0, 0);
    FREE_ALL(&s.in, &s.out, &s.mask, &s.R, &din, &din0, &g);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void dropout_no_mask(void *arg) {
    (void)arg;
    Tensor x = tensor_zeros(1, 10);
    Rng rng;
    rng_seed(&rng, 1, 1);
    dropout_forward(&x, NULL, &x, 0.5f, true, &rng);
}

static void dropout_bad_p(void *arg) {
    (void)arg;
    Tensor x = tensor_zeros(1, 10), m = tensor_zeros(1, 10);
    dropout_forward(&x, &m, &x, 1.5f, false, NULL);
}

static int check_dropout_errors(void) {
    ChildResult r;
    run_child(dropout_no_mask, NULL, &r);
    bool ok = expect_exit("training dropout without a mask", &r, 2, "needs a mask", (const char *)NULL);
    run_child(dropout_bad_p, NULL, &r);
    ok = expect_exit("p = 1.5", &r, 2, "1.5 outside [0, 1]", (const char *)NULL) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ threads, += */

/* Sizes above each layer's threshold for going parallel. */
static int check_threads(void) {
    enum { V = 50, N = 400, D = 200 };
    int tokens[N];
    for (int n = 0; n < N; n++) tokens[n] = (n * 7) % V; /* every token 8 times */
    Tensor table = random2(700, V, D), dout = random2(701, N, D), in = random2(702, N, D);
    LnSetup ln = ln_setup(703, N, D);
    Tensor out[2], dtable[2], lnout[2], mean[2], rstd[2], din[2], dg[2], db[2], gin[2];
    for (int t = 0; t < 2; t++) {
        omp_set_num_threads(t + 1);
        out[t] = tensor_zeros(2, N, D), dtable[t] = tensor_zeros(2, V, D);
        lnout[t] = tensor_zeros(2, N, D), mean[t] = tensor_zeros(1, N), rstd[t] = tensor_zeros(1, N);
        din[t] = tensor_zeros(2, N, D), dg[t] = tensor_zeros(1, D), db[t] = tensor_zeros(1, D);
        gin[t] = tensor_zeros(2, N, D);
        embedding_forward(&out[t], tokens, &table, 3.0f);
        embedding_backward(&dtable[t], &dout, tokens, 3.0f);
        layernorm_forward(&lnout[t], &mean[t], &rstd[t], &ln.in, &ln.gamma, &ln.beta, LAYERNORM_EPS);
        layernorm_backward(&din[t], &dg[t], &db[t], &dout, &ln.in, &mean[t], &rstd[t], &ln.gamma);
        gelu_backward(&gin[t], &dout, &in);
    }
    bool ok = bits_equal("embedding forward", &out[0], &out[1]);
    ok = bits_equal("embedding backward (repeated tokens)", &dtable[0], &dtable[1]) && ok;
    ok = bits_equal("layer norm forward", &lnout[0], &lnout[1]) && ok;
    ok = bits_equal("layer norm rstd", &rstd[0], &rstd[1]) && ok;
    ok = bits_equal("layer norm d input", &din[0], &din[1]) && ok;
    ok = bits_equal("layer norm d gamma", &dg[0], &dg[1]) && ok;
    ok = bits_equal("layer norm d beta", &db[0], &db[1]) && ok;
    ok = bits_equal("gelu backward", &gin[0], &gin[1]) && ok;
    for (int t = 0; t < 2; t++) FREE_ALL(&out[t], &dtable[t], &lnout[t], &mean[t], &rstd[t], &din[t], &dg[t], &db[t], &gin[t]);
    FREE_ALL(&table, &dout, &in);
    ln_free(&ln);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Fills each gradient with P, runs the backward, and compares with P + the gradient
 * from zeros (to the rounding of that one addition). */
/* A gradient buffer filled with P, the same from zero, and P itself. */
typedef struct {
    Tensor from_zero, from_p, p;
} Added;

static Added added_make(uint64_t seed, int rows, int cols) {
    Added a = {tensor_zeros(2, rows, cols), random2(seed, rows, cols), tensor_zeros(2, rows, cols)};
    tensor_copy(&a.p, &a.from_p);
    return a;
}

static bool added_check(const char *what, Added *a) {
    bool ok = expect_added(what, &a->from_p, &a->p, &a->from_zero, 1e-6f);
    FREE_ALL(&a->from_zero, &a->from_p, &a->p);
    return ok;
}

static int check_backward_adds(void) {
    enum { V = 5, N = 6, D = 8 };
    const int tokens[N] = {1, 4, 1, 0, 2, 1};
    Tensor dout = random2(800, N, D), in = random2(801, N, D);
    LnSetup ln = ln_setup(820, N, D);
    layernorm_forward(&ln.out, &ln.mean, &ln.rstd, &ln.in, &ln.gamma, &ln.beta, LAYERNORM_EPS);
    Added dtable = added_make(810, V, D), din = added_make(811, N, D), dgelu = added_make(812, N, D);
    Added dg = added_make(813, 1, D), db = added_make(814, 1, D);
    for (int pass = 0; pass < 2; pass++) {
        Tensor *t = pass == 0 ? &dtable.from_zero : &dtable.from_p;
        embedding_backward(t, &dout, tokens, 2.0f);
        Tensor g = tensor_view(pass == 0 ? &dg.from_zero : &dg.from_p, 1, D);
        Tensor b = tensor_view(pass == 0 ? &db.from_zero : &db.from_p, 1, D);
        layernorm_backward(pass == 0 ? &din.from_zero : &din.from_p, &g, &b, &dout, &ln.in,
                           &ln.mean, &ln.rstd, &ln.gamma);
        gelu_backward(pass == 0 ? &dgelu.from_zero : &dgelu.from_p, &dout, &in);
    }
    bool ok = added_check("embedding d table", &dtable);
    ok = added_check("layer norm d input", &din) && ok;
    ok = added_check("layer norm d gamma", &dg) && ok;
    ok = added_check("layer norm d beta", &db) && ok;
    ok = added_check("gelu d input", &dgelu) && ok;
    FREE_ALL(&dout, &in);
    ln_free(&ln);
    return ok ? CHECK_PASS : CHECK_FAIL; /* dropout and add: in their own checks */
}

int main(void) {
    check_begin("transformer layers");
    check_run(NULL, "embedding: forward, repeated tokens in the backward, finite differences", check_embedding, 30);
    check_run(NULL, "embedding: a token outside the vocabulary stops with its position", check_embedding_bad_token, 10);
    check_run(NULL, "positional encoding: table by definition, rows added per position, in place", check_positional, 10);
    check_run(NULL, "positional encoding: odd d_model, sequence longer than the table", check_positional_errors, 10);
    check_run(NULL, "layer norm: forward vs double, backward vs finite differences, din = NULL", check_layernorm, 60);
    check_run(NULL, "gelu: forward vs erf in double, backward vs finite differences", check_gelu, 30);
    check_run(NULL, "add: forward, backward into both summands, NULL, in place", check_add, 10);
    check_run(NULL, "dropout: share dropped, independence, scale, mean kept (p 0.1 to 0.9)", check_dropout_statistics, 30);
    check_run(NULL, "dropout: same seed same mask on 1 and 2 threads; eval, p = 0, p = 1", check_dropout_determinism, 30);
    check_run(NULL, "dropout: backward din += dout * mask, finite differences", check_dropout_grad, 30);
    check_run(NULL, "dropout: training without a mask, p outside [0, 1]", check_dropout_errors, 10);
    check_run(NULL, "embedding, layer norm, gelu: same bits on 1 and 2 threads", check_threads, 30);
    check_run(NULL, "embedding, layer norm, gelu backward add (+=) into their gradients", check_backward_adds, 10);
    return check_end();
}
