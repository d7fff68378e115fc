/* TODOs 5.3 to 5.5: PPO's loss, term by term, each with its gradient.
 *
 *   loss = policy loss - ent_coef * entropy + vf_coef * value loss
 *
 * The library runs the networks: the actor's forward gives logp (and the logits), the
 * critic's gives the values; your gradients go into their backward passes. */
#include <math.h>

#include "lesson.h"

const PpoLosses LESSON_LOSSES = {lesson_policy_loss, lesson_value_loss, lesson_entropy_bonus};

float lesson_policy_loss(float *dlogp, PpoPolicyStats *stats, const float *logp, const float *old_logp,
                         const float *advantages, int n, float clip_coef) {
    /* TODO 5.3: for each sample i (compute in double):
     *   ratio = exp(logp[i] - old_logp[i]), A = advantages[i]
     *   the two losses: -A * ratio and -A * clip(ratio, 1 - clip_coef, 1 + clip_coef);
     *   add the larger to the sum. When the unclipped one is the larger (or they are
     *   equal), the gradient flows: dlogp[i] += -A * ratio / n. Otherwise the clipped
     *   term is a constant: no gradient for this sample.
     *   The statistics: sum (ratio - 1) - log ratio for approx_kl, -log ratio for
     *   old_approx_kl, and count |ratio - 1| > clip_coef for clip_fraction.
     * Return the mean loss; store the three means in *stats. */
    TODO_STOP("5.3");
}

float lesson_value_loss(float *dvalue, const float *value, const float *old_value, const float *returns, int n,
                        float clip_coef, float vf_coef) {
    /* TODO 5.4: for each sample i (in double), err = value[i] - returns[i]:
     *   without clipping (clip_coef <= 0): add err^2 to the sum; gradient err.
     *   with clipping: the clipped value is old_value[i] + clip(value[i] - old_value[i],
     *   -clip_coef, clip_coef); take the larger of err^2 and (clipped value -
     *   returns[i])^2. Its gradient: err when err^2 is the larger (or equal); else
     *   (clipped value - returns[i]) if value[i] - old_value[i] lies inside the clip
     *   range, and 0 if it does not (the clipped value is then a constant).
     *   dvalue[i] += vf_coef * gradient / n.
     * Return 0.5 * sum / n. */
    TODO_STOP("5.4");
}

float lesson_entropy_bonus(float *dlogits, const float *logits, int n, int num_actions, float ent_coef) {
    /* TODO 5.5: for each row i of logits z (num_actions of them), in double:
     *   log p_j = z_j - log sum_k exp(z_k), computed stably: subtract the row's largest z
     *             before exp, add it back after the log;
     *   H = -sum_j p_j log p_j
     *   dH/dz_j = -p_j (log p_j + H)
     *   dlogits[i][j] += -ent_coef / n * dH/dz_j
     * Return the mean of H over the n rows. (Write it out: the grader refuses the
     * library's categorical_entropy and categorical_entropy_backward here.) */
    TODO_STOP("5.5");
}
