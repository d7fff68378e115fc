/* Tensor parallelism (Megatron-LM's, in C): each of t ranks holds a slice of every
 * weight of the transformer and computes its share of each layer; two all-reduces per
 * layer and pass join the shares.
 *
 *   column-parallel linear  W [out, in] cut by rows: rank r computes columns
 *                           [r*out/t, (r+1)*out/t) of the output from the whole input;
 *   row-parallel linear     W [out, in] cut by columns: rank r multiplies its columns of
 *                           the input and gets a partial sum of the whole output.
 *
 * An encoder layer runs its in-projection column-parallel (rank r gets the queries,
 * keys and values of heads [r*H/t, (r+1)*H/t): attention needs no communication),
 * the out-projection row-parallel, and the feed-forward likewise (linear1 by rows,
 * linear2 by columns). Two conjugate operators join them:
 *
 *   f  before a column-parallel part:  forward identity,   backward all-reduce
 *   g  after a row-parallel part:      forward all-reduce, backward identity
 *
 * so a layer's forward all-reduces twice ([N, D] after each row-parallel linear) and its
 * backward twice (the input's gradient before each column-parallel part). A bias of a
 * row-parallel linear is added once, after the all-reduce; layer norms, those biases
 * and everything between the parts are replicated: every rank of the group computes the
 * same numbers (the same dropout masks: every rank draws the same keys).
 *
 * The vocabulary is cut too: the embedding (each rank looks up its rows, the others'
 * words give zeros, then g) and the decoder (column-parallel: each rank's logits are
 * [N, V/t]), with a cross-entropy that never gathers the logits: the maxima, the sums
 * of exponentials and the target's logit are all-reduced instead ([N] floats each).
 * A vocabulary that t does not divide is padded to a multiple of t with words that are
 * never predicted (their logits take no part in the softmax, their weights stay 0).
 *
 * The sharded blocks have the unsplit model's parameter names and draw its initial
 * values (each slices the full tensors it draws from the same stream), and their
 * dropout masks are the unsplit model's (dropout windows): a run at any t takes the
 * steps of the run at t = 1, to rounding.
 *
 *   TensorParallel tp;
 *   tensor_parallel_init(&tp, grid.tensor, &cfg);
 *   TransformerBlockMakers make = tensor_parallel_makers(&tp);
 *   transformer_init_made(&m, &cfg, B, T, seed, first, last, &make);   // a stage, or all
 *   ... forward, loss, backward as for any transformer (or a pipeline of such stages) ...
 *   tensor_parallel_free(&tp);
 *
 * In 16 bits (transformer_set_precision(&m, DTYPE_BF16) or DTYPE_F16, before a pipeline
 * takes the model) the sharded blocks run as the unsplit ones do (docs/mixed-precision.md):
 * activations and their gradients 16-bit, each rank's slices read from its own working
 * copy (params_set_working, refreshed after each step), the fused attention on the
 * rank's heads with their dropout window, float32 statistics, masks and parameter
 * gradients (so tensor_parallel_grad_squares is unchanged). What a 16-bit model must
 * not do is round a rank's share: a row-parallel linear's output and a column-parallel
 * linear's input gradient are sums of the ranks' partial products, which the unsplit
 * layer rounds once, from float32. So each partial stays float32 (scratch of [N, D]
 * floats per rank), the all-reduce adds float32 (the bytes of a float32 run), the
 * row-parallel bias is added on rank 0's partial (where the unsplit layer adds it:
 * inside its one rounding), and the sum is rounded once into the 16-bit tensor; the
 * loss reads the 16-bit logits exactly, keeps its max and sum all-reduces float32 and
 * rounds its gradient once (tensor_parallel_sums.c). At t = 1 the blocks compute the
 * unsplit 16-bit blocks' bits (where a GEMM adds each dot product to its output whole);
 * at t > 1 the float32 sums go in another order, and a 16-bit value differs (by one
 * step) only where that moves it across a rounding boundary
 * (tests/dist/test_tensor_parallel.c).
 *
 * What lesson 09 writes itself goes through TensorParallelOps (TP_LIBRARY: the
 * library's own). Its row_linear_forward and vocab_cross_entropy are given float32
 * tensors in every precision (the 16-bit blocks convert around them), and f and g sum
 * float32 tensors only (where they are the identity they may be handed 16-bit ones). */
#ifndef PARALLEL_TENSOR_PARALLEL_H
#define PARALLEL_TENSOR_PARALLEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dist/dist.h"
#include "layers/layer_ops.h"
#include "models/block.h"
#include "models/transformer.h"

typedef struct TensorParallel TensorParallel;

/* Rows (or columns) [start, start + count) of a dimension. */
typedef struct {
    int start, count;
} TpRange;

/* How a parameter is cut over the group. */
typedef enum {
    TP_REPLICATED, /* whole on every rank */
    TP_ROWS,       /* rows (first dimension): column-parallel weights, their biases */
    TP_WORDS,      /* rows of the padded vocabulary: the embedding's, the decoder's */
    TP_COLUMNS,    /* columns (last dimension): row-parallel weights */
    TP_QKV_ROWS    /* the fused q|k|v rows of this rank's heads (ops.qkv_rows) */
} TpSplit;

