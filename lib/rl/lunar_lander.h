/* LunarLander-v3 (Oleg Klimov's, discrete actions, no wind), Gymnasium's rules on
 * Debian's Box2D 2.4 (box2d_lander.h). Built only with Box2D (HAVE_BOX2D).
 *
 *   observation [8]: x, y (relative to the pad, scaled), vx, vy, angle, angular
 *                    velocity (scaled), left leg on the ground, right leg on the ground
 *   actions: 0 nothing, 1 left orientation engine, 2 main engine, 3 right engine
 *   reward: the change of the shaping -100 |position| - 100 |velocity| - 100 |angle|
 *           + 10 per leg on the ground, minus 0.3 per main-engine and 0.03 per side-engine
 *           frame; -100 and terminated when the body touches the moon or |x| >= 1;
 *           +100 and terminated when the lander comes to rest (Box2D puts it to sleep);
 *           truncated at 1000 steps
 *   reset: 12 random terrain heights, a random push of up to 1000 N each way, and one
 *          step with action 0 (as Gymnasium's reset)
 *
 * Random numbers come from the copy's stream in Gymnasium's order (terrain, push, then
 * two engine dispersions every step), so one Gymnasium episode's draws would replay it up
 * to the physics engine's version: see docs/rl.md for what differs from pybox2d. */
#ifndef RL_LUNAR_LANDER_H
#define RL_LUNAR_LANDER_H

#include <stdbool.h>

#include "core/rng.h"
#include "rl/box2d_lander.h"
#include "rl/raster.h"

typedef struct {
    LanderWorld *world;
    double terrain_x[LANDER_TERRAIN_POINTS], terrain_y[LANDER_TERRAIN_POINTS];
    double helipad_x1, helipad_x2, helipad_y;
    double prev_shaping;
    bool has_prev_shaping;
} LunarLanderState;

void lunar_lander_init(LunarLanderState *s);
void lunar_lander_destroy(LunarLanderState *s);
void lunar_lander_reset(LunarLanderState *s, Rng *rng, float obs[8]);
double lunar_lander_step(LunarLanderState *s, Rng *rng, int action, float obs[8], bool *terminated);
void lunar_lander_render(const LunarLanderState *s, Image *frame); /* 600 x 400 */

/* The shaping term of an observation, as Gymnasium's step computes it (double). */
double lunar_lander_shaping(const double state[8]);

#endif
