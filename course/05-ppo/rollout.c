/* TODO 5.1: the rollout. PPO learns from experience it has just made with its current
 * policy ("on-policy"): before each update, every environment plays num_steps steps, and
 * each step's transition is written down. */
#include <string.h>

#include "lesson.h"

void lesson_collect_rollout(Ppo *p) {
#ifdef SOLUTION
    RolloutBuffer *b = &p->buf;
    const VecEnv *env = &p->env;
    const int N = b->num_envs, d = b->obs_dim, a = b->action_dim;
    for (int t = 0; t < b->num_steps; t++) {
        float *obs = b->obs + (size_t)t * N * d;         /* [N, obs_dim] of step t */
        float *actions = b->actions + (size_t)t * N * a; /* [N, action_dim] */
        /* act on what the environments show now, then step them */
        memcpy(obs, env->obs, (size_t)N * d * sizeof(float));
        ppo_act(p, obs, actions, b->logprobs + (size_t)t * N);
        ppo_env_step(p, actions);
        /* what the step gave, and how it ended */
        for (int i = 0; i < N; i++) {
            const size_t k = (size_t)t * N + i;
            b->rewards[k] = env->rewards[i];
            b->terminated[k] = env->terminated[i];
            b->truncated[k] = env->truncated[i];
            /* the environment has already reset: keep the episode's last observation */
            if (env->terminated[i] || env->truncated[i])
                memcpy(b->final_obs + k * d, env->final_obs + (size_t)i * d, (size_t)d * sizeof(float));
        }
    }
    /* where the next rollout goes on: the critic values it to bootstrap the last step */
    memcpy(b->next_obs, env->obs, (size_t)N * d * sizeof(float));
#else
    /* TODO 5.1: for t = 0 .. b->num_steps - 1, with b = &p->buf, env = &p->env,
     * N = b->num_envs, d = b->obs_dim, a = b->action_dim (rows of step t start at t * N):
     *   1. copy the observations env->obs [N, d] into b->obs at step t (memcpy);
     *   2. ppo_act(p, obs_t, actions_t, logp_t): the policy samples actions [N, a] for
     *      them and gives their log-probabilities [N]; write both straight into b->actions
     *      and b->logprobs at step t;
     *   3. ppo_env_step(p, actions_t): every environment takes its action (not
     *      vec_env_step: ppo_env_step also scales the rewards by p->cfg.reward_scale);
     *   4. for each environment i: b->rewards, b->terminated, b->truncated at t * N + i
     *      from env->rewards[i], env->terminated[i], env->truncated[i]; where the episode
     *      ended (either flag), copy its last observation env->final_obs (row i) into
     *      b->final_obs (row t * N + i): env->obs already shows the next episode.
     * After the loop, copy env->obs into b->next_obs [N, d]. */
    TODO_STOP("5.1");
#endif
}
