/* make bench-ppo, the C side's pieces that the training program does not time alone:
 * environment steps per second with nothing else (CartPole-v1, 4 copies as PPO steps
 * them, random actions drawn beforehand), and the actor choosing actions alone (the
 * rollout's forward, 4 observations at a time). Prints one JSON object.
 *   bench_ppo [SECONDS_EACH]   (default 1) */
#include <stdio.h>
#include <stdlib.h>

#include "core/rng.h"
#include "core/timer.h"
#include "rl/ppo.h"

enum { COPIES = 4, ACTIONS = 1 << 16 };

/* Steps of `copies` CartPoles per second, for about `seconds`. */
static double env_steps_per_s(double seconds) {
    static float actions[ACTIONS];
    Rng rng;
    rng_seed(&rng, 1, 1);
    for (int i = 0; i < ACTIONS; i++) actions[i] = (float)rng_below(&rng, 2);
    VecEnv v = vec_env_create(env_find("cartpole"), COPIES, 1);
    int64_t steps = 0;
    const double start = now_seconds();
    double elapsed = 0;
    for (int k = 0; elapsed < seconds; k = (k + COPIES) % ACTIONS) {
        for (int r = 0; r < 1000; r++) {
            vec_env_step(&v, actions + (k + r * COPIES) % (ACTIONS - COPIES));
            steps += COPIES;
        }
        elapsed = now_seconds() - start;
    }
    vec_env_free(&v);
    return (double)steps / elapsed;
}

/* Observations per second through ppo_act (the actor's forward and the sampling). */
static double act_per_s(double seconds) {
    PpoConfig c = ppo_config_defaults();
    Ppo p;
    ppo_init(&p, env_find("cartpole"), &c, 1, 1);
    float actions[COPIES], logp[COPIES];
    int64_t n = 0;
    const double start = now_seconds();
    double elapsed = 0;
    while (elapsed < seconds) {
        for (int r = 0; r < 1000; r++, n += COPIES) ppo_act(&p, p.env.obs, actions, logp);
        elapsed = now_seconds() - start;
    }
    ppo_free(&p);
    return (double)n / elapsed;
}

int main(int argc, char **argv) {
    const double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(seconds > 0)) {
        fprintf(stderr, "usage: bench_ppo [SECONDS_EACH] (a positive number)\n");
        return 1;
    }
    const double env = env_steps_per_s(seconds), act = act_per_s(seconds);
    printf("{\"impl\": \"c\", \"env_steps_per_s\": %.0f, \"act_obs_per_s\": %.0f}\n", env, act);
    return 0;
}
