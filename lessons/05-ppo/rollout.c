/* TODO 5.1: the rollout. PPO learns from experience it has just made with its current
 * policy ("on-policy"): before each update, every environment plays num_steps steps, and
 * each step's transition is written down. */
#include <string.h>

#include "lesson.h"

void lesson_collect_rollout(Ppo *p) {
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
}
