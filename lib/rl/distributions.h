/* The policy's probability distributions over actions, as torch.distributions computes
 * them, with their gradients written out (no autograd here). Each row of a batch is its
 * own distribution. Actions are floats (rl/env.h): a discrete one is its index.
 *
 * Categorical (discrete actions, from the actor's logits z [batch, A]):
 *   pi(a) = softmax(z)_a,  log pi(a) = z_a - logsumexp(z)
 *   d log pi(a) / dz_j = [j == a] - pi_j
 *   entropy H = -sum_j pi_j log pi_j,  dH/dz_j = -pi_j (log pi_j + H)
 *
 * Diagonal Gaussian (continuous actions, from the actor's means mu [batch, D] and one
 * learned log standard deviation s [D] shared by all rows, sigma = exp(s)):
 *   log pi(a) = sum_d -(a_d - mu_d)^2 / (2 sigma_d^2) - s_d - log(2 pi) / 2
 *   d log pi / d mu_d = (a_d - mu_d) / sigma_d^2,  d log pi / d s_d = (a_d - mu_d)^2 / sigma_d^2 - 1
 *   entropy H = sum_d 1/2 + log(2 pi)/2 + s_d  (the same for every row), dH/ds_d = 1
 *
 * Sampling draws from the Rng it is given, in row order: the same stream gives the same
 * actions. The backward functions add (+=) into their gradients. */
#ifndef RL_DISTRIBUTIONS_H
#define RL_DISTRIBUTIONS_H

#include "core/rng.h"

/* ---- categorical: logits [batch, A] */

/* actions [batch] drawn from softmax(logits), and their log-probabilities logp [batch]. */
void categorical_sample(float *actions, float *logp, const float *logits, int batch, int A, Rng *rng);
/* actions [batch]: the most likely action of each row (the first of equal ones). */
void categorical_mode(float *actions, const float *logits, int batch, int A);
/* logp [batch] = log pi(actions) */
void categorical_log_prob(float *logp, const float *logits, const float *actions, int batch, int A);
/* dlogits [batch, A] += dlogp[b] * d log pi(a_b) / dlogits */
void categorical_log_prob_backward(float *dlogits, const float *dlogp, const float *logits, const float *actions,
                                   int batch, int A);
/* entropy [batch] */
void categorical_entropy(float *entropy, const float *logits, int batch, int A);
/* dlogits [batch, A] += dentropy[b] * dH_b / dlogits */
void categorical_entropy_backward(float *dlogits, const float *dentropy, const float *logits, int batch, int A);

/* ---- diagonal Gaussian: means [batch, D], logstd [D] */

/* actions [batch, D] = mean + exp(logstd) * N(0, 1), and logp [batch]. */
void gaussian_sample(float *actions, float *logp, const float *mean, const float *logstd, int batch, int D,
                     Rng *rng);
/* logp [batch] = log pi(actions) */
void gaussian_log_prob(float *logp, const float *mean, const float *logstd, const float *actions, int batch,
                       int D);
/* dmean [batch, D] += dlogp[b] * d log pi / dmean, dlogstd [D] += sum over b of dlogp[b] * d log pi / dlogstd */
void gaussian_log_prob_backward(float *dmean, float *dlogstd, const float *dlogp, const float *mean,
                                const float *logstd, const float *actions, int batch, int D);
/* The entropy of every row. */
float gaussian_entropy(const float *logstd, int D);

#endif
