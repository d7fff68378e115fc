#include "transformer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "layers/dropout.h"
#include "layers/layernorm.h"
#include "layers/positional.h"
#include "layers/softmax_xent.h"

TransformerConfig transformer_config_tutorial(int vocab) {
    return (TransformerConfig){.vocab = vocab, .d_model = 200, .heads = 2, .d_ff = 200,
                               .layers = 2, .max_len = 5000, .dropout = 0.2f};
}

TransformerConfig transformer_config_seed(int vocab) {
    return (TransformerConfig){.vocab = vocab, .d_model = 1024, .heads = 4, .d_ff = 1024,
                               .layers = 3, .max_len = 5000, .dropout = 0.2f};
}

void transformer_config_check(const TransformerConfig *c) {
    if (c->vocab < 2) fatal("the vocabulary must have at least 2 words, got %d", c->vocab);
    if (c->d_model < 2 || c->d_model % 2)
        fatal("the model width must be even and at least 2 (sinusoidal positions), got %d", c->d_model);
    if (c->heads < 1 || c->d_model % c->heads)
        fatal("%d heads do not divide the model width %d", c->heads, c->d_model);
    if (c->d_ff < 1) fatal("the feed-forward width must be at least 1, got %d", c->d_ff);
    if (c->layers < 1) fatal("the model needs at least 1 encoder layer, got %d", c->layers);
    if (c->max_len < 1) fatal("the longest sequence must be at least 1, got %d", c->max_len);
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
        fatal("dropout must be in [0, 1), got %g", (double)c->dropout);
}

TransformerConfig transformer_config_pipeline_seed(int vocab) {
    return (TransformerConfig){.vocab = vocab, .d_model = 4096, .heads = 16, .d_ff = 4096,
                               .layers = 12, .max_len = 5000, .dropout = 0.2f};
}

int64_t transformer_param_count(const TransformerConfig *c) {
    const int64_t V = c->vocab, D = c->d_model, F = c->d_ff;
    const int64_t layer = 3 * D * D + 3 * D + D * D + D + F * D + F + D * F + D + 4 * D;
    return V * D + c->layers * layer + V * D + V;
}

/* ---------------------------------------------------------------- parameters */

static bool holds(const Transformer *m, int block) { return block >= m->first && block < m->last; }

static Param *add2(Transformer *m, const char *name, int a, int b) {
    return params_add(&m->params, name, 2, (int[]){a, b});
}
static Param *add1(Transformer *m, const char *name, int a) {
    return params_add(&m->params, name, 1, (int[]){a});
}

static void declare_layer(Transformer *m, int l) {
    const int D = m->cfg.d_model, F = m->cfg.d_ff;
    EncoderParams *p = &m->enc[l];
    char name[PARAM_NAME_MAX + 16]; /* room for any layer number; params_add checks the length */
#define NAME(suffix) (snprintf(name, sizeof name, "transformer_encoder.layers.%d." suffix, l), name)
    p->in_w = add2(m, NAME("self_attn.in_proj_weight"), 3 * D, D);
    p->in_b = add1(m, NAME("self_attn.in_proj_bias"), 3 * D);
    p->out_w = add2(m, NAME("self_attn.out_proj.weight"), D, D);
    p->out_b = add1(m, NAME("self_attn.out_proj.bias"), D);
    p->l1_w = add2(m, NAME("linear1.weight"), F, D);
    p->l1_b = add1(m, NAME("linear1.bias"), F);
    p->l2_w = add2(m, NAME("linear2.weight"), D, F);
    p->l2_b = add1(m, NAME("linear2.bias"), D);
    p->n1_w = add1(m, NAME("norm1.weight"), D);
    p->n1_b = add1(m, NAME("norm1.bias"), D);
    p->n2_w = add1(m, NAME("norm2.weight"), D);
    p->n2_b = add1(m, NAME("norm2.bias"), D);
#undef NAME
}

static void uniform(Param *p, float bound, Rng *rng) {
    for (int64_t i = 0; i < p->value.size; i++) p->value.data[i] = rng_uniform_range(rng, -bound, bound);
}

