/* The Box2D half of LunarLander-v3: a small C interface to a C++ world (box2d_lander.cpp,
 * built only where Debian's libbox2d-dev, Box2D 2.4, is found: HAVE_BOX2D).
 *
 * It builds Gymnasium's bodies (the moon's edges, the lander, two legs on motorised
 * revolute joints), applies impulses, steps the world and reports what the rules need.
 * The rules themselves (random draws, engines, observation, reward, termination) are in
 * lunar_lander.c. Lengths in Box2D units (metres): the screen is 20 x 13.33. */
#ifndef RL_BOX2D_LANDER_H
#define RL_BOX2D_LANDER_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct LanderWorld LanderWorld;

enum { LANDER_TERRAIN_POINTS = 11 };

typedef struct {
    float x, y, vx, vy, angle, angular_velocity; /* of the lander's body */
    bool leg_contact[2];                         /* Gymnasium's legs[i].ground_contact */
    bool body_contact;                           /* the body touched the moon: game over */
    bool awake;                                  /* Box2D has not put the lander to sleep */
} LanderBodyState;

typedef struct {
    int count;         /* corners */
    float xy[8][2];    /* world coordinates */
} LanderPolygon;

LanderWorld *lander_world_create(void);
void lander_world_destroy(LanderWorld *w);
/* A new world: the moon through the terrain points [LANDER_TERRAIN_POINTS] (x, y), the
 * lander at the top centre with the initial push applied (to act in the next step). */
void lander_world_build(LanderWorld *w, const double *terrain_x, const double *terrain_y, double force_x,
                        double force_y);
/* An impulse on the lander at a world point (ApplyLinearImpulse, waking it). */
void lander_world_impulse(LanderWorld *w, double impulse_x, double impulse_y, double point_x, double point_y);
/* world.Step(1/50 s, 180 velocity and 60 position iterations), as Gymnasium. */
void lander_world_step(LanderWorld *w);
LanderBodyState lander_world_read(const LanderWorld *w);
/* The outlines of the lander's body (0) and legs (1, 2), for the picture. */
void lander_world_polygons(const LanderWorld *w, LanderPolygon out[3]);

#ifdef __cplusplus
}
#endif

#endif
