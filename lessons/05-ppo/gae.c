/* TODO 5.2: generalised advantage estimation. How much better than expected was each
 * action? The critic's values make the answer less noisy than the raw returns. */
#include "lesson.h"

void lesson_gae(float *advantages, float *returns, const float *rewards, const float *values,
                const float *next_values, const uint8_t *terminated, const uint8_t *truncated, int T, int N,
                float gamma, float lambda) {
    /* TODO 5.2: for each environment i, walk t from T - 1 down to 0 (k = t * N + i):
     *   delta_k = rewards[k] + gamma * next_values[k] - values[k], without the
     *             gamma * next_values[k] term where terminated[k]
     *   advantages[k] = delta_k + gamma * lambda * A_later, without the second term where
     *             the episode ended at step t (terminated[k] or truncated[k]); A_later is
     *             the advantage just computed for step t + 1 (0 for t = T - 1)
     *   returns[k] = advantages[k] + values[k]
     * (floats are enough; lib/rl/gae.h has the formulas. Once your checks pass, compare
     * with the library's gae() in lib/rl/gae.c.) */
    TODO_STOP("5.2");
}
