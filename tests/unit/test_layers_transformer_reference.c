/* The transformer's layers against PyTorch 1.13 (tests/reference/transformer_reference.h,
 * made by tests/reference/make_transformer_reference.py): each layer's outputs and
 * gradients, nn.MultiheadAttention with a causal mask rebuilt from linear + attention
 * + linear, and the whole TransformerModel of PyTorch's tutorial (2 layers, dropout 0)
 * rebuilt from the library's layers: hidden states, logits, loss and the gradient of
 * every parameter, loaded by its PyTorch name.
 *
 * Tolerances: both sides compute in float32 but sum in different orders (PyTorch's
 * vectorised kernels, OpenBLAS here), so each value carries a few float roundings of
 * its largest terms. Measured (PyTorch 1.13, x86-64 with AVX-512): at most 1e-6 on any
 * layer's value or gradient, 3e-7 on the model's hidden states and logits, 4e-8 on
 * its parameter gradients (values of order 0.01 to 1). Allowed: 2e-6 + 1e-5 relative,
 * room for other machines' kernels, still far below what a wrong term, index or
 * scale changes (order of the values themselves). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tensor.h"
#include "framework/check.h"
#include "framework/tensors.h"
#include "layers/attention.h"
#include "layers/embedding.h"
#include "layers/gelu.h"
#include "layers/layernorm.h"
#include "layers/linear.h"
#include "layers/positional.h"
#include "layers/relu.h"
#include "layers/softmax_xent.h"
#include "reference/transformer_reference.h"

#define REF_ATOL 2e-6f
#define REF_RTOL 1e-5f

/* A new tensor holding a copy of n values; the shape's product must be n. */
static Tensor from(const float *values, int64_t n, int ndim, int d0, int d1) {
    Tensor t = ndim == 1 ? tensor_zeros(1, d0) : tensor_zeros(2, d0, d1);
    if (!expect_true(t.size == n, "reference table of %lld values for a tensor of %lld",
                     (long long)n, (long long)t.size))
        exit(CHECK_FAIL);
    memcpy(t.data, values, sizeof(float) * (size_t)n);
    return t;
}
#define FROM2(arr, d0, d1) from((arr), (int64_t)(sizeof(arr) / sizeof((arr)[0])), 2, (d0), (d1))
#define FROM1(arr, d0) from((arr), (int64_t)(sizeof(arr) / sizeof((arr)[0])), 1, (d0), 0)

static bool close_layer(const char *what, const Tensor *got, const float *want) {
    return expect_close(what, got->data, want, got->size, REF_ATOL, REF_RTOL);
}

/* ------------------------------------------------------------ single layers */

