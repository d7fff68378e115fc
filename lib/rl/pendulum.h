/* Pendulum-v1 (swing up and hold), as Gymnasium computes it.
 *
 *   state: theta (0 = upright, not wrapped) and its angular velocity (bounded to +-8)
 *   observation [3]: cos theta, sin theta, angular velocity
 *   action [1]: torque, clipped to [-2, 2]
 *   reward -(angle^2 + 0.1 velocity^2 + 0.001 torque^2), angle wrapped to [-pi, pi);
 *   never terminates; truncated at 200 steps; reset theta uniform in [-pi, pi),
 *   velocity uniform in [-1, 1)
 *
 * Semi-implicit Euler, dt = 0.05 s, g = 10. The torque stays a float32 where Gymnasium
 * (with NumPy 2's promotion rules) keeps it float32: torque^2 and 3 * torque. */
#ifndef RL_PENDULUM_H
#define RL_PENDULUM_H

#include <stdbool.h>

#include "core/rng.h"
#include "rl/raster.h"

typedef struct {
    double theta, theta_dot;
    float last_u;  /* the last torque, for the picture's arrow */
    bool has_last; /* false after a reset: no arrow */
} PendulumState;

void pendulum_reset(PendulumState *s, Rng *rng, float obs[3]);
double pendulum_step(PendulumState *s, float torque, float obs[3]);
void pendulum_observe(const PendulumState *s, float obs[3]);
void pendulum_render(const PendulumState *s, Image *frame); /* 500 x 500 */

#endif
