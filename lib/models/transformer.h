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
 * The model is a list of blocks (models/block.h), run from block i to block j:
 *   block 0            embedding, positions, dropout     tokens -> x [N, D]   (embed_block.h)
 *   blocks 1 .. L      encoder layer l - 1                x [N, D] -> x [N, D] (encoder_block.h)
 *   block L + 1        decoder                            x [N, D] -> logits [N, V] (lm_head_block.h)
 * plus its loss, the mean cross-entropy of the logits. transformer_init_blocks builds
 * the parameters and activations of a range only (a pipeline stage: its m->blocks is
 * what lib/parallel/pipeline.h runs); transformer_init the whole model.
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
#include "models/block.h"
#include "models/block_graph.h"
#include "models/params.h"

typedef struct {
    int vocab, d_model, heads, d_ff, layers, max_len;
    float dropout;
    bool fused_attention;  /* the fused (flash) attention in float32 too; a 16-bit model
                            * always runs it (encoder_block.h). Off: the unfused layer */
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

typedef struct {
    TransformerConfig cfg;
    int B, T, N;           /* sequences, positions, rows (N = B * T) of the current batches */
    int T_max;             /* the positions the buffers were allocated for */
    Device device;         /* where parameters and buffers live */
    LayerOps layers;       /* that device's layers, or a lesson's */
    int first, last;       /* the blocks this model holds: [first, last) */
    uint64_t seed;
    ParamList params;      /* its blocks' parameters, in block order */
    BlockList blocks;      /* blocks [first, last) and their activations (blocks.acts) */
    Tensor dlogits;        /* [N, V] the loss's gradient, the current batch's rows of
                            * blocks.dloss (a model with the decoder) */
    bool cuda_graphs;      /* transformer_use_cuda_graphs */
    BlockGraphs graphs;    /* transformer_forward_backward's, when cuda_graphs */
} Transformer;             /* stays where it was made: its blocks point to params and layers */

/* What makes each kind of the model's blocks: transformer_init_blocks uses the unsplit
 * ones (embed_block.h, encoder_block.h, lm_head_block.h); a tensor-parallel model
 * (parallel/tensor_parallel.h) swaps in sharded blocks with the same parameter names,
 * drawing the same initial values. Each appends one block to l and returns it; the
 * decoder's also sets the list's loss (l->loss, l->loss_ctx). (The sharded decoder's
 * logits are a rank's words, [N, Vp/t], where this header says [N, V].) */
typedef struct {
    Block *(*embedding)(void *ctx, BlockList *l, const TransformerConfig *c);
    Block *(*encoder)(void *ctx, BlockList *l, const TransformerConfig *c, const char *prefix,
                      const char *name);
    Block *(*decoder)(void *ctx, BlockList *l, const TransformerConfig *c);
    void *ctx;
} TransformerBlockMakers;

/* The whole model, blocks 0 .. L+1, for batches of B sequences of T tokens. */
void transformer_init(Transformer *m, const TransformerConfig *c, int B, int T, uint64_t seed);
/* Blocks [first, last) only: their parameters and activations (a pipeline stage). */
void transformer_init_blocks(Transformer *m, const TransformerConfig *c, int B, int T,
                             uint64_t seed, int first, int last);
/* The same with other blocks (NULL: the unsplit ones). */
void transformer_init_made(Transformer *m, const TransformerConfig *c, int B, int T, uint64_t seed,
                           int first, int last, const TransformerBlockMakers *makers);
void transformer_free(Transformer *m);
/* Moves parameters, gradients, buffers and the positions to `device` and takes that
 * device's layer table; a table without one of the transformer's layers is an error
 * that names it. A model does not move once its blocks' activations have other sets
 * (a pipeline's): move it first. */
void transformer_to_device(Transformer *m, Device device);
/* The precision of its compute (issue 28): DTYPE_F32 (the default), DTYPE_BF16 or
 * DTYPE_F16. 16-bit: the parameters get their working copy (params_set_working; the
 * float32 values stay the master the optimiser updates, the gradients stay float32),
 * and the blocks compute in that dtype (blocks_set_precision: activations, their
 * gradients and the logits 16-bit; layer norm's statistics, dropout masks, the fused
 * attention's lse and the loss float32). After each optimiser step the working copy
 * must be refreshed (params_refresh_working; lib/train/mixed_precision.h does it). On
 * the CPU or a GPU, before or after transformer_to_device. */
void transformer_set_precision(Transformer *m, DType dtype);
static inline DType transformer_precision(const Transformer *m) { return m->blocks.dtype; }

/* Batches of T tokens from now on, 1 <= T <= the T the model was built with: the
 * last batch of a pass is shorter (get_batch). The buffers are shortened in place. */
void transformer_set_seq_len(Transformer *m, int T);
/* The bytes of activations the forward keeps for the backward, as allocated (for the
 * T the model was built with: the model's own set), and floats per token for blocks
 * [first, last) of a configuration with sequences of T tokens, counted from the shapes
 * the blocks declare. Workspaces of the backward, parameters and optimiser state are
 * not included. */
int64_t transformer_activation_bytes(Transformer *m);
double transformer_activation_floats_per_token(const TransformerConfig *c, int T, int first,
                                               int last);
/* The same in bytes for a model of precision dtype (transformer_set_precision): 16-bit
 * activations, float32 statistics and masks, the fused attention's lse for the weights. */
double transformer_activation_bytes_per_token(const TransformerConfig *c, int T, int first,
                                              int last, DType dtype);
static inline int transformer_block_count(const TransformerConfig *c) { return c->layers + 2; }
/* The forward FLOPs per token of each of the model's blocks for sequences of T tokens
 * (embedding: next to none, an encoder layer: its GEMMs and attention, the decoder: its
 * GEMM), into costs[0 .. L+2): what a pipeline's partition balances. */
void transformer_block_costs(const TransformerConfig *c, int T, double *costs);
/* A block's name for messages: "embedding", "layer 0", ..., "decoder". */
const char *transformer_block_name(const TransformerConfig *c, int k, char *buf, int cap);

/* The positions table [max_len, D] (block 0; lesson 04 fills it with its own), and the
 * logits [N, V] of the last forward (the decoder's output). */
Tensor *transformer_positions(Transformer *m);
const Tensor *transformer_logits(Transformer *m);

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
/* From now on transformer_forward_backward replays its step from CUDA graphs on a GPU
 * (models/block_graph.h: the first step of a batch shape runs as usual, the next one
 * records, later ones launch two graphs instead of some hundred kernels); bit for bit
 * the same. A model that cannot (block_graphs_unusable: not on a GPU, hooks on its
 * blocks) is a user error naming why. Moving the model or changing its precision
 * drops the graphs (new buffers); they are recorded again. */
void transformer_use_cuda_graphs(Transformer *m, bool on);

/* The mean cross-entropy of the last forward's logits (no gradient): evaluation. */
float transformer_loss(Transformer *m, const int *targets);
/* The same, and its gradient in m->dlogits (overwritten): what the decoder's block
 * takes as dout in transformer_backward. */
float transformer_loss_grad(Transformer *m, const int *targets);

#endif
