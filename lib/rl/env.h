/* Reinforcement-learning environments in C with Gymnasium's rules.
 *
 * An environment is an EnvSpec (its spaces, time limit and functions) plus the state of
 * one copy. Each copy draws its random numbers from its own PCG32 stream (core/rng.h),
 * so the same seed gives the same episodes; the numbers differ from Gymnasium's NumPy
 * generator (PCG64), the distributions are the same. docs/rl.md lists the environments
 * and what differs from Gymnasium.
 *
 * Actions are floats for both kinds, as a rollout buffer stores them: a discrete action
 * is its index (0.0f, 1.0f, ...), a continuous one its components. */
#ifndef RL_ENV_H
#define RL_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"
#include "rl/raster.h"

typedef enum { ACTION_DISCRETE, ACTION_CONTINUOUS } ActionKind;

typedef struct EnvSpec {
    const char *id;   /* Gymnasium's id, e.g. "CartPole-v1" */
    const char *name; /* the --env name, e.g. "cartpole" */
    int obs_dim;
    const float *obs_low, *obs_high; /* [obs_dim]: the observation space (a Box) */
    ActionKind action_kind;
    int num_actions;                 /* discrete: actions 0..num_actions-1 */
    int action_dim;                  /* floats per action: 1 for a discrete one */
    float action_low, action_high;   /* continuous: the Box, the same for each component */
    int max_episode_steps;           /* TimeLimit: truncated at this step */
    double reward_threshold;         /* Gymnasium's "solved" return (NAN: none) */
    int render_width, render_height; /* the frame size of Gymnasium's rgb_array */
    int render_fps;
    bool heavy; /* a step costs enough (Box2D) to spread the copies over threads */

    size_t state_size; /* bytes of one copy's state */
    /* init: a fresh copy's state (zeroed memory) gets what it needs (NULL: nothing);
     * destroy: frees it (NULL: nothing). */
    void (*init)(void *state);
    void (*destroy)(void *state);
    /* reset: a new episode; writes the first observation [obs_dim]. */
    void (*reset)(void *state, Rng *rng, float *obs);
    /* step: one transition; writes the next observation and whether the episode ended
     * in a terminal state; returns the reward. The action has been checked. */
    double (*step)(void *state, Rng *rng, const float *action, float *obs, bool *terminated);
    /* render: draws the state into frame (render_width x render_height). */
    void (*render)(const void *state, Image *frame);
} EnvSpec;

/* The environment called name ("cartpole", "acrobot", "pendulum", "lunarlander", or
 * Gymnasium's id). An unknown name, or lunarlander in a build without Box2D, stops
 * with a message that lists the names or says what to install (exit status 1). */
const EnvSpec *env_find(const char *name);
/* The names env_find knows in this build, comma-separated: "cartpole, acrobot, ...". */
const char *env_names(void);

/* One copy of an environment, for an episode at a time (evaluation, pictures). */
typedef struct {
    const EnvSpec *spec;
    void *state;
    Rng rng;
    int steps; /* steps since the last reset (the TimeLimit counter) */
} Env;

/* A copy seeded like copy 0 of vec_env_create(spec, n, seed). */
Env env_create(const EnvSpec *spec, uint64_t seed);
void env_free(Env *env);
void env_reset(Env *env, float *obs);
/* Returns the reward; truncated is true when the time limit ends the episode. */
double env_step(Env *env, const float *action, float *obs, bool *terminated, bool *truncated);
void env_render(const Env *env, Image *frame); /* frame: created with the spec's size */

/* The checks env_step makes: a discrete action is a whole number in 0..num_actions-1, a
 * continuous one is not NaN (Gymnasium clips the rest). A bad one is a bug in the caller:
 * it stops with the copy's index, the value and what was expected (exit status 2). */
void env_check_action(const EnvSpec *spec, const float *action, int copy);

/* The stream of copy i (rng_seed(seed, RL_ENV_STREAM + i)): apart from the streams that
 * weights and sampling use. */
#define RL_ENV_STREAM 0x454e5600u /* "ENV" */

/* Uniform in [lo, hi) as NumPy's Generator.uniform makes it: lo + (hi - lo) * u, u with
 * 53 random bits. */
double rl_uniform(Rng *rng, double lo, double hi);

/* The environments (defined in their own files). */
extern const EnvSpec CARTPOLE_SPEC, ACROBOT_SPEC, PENDULUM_SPEC;
#ifdef HAVE_BOX2D
extern const EnvSpec LUNAR_LANDER_SPEC;
#endif

#endif