/* PyTorch's initialisation, each block from its own stream of the seed. */
static void init_block(Transformer *m, int block) {
    const int D = m->cfg.d_model, F = m->cfg.d_ff, L = m->cfg.layers;
    Rng rng;
    rng_seed(&rng, m->seed, 100 + (uint64_t)block);
    if (block == 0) {
        uniform(m->embedding, 0.1f, &rng); /* the tutorial's init_weights */
    } else if (block == L + 1) {
        uniform(m->decoder_w, 0.1f, &rng); /* the bias stays 0 */
    } else {
        EncoderParams *p = &m->enc[block - 1];
        uniform(p->in_w, sqrtf(6.0f / (float)(D + 3 * D)), &rng); /* Xavier; bias 0 */
        uniform(p->out_w, 1.0f / sqrtf((float)D), &rng);          /* Linear's; bias 0 */
        uniform(p->l1_w, 1.0f / sqrtf((float)D), &rng);
        uniform(p->l1_b, 1.0f / sqrtf((float)D), &rng);
        uniform(p->l2_w, 1.0f / sqrtf((float)F), &rng);
        uniform(p->l2_b, 1.0f / sqrtf((float)F), &rng);
        tensor_fill(&p->n1_w->value, 1.0f);
        tensor_fill(&p->n2_w->value, 1.0f);
    }
}

/* ---------------------------------------------------------------- buffers */

/* What a buffer holds per row (a token) or per sequence, so that one list serves to
 * allocate, to shorten to a batch's length, to move to a device and to free. */
typedef enum { PER_ROW_D, PER_ROW_3D, PER_ROW_F, PER_ROW_V, PER_ROW_1, SCORES } BufKind;
typedef struct {
    Tensor *t;
    BufKind kind;
    bool saved; /* kept from the forward for the backward (an activation, not a workspace) */
} Buf;

enum { MAX_BUFS_FIXED = 24, BUFS_PER_LAYER = 18 };

/* Every tensor with rows the model holds, for the blocks in its range. */
static int model_buffers(Transformer *m, Buf *out) {
    const int L = m->cfg.layers;
    int n = 0;
#define BUF(tensor, k, s) (out[n++] = (Buf){(tensor), (k), (s)})
    if (holds(m, 0)) BUF(&m->x0, PER_ROW_D, true), BUF(&m->x0_mask, PER_ROW_D, true);
    for (int l = 0; l < L; l++) {
        if (!holds(m, l + 1)) continue;
        EncoderActs *a = &m->acts[l];
        BUF(&a->qkv, PER_ROW_3D, true), BUF(&a->probs, SCORES, true), BUF(&a->dropped, SCORES, true);
        BUF(&a->ctx, PER_ROW_D, true), BUF(&a->a, PER_ROW_D, false), BUF(&a->a_mask, PER_ROW_D, true);
        BUF(&a->r1, PER_ROW_D, true), BUF(&a->y1, PER_ROW_D, true);
        BUF(&a->mean1, PER_ROW_1, true), BUF(&a->rstd1, PER_ROW_1, true);
        BUF(&a->h, PER_ROW_F, true), BUF(&a->h_mask, PER_ROW_F, true);
        BUF(&a->f, PER_ROW_D, false), BUF(&a->f_mask, PER_ROW_D, true);
        BUF(&a->r2, PER_ROW_D, true), BUF(&a->out, PER_ROW_D, true);
        BUF(&a->mean2, PER_ROW_1, true), BUF(&a->rstd2, PER_ROW_1, true);
    }
    if (holds(m, L + 1)) BUF(&m->logits, PER_ROW_V, true), BUF(&m->dlogits, PER_ROW_V, false);
    BUF(&m->dx, PER_ROW_D, false), BUF(&m->d_in, PER_ROW_D, false), BUF(&m->d_out, PER_ROW_D, false);
    BUF(&m->d_a, PER_ROW_D, false), BUF(&m->d_r, PER_ROW_D, false), BUF(&m->d_y, PER_ROW_D, false);
    BUF(&m->d_f, PER_ROW_D, false), BUF(&m->d_ctx, PER_ROW_D, false);
    BUF(&m->d_h, PER_ROW_F, false), BUF(&m->d_h2, PER_ROW_F, false);
    BUF(&m->d_qkv, PER_ROW_3D, false), BUF(&m->d_scores, SCORES, false);
#undef BUF
    return n;
}

static Buf *buffer_list(Transformer *m, int *n) {
    Buf *bufs = xcalloc((size_t)(MAX_BUFS_FIXED + BUFS_PER_LAYER * m->cfg.layers), sizeof *bufs);
    *n = model_buffers(m, bufs);
    return bufs;
}

