/* TODO 5.6: the update. The rollout is used update_epochs times, each time in another
 * random order, cut into num_minibatches mini-batches: one gradient step each. Re-using
 * the data is what makes PPO sample-efficient; the clipped loss is what makes it safe. */
#include <math.h>

#include "lesson.h"
#include "train/clip.h"

void lesson_update(Ppo *p, PpoUpdateStats *stats) {
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
}
