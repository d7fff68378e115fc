/* Generalised advantage estimation (Schulman et al. 2016), over a rollout of T steps of
 * N environments, arrays [T, N] (step t of environment i at t * N + i):
 *
 *   delta_t = r_t + gamma * (1 - terminated_t) * next_value_t - value_t
 *   A_t     = delta_t + gamma * lambda * (1 - ended_t) * A_{t+1},   A after the last step = 0
 *   return_t = A_t + value_t        (the critic's target)
 *
 * next_value_t is V of the state step t led to: the next row's observation, or, where
 * the episode ended, its last observation (the environment has already reset). A
 * terminated episode has no future (its next value counts 0); a truncated one does (the
 * time limit stopped it, not the task), so its next value is bootstrapped, while its
 * advantages still do not reach into the next episode (ended = terminated or truncated).
 * CleanRL's ppo.py treats a truncation as a termination instead; docs/rl.md says why
 * this library does not. Computed in float, as CleanRL does in PyTorch. */
#ifndef RL_GAE_H
#define RL_GAE_H

#include <stdint.h>

void gae(float *advantages, float *returns, const float *rewards, const float *values, const float *next_values,
         const uint8_t *terminated, const uint8_t *truncated, int T, int N, float gamma, float lambda);

#endif
