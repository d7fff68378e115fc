/* TODO 10.8: the master-weights step.
 *
 * Near a weight w, bfloat16's neighbours are about 2^-7 w apart (2^-8 just below a power
 * of two). An update smaller than half of that is rounded away entirely when the weight
 * itself is bf16, and the same update is lost again on every step: with lr 1e-3 and
 * gradient 1, a bf16 weight in [1, 2) never moves. So the optimiser updates a float32
 * master copy, which keeps the small updates, and the forward reads a bf16 working copy
 * rounded again from it after each step: the working copy moves once the master has
 * crossed half a bf16 step. */
#include "lesson.h"

void lesson_master_step(float *master, uint16_t *work, const float *grad, int64_t n, float lr) {
    /* TODO 10.8: for each k, the update on master[k], then work[k] rounded from it (your
     * lesson_bf16_from_f32). */
    TODO_STOP("10.8");
}
