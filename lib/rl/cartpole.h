/* CartPole-v1 (Barto, Sutton and Anderson), as Gymnasium computes it.
 *
 *   observation [4]: cart position, cart velocity, pole angle, pole angular velocity
 *   actions: 0 push the cart left, 1 push it right (force 10 N)
 *   reward 1 for every step, the terminating one too; terminated when |angle| > 12
 *   degrees or |position| > 2.4; truncated at 500 steps; reset uniform in +-0.05
 *
 * The state is kept in double (Gymnasium: Python floats); observations are its float32
 * copy. Euler steps of 0.02 s. */
#ifndef RL_CARTPOLE_H
#define RL_CARTPOLE_H

#include <stdbool.h>

#include "core/rng.h"
#include "rl/raster.h"

typedef struct {
    double x, x_dot, theta, theta_dot;
    int steps_beyond_terminated; /* -1 until the pole falls; then steps taken since */
} CartPoleState;

void cartpole_reset(CartPoleState *s, Rng *rng, float obs[4]);
/* action: 0 or 1. Returns the reward (0 for steps after the terminating one). */
double cartpole_step(CartPoleState *s, int action, float obs[4], bool *terminated);
void cartpole_observe(const CartPoleState *s, float obs[4]);
void cartpole_render(const CartPoleState *s, Image *frame); /* 600 x 400 */

#endif
