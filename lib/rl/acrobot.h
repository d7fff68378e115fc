/* Acrobot-v1 (Sutton 1996; the book's dynamics), as Gymnasium computes it.
 *
 *   state: theta1 (first link, 0 = hanging down), theta2 (relative to the first link),
 *          their angular velocities (bounded to +-4 pi and +-9 pi)
 *   observation [6]: cos theta1, sin theta1, cos theta2, sin theta2, the two velocities
 *   actions: 0, 1, 2 = torque -1, 0, +1 on the joint between the links
 *   reward -1 per step, 0 on the terminating one; terminated when the free end is more
 *   than one link length above the pivot: -cos theta1 - cos(theta1 + theta2) > 1;
 *   truncated at 500 steps; reset uniform in +-0.1 (rounded to float32, as Gymnasium)
 *
 * One step is one fourth-order Runge-Kutta step of dt = 0.2 s, in double. */
#ifndef RL_ACROBOT_H
#define RL_ACROBOT_H

#include <stdbool.h>

#include "core/rng.h"
#include "rl/raster.h"

typedef struct {
    double s[4]; /* theta1, theta2, dtheta1, dtheta2 */
} AcrobotState;

void acrobot_reset(AcrobotState *st, Rng *rng, float obs[6]);
double acrobot_step(AcrobotState *st, int action, float obs[6], bool *terminated);
void acrobot_observe(const AcrobotState *st, float obs[6]);
void acrobot_render(const AcrobotState *st, Image *frame); /* 500 x 500 */

#endif
