/* The word-level language model of PyTorch's "Language Modeling with nn.Transformer"
 * tutorial, for lesson 04 (and split over ranks in lesson 07):
 *
 *   tokens [B, T] -> embedding * sqrt(D) -> + sinusoidal positions -> dropout
 *   -> L x TransformerEncoderLayer (post-norm, ReLU, causal self-attention):
 *        y = norm1(x + dropout(out_proj(attention(in_proj(x)))))
 *        z = norm2(y + dropout(linear2(dropout(relu(linear1(y))))))
 *   -> linear decoder to the vocabulary -> logits [B*T, V]
 *
 * Rows are batch-major: sequence b, position t is row b*T + t (the tutorial's data is
 * [T, B]: the loader transposes). Parameters have the tutorial's names
 * (embedding.weight, transformer_encoder.layers.0.self_attn.in_proj_weight, ...,
 * linear.weight) in one ParamList; initialised as the tutorial does: embedding and
 * decoder weight uniform in +-0.1, decoder bias 0; in_proj Xavier-uniform with bias 0,
 * out_proj uniform +-1/sqrt(D) with bias 0, the feed-forward linears PyTorch's
 * default (weights and biases uniform +-1/sqrt(fan_in)), layer norms 1 and 0. Each
 * block draws from its own stream of the seed, so a model split into stages starts
 * with the weights of the unsplit one.
 *
 * A model is a list of blocks, run from block i to block j:
 *   block 0            embedding, positions, dropout     tokens -> x [N, D]
 *   blocks 1 .. L      encoder layer l - 1                x [N, D] -> x [N, D]
 *   block L + 1        decoder                            x [N, D] -> logits [N, V]
 * transformer_init_blocks allocates the parameters and activations of a range only
 * (a pipeline stage); transformer_init the whole model.
 *
 * Written once for both devices, as the CNN is: the layers are called through
 * m->layers, the table of the device the model lives on (layers/layer_ops.h), and a
 * lesson swaps in its own layers there. The model is built on the CPU (its
 * initialisation draws from the host Rng), then moved:
 *
 *   transformer_init(&m, &cfg, B, T, seed);
 *   transformer_to_device(&m, DEVICE_CUDA);        // optional
 *   transformer_set_seq_len(&m, seq_len);          // a shorter last batch (<= T)
 *   loss = transformer_forward_backward(&m, tokens, targets);  // device memory, [B*seq_len]
 */
#ifndef MODELS_TRANSFORMER_H
#define MODELS_TRANSFORMER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/rng.h"
#include "core/tensor.h"
#include "layers/layer_ops.h"
#include "models/params.h"

typedef struct {
    int vocab, d_model, heads, d_ff, layers, max_len;
    float dropout;
} TransformerConfig;

/* The tutorial's model (200 wide, 2 heads, 2 layers, feed-forward 200, dropout 0.2)
 * and the seed's (1024 wide, 4 heads, 3 layers, feed-forward 1024: 77,879,406
 * parameters with 28,782 words), for a vocabulary of `vocab` words. */
TransformerConfig transformer_config_tutorial(int vocab);
TransformerConfig transformer_config_seed(int vocab);
/* The pipeline exercise's model (lesson 07): 4096 wide, 16 heads, 12 layers,
 * feed-forward 4096, dropout 0.2: 1,444,261,998 parameters with 28,782 words. */
TransformerConfig transformer_config_pipeline_seed(int vocab);
/* A wrong size is a user error (exit 1) that names it. */
void transformer_config_check(const TransformerConfig *c);
/* The number of parameters, without building the model. */
int64_t transformer_param_count(const TransformerConfig *c);

typedef struct { /* one encoder layer's parameters */
    Param *in_w, *in_b, *out_w, *out_b, *l1_w, *l1_b, *l2_w, *l2_b, *n1_w, *n1_b, *n2_w, *n2_b;
} EncoderParams;

typedef struct { /* one encoder layer's activations, kept for the backward ([N = B*T rows]) */
    Tensor qkv, probs, dropped, ctx, a, a_mask, r1, y1, mean1, rstd1;
    Tensor h, h_mask, f, f_mask, r2, out, mean2, rstd2;
} EncoderActs;

