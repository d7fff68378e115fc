/* TODO 8.3: the optimiser's step on the shard.
 *
 * AdamW's update is element by element: parameter k needs only its own gradient and
 * its own two moments. So a rank that holds the averaged gradients of its shard (after
 * TODO 8.2) can update its shard of the parameters with its shard of the moments and
 * get exactly what plain data parallel gets there, while keeping 8 / N bytes of moments
 * per parameter instead of 8. The shard is one piece of every block: the library hands
 * out the pieces (lib/parallel/zero.h) as tensors on the model's device. */
#include "lesson.h"

void lesson_sharded_step(Zero *z) {
#ifdef SOLUTION
    const int64_t t = z->optimizer == ZERO_ADAMW ? ++z->adam.step : ++z->sgd.step;
    for (int k = 0; k < z->nunits; k++) {
        const ZeroUnit *u = &z->units[k];
        Tensor p = zero_param_piece(z, u), g = zero_grad_piece(z, u), m = zero_state_piece(z, u, 0);
        if (z->optimizer == ZERO_SGD) {
            sgd_update_on(z->device, p.data, g.data, m.data, u->piece, &z->sgd, t == 1);
        } else {
            Tensor v = zero_state_piece(z, u, 1);
            adam_update_on(z->device, p.data, g.data, m.data, v.data, u->piece, &z->adam, t);
        }
    }
#else
    /* TODO 8.3: one step of the whole shard. Count the step once (++z->adam.step for
     * AdamW, ++z->sgd.step for SGD: t, the bias correction's), then for each of the
     * z->nunits pieces (z->units[k]): its parameters zero_param_piece, gradients
     * zero_grad_piece, state zero_state_piece(z, u, 0) (and 1 for Adam's v), and update
     * u->piece scalars with adam_update_on(z->device, p, g, m, v, n, &z->adam, t) or
     * sgd_update_on(z->device, p, g, buf, n, &z->sgd, t == 1) (lib/train/optim.h). */
    TODO_STOP("8.3");
#endif
}
