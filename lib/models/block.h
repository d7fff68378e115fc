/* A model is a list of blocks with one interface, run in order, plus its loss.
 *
 * A block (an embedding, an encoder layer, a convolution with its pool...) declares its
 * parameters into the model's ParamList when it is made, says which activations its
 * forward keeps for its backward (their shapes for a batch), how much scratch it needs,
 * and runs its forward and backward through the model's layer table. Everything else is
 * the list's job, written once for every model:
 *
 *   - the activations of a batch in flight (BlockActs): the list has one set of its own;
 *     a pipeline stage makes one per micro-batch in flight, a strategy never reaches
 *     into a block for them;
 *   - running a range of blocks forward and back, passing each block's output to the
 *     next and the gradient of its input back, with hooks before and after each pass of
 *     each block (where a sharded data-parallel strategy gathers a block's parameters,
 *     or a trace opens a range) and every parameter's gradient announced as final once
 *     its block's backward is done (params_grad_ready: data-parallel buckets);
 *   - the counts summed over the blocks: activation memory, forward FLOPs per row.
 *
 * Rows: a batch is B sequences of T positions, N = B * T rows (the CNN's images: T = 1).
 *
 *   blocks_init(&l, &params, &layers, 0, blocks, B_max, T_max);  // then blocks_add each
 *   params_allocate(&params); ... initial values ...
 *   blocks_allocate(&l);                                // its activations and scratch
 *   out = blocks_forward(&l, &l.acts, 0, l.count, tokens, NULL);
 *   loss = blocks_loss(&l, out, targets, &l.dloss);
 *   blocks_backward(&l, &l.acts, 0, l.count, &l.dloss, NULL, NULL);
 *
 * Precision (issue 28, docs/mixed-precision.md): a list runs in float32 (the default)
 * or in one 16-bit dtype, set with blocks_set_precision. Its blocks then declare their
 * activations, the gradients of those and their scratch in that dtype (block_shape_typed
 * with b->dtype), statistics, masks and the fused attention's lse in float32; they read
 * their weights through block_param (the parameters' 16-bit working copy,
 * params_set_working) and add their parameters' gradients in float32. A block type that
 * cannot run 16-bit (sixteen_bit false: the CNN's, the MLP policy's) is refused by name.
 *
 * Block indices in these calls are the whole model's: a pipeline stage's list holds
 * blocks [first, first + count) of it. A backward announces its blocks' gradients as
 * final once it is done with them: final for this backward (a pipeline runs one per
 * micro-batch and adds them up; data parallel across micro-batches would reduce at the
 * last one only). */
#ifndef MODELS_BLOCK_H
#define MODELS_BLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/rng.h"
#include "core/tensor.h"
#include "layers/layer_ops.h"
#include "models/params.h"

enum { BLOCK_SAVED_MAX = 20, BLOCK_HOOKS_MAX = 8, BLOCK_NAME_MAX = 32 };

typedef struct Block Block;
typedef struct BlockList BlockList;

/* One pass of one block: what it reads and writes. */
typedef struct {
    const LayerOps *ops;   /* the model's layer table (a lesson may have swapped entries) */
    Device device;         /* where every tensor of the call lives */
    int B, T;              /* this batch: N = B * T rows */
    bool training;         /* dropout on */
    Rng *rng;              /* the block's own stream (dropout masks) */
    Tensor *saved;         /* its activations of this batch, shaped for B x T; saved[0] is
                            * its output (the next block's input) */
    const Tensor *in;      /* its input; NULL for a block that reads ids */
    const int *ids;        /* the batch's ids (tokens) in the device's memory, or NULL */
    Tensor *work;          /* its scratch, shaped as its type's scratch() says for B x T:
                            * contents left from anybody's last pass */
    const Tensor *dout;    /* backward: dL/d(its output) */
    Tensor *din;           /* backward: += dL/d(its input); NULL when nobody needs it */
    void *host;            /* its host memory of this batch in flight (type->host_bytes; NULL
                            * when none): what its forward leaves for its backward on the
                            * host (the fused attention's dropout key) */
} BlockCall;

typedef struct {
    const char *kind;      /* "embedding", "encoder layer", ... (messages) */
    /* The shapes (data NULL) of the activations its forward keeps for its backward, for
     * a batch of B x T, output first; returns how many (at most BLOCK_SAVED_MAX). */
    int (*saved)(const Block *b, int B, int T, Tensor *shapes);
    /* The shape of its input for B x T; ndim 0: it reads the batch's ids instead. */
    void (*input)(const Block *b, int B, int T, Tensor *shape);
    /* The shapes of the scratch its passes use and do not keep, for B x T; returns how
     * many (at most BLOCK_SAVED_MAX; NULL: none). Blocks take turns with one buffer. */
    int (*scratch)(const Block *b, int B, int T, Tensor *shapes);
    void (*forward)(Block *b, const BlockCall *c);
    /* Adds (+=) into its parameters' gradients and into c->din. */
    void (*backward)(Block *b, const BlockCall *c);
    /* Forward FLOPs per row (token, image) for sequences of T: what a pipeline balances. */
    double (*flops)(const Block *b, int T);
    /* After params_allocate: its initial values, drawn from rng (and tables of its own). */
    void (*init)(Block *b, Rng *rng);
    /* Moves what it holds besides its parameters (NULL: nothing). */
    void (*to_device)(Block *b, Device device);
    void (*free)(Block *b); /* its state (NULL: a plain allocation) */
    /* Bytes of host memory per batch in flight (BlockCall.host; 0: none). */
    size_t host_bytes;
    /* It runs in bfloat16 and float16 too (blocks_set_precision); else float32 only. */
    bool sixteen_bit;
} BlockType;