typedef struct {
    /* Of n rows (n a multiple of t), the ones rank r of t holds. */
    TpRange (*shard)(int n, int t, int r);
    /* rows[i], i < 3D/t: the row of the in-projection [3D, D] that is row i of rank r's
     * [3D/t, D]: its heads' queries, then their keys, then their values. */
    void (*qkv_rows)(int D, int t, int r, int *rows);
    /* f and g on x (in place), forward or backward. */
    void (*f)(TensorParallel *tp, Tensor *x, BlockPass pass);
    void (*g)(TensorParallel *tp, Tensor *x, BlockPass pass);
    /* out [N, D] = in [N, K/t] W[:, this rank's columns]^T summed over the group, + bias
     * [D] once. */
    void (*row_linear_forward)(TensorParallel *tp, const LayerOps *o, Tensor *out,
                               const Tensor *in, const Tensor *w, const Tensor *bias);
    /* The mean cross-entropy of logits [N, Vp/t] (this rank's words) against targets [N]
     * (host memory), every rank the same; dlogits (NULL: none) its gradient, written. */
    float (*vocab_cross_entropy)(TensorParallel *tp, Tensor *dlogits, const Tensor *logits,
                                 const int *targets);
} TensorParallelOps;

extern const TensorParallelOps TP_LIBRARY;

struct TensorParallel {
    Dist *group;             /* the tensor group (not owned): its rank is this shard */
    int t, rank;
    int vocab, vocab_padded; /* V and V rounded up to a multiple of t */
    TpRange words;           /* this rank's rows of the padded vocabulary */
    TensorParallelOps ops;
    TpSplit *split;          /* [the model's parameters] how each is cut, by index */
    int split_count, split_cap;
    Tensor zeros;            /* [D] the bias of a row-parallel linear's other shards */
    Tensor host_logits, host_dlogits; /* the loss's host copies (a model on a GPU) */
    Tensor logits32, dlogits32; /* a 16-bit model's logits read as float32 and their float32
                                 * gradient before its one rounding, on the model's device */
    int *host_targets, host_targets_cap; /* and its targets' */
    Tensor device_scratch;   /* tp_all_reduce_host's buffer on the group's device */
};

/* 0 when a model fits t ranks: t divides the heads and the feed-forward width; else -1
 * with one message naming the size and the values of t that fit. */
int tensor_parallel_check(const TransformerConfig *c, int t, char *msg, size_t cap);
/* Over the tensor group `group` (checked with tensor_parallel_check: a user error). */
void tensor_parallel_init(TensorParallel *tp, Dist *group, const TransformerConfig *c);
void tensor_parallel_free(TensorParallel *tp);
/* The makers of its sharded blocks, for transformer_init_made. */
TransformerBlockMakers tensor_parallel_makers(TensorParallel *tp);

/* The library's TensorParallelOps. */
TpRange tp_shard(int n, int t, int r);
void tp_qkv_rows(int D, int t, int r, int *rows);
void tp_f(TensorParallel *tp, Tensor *x, BlockPass pass);
void tp_g(TensorParallel *tp, Tensor *x, BlockPass pass);
void tp_row_linear_forward(TensorParallel *tp, const LayerOps *o, Tensor *out, const Tensor *in,
                           const Tensor *w, const Tensor *bias);
float tp_vocab_cross_entropy(TensorParallel *tp, Tensor *dlogits, const Tensor *logits,
                             const int *targets);

/* dist_all_reduce of a host tensor over the group, through the group's device when its
 * backend reduces device memory only (NCCL): the loss's few floats per row. */
void tp_all_reduce_host(TensorParallel *tp, Tensor *host, DistOp op);

/* This rank's share of the squared gradient norm of the model: its slices' squares
 * and, on shard 0 only, the replicated parameters' (summed over the group and the
 * pipeline's stages, the whole model's squared norm, each parameter counted once). */
double tensor_parallel_grad_squares(const TensorParallel *tp, const ParamList *params);

/* Parameters per rank of blocks [first, last) of a model cut t ways (the embedding and
 * the decoder of the padded vocabulary): what the sharded blocks declare, from the
 * shapes. */
int64_t tensor_parallel_param_count(const TransformerConfig *c, int t, int first, int last);
/* Bytes a rank sends per step in the group's all-reduces for blocks [first, last), for
 * `rows` tokens a step (all micro-batches): 4 of [rows, D] per layer, 1 for the
 * embedding, 1 for the decoder and [rows] + [2 rows] for the loss, each 2 (t-1)/t of its
 * bytes (dist.h's rule; the counters round each call down to whole bytes). */
double tensor_parallel_bytes(const TransformerConfig *c, int64_t rows, int t, int first, int last);

/* The whole model from its slices: every parameter of `whole` (the blocks of an unsplit
 * model in host memory, the same names: transformer_init's m.blocks) that this rank's
 * stage holds, assembled from the group's slices (a
 * collective over the tensor group); then each stage's broadcast to the other stages
 * over `pipe` (NULL or one rank: no pipeline), first_block[s] the first block of
 * stage s (first_block[pipe size] = the model's blocks). */
void tensor_parallel_gather(TensorParallel *tp, const ParamList *local, BlockList *whole,
                            Dist *pipe, const int *first_block);
/* params_digest (train/checkpoint.h) of the whole model, from the slices, the same on
 * every rank, one parameter at a time (no rank holds the whole model): the stages in
 * order over `pipe` (NULL: no pipeline), each one's parameters gathered over its tensor
 * group. A collective over the job. */
uint64_t tensor_parallel_digest(TensorParallel *tp, const ParamList *local, Dist *pipe);

#endif
