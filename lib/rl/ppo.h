/* Proximal policy optimisation with CleanRL's details (ppo.py; Huang et al., "The 37
 * implementation details of PPO"), on lib/rl's vectorised environments:
 *
 *   for each update (iteration):
 *       anneal the learning rate linearly to 0
 *       rollout: num_steps steps of num_envs environments with the current policy
 *       values of every observation (the critic), advantages by GAE
 *       update_epochs times: shuffle the rollout, cut it into num_minibatches, and per
 *       mini-batch: normalise its advantages, forward, loss, backward, clip the global
 *       gradient norm, one Adam step
 *
 *   Ppo p;
 *   ppo_init(&p, env_find("cartpole"), &cfg, seed, threads);
 *   for (int u = 0; u < ppo_num_updates(&p); u++) ppo_iteration(&p, &stats);
 *
 * Lesson 05 writes the rollout, GAE, the losses and the update itself, and calls the
 * rest from here. The actor and the critic are separate networks with separate losses,
 * so with two threads an update runs them side by side (one each); every sum keeps its
 * order, so a seed gives the same run on 1 and 2 threads, bit for bit. */
#ifndef RL_PPO_H
#define RL_PPO_H

#include <stdint.h>

#include "core/rng.h"
#include "models/mlp_policy.h"
#include "rl/ppo_loss.h"
#include "rl/rollout.h"
#include "rl/vec_env.h"
#include "train/optim.h"

typedef struct {
    int total_steps;     /* environment steps of the whole run (all copies): 500,000 */
    int num_envs;        /* 4 */
    int num_steps;       /* steps of each copy per rollout: 128 */
    float lr;            /* Adam's learning rate: 2.5e-4 */
    int anneal_lr;       /* 1: lr falls linearly to 0 over the run */
    float adam_eps;      /* 1e-5 (PyTorch's default is 1e-8) */
    float gamma;         /* discount: 0.99 */
    float gae_lambda;    /* 0.95 */
    int num_minibatches; /* 4: mini-batches of num_envs * num_steps / 4 = 128 */
    int update_epochs;   /* 4 */
    int norm_adv;        /* 1: normalise the advantages of each mini-batch */
    float clip_coef;     /* 0.2 */
    int clip_vloss;      /* 1: clip the value loss too */
    float ent_coef;      /* 0.01 */
    float vf_coef;       /* 0.5 */
    float max_grad_norm; /* 0.5 */
    float target_kl;     /* 0: off; else stop the epochs once approx_kl passes it */
    float reward_scale;  /* 1: the rewards the critic learns are the environment's times this */
    int hidden;          /* 64 */
} PpoConfig;

/* CleanRL's defaults (ppo.py), the values in the comments above. */
PpoConfig ppo_config_defaults(void);
/* The defaults for an environment: ppo_config_defaults() for discrete actions; for
 * continuous ones (Pendulum) those of CleanRL's ppo_continuous_action.py: 1 copy x 2048
 * steps, lr 3e-4, 10 epochs x 32 mini-batches, no entropy bonus, with the rewards scaled
 * by 0.01 where CleanRL normalises them by a running estimate (NormalizeReward). */
PpoConfig ppo_config_for(const EnvSpec *spec);
/* A setting out of range is a user error: one message naming the option, exit status 1. */
void ppo_config_check(const PpoConfig *c);

/* The loss terms an update calls (rl/ppo_loss.h): the library's, or lesson 05's. */
typedef struct {
    float (*policy_loss)(float *dlogp, PpoPolicyStats *stats, const float *logp, const float *old_logp,
                         const float *advantages, int n, float clip_coef);
    float (*value_loss)(float *dvalue, const float *value, const float *old_value, const float *returns, int n,
                        float clip_coef, float vf_coef);
    float (*entropy_bonus)(float *dlogits, const float *logits, int n, int num_actions, float ent_coef);
} PpoLosses;
extern const PpoLosses PPO_LIBRARY_LOSSES;

/* Seconds spent, summed over the run. */
typedef struct {
    double env;    /* vec_env_step */
    double act;    /* the actor choosing actions during rollouts */
    double values; /* the critic on the rollout's observations */
    double update; /* mini-batches: forward, losses, backward, clipping, Adam */
} PpoTimes;

/* The means over an update's mini-batches, and how it went. */
typedef struct {
    double policy_loss, value_loss, entropy, approx_kl, old_approx_kl, clip_fraction;
    double explained_variance; /* 1 - Var(returns - values) / Var(returns) over the rollout */
    int epochs;                /* epochs run (fewer than update_epochs when target_kl stopped them) */
    int minibatches;           /* mini-batch steps taken */
} PpoUpdateStats;

