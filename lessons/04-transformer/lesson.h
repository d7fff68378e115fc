/* Lesson 04: a transformer language model. The functions you write, and the pieces
 * of the program they work with.
 *
 * The model is the library's (lib/models/transformer.h): the tutorial's
 * TransformerModel, run through a table of layers (m->layers). lesson_use_my_layers
 * puts your attention (TODO 4.3, 4.4) and layer norm (4.5, 4.6) into that table, so
 * they run inside the real model; your positional table (4.2) replaces the model's.
 * Each TODO has a twin in the library, which the grader uses as the reference.
 *
 * Shapes: N = B*T rows, one per token; B sequences (the columns of batchify) of T
 * positions; D the model width, H heads of dh = D / H columns each. A sequence's rows
 * are consecutive: sequence b, position t is row b*T + t ("batch-major"). */
#ifndef LESSON04_H
#define LESSON04_H

#include <stdbool.h>
#include <stdint.h>

#include "core/check.h"
#include "core/gpu_peak.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "core/todo.h"
#include "data/text.h"
#include "models/transformer.h"
#include "train/loss_watch.h"
#include "train/mixed_precision.h"
#include "train/optim.h"

#define LESSON_DIR "lessons/04-transformer"
#define TODO_STOP(id) todo_stop(id, LESSON_DIR, __func__)

/* ---------------------------------------------------------------- TODO 4.1 (data.c) */

/* PyTorch's batchify: the stream cut into batch_size columns, column b the b-th
 * contiguous piece, the rest dropped: out->data [rows, batch_size], rows = count /
 * batch_size. A split too short for two rows stops with a message (given). */
void lesson_batchify(const TokenStream *s, int batch_size, const char *what, TextBatches *out);
/* get_batch(source, i): rows i .. i+seq_len-1 as input, i+1 .. i+seq_len as target,
 * seq_len = min(bptt, rows - 1 - i); views into b->data (no copy). */
TextBatch lesson_get_batch(const TextBatches *b, int64_t i, int bptt);

/* ---------------------------------------------------------------- TODO 4.2 (positional.c) */

/* table [max_len, D]: row t = the sinusoidal encoding of position t (D even). */
void lesson_positional_table(Tensor *table);

/* ---------------------------------------------------------------- TODO 4.3, 4.4 (attention.c) */

/* One sequence and one head (TODO 4.3): p [T, T] (row stride T) from the queries and
 * keys, q_i = q + i * ld and k_j = k + j * ld (dh floats each):
 *   p[i][j] = softmax over j' <= i of (q_i . k_j' / sqrt(dh)), for j <= i; 0 for j > i. */
void lesson_causal_softmax(float *p, const float *q, const float *k, int T, int dh, int ld);
/* Its backward (TODO 4.4): on entry ds [T, T] holds dL/dp, on return dL/dscores (the
 * scores before the softmax), 0 above the diagonal; dq and dk (rows of stride ld, like
 * q and k) receive += the gradients of the queries and the keys. */
void lesson_causal_softmax_backward(float *dq, float *dk, float *ds, const float *p,
                                    const float *q, const float *k, int T, int dh, int ld);
/* Given: the whole attention layer around them, with the signatures of
 * layers/attention.h (heads, dropout on the weights, the context, the values'
 * gradient), so that it fits the model's table of layers. */
void lesson_attention_forward(Tensor *ctx, Tensor *probs, Tensor *dropped, const Tensor *qkv,
                              float dropout_p, bool training, Rng *rng);
void lesson_attention_backward(Tensor *dqkv, Tensor *dscores, const Tensor *dctx,
                               const Tensor *qkv, const Tensor *probs, const Tensor *dropped);

/* ---------------------------------------------------------------- TODO 4.5, 4.6 (layernorm.c) */

/* Layer norm over the last dimension (layers/layernorm.h): out [N, D], and per row
 * mean [N] and rstd [N] = 1 / sqrt(var + eps) for the backward. */
void lesson_layernorm_forward(Tensor *out, Tensor *mean, Tensor *rstd, const Tensor *in,
                              const Tensor *gamma, const Tensor *beta, float eps);