struct Block {
    const BlockType *type;
    char name[BLOCK_NAME_MAX]; /* "layer 0": messages, traces, a pipeline's partition */
    int index;                 /* in the whole model */
    void *state;               /* the type's own: sizes, Param pointers, tables */
    int first_param, params;   /* its parameters: items [first_param, + params) of the list */
    Rng rng;                   /* its dropout masks' stream */
    DType dtype;               /* the list's: what its activations and weights are in */
};

/* The activations of one batch in flight over a list's blocks. */
typedef struct {
    Tensor *saved;             /* [count * BLOCK_SAVED_MAX]: block i's at i * BLOCK_SAVED_MAX */
    int *saved_count;          /* [count] */
    void **host;               /* [count] each block's host memory (NULL: none) */
    int count;                 /* blocks */
    const int *ids;            /* the ids its forward read (the embedding's backward needs them) */
    int B, T;                  /* the batch they are shaped for */
    int64_t bytes;             /* what they took when allocated (B_max x T_max) */
} BlockActs;

typedef enum { BLOCK_FORWARD, BLOCK_BACKWARD } BlockPass;
/* Called before (after = false) and after each pass of each block. */
typedef void (*BlockHookFn)(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after);

/* The model's loss on its last block's output: the mean over the batch, and when dout
 * is not NULL its gradient written (not added) into dout. ctx: the list's loss_ctx (a
 * tensor-parallel loss needs its ranks). */
typedef float (*BlockLossFn)(void *ctx, const LayerOps *ops, const Tensor *out, const int *targets,
                             Tensor *dout);
/* The same loss with its gradient times scale (the loss scale, > 0) inside its float32
 * formula, before the one rounding of a 16-bit dout; the loss returned is not scaled. */
typedef float (*BlockScaledLossFn)(void *ctx, const LayerOps *ops, const Tensor *out,
                                   const int *targets, Tensor *dout, float scale);

struct BlockList {
    Block *items;              /* count blocks of the model: [first, first + count) */
    int count, capacity, first;
    int total;                 /* blocks in the whole model (a pipeline stage holds a slice) */
    ParamList *params;         /* where they declared their parameters (the model's) */
    const LayerOps *layers;    /* the model's table */
    Device device;
    DType dtype;               /* its compute dtype: float32 (0, the default), bf16, fp16 */
    float loss_scale;          /* the loss's gradient is multiplied by it (fp16's dynamic
                                * loss scaling, lib/train/mixed_precision.h); 0 or 1: none */
    Tensor dloss32;            /* [2 x the loss gradient's elements] float32, made on first
                                * use by a 16-bit pipeline's last stage (blocks_loss_f32):
                                * the logits read as float32, then the float32 gradient */
    bool training;             /* dropout on (the default) */
    int B_max, T_max;          /* what buffers are allocated for */
    int B, T;                  /* the batch of the next forward (blocks_set_batch) */
    BlockLossFn loss;          /* NULL: the model has no loss of its own */
    BlockScaledLossFn loss_scaled; /* the same loss scaling its own gradient (NULL: none; a
                                * loss scale then multiplies a float32 gradient after it, and
                                * a 16-bit one is refused) */
    void *loss_ctx;            /* what the loss is given */
    Tensor dloss;              /* with a loss: its gradient, the last output's shape at
                                * B_max x T_max (allocated by blocks_allocate) */
    BlockActs acts;            /* its own activations: one batch in flight */
    Tensor work;               /* [the most any block asks] scratch, shared in turn */
    Tensor *work_views;        /* [count * BLOCK_SAVED_MAX] each block's scratch laid out in
                                * work, for a batch of views_B x views_T (made when it changes) */
    int views_B, views_T;
    Tensor grad[2];            /* gradients between blocks, in turn */
    struct {
        BlockHookFn fn;
        void *ctx;
    } hooks[BLOCK_HOOKS_MAX];
    int hook_count;
    int pinned;                /* strategies holding buffers made for this list on its
                                * device (a pipeline: pipeline_init to pipeline_free):
                                * while any does, it does not move */
};

/* An empty list, for blocks first, first + 1, ... of a model of `total` blocks, which
 * will declare their parameters into params and run through *layers (layers->device:
 * where they run), for batches of up to B_max x T_max. Block types' shapes must not
 * grow when B or T shrink. */
void blocks_init(BlockList *l, ParamList *params, const LayerOps *layers, int first, int total,
                 int B_max, int T_max);