/* The shape of a buffer for sequences of T tokens. */
static void buffer_shape(const Transformer *m, BufKind kind, int T, int *ndim, int dims[4]) {
    const int N = m->B * T, D = m->cfg.d_model;
    const int cols[] = {[PER_ROW_D] = D, [PER_ROW_3D] = 3 * D, [PER_ROW_F] = m->cfg.d_ff,
                        [PER_ROW_V] = m->cfg.vocab};
    if (kind == SCORES) {
        *ndim = 4, dims[0] = m->B, dims[1] = m->cfg.heads, dims[2] = T, dims[3] = T;
    } else if (kind == PER_ROW_1) {
        *ndim = 1, dims[0] = N;
    } else {
        *ndim = 2, dims[0] = N, dims[1] = cols[kind];
    }
}

static void allocate_buffers(Transformer *m) {
    int n, ndim, d[4];
    Buf *bufs = buffer_list(m, &n);
    for (int i = 0; i < n; i++) {
        buffer_shape(m, bufs[i].kind, m->T_max, &ndim, d);
        *bufs[i].t = ndim == 4 ? tensor_zeros_on(m->device, 4, d[0], d[1], d[2], d[3])
                     : ndim == 2 ? tensor_zeros_on(m->device, 2, d[0], d[1])
                                 : tensor_zeros_on(m->device, 1, d[0]);
    }
    xfree(bufs);
}

void transformer_set_seq_len(Transformer *m, int T) {
    if (T < 1 || T > m->T_max)
        fatal("a batch of sequences of %d tokens: the model was built for 1 to %d", T, m->T_max);
    int n, ndim, d[4];
    Buf *bufs = buffer_list(m, &n);
    for (int i = 0; i < n; i++) { /* a prefix of each buffer: the data stays where it is */
        Tensor *t = bufs[i].t;
        buffer_shape(m, bufs[i].kind, T, &ndim, d);
        t->ndim = ndim, t->size = 1;
        for (int k = 0; k < TENSOR_MAX_DIMS; k++) t->shape[k] = k < ndim ? d[k] : 0;
        for (int k = 0; k < ndim; k++) t->size *= d[k];
    }
    xfree(bufs);
    m->T = T, m->N = m->B * T;
}

int64_t transformer_activation_bytes(Transformer *m) {
    int n, ndim, d[4];
    Buf *bufs = buffer_list(m, &n);
    int64_t floats = 0;
    for (int i = 0; i < n; i++) {
        if (!bufs[i].saved) continue;
        buffer_shape(m, bufs[i].kind, m->T_max, &ndim, d);
        int64_t size = 1;
        for (int k = 0; k < ndim; k++) size *= d[k];
        floats += size;
    }
    xfree(bufs);
    return floats * (int64_t)sizeof(float);
}

double transformer_activation_floats_per_token(const TransformerConfig *c, int T, int first,
                                               int last) {
    /* per encoder layer and token: qkv 3D; probs and dropped 2 H T (each token's row of
     * T scores per head); ctx, a's mask, r1, y1, f's mask, r2, out: 7 D; h and its mask
     * 2 F; two means and two reciprocal deviations: 4 */
    const double D = c->d_model, F = c->d_ff, H = c->heads, V = c->vocab;
    const double layer = 3 * D + 2 * H * T + 7 * D + 2 * F + 4;
    double floats = 0;
    for (int k = first; k < last; k++)
        floats += k == 0 ? 2 * D /* x0 and its mask */
                  : k <= c->layers ? layer
                                   : V; /* the logits */
    return floats;
}

/* ---------------------------------------------------------------- set-up */

