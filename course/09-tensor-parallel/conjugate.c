/* TODO 9.2: the conjugate operators f and g.
 *
 * Between the sliced linears every rank of the group must hold the same whole
 * activation, and each pass needs one all-reduce to get there:
 *
 *   f, before a column-parallel part (its input x is whole on every rank):
 *     forward:  identity (each rank multiplies the whole x by its rows of W);
 *     backward: all-reduce (sum) dL/dx: each rank's rows of W gave only its share of it.
 *   g, after a row-parallel part (each rank has a partial sum of the output):
 *     forward:  all-reduce (sum) the output;
 *     backward: identity (the gradient of a sum reaches each summand unchanged).
 *
 * They are each other's transpose: Megatron-LM names them so, and calls them in pairs
 * around every attention and feed-forward. The library calls them with pass =
 * BLOCK_FORWARD or BLOCK_BACKWARD on the tensor in place. */
#include "lesson.h"

void lesson_f(TensorParallel *tp, Tensor *x, BlockPass pass) {
#ifdef SOLUTION
    if (pass == BLOCK_BACKWARD) dist_all_reduce(tp->group, x, DIST_SUM);
#else
    /* TODO 9.2: which of the two passes needs the group's sum of x (the table above)?
     * In that one, all-reduce x in place over the tensor group (dist/dist.h: which op
     * makes the whole from the shares?); in the other, leave x as it is. */
    (void)tp, (void)x, (void)pass;
    TODO_STOP("9.2");
#endif
}

void lesson_g(TensorParallel *tp, Tensor *x, BlockPass pass) {
#ifdef SOLUTION
    if (pass == BLOCK_FORWARD) dist_all_reduce(tp->group, x, DIST_SUM);
#else
    /* TODO 9.2: g is f's transpose: the sum in the other pass. */
    (void)tp, (void)x, (void)pass;
    TODO_STOP("9.2");
#endif
}