/* The losses of one mini-batch (ppo_minibatch_gradients). */
typedef struct {
    double policy_loss, value_loss, entropy;
    PpoPolicyStats pg;
} PpoMinibatchStats;

typedef struct {
    PpoConfig cfg;
    const EnvSpec *spec;
    VecEnv env;
    MlpPolicy policy;
    Adam opt;
    RolloutBuffer buf;
    Minibatch mb;
    int *perm;        /* [num_steps * num_envs]: the order of an epoch */
    float *ended_obs; /* [num_steps * num_envs, obs_dim]: scratch, last observations of truncated episodes */
    int *ended_rows;  /* [num_steps * num_envs]: their rows */
    Rng act_rng;      /* sampling actions */
    Rng shuffle_rng;  /* the mini-batches' order */
    PpoLosses losses; /* PPO_LIBRARY_LOSSES unless replaced */
    int threads;      /* OpenMP threads for an update: 2 or more run actor and critic side by side */
    int64_t updates;  /* updates done */
    PpoTimes time;
} Ppo;

/* Streams of the seed (core/rng.h), apart from the environments' (RL_ENV_STREAM + i). */
enum { PPO_STREAM_INIT = 1, PPO_STREAM_ACT = 2, PPO_STREAM_SHUFFLE = 3 };

/* Everything for a run: the environments (seed), the policy (seed's init stream), Adam
 * with cfg's eps, the rollout buffer and a mini-batch. Checks cfg (ppo_config_check). */
void ppo_init(Ppo *p, const EnvSpec *spec, const PpoConfig *cfg, uint64_t seed, int threads);
void ppo_free(Ppo *p);
int ppo_batch_size(const Ppo *p);     /* num_steps * num_envs */
int ppo_minibatch_size(const Ppo *p); /* batch / num_minibatches */
int ppo_num_updates(const Ppo *p);    /* total_steps / batch */

/* ---- the rollout (ppo_collect.c) */

/* actions [num_envs, action_dim] drawn from the policy for obs [num_envs, obs_dim], and
 * their log-probabilities logp [num_envs]; timed as "act". */
void ppo_act(Ppo *p, const float *obs, float *actions, float *logp);
/* One step of every environment (vec_env_step); timed as "env". The rewards it leaves in
 * p->env.rewards are multiplied by cfg.reward_scale (the episode statistics keep the
 * environment's own). */
void ppo_env_step(Ppo *p, const float *actions);
/* The library's rollout: num_steps of act, step, store into p->buf. */
void ppo_collect(Ppo *p);
/* The critic over the rollout: buf.values and buf.next_values; timed as "values". */
void ppo_compute_values(Ppo *p);
/* buf.advantages and buf.returns by GAE (rl/gae.h) with cfg's gamma and lambda. */
void ppo_advantages(Ppo *p);

/* ---- the update (ppo_update.c) */

/* Sets Adam's learning rate for update number p->updates (linear annealing, or cfg.lr). */
void ppo_set_lr(Ppo *p);
/* The gradients of one mini-batch, p->mb's first n rows (gathered, advantages
 * normalised): actor and critic forward, p->losses, both backwards, added into the
 * parameters' grads (zero them first). Actor and critic run side by side with 2 threads. */
PpoMinibatchStats ppo_minibatch_gradients(Ppo *p, int n);
/* The library's update: update_epochs over the rollout in shuffled mini-batches. */
void ppo_update(Ppo *p, PpoUpdateStats *stats);
/* An update's statistics: ppo_stats_add sums a mini-batch's into *sum (and counts it);
 * ppo_stats_finish turns the sums into means over the mini-batches and adds the
 * explained variance of p's rollout. sum->epochs is the caller's to count. */
void ppo_stats_add(PpoUpdateStats *sum, const PpoMinibatchStats *s);
void ppo_stats_finish(PpoUpdateStats *sum, const Ppo *p);
/* (x - mean) / (std + 1e-8) in place, std with n - 1 (torch.std); n >= 2. */
void ppo_normalize_advantages(float *adv, int n);
/* 1 - Var(returns - values) / Var(returns) (population variances, as np.var); NAN when
 * the returns do not vary. */
double ppo_explained_variance(const float *values, const float *returns, int n);

/* One whole iteration with the library's parts: ppo_set_lr, ppo_collect,
 * ppo_compute_values, ppo_advantages, ppo_update; then p->updates++. */
void ppo_iteration(Ppo *p, PpoUpdateStats *stats);

/* A PolicyFn (rl/episode.h) for pictures: the policy's most likely action (the mean for
 * continuous actions); ctx is the Ppo. */
void ppo_greedy_policy(void *ctx, const float *obs, float *action);

#endif
