/* TODO 5.6: the update. The rollout is used update_epochs times, each time in another
 * random order, cut into num_minibatches mini-batches: one gradient step each. Re-using
 * the data is what makes PPO sample-efficient; the clipped loss is what makes it safe. */
#include <math.h>

#include "lesson.h"
#include "train/clip.h"

void lesson_update(Ppo *p, PpoUpdateStats *stats) {
#ifdef SOLUTION
    const PpoConfig *c = &p->cfg;
    const int batch = ppo_batch_size(p), size = ppo_minibatch_size(p);
    PpoUpdateStats sum = {0};
    for (int epoch = 0; epoch < c->update_epochs; epoch++) {
        rng_permutation(&p->shuffle_rng, p->perm, batch); /* a new order every epoch */
        double kl = 0;
        for (int start = 0; start < batch; start += size) {
            minibatch_gather(&p->mb, &p->buf, p->perm + start, size);
            if (c->norm_adv) { /* mean 0, standard deviation 1 within the mini-batch */
                float *adv = p->mb.advantages;
                double mean = 0, var = 0;
                for (int i = 0; i < size; i++) mean += adv[i];
                mean /= size;
                for (int i = 0; i < size; i++) var += (adv[i] - mean) * (adv[i] - mean);
                const double std = sqrt(var / (size - 1)); /* torch.std: n - 1 */
                for (int i = 0; i < size; i++) adv[i] = (float)((adv[i] - mean) / (std + 1e-8));
            }
            params_zero_grad(&p->policy.params);
            const PpoMinibatchStats s = ppo_minibatch_gradients(p, size);
            clip_grad_norm(&p->policy.params, c->max_grad_norm);
            adam_step(&p->opt, &p->policy.params);
            sum.policy_loss += s.policy_loss;
            sum.value_loss += s.value_loss;
            sum.entropy += s.entropy;
            sum.approx_kl += s.pg.approx_kl;
            sum.old_approx_kl += s.pg.old_approx_kl;
            sum.clip_fraction += s.pg.clip_fraction;
            sum.minibatches++;
            kl = s.pg.approx_kl;
        }
        sum.epochs++;
        if (c->target_kl > 0 && kl > c->target_kl) break; /* the policy moved far enough */
    }
    const double m = sum.minibatches;
    stats->policy_loss = sum.policy_loss / m;
    stats->value_loss = sum.value_loss / m;
    stats->entropy = sum.entropy / m;
    stats->approx_kl = sum.approx_kl / m;
    stats->old_approx_kl = sum.old_approx_kl / m;
    stats->clip_fraction = sum.clip_fraction / m;
    stats->explained_variance = ppo_explained_variance(p->buf.values, p->buf.returns, batch);
    stats->epochs = sum.epochs;
    stats->minibatches = sum.minibatches;
#else
    /* TODO 5.6: with c = &p->cfg, batch = ppo_batch_size(p), size = ppo_minibatch_size(p):
     * for each of c->update_epochs epochs:
     *   rng_permutation(&p->shuffle_rng, p->perm, batch): a fresh random order of the
     *   rollout's rows (exactly one call per epoch, so that the grader can follow);
     *   for start = 0, size, 2 size, ... < batch:
     *     1. minibatch_gather(&p->mb, &p->buf, p->perm + start, size);
     *     2. if c->norm_adv: p->mb.advantages = (A - mean) / (std + 1e-8) over the
     *        mini-batch, std with n - 1 (as torch.std), computed in double;
     *     3. params_zero_grad(&p->policy.params), then
     *        ppo_minibatch_gradients(p, size): forward, your losses, backward;
     *     4. clip_grad_norm(&p->policy.params, c->max_grad_norm), then
     *        adam_step(&p->opt, &p->policy.params);
     *     5. add the mini-batch's losses and statistics to running sums.
     *   If c->target_kl > 0 and the last mini-batch's approx_kl exceeds it, stop the epochs.
     * Fill *stats: the means over all mini-batches taken, the epochs and mini-batches run,
     * and explained_variance = ppo_explained_variance(p->buf.values, p->buf.returns, batch). */
    TODO_STOP("5.6");
#endif
}