void transformer_init_blocks(Transformer *m, const TransformerConfig *c, int B, int T,
                             uint64_t seed, int first, int last) {
    transformer_config_check(c);
    const int blocks = transformer_block_count(c);
    if (first < 0 || last > blocks || first >= last)
        fatal("blocks [%d, %d) are not a range of the model's %d blocks", first, last, blocks);
    if (B < 1 || T < 1 || T > c->max_len)
        fatal("batches of %d sequences of %d tokens: both must be at least 1, T at most %d", B,
              T, c->max_len);
    memset(m, 0, sizeof *m);
    m->cfg = *c;
    m->B = B, m->T = T, m->T_max = T, m->N = B * T;
    m->first = first, m->last = last;
    m->seed = seed;
    m->training = true;
    m->device = DEVICE_CPU;
    m->layers = *layer_ops(DEVICE_CPU);
    m->rngs = xcalloc((size_t)transformer_block_count(c), sizeof *m->rngs);
    for (int k = 0; k < transformer_block_count(c); k++) rng_seed(&m->rngs[k], seed, 1000 + (uint64_t)k);
    const int D = c->d_model, L = c->layers;
    m->enc = xcalloc((size_t)L, sizeof *m->enc);
    m->acts = xcalloc((size_t)L, sizeof *m->acts);
    if (holds(m, 0)) m->embedding = add2(m, "embedding.weight", c->vocab, D);
    for (int l = 0; l < L; l++)
        if (holds(m, l + 1)) declare_layer(m, l);
    if (holds(m, L + 1)) {
        m->decoder_w = add2(m, "linear.weight", c->vocab, D);
        m->decoder_b = add1(m, "linear.bias", c->vocab);
    }
    params_allocate(&m->params);
    for (int k = first; k < last; k++) init_block(m, k);
    if (holds(m, 0)) {
        m->pe = tensor_zeros(2, c->max_len, D);
        positional_table_fill(&m->pe);
    }
    allocate_buffers(m);
}

void transformer_init(Transformer *m, const TransformerConfig *c, int B, int T, uint64_t seed) {
    transformer_init_blocks(m, c, B, T, seed, 0, transformer_block_count(c));
}

/* The name of the first layer the model calls that the table lacks, or NULL. */
static const char *missing_layer(const LayerOps *o) {
#define NEED(fn) \
    if (!o->fn) return #fn
    NEED(linear_forward); NEED(linear_backward); NEED(relu_forward); NEED(relu_backward);
    NEED(embedding_forward); NEED(embedding_backward); NEED(positional_forward);
    NEED(layernorm_forward); NEED(layernorm_backward); NEED(dropout_forward);
    NEED(dropout_backward); NEED(attention_forward); NEED(attention_backward);
    NEED(add_forward); NEED(add_backward); NEED(softmax_cross_entropy_fast);
#undef NEED
    return NULL;
}

void transformer_to_device(Transformer *m, Device device) {
    if (m->device == device) return;
    CHECK(m->slots == 0, "move the model before it uses activation slots");
    const LayerOps *ops = layer_ops(device);
    const char *missing = missing_layer(ops);
    if (missing)
        fatal("the transformer cannot run on the %s: its layer %s has no %s version in this build",
              device_name(device), missing, device_name(device));
    params_to_device(&m->params, device);
    int n;
    Buf *bufs = buffer_list(m, &n);
    for (int i = 0; i < n; i++) { /* contents are scratch; tensor_to keeps the shapes */
        Tensor t = tensor_to(bufs[i].t, device);
        tensor_free(bufs[i].t);
        *bufs[i].t = t;
    }
    xfree(bufs);
    if (holds(m, 0)) {
        Tensor pe = tensor_to(&m->pe, device);
        tensor_free(&m->pe);
        m->pe = pe;
    }
    m->device = device;
    m->layers = *ops;
}

/* The activations the forward keeps for the backward (the saved buffers): the fields
 * of the model that a slot swaps, listed once. */
static void list_saved_buffers(Transformer *m) {
    int n;
    Buf *bufs = buffer_list(m, &n);
    m->slot_live = xcalloc((size_t)n, sizeof *m->slot_live);
    m->slot_count = 0;
    for (int i = 0; i < n; i++)
        if (bufs[i].saved) m->slot_live[m->slot_count++] = bufs[i].t;
    xfree(bufs);
}

