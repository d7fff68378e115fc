/* TODO 5.6: the update. The rollout is used update_epochs times, each time in another
 * random order, cut into num_minibatches mini-batches: one gradient step each. Re-using
 * the data is what makes PPO sample-efficient; the clipped loss is what makes it safe. */
#include <math.h>

#include "lesson.h"
#include "train/clip.h"

void lesson_update(Ppo *p, PpoUpdateStats *stats) {
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
}
