/* What PPO keeps of a rollout: num_steps steps of num_envs environments, and the
 * mini-batches an update draws from it.
 *
 * Arrays [T, N, ...] hold step t of environment i at row t * N + i. A step's row tells
 * the whole transition: the observation the policy saw, the action it took and that
 * action's log-probability then, the reward, and how the step ended. Where the episode
 * ended, the environment has already reset (rl/vec_env.h), so the episode's last
 * observation is kept beside it in final_obs: a truncated episode's value is
 * bootstrapped from it (rl/gae.h). */
#ifndef RL_ROLLOUT_H
#define RL_ROLLOUT_H

#include <stdint.h>

typedef struct {
    int num_steps, num_envs, obs_dim, action_dim;
    /* filled by the rollout */
    float *obs;          /* [T, N, obs_dim]: what the policy saw */
    float *actions;      /* [T, N, action_dim]: what it did */
    float *logprobs;     /* [T, N]: log pi_old(action | obs), when it acted */
    float *rewards;      /* [T, N] */
    uint8_t *terminated; /* [T, N]: the step ended its episode in a terminal state */
    uint8_t *truncated;  /* [T, N]: the time limit ended it */
    float *final_obs;    /* [T, N, obs_dim]: where the step ended an episode, its last observation */
    float *next_obs;     /* [N, obs_dim]: the observations after the last step */
    /* filled by the critic (ppo_compute_values) */
    float *values;       /* [T, N]: V(obs) */
    float *next_values;  /* [T, N]: V of the state the step led to (0 where terminated) */
    /* filled by GAE */
    float *advantages;   /* [T, N] */
    float *returns;      /* [T, N]: advantages + values, the critic's targets */
} RolloutBuffer;

void rollout_init(RolloutBuffer *b, int num_steps, int num_envs, int obs_dim, int action_dim);
void rollout_free(RolloutBuffer *b);

/* One mini-batch: rows of the rollout in the shuffled order, gathered into contiguous
 * arrays for the networks, and the update's scratch for them. */
typedef struct {
    int size, obs_dim, action_dim, actor_out;
    float *obs;        /* [size, obs_dim] */
    float *actions;    /* [size, action_dim] */
    float *old_logp;   /* [size] */
    float *advantages; /* [size]: normalised in place by the update (--norm-adv) */
    float *returns;    /* [size] */
    float *old_values; /* [size] */
    float *logp;       /* [size]: log pi_new(action | obs) */
    float *dlogp;      /* [size]: d loss / d logp */
    float *dout;       /* [size, actor_out]: d loss / d actor output (logits or means) */
    float *dvalue;     /* [size]: d loss / d value */
} Minibatch;

void minibatch_init(Minibatch *mb, int size, int obs_dim, int action_dim, int actor_out);
void minibatch_free(Minibatch *mb);
/* mb's first n rows = rollout rows rows[0..n) (n <= mb->size). */
void minibatch_gather(Minibatch *mb, const RolloutBuffer *b, const int *rows, int n);

#endif
