#include "rl/ppo_loss.h"

#include <math.h>
#include <stdbool.h>

#include "core/check.h"
#include "rl/distributions.h"

float ppo_policy_loss(float *dlogp, PpoPolicyStats *stats, const float *logp, const float *old_logp,
                      const float *advantages, int n, float clip_coef) {
    CHECK(n > 0, "ppo_policy_loss: %d samples", n);
    double loss = 0, kl = 0, old_kl = 0, clipped = 0;
    const double lo = 1.0 - clip_coef, hi = 1.0 + clip_coef;
    for (int i = 0; i < n; i++) {
        const double log_ratio = (double)logp[i] - old_logp[i], ratio = exp(log_ratio), A = advantages[i];
        const double unclipped = -A * ratio, clipped_term = -A * (ratio < lo ? lo : ratio > hi ? hi : ratio);
        if (unclipped >= clipped_term) { /* the max picks the unclipped term: the gradient flows */
            loss += unclipped;
            dlogp[i] += (float)(-A * ratio / n); /* d ratio / d logp = ratio */
        } else {
            loss += clipped_term; /* clipped and picked: a constant */
        }
        old_kl += -log_ratio;
        kl += (ratio - 1.0) - log_ratio;
        clipped += fabs(ratio - 1.0) > clip_coef;
    }
    if (stats) *stats = (PpoPolicyStats){.approx_kl = kl / n, .old_approx_kl = old_kl / n, .clip_fraction = clipped / n};
    return (float)(loss / n);
}

float ppo_value_loss(float *dvalue, const float *value, const float *old_value, const float *returns, int n,
                     float clip_coef, float vf_coef) {
    CHECK(n > 0, "ppo_value_loss: %d samples", n);
    double loss = 0;
    for (int i = 0; i < n; i++) {
        const double v = value[i], R = returns[i], err = v - R;
        double grad = err; /* d/dv of (v - R)^2 / 2 */
        if (clip_coef > 0) {
            const double step = v - old_value[i];
            const bool inside = step >= -clip_coef && step <= clip_coef;
            const double v_clipped = old_value[i] + (inside ? step : step < 0 ? -clip_coef : clip_coef);
            const double err_clipped = v_clipped - R;
            if (err * err >= err_clipped * err_clipped) {
                loss += err * err;
            } else { /* the clipped error is larger: only it counts, and it moves with v inside the clip */
                loss += err_clipped * err_clipped;
                grad = inside ? err_clipped : 0.0;
            }
        } else {
            loss += err * err;
        }
        dvalue[i] += (float)(vf_coef * grad / n);
    }
    return (float)(0.5 * loss / n);
}

float ppo_entropy_bonus(float *dlogits, const float *logits, int n, int num_actions, float ent_coef) {
    CHECK(n > 0, "ppo_entropy_bonus: %d samples", n);
    const float dh = -ent_coef / (float)n; /* d(-ent_coef * mean H)/dH_i */
    double sum = 0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * num_actions;
        float h;
        categorical_entropy(&h, z, 1, num_actions);
        sum += h;
        categorical_entropy_backward(dlogits + (size_t)i * num_actions, &dh, z, 1, num_actions);
    }
    return (float)(sum / n);
}