void transformer_use_slot(Transformer *m, int slot) {
    CHECK(slot >= 0, "activation slot %d", slot);
    if (slot == m->slot && m->slots > 0) return;
    if (m->slots == 0) { /* slot 0: the buffers the model was built with */
        list_saved_buffers(m);
        m->slots = 1, m->slot = 0;
        m->slot_acts = xcalloc((size_t)m->slot_count, sizeof *m->slot_acts);
        m->slot_tokens = xcalloc(1, sizeof *m->slot_tokens);
        for (int i = 0; i < m->slot_count; i++) m->slot_acts[i] = *m->slot_live[i];
    }
    Tensor **live = m->slot_live;
    const int n = m->slot_count;
    for (int i = 0; i < n; i++) m->slot_acts[(size_t)m->slot * n + i].data = live[i]->data;
    m->slot_tokens[m->slot] = m->tokens;
    if (slot >= m->slots) { /* new slots, each as large as slot 0's buffers for T_max */
        const int T = m->T;
        transformer_set_seq_len(m, m->T_max);
        Tensor *acts = xcalloc((size_t)(slot + 1) * n, sizeof *acts);
        const int **tokens = xcalloc((size_t)slot + 1, sizeof *tokens);
        memcpy(acts, m->slot_acts, (size_t)m->slots * n * sizeof *acts);
        memcpy(tokens, m->slot_tokens, (size_t)m->slots * sizeof *tokens);
        for (size_t i = (size_t)m->slots * n; i < (size_t)(slot + 1) * n; i++) {
            const Tensor *t = live[i % n]; /* its shape: an int per dimension, as slot 0's */
            acts[i] = t->ndim == 4   ? tensor_zeros_on(m->device, 4, t->shape[0], t->shape[1], t->shape[2], t->shape[3])
                      : t->ndim == 2 ? tensor_zeros_on(m->device, 2, t->shape[0], t->shape[1])
                                     : tensor_zeros_on(m->device, 1, t->shape[0]);
        }
        xfree(m->slot_acts), xfree(m->slot_tokens);
        m->slot_acts = acts, m->slot_tokens = tokens;
        m->slots = slot + 1;
        transformer_set_seq_len(m, T);
    }
    for (int i = 0; i < n; i++) live[i]->data = m->slot_acts[(size_t)slot * n + i].data;
    m->tokens = m->slot_tokens[slot];
    m->slot = slot;
}

/* Slots 1 and up are freed here; the model's own buffers go back to slot 0's memory. */
static void free_slots(Transformer *m) {
    if (m->slots == 0) return;
    const int n = m->slot_count;
    for (int i = 0; i < n; i++) m->slot_live[i]->data = m->slot_acts[i].data;
    for (size_t i = (size_t)n; i < (size_t)m->slots * n; i++) tensor_free(&m->slot_acts[i]);
    xfree(m->slot_acts), xfree(m->slot_tokens), xfree(m->slot_live);
    m->slots = 0, m->slot = 0;
}

void transformer_free(Transformer *m) {
    free_slots(m);
    if (m->acts) {
        int n;
        Buf *bufs = buffer_list(m, &n);
        for (int i = 0; i < n; i++) tensor_free(bufs[i].t);
        xfree(bufs);
    }
    xfree(m->acts);
    xfree(m->enc);
    xfree(m->rngs);
    params_free(&m->params);
    tensor_free(&m->pe);
    memset(m, 0, sizeof *m);
}

void transformer_train(Transformer *m) { m->training = true; }
void transformer_eval(Transformer *m) { m->training = false; }

/* ---------------------------------------------------------------- forward */

/* The input of block k: in when k is the first block of this call, else the output
 * of block k - 1, which this model holds. */
static const Tensor *block_input(const Transformer *m, int k, int first, const Tensor *in) {
    if (k == first) return in;
    return k == 1 ? &m->x0 : &m->acts[k - 2].out;
}

static void embed_forward(Transformer *m, const int *tokens) {
    const LayerOps *o = &m->layers;
    const float p = m->cfg.dropout;
    m->tokens = tokens;
    o->embedding_forward(&m->x0, tokens, &m->embedding->value, sqrtf((float)m->cfg.d_model));
    o->positional_forward(&m->x0, &m->x0, &m->pe, m->T);
    o->dropout_forward(&m->x0, &m->x0_mask, &m->x0, p, m->training, &m->rngs[0]);
}

