/* N copies of an environment stepped together, as a PPO rollout wants them.
 *
 *   VecEnv v = vec_env_create(env_find("cartpole"), 4, seed);   // resets every copy
 *   for (...) {
 *       act(v.obs, actions);              // v.obs: [4, obs_dim], one row per copy
 *       vec_env_step(&v, actions);        // actions: [4, action_dim]
 *       ... v.rewards[i], v.terminated[i], v.truncated[i] ...
 *   }
 *
 * Auto-reset in the same step (Gymnasium's AutoresetMode.SAME_STEP, the behaviour of
 * gym 0.26 and Gymnasium 0.29 that CleanRL's PPO is written for): when copy i's episode
 * ends, the step resets it at once, so v.obs[i] is already the first observation of the
 * next episode, and the last observation of the one that ended is kept in
 * v.final_obs[i] (to bootstrap the value of a truncated episode). No step is spent on a
 * reset, so every transition in a rollout is a real one.
 *
 * Episode statistics as Gymnasium's RecordEpisodeStatistics: the return (summed in
 * double) and length of every finished episode, the copies' own in v.episode_return[i] /
 * v.episode_length[i] for the step in which they ended, and the last ones of all copies
 * in v.stats. */
#ifndef RL_VEC_ENV_H
#define RL_VEC_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include "rl/env.h"

/* The most recent finished episodes, oldest first once full (a ring). */
typedef struct {
    int capacity;
    int count;      /* how many the ring holds: min(finished, capacity) */
    int64_t total;  /* episodes finished since the start */
    int next;       /* where the next one goes */
    double *returns; /* [capacity] */
    int *lengths;    /* [capacity] */
} EpisodeStats;

/* Mean return / length of the last k finished episodes (all held if fewer; k <= capacity).
 * NAN when none has finished yet. */
double episode_stats_mean_return(const EpisodeStats *stats, int k);
double episode_stats_mean_length(const EpisodeStats *stats, int k);

typedef struct {
    const EnvSpec *spec;
    int num_envs;
    /* What the last step (or the reset) left, for the learner to read: */
    float *obs;           /* [num_envs, obs_dim]: the observation to act on */
    float *rewards;       /* [num_envs] */
    bool *terminated;     /* [num_envs] */
    bool *truncated;      /* [num_envs]: the time limit ended the episode (both may be set) */
    float *final_obs;     /* [num_envs, obs_dim]: where terminated or truncated, the last
                           * observation of the episode that ended */
    double *episode_return; /* [num_envs]: where terminated or truncated, its return */
    int *episode_length;    /* [num_envs]: and its length in steps */
    EpisodeStats stats;     /* the last 100 finished episodes of all copies */
    int64_t total_steps;    /* steps of all copies since the start */

    /* Internal: */
    unsigned char *states; /* [num_envs, state_stride] */
    size_t state_stride;
    Rng *rngs;             /* [num_envs]: stream RL_ENV_STREAM + i */
    int *lengths;          /* [num_envs]: steps of the running episodes */
    double *returns;       /* [num_envs]: their returns so far */
} VecEnv;

enum { VEC_ENV_MAX = 65536, EPISODE_STATS_CAPACITY = 100 };

/* num_envs copies (1..VEC_ENV_MAX, else a message and exit status 1), copy i seeded with
 * (seed, RL_ENV_STREAM + i), all reset. */
VecEnv vec_env_create(const EnvSpec *spec, int num_envs, uint64_t seed);
void vec_env_free(VecEnv *v);
/* One step of every copy: actions [num_envs, action_dim] (see env.h for the kinds).
 * With several OpenMP threads, copies of a heavy environment (Box2D) step in parallel;
 * the result is the same for any number of threads. */
void vec_env_step(VecEnv *v, const float *actions);
/* Copy i's state, e.g. to render it. */
void *vec_env_state(const VecEnv *v, int i);

#endif
