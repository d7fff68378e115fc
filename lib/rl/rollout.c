#include "rl/rollout.h"

#include <string.h>

#include "core/check.h"

void rollout_init(RolloutBuffer *b, int num_steps, int num_envs, int obs_dim, int action_dim) {
    CHECK(num_steps > 0 && num_envs > 0 && obs_dim > 0 && action_dim > 0,
          "rollout_init: %d steps, %d environments, obs_dim %d, action_dim %d", num_steps, num_envs, obs_dim,
          action_dim);
    const size_t rows = (size_t)num_steps * num_envs;
    *b = (RolloutBuffer){.num_steps = num_steps, .num_envs = num_envs, .obs_dim = obs_dim, .action_dim = action_dim};
    b->obs = xcalloc(rows * obs_dim, sizeof(float));
    b->actions = xcalloc(rows * action_dim, sizeof(float));
    b->logprobs = xcalloc(rows, sizeof(float));
    b->rewards = xcalloc(rows, sizeof(float));
    b->terminated = xcalloc(rows, 1);
    b->truncated = xcalloc(rows, 1);
    b->final_obs = xcalloc(rows * obs_dim, sizeof(float));
    b->next_obs = xcalloc((size_t)num_envs * obs_dim, sizeof(float));
    b->values = xcalloc(rows, sizeof(float));
    b->next_values = xcalloc(rows, sizeof(float));
    b->advantages = xcalloc(rows, sizeof(float));
    b->returns = xcalloc(rows, sizeof(float));
}

void rollout_free(RolloutBuffer *b) {
    void *bufs[] = {b->obs,      b->actions,   b->logprobs,    b->rewards,    b->terminated, b->truncated,
                    b->final_obs, b->next_obs, b->values,      b->next_values, b->advantages, b->returns};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) xfree(bufs[i]);
    memset(b, 0, sizeof *b);
}

void minibatch_init(Minibatch *mb, int size, int obs_dim, int action_dim, int actor_out) {
    CHECK(size > 0, "minibatch_init: size %d", size);
    *mb = (Minibatch){.size = size, .obs_dim = obs_dim, .action_dim = action_dim, .actor_out = actor_out};
    mb->obs = xcalloc((size_t)size * obs_dim, sizeof(float));
    mb->actions = xcalloc((size_t)size * action_dim, sizeof(float));
    float **vecs[] = {&mb->old_logp, &mb->advantages, &mb->returns, &mb->old_values,
                      &mb->logp,     &mb->dlogp,      &mb->dvalue};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) *vecs[i] = xcalloc((size_t)size, sizeof(float));
    mb->dout = xcalloc((size_t)size * actor_out, sizeof(float));
}

void minibatch_free(Minibatch *mb) {
    void *bufs[] = {mb->obs,  mb->actions, mb->old_logp, mb->advantages, mb->returns,
                    mb->old_values, mb->logp, mb->dlogp, mb->dout, mb->dvalue};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) xfree(bufs[i]);
    memset(mb, 0, sizeof *mb);
}

void minibatch_gather(Minibatch *mb, const RolloutBuffer *b, const int *rows, int n) {
    CHECK(n > 0 && n <= mb->size, "minibatch_gather: %d rows into a mini-batch of %d", n, mb->size);
    const int d = b->obs_dim, a = b->action_dim, total = b->num_steps * b->num_envs;
    for (int j = 0; j < n; j++) {
        const int r = rows[j];
        CHECK(r >= 0 && r < total, "minibatch_gather: row %d of a rollout of %d", r, total);
        memcpy(mb->obs + (size_t)j * d, b->obs + (size_t)r * d, (size_t)d * sizeof(float));
        memcpy(mb->actions + (size_t)j * a, b->actions + (size_t)r * a, (size_t)a * sizeof(float));
        mb->old_logp[j] = b->logprobs[r];
        mb->advantages[j] = b->advantages[r];
        mb->returns[j] = b->returns[r];
        mb->old_values[j] = b->values[r];
    }
}
