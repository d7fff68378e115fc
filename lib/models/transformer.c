#include "transformer.h"

#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/memory.h"
#include "models/embed_block.h"
#include "models/encoder_block.h"
#include "models/lm_head_block.h"

TransformerConfig transformer_config_tutorial(int vocab) {
    return (TransformerConfig){.vocab = vocab, .d_model = 200, .heads = 2, .d_ff = 200,
                               .layers = 2, .max_len = 5000, .dropout = 0.2f};
}

TransformerConfig transformer_config_seed(int vocab) {
    return (TransformerConfig){.vocab = vocab, .d_model = 1024, .heads = 4, .d_ff = 1024,
                               .layers = 3, .max_len = 5000, .dropout = 0.2f};
}

TransformerConfig transformer_config_pipeline_seed(int vocab) {
    return (TransformerConfig){.vocab = vocab, .d_model = 4096, .heads = 16, .d_ff = 4096,
                               .layers = 12, .max_len = 5000, .dropout = 0.2f};
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

const char *transformer_block_name(const TransformerConfig *c, int k, char *buf, int cap) {
    if (k == 0) snprintf(buf, (size_t)cap, "embedding");
    else if (k <= c->layers) snprintf(buf, (size_t)cap, "layer %d", k - 1);
    else snprintf(buf, (size_t)cap, "decoder");
    return buf;
}

/* ---------------------------------------------------------------- the blocks */

/* The unsplit blocks */
static Block *make_embedding(void *ctx, BlockList *l, const TransformerConfig *c) {
    (void)ctx;
    return embed_block_add(l, "embedding", c->vocab, c->d_model, c->max_len, c->dropout);
}

static Block *make_encoder(void *ctx, BlockList *l, const TransformerConfig *c, const char *prefix,
                           const char *name) {
    (void)ctx;
    return encoder_block_add(l, prefix, name, c->d_model, c->heads, c->d_ff, c->dropout,
                             c->fused_attention);
}

static Block *make_decoder(void *ctx, BlockList *l, const TransformerConfig *c) {
    (void)ctx;
    l->loss = lm_head_loss;
    l->loss_scaled = lm_head_loss_scaled;
    return lm_head_block_add(l, "linear", c->d_model, c->vocab);
}

static const TransformerBlockMakers UNSPLIT = {make_embedding, make_encoder, make_decoder, NULL};

/* Blocks [first, last) of the model, their parameters declared into m->params (not
 * allocated): enough to count parameters, activations and FLOPs. */
static void declare(Transformer *m, const TransformerConfig *c, int B, int T, int first, int last,
                    const TransformerBlockMakers *make) {
    blocks_init(&m->blocks, &m->params, &m->layers, first, transformer_block_count(c), B, T);
    for (int k = first; k < last; k++) {
        char name[BLOCK_NAME_MAX], prefix[64];
        transformer_block_name(c, k, name, sizeof name);
        Block *b;
        if (k == 0) {
            b = make->embedding(make->ctx, &m->blocks, c);
        } else if (k <= c->layers) {
            snprintf(prefix, sizeof prefix, "transformer_encoder.layers.%d", k - 1);
            b = make->encoder(make->ctx, &m->blocks, c, prefix, name);
        } else {
            b = make->decoder(make->ctx, &m->blocks, c);
        }
        rng_seed(&b->rng, m->seed, 1000 + (uint64_t)k); /* its own stream of the seed: a split */
    }                                                   /* model draws what the whole one draws */
}

/* The blocks of a configuration, without memory behind them. */
static void skeleton(Transformer *m, const TransformerConfig *c, int T, int first, int last) {
    transformer_config_check(c);
    memset(m, 0, sizeof *m);
    m->layers = *layer_ops(DEVICE_CPU);
    declare(m, c, 1, T, first, last, &UNSPLIT);
}

static void skeleton_free(Transformer *m) {
    blocks_free(&m->blocks);
    params_free(&m->params);
}

int64_t transformer_param_count(const TransformerConfig *c) {
    Transformer m;
    skeleton(&m, c, 1, 0, transformer_block_count(c));
    const int64_t total = m.params.total;
    skeleton_free(&m);
    return total;
}

void transformer_block_costs(const TransformerConfig *c, int T, double *costs) {
    Transformer m;
    skeleton(&m, c, T, 0, transformer_block_count(c));
    blocks_costs(&m.blocks, T, costs);
    skeleton_free(&m);
}

double transformer_activation_floats_per_token(const TransformerConfig *c, int T, int first,
                                               int last) {
    Transformer m;
    skeleton(&m, c, T, first, last);
    const double floats = (double)blocks_saved_bytes(&m.blocks, first, last, 1, T) / sizeof(float);
    skeleton_free(&m);
    return floats / T;
}

double transformer_activation_bytes_per_token(const TransformerConfig *c, int T, int first,
                                              int last, DType dtype) {
    Transformer m;
    skeleton(&m, c, T, first, last);
    blocks_set_precision(&m.blocks, dtype);
    const double bytes = (double)blocks_saved_bytes(&m.blocks, first, last, 1, T);
    skeleton_free(&m);
    return bytes / T;
}

/* ---------------------------------------------------------------- set-up */

/* m->dlogits: the rows of the current batch in the list's loss gradient. */
static void point_dlogits(Transformer *m) {
    if (m->blocks.dloss.raw) m->dlogits = tensor_rows(&m->blocks.dloss, m->B * m->T);
}

void transformer_init_blocks(Transformer *m, const TransformerConfig *c, int B, int T,
                             uint64_t seed, int first, int last) {
    transformer_init_made(m, c, B, T, seed, first, last, NULL);
}

void transformer_init_made(Transformer *m, const TransformerConfig *c, int B, int T, uint64_t seed,
                           int first, int last, const TransformerBlockMakers *makers) {
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
    m->device = DEVICE_CPU;
    m->layers = *layer_ops(DEVICE_CPU);
    declare(m, c, B, T, first, last, makers ? makers : &UNSPLIT);
    /* The whole need up front, before any of it is taken: a vocabulary of millions of
     * words makes gigabytes of embedding, decoder and logits, and the kernel would kill
     * the program halfway with no word (lib/core/memory.h) */
    const double act = (double)blocks_saved_bytes(&m->blocks, first, last, B, T) / sizeof(float);
    char what[256];
    snprintf(what, sizeof what, "the transformer (a vocabulary of %d words, %d wide, %d layers, "
             "batches of %d x %d: %lld parameters, their gradients and the activations)",
             c->vocab, c->d_model, c->layers, B, T, (long long)m->params.total);
    mem_require((uint64_t)(8.0 * (double)m->params.total + 4.0 * act), what);
    params_allocate(&m->params);
    for (int i = 0; i < m->blocks.count; i++) { /* PyTorch's initialisation, each block */
        Block *b = &m->blocks.items[i];          /* from its own stream of the seed */
        Rng rng;
        rng_seed(&rng, seed, 100 + (uint64_t)b->index);
        b->type->init(b, &rng);
    }
    blocks_allocate(&m->blocks);
    point_dlogits(m);
}

void transformer_init(Transformer *m, const TransformerConfig *c, int B, int T, uint64_t seed) {
    transformer_init_blocks(m, c, B, T, seed, 0, transformer_block_count(c));
}

void transformer_free(Transformer *m) {
    block_graphs_free(&m->graphs);
    blocks_free(&m->blocks);
    params_free(&m->params);
    memset(m, 0, sizeof *m);
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
    NEED(embedding_forward_rows); NEED(embedding_backward_rows); /* the sharded blocks' */
    NEED(dropout_forward_window); NEED(attention_forward_window);
    NEED(flash_attention_forward); NEED(flash_attention_backward);
#undef NEED
    return NULL;
}

void transformer_to_device(Transformer *m, Device device) {
    if (m->device == device) return;
    const LayerOps *ops = layer_ops(device);
    const char *missing = missing_layer(ops);
    if (missing)
        fatal("the transformer cannot run on the %s: its layer %s has no %s version in this build",
              device_name(device), missing, device_name(device));
    block_graphs_free(&m->graphs); /* they name the old buffers */
    params_to_device(&m->params, device);
    blocks_to_device(&m->blocks, device);
    point_dlogits(m);
    m->device = device;
    m->layers = *ops;
}

void transformer_set_precision(Transformer *m, DType dtype) {
    if (dtype != DTYPE_F32 && dtype != DTYPE_BF16 && dtype != DTYPE_F16)
        fatal("a precision of %s: the transformer runs in float32, bfloat16 or float16",
              dtype_name(dtype));
    blocks_set_precision(&m->blocks, dtype); /* refuses blocks that cannot */
    block_graphs_free(&m->graphs);           /* new activation buffers */
    /* back to float32, a working copy made before stays, unread; kept for 16 bits
     * again, it is refreshed: the values may have trained meanwhile */
    if (dtype != DTYPE_F32 && (!m->params.working.raw || m->params.working.dtype != dtype))
        params_set_working(&m->params, dtype);
    else if (dtype != DTYPE_F32)
        params_refresh_working(&m->params);
    point_dlogits(m);
}

void transformer_set_seq_len(Transformer *m, int T) {
    if (T < 1 || T > m->T_max)
        fatal("a batch of sequences of %d tokens: the model was built for 1 to %d", T, m->T_max);
    blocks_set_batch(&m->blocks, m->B, T);
    m->T = T, m->N = m->B * T;
    point_dlogits(m);
}

int64_t transformer_activation_bytes(Transformer *m) { return m->blocks.acts.bytes; }

void transformer_train(Transformer *m) { m->blocks.training = true; }
void transformer_eval(Transformer *m) { m->blocks.training = false; }

Tensor *transformer_positions(Transformer *m) {
    CHECK(m->first == 0, "the positions belong to block 0, which this model (blocks [%d, %d)) "
          "does not hold", m->first, m->last);
    return embed_block_positions(&m->blocks.items[0]);
}

const Tensor *transformer_logits(Transformer *m) {
    CHECK(m->last == transformer_block_count(&m->cfg), "the logits need the decoder's block");
    return &blocks_saved(&m->blocks, &m->blocks.acts, m->last - 1)[0];
}

/* ---------------------------------------------------------------- passes */

const Tensor *transformer_forward(Transformer *m, int first, int last, const int *tokens,
                                  const Tensor *in) {
    return blocks_forward(&m->blocks, &m->blocks.acts, first, last, tokens, in);
}

void transformer_backward(Transformer *m, int first, int last, const Tensor *dout,
                          const Tensor *in, Tensor *din) {
    blocks_backward(&m->blocks, &m->blocks.acts, first, last, dout, in, din);
}

float transformer_loss(Transformer *m, const int *targets) {
    return blocks_loss(&m->blocks, transformer_logits(m), targets, NULL);
}

float transformer_loss_grad(Transformer *m, const int *targets) {
    return blocks_loss(&m->blocks, transformer_logits(m), targets, &m->dlogits);
}

float transformer_forward_backward(Transformer *m, const int *tokens, const int *targets) {
    const int blocks = transformer_block_count(&m->cfg);
    CHECK(m->first == 0 && m->last == blocks, "transformer_forward_backward needs the whole model");
    if (m->cuda_graphs) return block_graphs_step(&m->blocks, &m->graphs, tokens, targets, &m->dlogits);
    transformer_forward(m, 0, blocks, tokens, NULL);
    const float loss = transformer_loss_grad(m, targets);
    transformer_backward(m, 0, blocks, &m->dlogits, NULL, NULL);
    return loss;
}

void transformer_use_cuda_graphs(Transformer *m, bool on) {
    if (on) {
        const char *why = block_graphs_unusable(&m->blocks);
        if (why) fatal("CUDA graphs cannot record this model's steps: %s", why);
    } else {
        block_graphs_free(&m->graphs);
    }
    m->cuda_graphs = on;
}