static int check_ref_embedding(void) {
    enum { V = TF_REF_EMB_V, D = TF_REF_EMB_D, N = TF_REF_EMB_N };
    Tensor table = FROM2(TF_REF_EMB_TABLE, V, D), R = FROM2(TF_REF_EMB_R, N, D);
    Tensor out = tensor_zeros(2, N, D), dtable = tensor_zeros(2, V, D);
    embedding_forward(&out, TF_REF_EMB_TOKENS, &table, sqrtf((float)D));
    embedding_backward(&dtable, &R, TF_REF_EMB_TOKENS, sqrtf((float)D));
    bool ok = close_layer("embedding out", &out, TF_REF_EMB_OUT);
    ok = close_layer("embedding d table (repeated tokens)", &dtable, TF_REF_EMB_DTABLE) && ok;
    tensor_free(&table);
    tensor_free(&R);
    tensor_free(&out);
    tensor_free(&dtable);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* PyTorch takes exp, sin and cos in float to within an ulp or so, this library rounds
 * them from double; the angle t * w_i is then the same float product on both sides
 * except where the two w_i differ by an ulp (2^-24 relative): that moves the angle, and
 * sin or cos with it, by up to t * w_i * 2^-24 <= t * 6e-8. So row t is allowed
 * 1e-6 + t * 1.2e-7 (two such ulps): 4e-6 at t = 34, 6e-4 at t = 4999. */
static int check_ref_positional(void) {
    Tensor small = tensor_zeros(2, TF_REF_PE_SMALL_MAX_LEN, TF_REF_PE_SMALL_D);
    positional_table_fill(&small);
    bool ok = true;
    for (int t = 0; t < TF_REF_PE_SMALL_MAX_LEN; t++) {
        char what[64];
        snprintf(what, sizeof what, "positional table [64, 8], row %d", t);
        ok = expect_close(what, small.data + (size_t)t * TF_REF_PE_SMALL_D,
                          TF_REF_PE_SMALL_TABLE + (size_t)t * TF_REF_PE_SMALL_D, TF_REF_PE_SMALL_D,
                          1e-6f + (float)t * 1.2e-7f, 0) && ok;
    }
    Tensor big = tensor_zeros(2, TF_REF_PE_BIG_MAX_LEN, TF_REF_PE_BIG_D);
    positional_table_fill(&big);
    for (int r = 0; r < TF_REF_PE_BIG_ROWS; r++) {
        const int t = TF_REF_PE_BIG_POSITIONS[r];
        char what[64];
        snprintf(what, sizeof what, "positional table [5000, 200], row %d", t);
        ok = expect_close(what, big.data + (size_t)t * TF_REF_PE_BIG_D,
                          TF_REF_PE_BIG_TABLE + (size_t)r * TF_REF_PE_BIG_D, TF_REF_PE_BIG_D,
                          1e-6f + (float)t * 1.2e-7f, 0) && ok;
    }
    tensor_free(&small);
    tensor_free(&big);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_ref_layernorm(void) {
    enum { N = TF_REF_LN_N, D = TF_REF_LN_D };
    Tensor in = FROM2(TF_REF_LN_IN, N, D), g = FROM1(TF_REF_LN_GAMMA, D), b = FROM1(TF_REF_LN_BETA, D);
    Tensor R = FROM2(TF_REF_LN_R, N, D), out = tensor_zeros(2, N, D);
    Tensor mean = tensor_zeros(1, N), rstd = tensor_zeros(1, N);
    Tensor din = tensor_zeros(2, N, D), dg = tensor_zeros(1, D), db = tensor_zeros(1, D);
    layernorm_forward(&out, &mean, &rstd, &in, &g, &b, LAYERNORM_EPS);
    layernorm_backward(&din, &dg, &db, &R, &in, &mean, &rstd, &g);
    bool ok = close_layer("layer norm out", &out, TF_REF_LN_OUT);
    ok = close_layer("layer norm mean", &mean, TF_REF_LN_MEAN) && ok;
    ok = close_layer("layer norm rstd", &rstd, TF_REF_LN_RSTD) && ok;
    ok = close_layer("layer norm d input", &din, TF_REF_LN_DIN) && ok;
    ok = close_layer("layer norm d gamma", &dg, TF_REF_LN_DGAMMA) && ok;
    ok = close_layer("layer norm d beta", &db, TF_REF_LN_DBETA) && ok;
    FREE_ALL(&in, &g, &b, &R, &out, &mean, &rstd, &din, &dg, &db);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* nn.MultiheadAttention = in-projection (linear), the attention core, out-projection. */
static int check_ref_attention(void) {
    enum { T = TF_REF_ATT_T, B = TF_REF_ATT_B, D = TF_REF_ATT_D, H = TF_REF_ATT_H, N = B * T };
    Tensor x = FROM2(TF_REF_ATT_X, N, D), R = FROM2(TF_REF_ATT_R, N, D);
    Tensor w_in = FROM2(TF_REF_ATT_IN_PROJ_WEIGHT, 3 * D, D), b_in = FROM1(TF_REF_ATT_IN_PROJ_BIAS, 3 * D);
    Tensor w_out = FROM2(TF_REF_ATT_OUT_PROJ_WEIGHT, D, D), b_out = FROM1(TF_REF_ATT_OUT_PROJ_BIAS, D);
    Tensor qkv = tensor_zeros(2, N, 3 * D), ctx = tensor_zeros(2, N, D), out = tensor_zeros(2, N, D);
    Tensor probs = tensor_zeros(4, B, H, T, T), dscores = tensor_zeros(4, B, H, T, T);
    linear_forward(&qkv, &x, &w_in, &b_in);
    attention_forward(&ctx, &probs, NULL, &qkv, 0.0f, false, NULL);
    linear_forward(&out, &ctx, &w_out, &b_out);
    bool ok = close_layer("attention weights [B, H, T, T]", &probs, TF_REF_ATT_PROBS);
    ok = close_layer("attention context", &ctx, TF_REF_ATT_CTX) && ok;
    ok = close_layer("attention output", &out, TF_REF_ATT_OUT) && ok;
    Tensor dx = tensor_zeros_like(&x), dw_in = tensor_zeros_like(&w_in), db_in = tensor_zeros_like(&b_in);
    Tensor dw_out = tensor_zeros_like(&w_out), db_out = tensor_zeros_like(&b_out);
    Tensor dctx = tensor_zeros_like(&ctx), dqkv = tensor_zeros_like(&qkv);
    linear_backward(&dctx, &dw_out, &db_out, &R, &ctx, &w_out);
    attention_backward(&dqkv, &dscores, &dctx, &qkv, &probs, NULL);
    linear_backward(&dx, &dw_in, &db_in, &dqkv, &x, &w_in);
    ok = close_layer("attention d x", &dx, TF_REF_ATT_DX) && ok;
    ok = close_layer("attention d in_proj_weight", &dw_in, TF_REF_ATT_DIN_PROJ_WEIGHT) && ok;
    ok = close_layer("attention d in_proj_bias", &db_in, TF_REF_ATT_DIN_PROJ_BIAS) && ok;
    ok = close_layer("attention d out_proj.weight", &dw_out, TF_REF_ATT_DOUT_PROJ_WEIGHT) && ok;
    ok = close_layer("attention d out_proj.bias", &db_out, TF_REF_ATT_DOUT_PROJ_BIAS) && ok;
    FREE_ALL(&x, &R, &w_in, &b_in, &w_out, &b_out, &qkv, &ctx, &out, &probs, &dscores, &dx, &dw_in,
             &db_in, &dw_out, &db_out, &dctx, &dqkv);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_ref_gelu(void) {
    enum { N = TF_REF_GELU_N };
    Tensor in = FROM1(TF_REF_GELU_IN, N), R = FROM1(TF_REF_GELU_R, N);
    Tensor out = tensor_zeros(1, N), din = tensor_zeros(1, N);
    gelu_forward(&out, &in);
    gelu_backward(&din, &R, &in);
    bool ok = close_layer("gelu out", &out, TF_REF_GELU_OUT);
    ok = close_layer("gelu d input", &din, TF_REF_GELU_DIN) && ok;
    tensor_free(&in);
    tensor_free(&R);
    tensor_free(&out);
    tensor_free(&din);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_ref_xent(void) {
    enum { N = TF_REF_XENT_N, V = TF_REF_XENT_V };
    Tensor z = FROM2(TF_REF_XENT_LOGITS, N, V), d_exact = tensor_zeros(2, N, V), d_fast = tensor_zeros(2, N, V);
    const float exact = softmax_cross_entropy(&d_exact, &z, TF_REF_XENT_LABELS);
    const float fast = softmax_cross_entropy_fast(&d_fast, &z, TF_REF_XENT_LABELS, 1.0f);
    bool ok = expect_true(fabsf(exact - TF_REF_XENT_LOSS) <= 1e-6f * TF_REF_XENT_LOSS &&
                              fabsf(fast - TF_REF_XENT_LOSS) <= 1e-6f * TF_REF_XENT_LOSS,
                          "loss: exact %.9g, fast %.9g, PyTorch %.9g", exact, fast, TF_REF_XENT_LOSS);
    ok = close_layer("cross-entropy d logits (exact)", &d_exact, TF_REF_XENT_DLOGITS) && ok;
    ok = close_layer("cross-entropy d logits (fast)", &d_fast, TF_REF_XENT_DLOGITS) && ok;
    tensor_free(&z);
    tensor_free(&d_exact);
    tensor_free(&d_fast);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ the tutorial's model */

enum {
    MV = TF_REF_MODEL_V, MD = TF_REF_MODEL_D, MH = TF_REF_MODEL_H, MHID = TF_REF_MODEL_HID,
    ML = TF_REF_MODEL_LAYERS, MT = TF_REF_MODEL_T, MB = TF_REF_MODEL_B, MN = MB * MT
};

/* A parameter by its PyTorch name: its values, and a zeroed gradient beside them. */
typedef struct {
    Tensor value, grad;
    const float *want_grad;
    const char *name;
} Param;

static Param param(const char *name) {
    for (int i = 0; i < TF_REF_MODEL_PARAMS; i++) {
        const TfRefParam *p = &TF_REF_MODEL_PARAM[i];
        if (strcmp(p->name, name) != 0) continue;
        Param out = {p->ndim == 1 ? tensor_zeros(1, p->shape[0]) : tensor_zeros(2, p->shape[0], p->shape[1]),
                     tensor_zeros(1, 1), p->grad, p->name};
        memcpy(out.value.data, p->value, sizeof(float) * (size_t)out.value.size);
        tensor_free(&out.grad);
        out.grad = tensor_zeros_like(&out.value);
        return out;
    }
    expect_true(false, "no parameter named %s in the reference", name);
    exit(CHECK_FAIL);
}

typedef struct {
    Param in_w, in_b, out_w, out_b, l1_w, l1_b, l2_w, l2_b, n1_w, n1_b, n2_w, n2_b;
    /* activations of one layer: its input x, then in order */
    Tensor qkv, probs, ctx, r1, y1, mean1, rstd1, h, r2, out, mean2, rstd2;
} Block;

static Param layer_param(int l, const char *suffix) {
    char name[96];
    snprintf(name, sizeof name, "transformer_encoder.layers.%d.%s", l, suffix);
    return param(name);
}

static Block block_make(int l) {
    Block k;
    k.in_w = layer_param(l, "self_attn.in_proj_weight"), k.in_b = layer_param(l, "self_attn.in_proj_bias");
    k.out_w = layer_param(l, "self_attn.out_proj.weight"), k.out_b = layer_param(l, "self_attn.out_proj.bias");
    k.l1_w = layer_param(l, "linear1.weight"), k.l1_b = layer_param(l, "linear1.bias");
    k.l2_w = layer_param(l, "linear2.weight"), k.l2_b = layer_param(l, "linear2.bias");
    k.n1_w = layer_param(l, "norm1.weight"), k.n1_b = layer_param(l, "norm1.bias");
    k.n2_w = layer_param(l, "norm2.weight"), k.n2_b = layer_param(l, "norm2.bias");
    k.qkv = tensor_zeros(2, MN, 3 * MD), k.probs = tensor_zeros(4, MB, MH, MT, MT);
    k.ctx = tensor_zeros(2, MN, MD), k.r1 = tensor_zeros(2, MN, MD), k.y1 = tensor_zeros(2, MN, MD);
    k.mean1 = tensor_zeros(1, MN), k.rstd1 = tensor_zeros(1, MN), k.h = tensor_zeros(2, MN, MHID);
    k.r2 = tensor_zeros(2, MN, MD), k.out = tensor_zeros(2, MN, MD);
    k.mean2 = tensor_zeros(1, MN), k.rstd2 = tensor_zeros(1, MN);
    return k;
}

/* TransformerEncoderLayer, norm_first = False, ReLU, dropout 0:
 *   r1 = x + out_proj(attention(in_proj(x))),  y1 = norm1(r1)
 *   r2 = y1 + linear2(relu(linear1(y1))),       out = norm2(r2) */
static void block_forward(Block *k, const Tensor *x) {
    Tensor a = tensor_zeros(2, MN, MD), f = tensor_zeros(2, MN, MD);
    linear_forward(&k->qkv, x, &k->in_w.value, &k->in_b.value);
    attention_forward(&k->ctx, &k->probs, NULL, &k->qkv, 0.0f, true, NULL);
    linear_forward(&a, &k->ctx, &k->out_w.value, &k->out_b.value);
    for (int64_t i = 0; i < a.size; i++) k->r1.data[i] = x->data[i] + a.data[i];
    layernorm_forward(&k->y1, &k->mean1, &k->rstd1, &k->r1, &k->n1_w.value, &k->n1_b.value, LAYERNORM_EPS);
    linear_forward(&k->h, &k->y1, &k->l1_w.value, &k->l1_b.value);
    relu_forward(&k->h, &k->h);
    linear_forward(&f, &k->h, &k->l2_w.value, &k->l2_b.value);
    for (int64_t i = 0; i < f.size; i++) k->r2.data[i] = k->y1.data[i] + f.data[i];
    layernorm_forward(&k->out, &k->mean2, &k->rstd2, &k->r2, &k->n2_w.value, &k->n2_b.value, LAYERNORM_EPS);
    tensor_free(&a);
    tensor_free(&f);
}

/* dx += dL/dx given dout = dL/dout; the parameters' gradients add up in k. */
static void block_backward(Block *k, Tensor *dx, const Tensor *dout, const Tensor *x) {
    Tensor dr2 = tensor_zeros(2, MN, MD), dh = tensor_zeros(2, MN, MHID), dy1 = tensor_zeros(2, MN, MD);
    Tensor dr1 = tensor_zeros(2, MN, MD), dctx = tensor_zeros(2, MN, MD), dqkv = tensor_zeros(2, MN, 3 * MD);
    Tensor dh_pre = tensor_zeros(2, MN, MHID), dscores = tensor_zeros(4, MB, MH, MT, MT);
    layernorm_backward(&dr2, &k->n2_w.grad, &k->n2_b.grad, dout, &k->r2, &k->mean2, &k->rstd2, &k->n2_w.value);
    tensor_copy(&dy1, &dr2); /* the residual: r2 = y1 + f */
    linear_backward(&dh, &k->l2_w.grad, &k->l2_b.grad, &dr2, &k->h, &k->l2_w.value);
    relu_backward(&dh_pre, &dh, &k->h);
    linear_backward(&dy1, &k->l1_w.grad, &k->l1_b.grad, &dh_pre, &k->y1, &k->l1_w.value);
    layernorm_backward(&dr1, &k->n1_w.grad, &k->n1_b.grad, &dy1, &k->r1, &k->mean1, &k->rstd1, &k->n1_w.value);
    for (int64_t i = 0; i < dr1.size; i++) dx->data[i] += dr1.data[i]; /* r1 = x + a */
    linear_backward(&dctx, &k->out_w.grad, &k->out_b.grad, &dr1, &k->ctx, &k->out_w.value);
    attention_backward(&dqkv, &dscores, &dctx, &k->qkv, &k->probs, NULL);
    linear_backward(dx, &k->in_w.grad, &k->in_b.grad, &dqkv, x, &k->in_w.value);
    FREE_ALL(&dr2, &dh, &dy1, &dr1, &dctx, &dqkv, &dh_pre, &dscores);
}

static bool param_grads_match(Param *const *ps, size_t n) {
    bool ok = true;
    for (size_t i = 0; i < n; i++)
        ok = expect_close(ps[i]->name, ps[i]->grad.data, ps[i]->want_grad, ps[i]->grad.size,
                          REF_ATOL, REF_RTOL) && ok;
    return ok;
}

static void param_free(Param *p) {
    tensor_free(&p->value);
    tensor_free(&p->grad);
}

static int check_ref_model(void) {
    Param emb = param("embedding.weight"), dec_w = param("linear.weight"), dec_b = param("linear.bias");
    Block blocks[ML];
    for (int l = 0; l < ML; l++) blocks[l] = block_make(l);
    Tensor pe = tensor_zeros(2, 5000, MD), x0 = tensor_zeros(2, MN, MD), logits = tensor_zeros(2, MN, MV);
    positional_table_fill(&pe);
    /* forward */
    embedding_forward(&x0, TF_REF_MODEL_TOKENS, &emb.value, sqrtf((float)MD));
    positional_forward(&x0, &x0, &pe, MT);
    bool ok = expect_close("hidden state after the positional encoding", x0.data, TF_REF_MODEL_HIDDEN,
                           x0.size, REF_ATOL, REF_RTOL);
    const Tensor *x = &x0;
    for (int l = 0; l < ML; l++) {
        block_forward(&blocks[l], x);
        x = &blocks[l].out;
        char what[64];
        snprintf(what, sizeof what, "hidden state after layer %d", l);
        ok = expect_close(what, x->data, TF_REF_MODEL_HIDDEN + (size_t)(l + 1) * MN * MD, x->size,
                          REF_ATOL, REF_RTOL) && ok;
    }
    linear_forward(&logits, x, &dec_w.value, &dec_b.value);
    ok = expect_close("logits", logits.data, TF_REF_MODEL_LOGITS, logits.size, REF_ATOL, REF_RTOL) && ok;
    Tensor dlogits = tensor_zeros_like(&logits);
    const float loss = softmax_cross_entropy(&dlogits, &logits, TF_REF_MODEL_TARGETS);
    ok = expect_true(fabsf(loss - TF_REF_MODEL_LOSS) <= 1e-5f * TF_REF_MODEL_LOSS,
                     "loss %.9g, PyTorch %.9g", loss, TF_REF_MODEL_LOSS) && ok;
    /* backward */
    Tensor dx[ML + 1];
    for (int l = 0; l <= ML; l++) dx[l] = tensor_zeros(2, MN, MD);
    linear_backward(&dx[ML], &dec_w.grad, &dec_b.grad, &dlogits, x, &dec_w.value);
    for (int l = ML - 1; l >= 0; l--)
        block_backward(&blocks[l], &dx[l], &dx[l + 1], l == 0 ? &x0 : &blocks[l - 1].out);
    embedding_backward(&emb.grad, &dx[0], TF_REF_MODEL_TOKENS, sqrtf((float)MD)); /* pe: identity */
    Param *top[] = {&emb, &dec_w, &dec_b};
    ok = param_grads_match(top, 3) && ok;
    int checked = 3;
    for (int l = 0; l < ML; l++) {
        Block *k = &blocks[l];
        Param *ps[] = {&k->in_w, &k->in_b, &k->out_w, &k->out_b, &k->l1_w, &k->l1_b,
                       &k->l2_w, &k->l2_b, &k->n1_w, &k->n1_b, &k->n2_w, &k->n2_b};
        ok = param_grads_match(ps, 12) && ok;
        checked += 12;
        for (int i = 0; i < 12; i++) param_free(ps[i]);
        Tensor *acts[] = {&k->qkv, &k->probs, &k->ctx, &k->r1, &k->y1, &k->mean1, &k->rstd1,
                          &k->h, &k->r2, &k->out, &k->mean2, &k->rstd2};
        for (int i = 0; i < 12; i++) tensor_free(acts[i]);
    }
    ok = expect_true(checked == TF_REF_MODEL_PARAMS, "checked %d of the %d parameters", checked,
                     TF_REF_MODEL_PARAMS) && ok;
    for (int l = 0; l <= ML; l++) tensor_free(&dx[l]);
    param_free(&emb);
    param_free(&dec_w);
    param_free(&dec_b);
    FREE_ALL(&pe, &x0, &logits, &dlogits);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("transformer layers vs PyTorch " TF_REF_TORCH_VERSION);
    check_run(NULL, "embedding times sqrt(d_model): out and d table (repeated tokens)", check_ref_embedding, 10);
    check_run(NULL, "positional encoding table (the tutorial's, D 8 and 200, rows up to 4999)", check_ref_positional, 10);
    check_run(NULL, "layer norm: out, mean, rstd, d input, d gamma, d beta", check_ref_layernorm, 10);
    check_run(NULL, "nn.MultiheadAttention, causal: weights, context, output, all gradients", check_ref_attention, 10);
    check_run(NULL, "gelu (exact): out and d input", check_ref_gelu, 10);
    check_run(NULL, "cross-entropy, exact and fast: loss and d logits", check_ref_xent, 10);
    check_run(NULL, "the tutorial's TransformerModel: hidden states, logits, loss, every gradient", check_ref_model, 30);
    return check_end();
}