/* Appends a block of `type` (saved, input, forward, backward, flops and init are
 * required) with `state` (the type frees it), named `name`, whose
 * parameters are the ones declared since first_param (params->count before its
 * constructor ran); its index is first + its position. Returns it (valid until the
 * next blocks_add). */
Block *blocks_add(BlockList *l, const BlockType *type, void *state, const char *name, int first_param);
/* After params_allocate (and initial values): its own activations, the scratch, the
 * gradients between blocks and the loss's gradient (a list with a loss). */
void blocks_allocate(BlockList *l);
void blocks_free(BlockList *l);
/* Its activations, scratch and the blocks' own tables to `device` (the parameters are the
 * model's to move); refused while a strategy has pinned it. */
void blocks_to_device(BlockList *l, Device device);

/* The dtype its blocks compute in: DTYPE_F32 (the default), DTYPE_BF16 or DTYPE_F16;
 * every block's type must take 16 bits (a user error naming the first that does not).
 * Before blocks_allocate, or after it: its own buffers are then made anew (refused while
 * a strategy has pinned it). The parameters' working copy is the model's to make
 * (params_set_working), before the first forward. */
void blocks_set_precision(BlockList *l, DType dtype);

/* The batch of the following forwards: B <= B_max sequences of T <= T_max (a user error
 * otherwise, naming both). */
void blocks_set_batch(BlockList *l, int B, int T);

/* A set of activations for one batch in flight, allocated for B_max x T_max. */
void blocks_acts_init(const BlockList *l, BlockActs *a);
void blocks_acts_free(BlockActs *a);
/* Block `index`'s activations in a: its output is [0]. */
Tensor *blocks_saved(const BlockList *l, BlockActs *a, int index);

/* Forward of blocks [first, last) on the batch blocks_set_batch set, into a: ids when
 * the first block reads ids, else in (its input). Returns the last block's output (in a). */
const Tensor *blocks_forward(BlockList *l, BlockActs *a, int first, int last, const int *ids,
                             const Tensor *in);
/* Backward of blocks [first, last) after their forward into a: dout = dL/d(output of
 * block last - 1); the parameters' gradients are added to and announced; din (NULL:
 * not needed) gets += dL/d(input of block first); in: the input the forward was given. */
/* What a forward of the whole list does on the host, without its GPU work (a CUDA graph
 * replays that, models/block_graph.h): a's shapes for the list's batch, its ids (the
 * first block must read ids); returns the last block's output. */
const Tensor *blocks_forward_host(BlockList *l, BlockActs *a, const int *ids);
void blocks_backward(BlockList *l, BlockActs *a, int first, int last, const Tensor *dout,
                     const Tensor *in, Tensor *din);
/* The model's loss of out (the last block's output of a forward); dout: as BlockLossFn.
 * With a loss scale, dout is the gradient times loss_scale: for a 16-bit dout the loss
 * scales it before its one rounding (loss_scaled: no float32 copy of out or dout). */
float blocks_loss(BlockList *l, const Tensor *out, const int *targets, Tensor *dout);
/* The same loss with its gradient left in float32 (times loss_scale, not rounded): dout32
 * [out's shape] float32, for a caller that scales it further before the one rounding to
 * the list's dtype (a pipeline's 1/m per micro-batch: tensor_convert into l->dloss). The
 * logits of a 16-bit out are read as float32 into dloss32's first half (the loss takes
 * one dtype). blocks_dloss_f32 gives a float32 buffer of l->dloss's shape for it
 * (dloss32's other half, made on first use). */
float blocks_loss_f32(BlockList *l, const Tensor *out, const int *targets, Tensor *dout32);
Tensor blocks_dloss_f32(BlockList *l);

void blocks_add_hook(BlockList *l, BlockHookFn fn, void *ctx);
void blocks_remove_hook(BlockList *l, BlockHookFn fn, void *ctx);

/* Bytes of activations kept for the backward, counted from the shapes the blocks declare,
 * summed over blocks [first, last) for a batch of B x T (a set as allocated holds
 * B_max x T_max: BlockActs.bytes), and the forward FLOPs per row of each of the list's
 * blocks into costs[k - first]. */
int64_t blocks_saved_bytes(const BlockList *l, int first, int last, int B, int T);
void blocks_costs(const BlockList *l, int T, double *costs);
/* The shape of block `index`'s input, and of its output, for B x T. */
void blocks_input_shape(const BlockList *l, int index, int B, int T, Tensor *shape);
void blocks_output_shape(const BlockList *l, int index, int B, int T, Tensor *shape);

/* For block types: a shape-only tensor (data NULL), float32: block_shape(2, N, D);
 * of a dtype: block_shape_typed(b->dtype, 2, N, D) (an activation of the list's). */
Tensor block_shape(int ndim, ...);
Tensor block_shape_typed(DType dtype, int ndim, ...);

/* The tensor a block's pass reads for parameter p: its value (float32 list), or its
 * working copy in the list's 16-bit dtype (stops with a message when the model has made
 * none, or one of another dtype). Gradients are always p->grad, float32. */
const Tensor *block_param(const Block *b, const Param *p);

#endif
