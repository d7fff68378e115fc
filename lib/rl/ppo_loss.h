/* The three terms of PPO's loss (Schulman et al. 2017, with CleanRL's details), each
 * with its gradient written out. For a mini-batch of n samples:
 *
 *   ratio_i = pi_new(a_i | s_i) / pi_old(a_i | s_i) = exp(logp_i - old_logp_i)
 *   policy loss = mean_i max(-A_i ratio_i, -A_i clip(ratio_i, 1 - c, 1 + c))
 *   value loss  = 1/2 mean_i max((v_i - R_i)^2, (v_old_i + clip(v_i - v_old_i, -c, c) - R_i)^2)
 *                 (1/2 mean (v_i - R_i)^2 when c <= 0: no clipping)
 *   entropy     = mean_i H(pi_new(. | s_i))
 *   loss = policy loss - ent_coef * entropy + vf_coef * value loss
 *
 * The max and the clip pass the gradient as PyTorch's autograd does: through the term
 * the max picked, and through clip only inside its range. So a sample whose ratio has
 * moved past 1 + c in the direction its advantage pushes gets no more gradient: the
 * step stays near the old policy without a trust-region constraint.
 *
 * Each function returns its term (the mean, summed in double) and adds (+=) the
 * gradient of its share of the loss above into its output: the policy loss's d/dlogp,
 * vf_coef times the value loss's d/dvalue, -ent_coef times the entropy's d/dlogits. */
#ifndef RL_PPO_LOSS_H
#define RL_PPO_LOSS_H

/* What the policy loss sees of how far the policy moved, as CleanRL logs it. */
typedef struct {
    double approx_kl;     /* mean of (ratio - 1) - log ratio: an estimate of KL(old, new) >= 0 */
    double old_approx_kl; /* mean of -log ratio: the older, noisier estimate */
    double clip_fraction; /* share of samples with |ratio - 1| > c */
} PpoPolicyStats;

/* dlogp [n] += d(policy loss)/d logp; stats (may be NULL) filled. */
float ppo_policy_loss(float *dlogp, PpoPolicyStats *stats, const float *logp, const float *old_logp,
                      const float *advantages, int n, float clip_coef);
/* dvalue [n] += vf_coef * d(value loss)/d value. clip_coef <= 0: unclipped. */
float ppo_value_loss(float *dvalue, const float *value, const float *old_value, const float *returns, int n,
                     float clip_coef, float vf_coef);
/* The entropy bonus of a categorical policy: dlogits [n, num_actions] += -ent_coef *
 * d(mean entropy)/dlogits; returns the mean entropy. */
float ppo_entropy_bonus(float *dlogits, const float *logits, int n, int num_actions, float ent_coef);

#endif
