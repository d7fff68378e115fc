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
    *stats = (PpoUpdateStats){0};
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
            ppo_stats_add(stats, &s);
            kl = s.pg.approx_kl;
        }
        stats->epochs++;
        if (c->target_kl > 0 && kl > c->target_kl) break; /* the policy moved far enough */
    }
    ppo_stats_finish(stats, p); /* sums -> means; the explained variance */
#else
    /* TODO 5.6: with c = &p->cfg, batch = ppo_batch_size(p), size = ppo_minibatch_size(p):
     * for each of c->update_epochs epochs:
     *   rng_permutation(&p->shuffle_rng, p->perm, batch): a fresh random order of the
     *   rollout's rows (exactly one call per epoch, so that the grader can follow);
     *   for start = 0, size, 2 size, ... < batch:
     *     1. minibatch_gather(&p->mb, &p->buf, p->perm + start, size);
     *     2. if c->norm_adv: p->mb.advantages = (A - mean) / (std + 1e-8) over the
     *        mini-batch, std with n - 1 (as torch.std), computed in double (yourself:
     *        the grader refuses the library's ppo_normalize_advantages here);
     *     3. params_zero_grad(&p->policy.params), then
     *        PpoMinibatchStats s = ppo_minibatch_gradients(p, size);
     *        (forward, your losses, backward; s holds the mini-batch's losses);
     *     4. clip_grad_norm(&p->policy.params, c->max_grad_norm), then
     *        adam_step(&p->opt, &p->policy.params);
     *     5. ppo_stats_add(stats, &s): the mini-batch's losses into the running sums
     *        (start from *stats = (PpoUpdateStats){0}).
     *   After each epoch: stats->epochs++; if c->target_kl > 0 and the approx_kl of the
     *   epoch's last mini-batch (its s.pg.approx_kl: keep it in a variable declared
     *   before the mini-batch loop) exceeds it, stop the epochs.
     * At the end, ppo_stats_finish(stats, p) turns the sums into means. */
    TODO_STOP("5.6");
#endif
}
