#include "rl/gae.h"

void gae(float *advantages, float *returns, const float *rewards, const float *values, const float *next_values,
         const uint8_t *terminated, const uint8_t *truncated, int T, int N, float gamma, float lambda) {
    for (int i = 0; i < N; i++) {
        float next_advantage = 0.0f; /* A_{t+1} */
        for (int t = T - 1; t >= 0; t--) {
            const int k = t * N + i;
            const float alive = terminated[k] ? 0.0f : 1.0f;                 /* bootstrap from next_value? */
            const float same_episode = terminated[k] || truncated[k] ? 0.0f : 1.0f; /* does A_{t+1} count? */
            const float delta = rewards[k] + gamma * alive * next_values[k] - values[k];
            advantages[k] = delta + gamma * lambda * same_episode * next_advantage;
            returns[k] = advantages[k] + values[k];
            next_advantage = advantages[k];
        }
    }
}
