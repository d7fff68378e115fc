#include "rl/exact_fp.h"

#include "rl/env.h"

#include <math.h>
#include <string.h>

#include "core/check.h"

static const EnvSpec *const ENVS[] = {
    &CARTPOLE_SPEC,
    &ACROBOT_SPEC,
    &PENDULUM_SPEC,
#ifdef HAVE_BOX2D
    &LUNAR_LANDER_SPEC,
#endif
};
enum { NUM_ENVS = sizeof ENVS / sizeof ENVS[0] };

const char *env_names(void) {
    static char names[256];
    if (!names[0]) {
        for (int i = 0; i < NUM_ENVS; i++) {
            if (i) strcat(names, ", ");
            strcat(names, ENVS[i]->name);
        }
    }
    return names;
}

const EnvSpec *env_find(const char *name) {
    CHECK(name != NULL, "env_find: no name given");
    for (int i = 0; i < NUM_ENVS; i++)
        if (strcmp(name, ENVS[i]->name) == 0 || strcmp(name, ENVS[i]->id) == 0) return ENVS[i];
#ifndef HAVE_BOX2D
    if (strcmp(name, "lunarlander") == 0 || strcmp(name, "LunarLander-v3") == 0)
        fatal("environment \"%s\" (LunarLander-v3) runs on Box2D, which this build did not find: "
              "sudo apt-get install libbox2d-dev (or sudo make deps), then make (make config "
              "shows what was found)",
              name);
#endif
    fatal("unknown environment \"%s\": choose one of %s", name, env_names());
}

double rl_uniform(Rng *rng, double lo, double hi) {
    /* NumPy's next_double: 27 + 26 bits of two 32-bit draws */
    uint32_t a = rng_u32(rng) >> 5, b = rng_u32(rng) >> 6;
    double u = ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
    return lo + (hi - lo) * u;
}

void env_check_action(const EnvSpec *spec, const float *action, int copy) {
    if (spec->action_kind == ACTION_DISCRETE) {
        float a = action[0];
        CHECK(a >= 0.0f && a < (float)spec->num_actions && a == floorf(a),
              "%s copy %d: action %g is not one of its actions 0..%d (a discrete action is "
              "its index as a float)",
              spec->id, copy, (double)a, spec->num_actions - 1);
    } else {
        for (int k = 0; k < spec->action_dim; k++)
            CHECK(!isnan(action[k]), "%s copy %d: action component %d is NaN", spec->id, copy, k);
    }
}

Env env_create(const EnvSpec *spec, uint64_t seed) {
    CHECK(spec != NULL, "env_create: no environment");
    Env env = {spec, xcalloc(1, spec->state_size), {0, 0}, 0};
    rng_seed(&env.rng, seed, RL_ENV_STREAM);
    if (spec->init) spec->init(env.state);
    return env;
}

void env_free(Env *env) {
    if (env->state && env->spec->destroy) env->spec->destroy(env->state);
    xfree(env->state);
    env->state = NULL;
}

void env_reset(Env *env, float *obs) {
    env->spec->reset(env->state, &env->rng, obs);
    env->steps = 0;
}

double env_step(Env *env, const float *action, float *obs, bool *terminated, bool *truncated) {
    env_check_action(env->spec, action, 0);
    double reward = env->spec->step(env->state, &env->rng, action, obs, terminated);
    env->steps++;
    *truncated = env->steps >= env->spec->max_episode_steps;
    return reward;
}

void env_render(const Env *env, Image *frame) {
    CHECK(frame->width == env->spec->render_width && frame->height == env->spec->render_height,
          "env_render: %s draws %d x %d frames, not %d x %d", env->spec->id,
          env->spec->render_width, env->spec->render_height, frame->width, frame->height);
    env->spec->render(env->state, frame);
}
