/* One episode played by a policy, kept as its seed and actions, and drawn from them:
 * the "before and after training" pictures.
 *
 *   Episode ep = episode_play(env_find("cartpole"), seed, my_policy, my_net);
 *   episode_write_gif(&ep, "after.gif", 1);          // every step, at the env's fps
 *   episode_write_png_strip(&ep, "after.png", 8, 2);  // 8 frames side by side, half size
 *
 * An environment is deterministic given its seed and actions, so the pictures replay the
 * actions in a fresh copy instead of holding every frame (a 1000-step LunarLander episode
 * would be 720 MB of frames); the policy runs once. */
#ifndef RL_EPISODE_H
#define RL_EPISODE_H

#include <stdbool.h>
#include <stdint.h>

#include "rl/env.h"

/* Writes the action [action_dim] for an observation [obs_dim]. */
typedef void (*PolicyFn)(void *ctx, const float *obs, float *action);

typedef struct {
    const EnvSpec *spec;
    uint64_t seed;
    int length;        /* steps */
    double ret;        /* return: the sum of the rewards */
    bool terminated;   /* false: truncated by the time limit */
    float *actions;    /* [length, action_dim] */
} Episode;

/* One episode of a copy seeded as copy 0 of vec_env_create(spec, n, seed). */
Episode episode_play(const EnvSpec *spec, uint64_t seed, PolicyFn policy, void *ctx);
void episode_free(Episode *ep);

/* An animated GIF of the episode: the reset state, then every `every`-th step and the
 * last one, each shown for `every` steps of the environment's time. */
void episode_write_gif(const Episode *ep, const char *path, int every);
/* A PNG of `frames` pictures (2..64) evenly spaced from the first state to the last, side
 * by side, each shrunk by the whole factor `shrink` (1: full size). */
void episode_write_png_strip(const Episode *ep, const char *path, int frames, int shrink);

#endif