/* din [N, D] += dL/din (skipped when din is NULL), dgamma [D] += ..., dbeta [D] += ... */
void lesson_layernorm_backward(Tensor *din, Tensor *dgamma, Tensor *dbeta, const Tensor *dout,
                               const Tensor *in, const Tensor *mean, const Tensor *rstd,
                               const Tensor *gamma);

/* Given (attention.c): your layers (TODOs 4.3-4.6) into a CPU model's table. */
void lesson_use_my_layers(Transformer *m);

/* ---------------------------------------------------------------- training (train.c) */

/* One batch of tokens where and how the model wants them: batch-major rows (sequence
 * b, position t is row b*T + t), in the model's device memory. Given (batch.c). */
typedef struct {
    Device device;
    int capacity;                    /* B * bptt tokens */
    int *host_tokens, *host_targets; /* [capacity] */
    int *tokens, *targets;           /* [capacity] on the device (the host arrays on the CPU) */
} TokenBatch;
void token_batch_init(TokenBatch *tb, int batch_size, int bptt, Device device);
void token_batch_free(TokenBatch *tb);
/* get_batch's input and target, [seq_len, B] each, transposed into rows b*seq_len + t
 * and copied to the device. */
void token_batch_load(TokenBatch *tb, const TextBatch *b);

/* SGD (the tutorial's: no momentum) or AdamW, on the model's device. Given (batch.c).
 * With --precision bf16 or fp16 the program gives it the run's MixedPrecision
 * (lib/train/mixed_precision.h): its step then refreshes the 16-bit working copy of the
 * weights from the float32 master, and skips a float16 step whose gradients overflowed. */
typedef struct {
    bool adamw;
    float base_lr;                   /* the learning rate of epoch 1 */
    Sgd sgd;
    Adam adam;
    MixedPrecision *mp;              /* NULL: float32 */
} Optimizer;
void optimizer_init(Optimizer *o, const ParamList *params, bool adamw, float lr, float weight_decay);
void optimizer_set_lr(Optimizer *o, float lr);
float optimizer_lr(const Optimizer *o);
void optimizer_step(Optimizer *o, ParamList *params);
void optimizer_free(Optimizer *o);

typedef struct {
    int bptt;                        /* tokens per sequence (get_batch) */
    float clip;                      /* largest global gradient norm (0: no clipping) */
    float gamma;                     /* StepLR: epoch e trains with base_lr * gamma^(e - 1) */
    int64_t max_steps;               /* stop after this many steps (0: the whole epoch) */
    LossWatch *watch;                /* the run's, over all epochs: a finite loss that
                                      * diverges stops it (train/loss_watch.h); NULL: none */
} TrainSettings;

typedef struct {
    double loss;                     /* mean training loss per token */
    double grad_norm;                /* mean gradient norm before clipping */
    int64_t tokens, steps;
} TrainStats;

typedef struct {
    double loss, ppl;                /* mean loss per token, and exp of it */
    int64_t tokens;
} EvalResult;

/* TODO 4.7: one epoch over train (batchify's columns = the model's B): get_batch,
 * forward and backward, clipping, an optimiser step, batch after batch. */
TrainStats lesson_train_epoch(Transformer *m, Optimizer *opt, const TextBatches *train,
                              const TrainSettings *s, int epoch, TokenBatch *tb);
/* TODO 4.8: the mean loss per token and the perplexity over a whole split, without
 * training (data's columns = the model's B). */
EvalResult lesson_evaluate(Transformer *m, const TextBatches *data, int bptt, TokenBatch *tb);

/* Given (train.c): the tutorial's progress line, on a terminal only. */
void show_progress(int epoch, int64_t batch, int64_t batches, float lr, double loss,
                   double seconds);

/* ---------------------------------------------------------------- given (flops.c) */

/* The training FLOPs per token of the model with sequences of T tokens, from the shapes:
 * 3 times the forward's (the backward costs two forwards), 2 per multiply-add, the
 * matrix products only. */
double transformer_train_flops_per_token(const TransformerConfig *c, int T);

/* Given (program.c): the whole program. */
int lesson_main(int argc, char **argv);

#endif