typedef struct {
    TransformerConfig cfg;
    int B, T, N;           /* sequences, positions, rows (N = B * T) of the current batches */
    int T_max;             /* the positions the buffers were allocated for */
    Device device;         /* where parameters and buffers live */
    LayerOps layers;       /* that device's layers, or a lesson's */
    int first, last;       /* the blocks this model holds: [first, last) */
    bool training;         /* dropout on (transformer_train) or off (transformer_eval) */
    uint64_t seed;
    Rng *rngs;             /* [L + 2] each block's dropout masks, its own stream of the seed:
                            * a stage of a split model draws what the whole model draws */
    ParamList params;
    Param *embedding, *decoder_w, *decoder_b; /* NULL outside the range */
    EncoderParams *enc;    /* [layers], set for the layers in the range */
    EncoderActs *acts;     /* [layers], allocated for the layers in the range */
    Tensor pe;             /* [max_len, D] positions (block 0) */
    Tensor x0, x0_mask;    /* block 0's output and its dropout mask */
    const int *tokens;     /* block 0's input of the last forward (device memory) */
    Tensor logits, dlogits; /* [N, V] block L+1's output, and the loss's gradient */
    /* workspaces of the backward, allocated once: [N, D] unless said */
    Tensor dx, d_in, d_out, d_a, d_r, d_y, d_f, d_ctx;
    Tensor d_h, d_h2, d_qkv, d_scores; /* [N, F], [N, F], [N, 3D], [B, H, T, T] */
    /* micro-batches in flight (a pipeline stage, transformer_use_slot): slot k's copy of
     * every activation kept for the backward, and its block 0 input */
    int slots, slot;       /* slots allocated (0: only the buffers above), the one in use */
    Tensor *slot_acts;     /* [slots][saved activations] */
    const int **slot_tokens; /* [slots] */
    Tensor **slot_live;    /* [saved activations] the model's own fields that slots swap */
    int slot_count;        /* how many: the saved activations of the model's blocks */
} Transformer;

/* The whole model, blocks 0 .. L+1, for batches of B sequences of T tokens. */
void transformer_init(Transformer *m, const TransformerConfig *c, int B, int T, uint64_t seed);
/* Blocks [first, last) only: their parameters and activations (a pipeline stage). */
void transformer_init_blocks(Transformer *m, const TransformerConfig *c, int B, int T,
                             uint64_t seed, int first, int last);
void transformer_free(Transformer *m);
/* Moves parameters, gradients, buffers and the positions to `device` and takes that
 * device's layer table; a table without one of the transformer's layers is an error
 * that names it. */
void transformer_to_device(Transformer *m, Device device);
/* Batches of T tokens from now on, 1 <= T <= the T the model was built with: the
 * last batch of a pass is shorter (get_batch). The buffers are shortened in place. */
void transformer_set_seq_len(Transformer *m, int T);
/* The bytes of activations the forward keeps for the backward, as allocated (for the
 * T the model was built with), and the same counted from the shapes alone: floats
 * per token for blocks [first, last) of a configuration with sequences of T tokens.
 * Workspaces of the backward, parameters and optimiser state are not included. */
int64_t transformer_activation_bytes(Transformer *m);
double transformer_activation_floats_per_token(const TransformerConfig *c, int T, int first,
                                               int last);
static inline int transformer_block_count(const TransformerConfig *c) { return c->layers + 2; }

/* Several micro-batches in flight, as a pipeline stage has them: slot k holds one
 * micro-batch's activations, from its forward until its backward. After
 * transformer_use_slot(m, k), the forward writes and the backward reads slot k's; a
 * slot is allocated when first used (as large as the model's buffers for its longest
 * sequences), so m->slots is the most micro-batches a run ever had in flight at once,
 * and that times transformer_activation_bytes the activation memory it took. */
void transformer_use_slot(Transformer *m, int slot);

void transformer_train(Transformer *m); /* dropout on (the default after init) */
void transformer_eval(Transformer *m);  /* dropout off: the identity */

/* Runs blocks [first, last) of the model's range: tokens [N] (in the model's device
 * memory, batch-major: row b*T + t) when first is 0, else
 * in [N, D], the previous block's output. Returns the last block's output (x [N, D],
 * or the logits [N, V] for the decoder), owned by the model until the next forward. */
const Tensor *transformer_forward(Transformer *m, int first, int last, const int *tokens,
                                  const Tensor *in);

/* The gradients of blocks [first, last), after their forward: dout is dL/d(output of
 * block last - 1); the parameters' gradients are added (+=) to; din (NULL for block 0,
 * or when not needed) receives += dL/d(input of block first). in is the input the
 * forward was given (NULL for block 0). */
void transformer_backward(Transformer *m, int first, int last, const Tensor *dout,
                          const Tensor *in, Tensor *din);

/* The whole model: forward, mean cross-entropy over the N targets, backward into the
 * parameters' gradients (added to: zero them first). Returns the loss. */
float transformer_forward_backward(Transformer *m, const int *tokens, const int *targets);

/* The mean cross-entropy of the last forward's logits (no gradient): evaluation. */
float transformer_loss(Transformer *m, const int *targets);
/* The same, and its gradient in m->dlogits (overwritten): what the decoder's block
 * takes as dout in transformer_backward (a pipeline's last stage). */
float transformer_loss_grad(Transformer *m, const int *targets);

#endif
