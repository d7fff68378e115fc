/* PPO's update: epochs of shuffled mini-batches, each a forward, the loss, a backward,
 * gradient clipping and one Adam step. */
#include <math.h>
#include <string.h>

#include "core/check.h"
#include "core/timer.h"
#include "rl/distributions.h"
#include "rl/ppo.h"
#include "train/clip.h"
#include "train/schedule.h"

void ppo_set_lr(Ppo *p) {
    p->opt.lr = p->cfg.anneal_lr ? linear_lr(p->cfg.lr, p->updates, ppo_num_updates(p)) : p->cfg.lr;
}

void ppo_normalize_advantages(float *adv, int n) {
    CHECK(n >= 2, "ppo_normalize_advantages: %d values (the standard deviation needs 2)", n);
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++) mean += adv[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += (adv[i] - mean) * (adv[i] - mean);
    const double scale = 1.0 / (sqrt(var / (n - 1)) + 1e-8);
    for (int i = 0; i < n; i++) adv[i] = (float)((adv[i] - mean) * scale);
}

double ppo_explained_variance(const float *values, const float *returns, int n) {
    double mean_y = 0, mean_e = 0;
    for (int i = 0; i < n; i++) {
        mean_y += returns[i];
        mean_e += (double)returns[i] - values[i];
    }
    mean_y /= n;
    mean_e /= n;
    double var_y = 0, var_e = 0;
    for (int i = 0; i < n; i++) {
        const double e = (double)returns[i] - values[i];
        var_y += (returns[i] - mean_y) * (returns[i] - mean_y);
        var_e += (e - mean_e) * (e - mean_e);
    }
    return var_y == 0 ? NAN : 1.0 - var_e / var_y;
}

/* The actor's share: log-probabilities of the taken actions under the current policy,
 * the clipped surrogate and the entropy bonus, and their gradients down the actor. */
static void actor_pass(Ppo *p, int n, PpoMinibatchStats *s) {
    Minibatch *mb = &p->mb;
    MlpPolicy *pol = &p->policy;
    const PpoConfig *c = &p->cfg;
    const int A = pol->actor_out;
    const float *out = mlp_forward(&pol->actor, mb->obs, n); /* [n, A]: logits or means */
    memset(mb->dlogp, 0, (size_t)n * sizeof(float));
    memset(mb->dout, 0, (size_t)n * A * sizeof(float));
    if (pol->continuous) {
        const float *logstd = pol->logstd->value.data;
        float *dlogstd = pol->logstd->grad.data;
        gaussian_log_prob(mb->logp, out, logstd, mb->actions, n, A);
        s->policy_loss = p->losses.policy_loss(mb->dlogp, &s->pg, mb->logp, mb->old_logp, mb->advantages, n,
                                               c->clip_coef);
        gaussian_log_prob_backward(mb->dout, dlogstd, mb->dlogp, out, logstd, mb->actions, n, A);
        s->entropy = gaussian_entropy(logstd, A); /* dH/dlogstd = 1 for every row */
        for (int d = 0; d < A; d++) dlogstd[d] -= c->ent_coef;
    } else {
        categorical_log_prob(mb->logp, out, mb->actions, n, A);
        s->policy_loss = p->losses.policy_loss(mb->dlogp, &s->pg, mb->logp, mb->old_logp, mb->advantages, n,
                                               c->clip_coef);
        categorical_log_prob_backward(mb->dout, mb->dlogp, out, mb->actions, n, A);
        s->entropy = p->losses.entropy_bonus(mb->dout, out, n, A, c->ent_coef);
    }
    mlp_backward(&pol->actor, mb->obs, mb->dout, n);
}

/* The critic's share: the (clipped) value loss and its gradient down the critic. */
static void critic_pass(Ppo *p, int n, PpoMinibatchStats *s) {
    Minibatch *mb = &p->mb;
    const PpoConfig *c = &p->cfg;
    const float *v = mlp_forward(&p->policy.critic, mb->obs, n); /* [n, 1] */
    memset(mb->dvalue, 0, (size_t)n * sizeof(float));
    s->value_loss = p->losses.value_loss(mb->dvalue, v, mb->old_values, mb->returns, n,
                                         c->clip_vloss ? c->clip_coef : 0.0f, c->vf_coef);
    mlp_backward(&p->policy.critic, mb->obs, mb->dvalue, n);
}

PpoMinibatchStats ppo_minibatch_gradients(Ppo *p, int n) {
    CHECK(n >= 1 && n <= p->mb.size, "ppo_minibatch_gradients: %d rows, the mini-batch holds %d", n, p->mb.size);
    PpoMinibatchStats s = {0};
    /* two networks, two losses, no shared gradient: one thread each (each writes its own
     * parameters' grads and its own fields of s) */
#pragma omp parallel sections num_threads(2) if (p->threads > 1)
    {
#pragma omp section
        actor_pass(p, n, &s);
#pragma omp section
        critic_pass(p, n, &s);
    }
    return s;
}

void ppo_stats_add(PpoUpdateStats *sum, const PpoMinibatchStats *s) {
    sum->policy_loss += s->policy_loss;
    sum->value_loss += s->value_loss;
    sum->entropy += s->entropy;
    sum->approx_kl += s->pg.approx_kl;
    sum->old_approx_kl += s->pg.old_approx_kl;
    sum->clip_fraction += s->pg.clip_fraction;
    sum->minibatches++;
}

void ppo_stats_finish(PpoUpdateStats *sum, const Ppo *p) {
    const double k = sum->minibatches > 0 ? sum->minibatches : 1;
    double *means[] = {&sum->policy_loss, &sum->value_loss, &sum->entropy,
                       &sum->approx_kl,   &sum->old_approx_kl, &sum->clip_fraction};
    for (size_t i = 0; i < sizeof means / sizeof means[0]; i++) *means[i] /= k;
    sum->explained_variance = ppo_explained_variance(p->buf.values, p->buf.returns, ppo_batch_size(p));
}

void ppo_update(Ppo *p, PpoUpdateStats *stats) {
    const PpoConfig *c = &p->cfg;
    const int batch = ppo_batch_size(p), size = ppo_minibatch_size(p);
    *stats = (PpoUpdateStats){0};
    for (int epoch = 0; epoch < c->update_epochs; epoch++) {
        rng_permutation(&p->shuffle_rng, p->perm, batch);
        double last_kl = 0;
        for (int start = 0; start < batch; start += size) {
            minibatch_gather(&p->mb, &p->buf, p->perm + start, size);
            if (c->norm_adv) ppo_normalize_advantages(p->mb.advantages, size);
            params_zero_grad(&p->policy.params);
            const PpoMinibatchStats s = ppo_minibatch_gradients(p, size);
            clip_grad_norm(&p->policy.params, c->max_grad_norm);
            adam_step(&p->opt, &p->policy.params);
            ppo_stats_add(stats, &s);
            last_kl = s.pg.approx_kl;
        }
        stats->epochs++;
        if (c->target_kl > 0 && last_kl > c->target_kl) break; /* CleanRL's early stop */
    }
    ppo_stats_finish(stats, p);
}