static void layer_forward(Transformer *m, int l, const Tensor *x) {
    const LayerOps *o = &m->layers;
    const EncoderParams *p = &m->enc[l];
    EncoderActs *a = &m->acts[l];
    const float drop = m->cfg.dropout;
    const bool active = dropout_active(drop, m->training);
    Rng *rng = &m->rngs[l + 1];
    o->linear_forward(&a->qkv, x, &p->in_w->value, &p->in_b->value);
    o->attention_forward(&a->ctx, &a->probs, active ? &a->dropped : NULL, &a->qkv, drop,
                         m->training, rng);
    o->linear_forward(&a->a, &a->ctx, &p->out_w->value, &p->out_b->value);
    o->dropout_forward(&a->a, &a->a_mask, &a->a, drop, m->training, rng);
    o->add_forward(&a->r1, x, &a->a);
    o->layernorm_forward(&a->y1, &a->mean1, &a->rstd1, &a->r1, &p->n1_w->value, &p->n1_b->value,
                         LAYERNORM_EPS);
    o->linear_forward(&a->h, &a->y1, &p->l1_w->value, &p->l1_b->value);
    o->relu_forward(&a->h, &a->h);
    /* in place: where dropout keeps an entry it is the ReLU's output scaled, so h > 0
     * still marks the ReLU's positive side for the backward */
    o->dropout_forward(&a->h, &a->h_mask, &a->h, drop, m->training, rng);
    o->linear_forward(&a->f, &a->h, &p->l2_w->value, &p->l2_b->value);
    o->dropout_forward(&a->f, &a->f_mask, &a->f, drop, m->training, rng);
    o->add_forward(&a->r2, &a->y1, &a->f);
    o->layernorm_forward(&a->out, &a->mean2, &a->rstd2, &a->r2, &p->n2_w->value, &p->n2_b->value,
                         LAYERNORM_EPS);
}

const Tensor *transformer_forward(Transformer *m, int first, int last, const int *tokens,
                                  const Tensor *in) {
    CHECK(first >= m->first && last <= m->last && first < last,
          "blocks [%d, %d) outside the model's [%d, %d)", first, last, m->first, m->last);
    CHECK(first == 0 ? tokens != NULL : in != NULL, "block %d's input is missing", first);
    const int L = m->cfg.layers;
    const Tensor *out = NULL;
    for (int k = first; k < last; k++) {
        const Tensor *x = block_input(m, k, first, in);
        if (k == 0) {
            embed_forward(m, tokens);
            out = &m->x0;
        } else if (k <= L) {
            CHECK_SHAPE(x, m->N, m->cfg.d_model);
            layer_forward(m, k - 1, x);
            out = &m->acts[k - 1].out;
        } else {
            CHECK_SHAPE(x, m->N, m->cfg.d_model);
            m->layers.linear_forward(&m->logits, x, &m->decoder_w->value, &m->decoder_b->value);
            out = &m->logits;
        }
    }
    return out;
}

/* ---------------------------------------------------------------- backward */

/* A workspace set to zero before a layer adds (+=) into it (tensor_fill: on all threads
 * when large; the seed's model clears about 40 MB of them a layer). */
static void zero(Tensor *t) { tensor_fill(t, 0.0f); }

/* din += dL/dx of encoder layer l, given dout = dL/d(its output); its parameters'
 * gradients are added to, then announced (data-parallel buckets). */
static void layer_backward(Transformer *m, int l, const Tensor *x, const Tensor *dout, Tensor *din) {
    const LayerOps *o = &m->layers;
    const EncoderParams *p = &m->enc[l];
    EncoderActs *a = &m->acts[l];
    const bool active = dropout_active(m->cfg.dropout, m->training);
    Tensor *all[] = {&m->d_r, &m->d_y, &m->d_f, &m->d_h, &m->d_h2, &m->d_a, &m->d_ctx, &m->d_qkv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) zero(all[i]);
    /* out = norm2(r2), r2 = y1 + f */
    o->layernorm_backward(&m->d_r, &p->n2_w->grad, &p->n2_b->grad, dout, &a->r2, &a->mean2,
                          &a->rstd2, &p->n2_w->value);
    o->add_backward(&m->d_y, &m->d_f, &m->d_r);
    /* f = dropout(linear2(h)), h = dropout(relu(linear1(y1))) */
    zero(&m->d_r);
    o->dropout_backward(&m->d_r, &m->d_f, active ? &a->f_mask : NULL);
    o->linear_backward(&m->d_h, &p->l2_w->grad, &p->l2_b->grad, &m->d_r, &a->h, &p->l2_w->value);
    o->dropout_backward(&m->d_h2, &m->d_h, active ? &a->h_mask : NULL);
    zero(&m->d_h);
    o->relu_backward(&m->d_h, &m->d_h2, &a->h);
    o->linear_backward(&m->d_y, &p->l1_w->grad, &p->l1_b->grad, &m->d_h, &a->y1, &p->l1_w->value);
    /* y1 = norm1(r1), r1 = x + a */
    zero(&m->d_r);
    o->layernorm_backward(&m->d_r, &p->n1_w->grad, &p->n1_b->grad, &m->d_y, &a->r1, &a->mean1,
                          &a->rstd1, &p->n1_w->value);
    o->add_backward(din, NULL, &m->d_r);
    /* a = dropout(out_proj(attention(in_proj(x)))) */
    o->dropout_backward(&m->d_a, &m->d_r, active ? &a->a_mask : NULL);
    o->linear_backward(&m->d_ctx, &p->out_w->grad, &p->out_b->grad, &m->d_a, &a->ctx,
                       &p->out_w->value);
    o->attention_backward(&m->d_qkv, &m->d_scores, &m->d_ctx, &a->qkv, &a->probs,
                          active ? &a->dropped : NULL);
    o->linear_backward(din, &p->in_w->grad, &p->in_b->grad, &m->d_qkv, x, &p->in_w->value);
    const Param *done[] = {p->n2_w, p->n2_b, p->l2_w, p->l2_b, p->l1_w, p->l1_b,
                           p->n1_w, p->n1_b, p->out_w, p->out_b, p->in_w, p->in_b};
    for (size_t i = 0; i < sizeof done / sizeof done[0]; i++) params_grad_ready(&m->params, done[i]);
}

