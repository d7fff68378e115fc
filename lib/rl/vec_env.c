#include "rl/vec_env.h"

#include <math.h>
#include <string.h>

#include "core/check.h"

static double stats_mean(const EpisodeStats *s, int k, bool lengths) {
    CHECK(k >= 1 && k <= s->capacity, "episode_stats: the last %d episodes asked, the ring holds %d", k,
          s->capacity);
    if (s->count == 0) return NAN;
    if (k > s->count) k = s->count;
    double sum = 0;
    for (int j = 1; j <= k; j++) {
        int at = (s->next - j + s->capacity) % s->capacity;
        sum += lengths ? (double)s->lengths[at] : s->returns[at];
    }
    return sum / k;
}

double episode_stats_mean_return(const EpisodeStats *stats, int k) { return stats_mean(stats, k, false); }
double episode_stats_mean_length(const EpisodeStats *stats, int k) { return stats_mean(stats, k, true); }

static void stats_add(EpisodeStats *s, double ret, int length) {
    s->returns[s->next] = ret;
    s->lengths[s->next] = length;
    s->next = (s->next + 1) % s->capacity;
    if (s->count < s->capacity) s->count++;
    s->total++;
}

void *vec_env_state(const VecEnv *v, int i) {
    CHECK(i >= 0 && i < v->num_envs, "vec_env_state: copy %d of %d", i, v->num_envs);
    return v->states + (size_t)i * v->state_stride;
}

VecEnv vec_env_create(const EnvSpec *spec, int num_envs, uint64_t seed) {
    CHECK(spec != NULL, "vec_env_create: no environment");
    if (num_envs < 1 || num_envs > VEC_ENV_MAX)
        fatal("%s: %d environment copies asked: give 1 to %d (--num-envs)", spec->id, num_envs, VEC_ENV_MAX);
    VecEnv v = {0};
    int n = num_envs, d = spec->obs_dim;
    v.spec = spec;
    v.num_envs = n;
    v.obs = xcalloc((size_t)n * d, sizeof(float));
    v.final_obs = xcalloc((size_t)n * d, sizeof(float));
    v.rewards = xcalloc((size_t)n, sizeof(float));
    v.terminated = xcalloc((size_t)n, sizeof(bool));
    v.truncated = xcalloc((size_t)n, sizeof(bool));
    v.episode_return = xcalloc((size_t)n, sizeof(double));
    v.episode_length = xcalloc((size_t)n, sizeof(int));
    v.stats.capacity = EPISODE_STATS_CAPACITY;
    v.stats.returns = xcalloc(EPISODE_STATS_CAPACITY, sizeof(double));
    v.stats.lengths = xcalloc(EPISODE_STATS_CAPACITY, sizeof(int));
    v.state_stride = (spec->state_size + 63) / 64 * 64; /* a cache line each: no false sharing */
    v.states = xcalloc((size_t)n, v.state_stride);
    v.rngs = xcalloc((size_t)n, sizeof(Rng));
    v.lengths = xcalloc((size_t)n, sizeof(int));
    v.returns = xcalloc((size_t)n, sizeof(double));
    for (int i = 0; i < n; i++) {
        void *state = vec_env_state(&v, i);
        rng_seed(&v.rngs[i], seed, RL_ENV_STREAM + (uint64_t)i);
        if (spec->init) spec->init(state);
        spec->reset(state, &v.rngs[i], v.obs + (size_t)i * d);
    }
    return v;
}

void vec_env_free(VecEnv *v) {
    if (v->states && v->spec->destroy)
        for (int i = 0; i < v->num_envs; i++) v->spec->destroy(vec_env_state(v, i));
    void *bufs[] = {v->obs,         v->final_obs, v->rewards, v->terminated, v->truncated,
                    v->episode_return, v->episode_length, v->stats.returns, v->stats.lengths,
                    v->states,      v->rngs,      v->lengths, v->returns};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++) xfree(bufs[k]);
    memset(v, 0, sizeof *v);
}

/* Copy i's step, auto-reset included; touches only copy i's data. */
static void step_copy(VecEnv *v, int i, const float *action) {
    const EnvSpec *spec = v->spec;
    int d = spec->obs_dim;
    void *state = v->states + (size_t)i * v->state_stride;
    float *obs = v->obs + (size_t)i * d;
    bool terminated = false;
    double r = spec->step(state, &v->rngs[i], action, obs, &terminated);
    v->lengths[i]++;
    v->returns[i] += r;
    bool truncated = v->lengths[i] >= spec->max_episode_steps;
    v->rewards[i] = (float)r;
    v->terminated[i] = terminated;
    v->truncated[i] = truncated;
    if (terminated || truncated) {
        memcpy(v->final_obs + (size_t)i * d, obs, (size_t)d * sizeof(float));
        v->episode_return[i] = v->returns[i];
        v->episode_length[i] = v->lengths[i];
        v->returns[i] = 0;
        v->lengths[i] = 0;
        spec->reset(state, &v->rngs[i], obs);
    }
}

void vec_env_step(VecEnv *v, const float *actions) {
    const EnvSpec *spec = v->spec;
    const int n = v->num_envs, a = spec->action_dim;
    for (int i = 0; i < n; i++) env_check_action(spec, actions + (size_t)i * a, i);
    if (spec->heavy && n > 1) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++) step_copy(v, i, actions + (size_t)i * a);
    } else { /* no parallel region at all: it would cost more than a CartPole step */
        for (int i = 0; i < n; i++) step_copy(v, i, actions + (size_t)i * a);
    }
    /* statistics in copy order, whatever the threads did */
    for (int i = 0; i < n; i++)
        if (v->terminated[i] || v->truncated[i]) stats_add(&v->stats, v->episode_return[i], v->episode_length[i]);
    v->total_steps += n;
}
