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
#ifdef SOLUTION
    double loss = 0, kl = 0, old_kl = 0, clipped = 0;
    for (int i = 0; i < n; i++) {
        const double log_ratio = (double)logp[i] - old_logp[i];
        const double ratio = exp(log_ratio); /* pi_new / pi_old of the action taken */
        const double A = advantages[i];
        const double r_clip = fmin(fmax(ratio, 1.0 - clip_coef), 1.0 + clip_coef);
        const double surrogate = -A * ratio, surrogate_clipped = -A * r_clip;
        /* the pessimistic (larger) of the two losses; only the unclipped one depends on logp */
        if (surrogate >= surrogate_clipped) {
            loss += surrogate;
            dlogp[i] += (float)(-A * ratio / n); /* d ratio / d logp = ratio */
        } else {
            loss += surrogate_clipped;
        }
        old_kl += -log_ratio;
        kl += (ratio - 1.0) - log_ratio;
        clipped += fabs(ratio - 1.0) > clip_coef ? 1.0 : 0.0;
    }
    stats->approx_kl = kl / n;
    stats->old_approx_kl = old_kl / n;
    stats->clip_fraction = clipped / n;
    return (float)(loss / n);
#else
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
#endif
}

float lesson_value_loss(float *dvalue, const float *value, const float *old_value, const float *returns, int n,
                        float clip_coef, float vf_coef) {
#ifdef SOLUTION
    double loss = 0;
    for (int i = 0; i < n; i++) {
        const double err = (double)value[i] - returns[i];
        double sq = err * err, grad = err; /* d/dv of err^2 / 2 */
        if (clip_coef > 0) {
            /* the new value may move at most clip_coef from the one the rollout used */
            const double move = (double)value[i] - old_value[i];
            const double moved = fmin(fmax(move, -clip_coef), clip_coef);
            const double err_clipped = old_value[i] + moved - returns[i];
            if (err_clipped * err_clipped > sq) { /* the clipped error is the larger: it counts */
                sq = err_clipped * err_clipped;
                grad = move == moved ? err_clipped : 0.0; /* beyond the clip it is a constant */
            }
        }
        loss += sq;
        dvalue[i] += (float)(vf_coef * grad / n);
    }
    return (float)(0.5 * loss / n);
#else
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
#endif
}

float lesson_entropy_bonus(float *dlogits, const float *logits, int n, int num_actions, float ent_coef) {
#ifdef SOLUTION
    double total = 0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * num_actions;
        float *dz = dlogits + (size_t)i * num_actions;
        double zmax = z[0], sum = 0;
        for (int j = 1; j < num_actions; j++) zmax = fmax(zmax, z[j]);
        for (int j = 0; j < num_actions; j++) sum += exp(z[j] - zmax);
        const double log_norm = zmax + log(sum); /* log sum_j exp(z_j) */
        double h = 0;
        for (int j = 0; j < num_actions; j++) {
            const double logp = z[j] - log_norm;
            h -= exp(logp) * logp;
        }
        total += h;
        /* d(-ent_coef * mean H)/dz_j = -ent_coef / n * (-p_j (log p_j + H)) */
        for (int j = 0; j < num_actions; j++) {
            const double logp = z[j] - log_norm;
            dz[j] += (float)(ent_coef / n * exp(logp) * (logp + h));
        }
    }
    return (float)(total / n);
#else
    /* TODO 5.5: for each row i of logits z (num_actions of them), in double:
     *   log p_j = z_j - log sum_k exp(z_k), computed stably: subtract the row's largest z
     *             before exp, add it back after the log;
     *   H = -sum_j p_j log p_j
     *   dH/dz_j = -p_j (log p_j + H)
     *   dlogits[i][j] += -ent_coef / n * dH/dz_j
     * Return the mean of H over the n rows. (Write it out: the grader refuses the
     * library's categorical_entropy and categorical_entropy_backward here.) */
    TODO_STOP("5.5");
#endif
}