static void embed_backward(Transformer *m, const Tensor *dout) {
    /* x0 = dropout(embedding * sqrt(D) + pe): the positions have no parameters */
    zero(&m->d_r);
    m->layers.dropout_backward(&m->d_r, dout,
                               dropout_active(m->cfg.dropout, m->training) ? &m->x0_mask : NULL);
    m->layers.embedding_backward(&m->embedding->grad, &m->d_r, m->tokens,
                                 sqrtf((float)m->cfg.d_model));
    params_grad_ready(&m->params, m->embedding);
}

void transformer_backward(Transformer *m, int first, int last, const Tensor *dout,
                          const Tensor *in, Tensor *din) {
    CHECK(first >= m->first && last <= m->last && first < last,
          "blocks [%d, %d) outside the model's [%d, %d)", first, last, m->first, m->last);
    const int L = m->cfg.layers;
    /* g: the gradient of the current block's output; the next one goes to the other of
     * d_in and d_out, so that a block never reads what it writes */
    const Tensor *g = dout;
    Tensor *next = &m->d_in;
    for (int k = last - 1; k >= first; k--) {
        const Tensor *x = block_input(m, k, first, in);
        if (k == 0) {
            embed_backward(m, g);
            break;
        }
        Tensor *target = k == first ? din : next;
        if (target && target != din) zero(target);
        Tensor *into = target ? target : &m->dx; /* nobody wants it: a scratch buffer */
        if (!target) zero(into);
        if (k <= L) {
            layer_backward(m, k - 1, x, g, into);
        } else {
            CHECK_SHAPE(g, m->N, m->cfg.vocab);
            m->layers.linear_backward(into, &m->decoder_w->grad, &m->decoder_b->grad, g, x,
                                      &m->decoder_w->value);
            params_grad_ready(&m->params, m->decoder_w);
            params_grad_ready(&m->params, m->decoder_b);
        }
        g = into;
        next = into == &m->d_in ? &m->d_out : &m->d_in;
    }
}

/* ---------------------------------------------------------------- loss */

float transformer_loss(Transformer *m, const int *targets) {
    CHECK(m->last == transformer_block_count(&m->cfg), "the loss needs the decoder's block");
    return m->layers.softmax_cross_entropy_fast(NULL, &m->logits, targets);
}

float transformer_loss_grad(Transformer *m, const int *targets) {
    CHECK(m->last == transformer_block_count(&m->cfg), "the loss needs the decoder's block");
    /* the library's CPU loss can store its gradient (the same bits as adding it to
     * zeros): no zeroing pass over the [N, V] logits' gradient first */
    if (m->layers.softmax_cross_entropy_fast == softmax_cross_entropy_fast)
        return softmax_cross_entropy_fast_store(&m->dlogits, &m->logits, targets);
    tensor_fill(&m->dlogits, 0.0f);
    return m->layers.softmax_cross_entropy_fast(&m->dlogits, &m->logits, targets);
}

float transformer_forward_backward(Transformer *m, const int *tokens, const int *targets) {
    const int blocks = transformer_block_count(&m->cfg);
    CHECK(m->first == 0 && m->last == blocks, "transformer_forward_backward needs the whole model");
    transformer_forward(m, 0, blocks, tokens, NULL);
    const float loss = transformer_loss_grad(m, targets);
    transformer_backward(m, 0, blocks, &m->dlogits, NULL, NULL);
    return loss;
}
