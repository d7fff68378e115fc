/* PPO's rollout: acting, stepping, storing, and the critic's values of what was seen. */
#include <string.h>

#include "core/timer.h"
#include "rl/distributions.h"
#include "rl/gae.h"
#include "rl/ppo.h"

void ppo_act(Ppo *p, const float *obs, float *actions, float *logp) {
    const double t0 = now_seconds();
    const int n = p->cfg.num_envs, out_dim = p->policy.actor_out;
    /* [n, out_dim]: logits or means. The weights change only in Adam's steps: the actor's
     * transposed weights serve every step of a rollout. */
    const float *out = mlp_forward_cached(&p->policy.actor, obs, n, p->opt.step);
    if (p->policy.continuous)
        gaussian_sample(actions, logp, out, p->policy.logstd->value.data, n, out_dim, &p->act_rng);
    else
        categorical_sample(actions, logp, out, n, out_dim, &p->act_rng);
    p->time.act += now_seconds() - t0;
}

void ppo_env_step(Ppo *p, const float *actions) {
    const double t0 = now_seconds();
    vec_env_step(&p->env, actions);
    if (p->cfg.reward_scale != 1.0f)
        for (int i = 0; i < p->env.num_envs; i++) p->env.rewards[i] *= p->cfg.reward_scale;
    p->time.env += now_seconds() - t0;
}

void ppo_collect(Ppo *p) {
    RolloutBuffer *b = &p->buf;
    const VecEnv *env = &p->env;
    const int N = b->num_envs, d = b->obs_dim, a = b->action_dim;
    for (int t = 0; t < b->num_steps; t++) {
        const size_t row = (size_t)t * N; /* the first of this step's N rows */
        float *obs = b->obs + row * d, *actions = b->actions + row * a;
        memcpy(obs, env->obs, (size_t)N * d * sizeof(float));
        ppo_act(p, obs, actions, b->logprobs + row);
        ppo_env_step(p, actions);
        for (int i = 0; i < N; i++) {
            const size_t k = row + i;
            b->rewards[k] = env->rewards[i];
            b->terminated[k] = env->terminated[i];
            b->truncated[k] = env->truncated[i];
            if (env->terminated[i] || env->truncated[i])
                memcpy(b->final_obs + k * d, env->final_obs + (size_t)i * d, (size_t)d * sizeof(float));
        }
    }
    memcpy(b->next_obs, env->obs, (size_t)N * d * sizeof(float));
}

void ppo_compute_values(Ppo *p) {
    const double t0 = now_seconds();
    RolloutBuffer *b = &p->buf;
    Mlp *critic = &p->policy.critic;
    const int T = b->num_steps, N = b->num_envs, d = b->obs_dim, rows = T * N;
    memcpy(b->values, mlp_forward_cached(critic, b->obs, rows, p->opt.step), (size_t)rows * sizeof(float));
    /* the next state of each step: the next row, or after the last step next_obs ... */
    for (int k = 0; k < rows - N; k++) b->next_values[k] = b->values[k + N];
    memcpy(b->next_values + rows - N, mlp_forward_cached(critic, b->next_obs, N, p->opt.step),
           (size_t)N * sizeof(float));
    /* ... except where the episode ended: nothing after a termination, the episode's own
     * last observation after a truncation (one batch for all of them) */
    int ended = 0;
    for (int k = 0; k < rows; k++) {
        if (b->terminated[k]) {
            b->next_values[k] = 0.0f;
        } else if (b->truncated[k]) {
            memcpy(p->ended_obs + (size_t)ended * d, b->final_obs + (size_t)k * d, (size_t)d * sizeof(float));
            p->ended_rows[ended++] = k;
        }
    }
    if (ended > 0) {
        const float *v = mlp_forward_cached(critic, p->ended_obs, ended, p->opt.step);
        for (int j = 0; j < ended; j++) b->next_values[p->ended_rows[j]] = v[j];
    }
    p->time.values += now_seconds() - t0;
}

void ppo_advantages(Ppo *p) {
    RolloutBuffer *b = &p->buf;
    gae(b->advantages, b->returns, b->rewards, b->values, b->next_values, b->terminated, b->truncated,
        b->num_steps, b->num_envs, p->cfg.gamma, p->cfg.gae_lambda);
}
