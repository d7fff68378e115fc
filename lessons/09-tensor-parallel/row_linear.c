/* TODO 9.3: the row-parallel linear, its bias added once.
 *
 * Rank r holds columns [r K/t, (r+1) K/t) of W [D, K] and the same columns of the input
 * (the column-parallel part before it made them). Its product in [N, K/t] x W_r^T is a
 * partial sum of the whole product; g adds the partial sums of the group (tp->ops.g,
 * forward). The bias [D] is whole on every rank: added by every rank before the sum, it
 * would count t times. Add it on one rank only (rank 0 of the group, tp->rank == 0): the
 * other ranks pass zeros, which tp->zeros holds (as many as the model is wide: take
 * the first bias->size of them with tensor_range). */
#include "lesson.h"

void lesson_row_linear_forward(TensorParallel *tp, const LayerOps *o, Tensor *out,
                               const Tensor *in, const Tensor *w, const Tensor *bias) {
    /* TODO 9.3: o->linear_forward(out, in, w, the bias on rank 0, zeros elsewhere), then
     * tp->ops.g(tp, out, BLOCK_FORWARD). */
    (void)tp, (void)o, (void)out, (void)in, (void)w, (void)bias;
    TODO_STOP("9.3");
}
