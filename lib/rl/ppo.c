#include "rl/ppo.h"

#include <math.h>
#include <string.h>

#include "core/check.h"
#include "core/timer.h"
#include "rl/distributions.h"

PpoConfig ppo_config_defaults(void) {
    return (PpoConfig){.total_steps = 500000, .num_envs = 4, .num_steps = 128, .lr = 2.5e-4f, .anneal_lr = 1,
                       .adam_eps = 1e-5f, .gamma = 0.99f, .gae_lambda = 0.95f, .num_minibatches = 4,
                       .update_epochs = 4, .norm_adv = 1, .clip_coef = 0.2f, .clip_vloss = 1, .ent_coef = 0.01f,
                       .vf_coef = 0.5f, .max_grad_norm = 0.5f, .target_kl = 0.0f, .reward_scale = 1.0f, .hidden = 64};
}

PpoConfig ppo_config_for(const EnvSpec *spec) {
    PpoConfig c = ppo_config_defaults();
    if (spec->action_kind == ACTION_CONTINUOUS) {
        c.num_envs = 1;
        c.num_steps = 2048;
        c.lr = 3e-4f;
        c.update_epochs = 10;
        c.num_minibatches = 32;
        c.ent_coef = 0.0f;
        c.reward_scale = 0.01f;
    }
    return c;
}

static void need(int ok, const char *option, const char *what, double value) {
    if (!ok) fatal("--%s must be %s, got %g", option, what, value);
}

void ppo_config_check(const PpoConfig *c) {
    need(c->num_envs >= 1 && c->num_envs <= VEC_ENV_MAX, "num-envs", "1 to 65536", c->num_envs);
    need(c->num_steps >= 1, "num-steps", "1 or more", c->num_steps);
    need(c->num_minibatches >= 1, "num-minibatches", "1 or more", c->num_minibatches);
    need(c->update_epochs >= 1, "update-epochs", "1 or more", c->update_epochs);
    need(c->hidden >= 1 && c->hidden <= 4096, "hidden", "1 to 4096", c->hidden);
    const int64_t batch = (int64_t)c->num_envs * c->num_steps;
    if (batch > (1 << 24))
        fatal("--num-envs %d x --num-steps %d = %lld steps per rollout: at most 16,777,216", c->num_envs,
              c->num_steps, (long long)batch);
    if (batch % c->num_minibatches != 0 || batch / c->num_minibatches < 2)
        fatal("--num-minibatches %d must divide the rollout of %lld steps (--num-envs x --num-steps) into "
              "mini-batches of at least 2",
              c->num_minibatches, (long long)batch);
    if (c->total_steps < batch)
        fatal("--steps %d is less than one rollout (%lld = --num-envs x --num-steps)", c->total_steps,
              (long long)batch);
    need(isfinite(c->lr) && c->lr > 0, "lr", "positive", c->lr);
    need(isfinite(c->adam_eps) && c->adam_eps > 0, "adam-eps", "positive", c->adam_eps);
    need(c->gamma >= 0 && c->gamma <= 1, "gamma", "in [0, 1]", c->gamma);
    need(c->gae_lambda >= 0 && c->gae_lambda <= 1, "gae-lambda", "in [0, 1]", c->gae_lambda);
    need(isfinite(c->clip_coef) && c->clip_coef > 0, "clip-coef", "positive", c->clip_coef);
    need(isfinite(c->ent_coef) && c->ent_coef >= 0, "ent-coef", "0 or more", c->ent_coef);
    need(isfinite(c->vf_coef) && c->vf_coef > 0, "vf-coef", "positive", c->vf_coef);
    need(isfinite(c->max_grad_norm) && c->max_grad_norm > 0, "max-grad-norm", "positive", c->max_grad_norm);
    need(isfinite(c->reward_scale) && c->reward_scale > 0, "reward-scale", "positive", c->reward_scale);
    need(isfinite(c->target_kl) && c->target_kl >= 0, "target-kl", "0 (off) or positive", c->target_kl);
}

const PpoLosses PPO_LIBRARY_LOSSES = {ppo_policy_loss, ppo_value_loss, ppo_entropy_bonus};

int ppo_batch_size(const Ppo *p) { return p->cfg.num_steps * p->cfg.num_envs; }
int ppo_minibatch_size(const Ppo *p) { return ppo_batch_size(p) / p->cfg.num_minibatches; }
int ppo_num_updates(const Ppo *p) { return p->cfg.total_steps / ppo_batch_size(p); }

void ppo_init(Ppo *p, const EnvSpec *spec, const PpoConfig *cfg, uint64_t seed, int threads) {
    ppo_config_check(cfg);
    memset(p, 0, sizeof *p);
    p->cfg = *cfg;
    p->spec = spec;
    p->threads = threads > 0 ? threads : 1;
    p->losses = PPO_LIBRARY_LOSSES;
    const bool continuous = spec->action_kind == ACTION_CONTINUOUS;
    const int actor_out = continuous ? spec->action_dim : spec->num_actions;
    const int batch = ppo_batch_size(p), mb = ppo_minibatch_size(p);
    p->env = vec_env_create(spec, cfg->num_envs, seed);
    Rng init;
    rng_seed(&init, seed, PPO_STREAM_INIT);
    /* room for the largest batch a network sees: the critic over the whole rollout */
    const int max_batch = batch > mb ? batch : mb;
    mlp_policy_init(&p->policy, spec->obs_dim, actor_out, continuous, cfg->hidden, max_batch, &init);
    adam_init(&p->opt, &p->policy.params, cfg->lr);
    p->opt.eps = cfg->adam_eps;
    rollout_init(&p->buf, cfg->num_steps, cfg->num_envs, spec->obs_dim, spec->action_dim);
    minibatch_init(&p->mb, mb, spec->obs_dim, spec->action_dim, actor_out);
    p->perm = xcalloc((size_t)batch, sizeof *p->perm);
    p->ended_obs = xcalloc((size_t)batch * spec->obs_dim, sizeof *p->ended_obs);
    p->ended_rows = xcalloc((size_t)batch, sizeof *p->ended_rows);
    rng_seed(&p->act_rng, seed, PPO_STREAM_ACT);
    rng_seed(&p->shuffle_rng, seed, PPO_STREAM_SHUFFLE);
}

void ppo_free(Ppo *p) {
    vec_env_free(&p->env);
    mlp_policy_free(&p->policy);
    adam_free(&p->opt);
    rollout_free(&p->buf);
    minibatch_free(&p->mb);
    xfree(p->perm);
    xfree(p->ended_obs);
    xfree(p->ended_rows);
    memset(p, 0, sizeof *p);
}

void ppo_iteration(Ppo *p, PpoUpdateStats *stats) {
    ppo_set_lr(p);
    ppo_collect(p);
    ppo_compute_values(p);
    ppo_advantages(p);
    const double t0 = now_seconds();
    ppo_update(p, stats);
    p->time.update += now_seconds() - t0;
    p->updates++;
}

void ppo_greedy_policy(void *ctx, const float *obs, float *action) {
    Ppo *p = ctx;
    const float *out = mlp_forward(&p->policy.actor, obs, 1);
    if (p->policy.continuous) memcpy(action, out, (size_t)p->policy.actor_out * sizeof(float));
    else categorical_mode(action, out, 1, p->policy.actor_out);
}
