/* TODO 1.5: the Adam optimiser, exactly as torch.optim.Adam computes it.
 *
 * Adam keeps two running averages per parameter: m of the gradient (a momentum)
 * and v of the squared gradient (a scale). Dividing by sqrt(v) gives every
 * parameter a step of about lr, whatever the size of its gradient. Both averages
 * start at 0 and are therefore too small early on; dividing by 1 - beta^t (bias
 * correction) makes up for that. */
#include <math.h>

#include "lesson.h"

void lesson_adam_step(Adam *opt, ParamList *params) {
    CHECK(!opt->decoupled, "lesson_adam_step is Adam; AdamW (decoupled decay) is lib/train/optim.c");
    /* TODO 1.5: increase opt->step (t) first; then for every element k of the
     * parameters, with g = grad + weight_decay * p:
     *   m = beta1 * m + (1 - beta1) * g
     *   v = beta2 * v + (1 - beta2) * g * g
     *   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
     * All parameters sit one after the other in one buffer, params->values (their
     * gradients in params->grads, at the same places), params->total floats; the
     * moments m and v are buffers of the same length, opt->m and opt->v. Use powf, sqrtf. */
    TODO_STOP("1.5");
}
