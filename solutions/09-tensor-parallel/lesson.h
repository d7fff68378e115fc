/* Lesson 09: tensor parallelism, then data x pipeline x tensor on one grid. The
 * functions you write, and the run they work on.
 *
 * Every rank of a tensor group holds a slice of every weight of lesson 04's transformer
 * and computes its share of each layer (lib/parallel/tensor_parallel.h). The library's
 * sharded blocks run the passes; the parts that cut and join are yours, plugged into its
 * table of operations (TensorParallelOps), as lessons 07 and 08 plugged theirs. With
 * --precision bf16 too, your functions are handed float32 tensors wherever they sum:
 * the library keeps the sums over the group in float32 (README: In bfloat16). */
#ifndef LESSON09_H
#define LESSON09_H

#include <stdint.h>

#include "core/check.h"
#include "core/todo.h"
#include "dist/dist.h"
#include "parallel/tensor_parallel.h"

#define LESSON_DIR "lessons/09-tensor-parallel"
#define TODO_STOP(id) todo_stop(id, LESSON_DIR, __func__)

/* TODO 9.1 (shard.c): of n rows (n a multiple of t), the ones rank r of t holds. */
TpRange lesson_shard(int n, int t, int r);
/* TODO 9.1, part 2 (shard.c): rows[i], i < 3D/t: which row of the fused in-projection
 * [3D, D] (q rows 0..D-1, k rows D..2D-1, v rows 2D..3D-1) is row i of rank r's slice:
 * its heads' queries, then their keys, then their values. */
void lesson_qkv_rows(int D, int t, int r, int *rows);

/* TODO 9.2 (conjugate.c): f before a column-parallel part, g after a row-parallel one,
 * on x in place, in the forward or the backward pass. */
void lesson_f(TensorParallel *tp, Tensor *x, BlockPass pass);
void lesson_g(TensorParallel *tp, Tensor *x, BlockPass pass);

/* TODO 9.3 (row_linear.c): out [N, D] = the group's sum of in [N, K/t] times this rank's
 * columns of W [D, K/t], plus bias [D] once. */
void lesson_row_linear_forward(TensorParallel *tp, const LayerOps *o, Tensor *out,
                               const Tensor *in, const Tensor *w, const Tensor *bias);

/* TODO 9.4 (vocab_loss.c): the mean cross-entropy of logits [N, Vp/t] (this rank's
 * words: tp->words; those at or past tp->vocab are padding) against targets [N], the same
 * on every rank; dlogits (NULL: none) its gradient, written. Host memory. */
float lesson_vocab_cross_entropy(TensorParallel *tp, Tensor *dlogits, const Tensor *logits,
                                 const int *targets);

/* TODO 9.5 (plan.c): for blocks [first, last) of model c cut t ways: the parameters a
 * rank holds, and the bytes it sends per step in the tensor group's all-reduces for
 * `rows` tokens a step. */
int64_t lesson_param_count(const TransformerConfig *c, int t, int first, int last);
double lesson_tensor_bytes(const TransformerConfig *c, int64_t rows, int t, int first, int last);

/* Given (program.c): your parts in the library's table. */
extern const TensorParallelOps LESSON_OPS;

/* Given (program.c): the whole program; main() calls it, the grader too. */
int lesson_main(int argc, char **argv);

#endif
