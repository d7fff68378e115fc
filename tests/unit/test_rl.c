/* Unit tests of lib/rl: the environments step by step against Gymnasium's formulas
 * (tests/reference/rl_reference.h, written by make_rl_reference.py), resets in range and
 * seeded as documented, termination and truncation at the right step, the vector's
 * auto-reset (final observation kept) and episode statistics, determinism, LunarLander's
 * rules (Box2D builds), the rasteriser and the frame renderers (pixels at known places),
 * GIF and PNG files read back (giflib, stb_image), and clear stops on bad arguments. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/rng.h"
#include "framework/check.h"
#include "reference/rl_reference.h"
#include "rl/acrobot.h"
#include "rl/cartpole.h"
#include "rl/env.h"
#include "rl/episode.h"
#include "rl/pendulum.h"
#include "rl/picture.h"
#include "rl/raster.h"
#include "rl/vec_env.h"
#ifdef HAVE_BOX2D
#include "rl/lunar_lander.h"
#endif
#ifdef HAVE_GIF
#include <gif_lib.h>
#endif
#ifdef HAVE_STB
/* A reader of our own for the PNG check (static: apart from lib/data's copy); the parts
 * of stb_image this file does not call are unused, which is fine here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb/stb_image.h>
#endif

/* ------------------------------------------------------------ helpers */

/* got[0..n) == want[0..n) exactly (the same arithmetic in C and in the generator). */
static bool same_doubles(const char *what, int step, const double *got, const double *want, int n) {
    for (int k = 0; k < n; k++)
        if (!(got[k] == want[k])) {
            printf("%s, step %d, component %d: got %.17g, want %.17g (differ by %.3g)\n", what, step, k, got[k],
                   want[k], got[k] - want[k]);
            return false;
        }
    return true;
}

static bool same_floats(const char *what, int step, const float *got, const float *want, int n) {
    for (int k = 0; k < n; k++)
        if (!(got[k] == want[k])) {
            printf("%s, step %d, observation %d: got %.9g, want %.9g\n", what, step, k, (double)got[k],
                   (double)want[k]);
            return false;
        }
    return true;
}

static bool same_step(const char *what, int step, double reward, double want_reward, bool term, int want_term) {
    return expect_true(reward == want_reward && term == (want_term != 0),
                       "%s, step %d: reward %.17g terminated %d, want %.17g and %d", what, step, reward, term,
                       want_reward, want_term);
}

/* ------------------------------------------------------------ dynamics vs the reference */

static bool cartpole_case(const char *what, const double *s0, const int *actions, int n, const double (*state)[4],
                          const float (*obs)[4], const double *reward, const int *terminated) {
    CartPoleState s = {s0[0], s0[1], s0[2], s0[3], -1};
    bool ok = true;
    for (int t = 0; ok && t < n; t++) {
        float o[4];
        bool term;
        double r = cartpole_step(&s, actions[t], o, &term);
        double got[4] = {s.x, s.x_dot, s.theta, s.theta_dot};
        ok = same_doubles(what, t + 1, got, state[t], 4) && same_floats(what, t + 1, o, obs[t], 4) &&
             same_step(what, t + 1, r, reward[t], term, terminated[t]);
    }
    return ok;
}

static int check_cartpole_reference(void) {
    bool ok = cartpole_case("CartPole mixed", CARTPOLE_MIXED_STATE0, CARTPOLE_MIXED_ACTIONS, CARTPOLE_MIXED_STEPS,
                            CARTPOLE_MIXED_STATE, CARTPOLE_MIXED_OBS, CARTPOLE_MIXED_REWARD,
                            CARTPOLE_MIXED_TERMINATED);
    ok = ok && cartpole_case("CartPole fall", CARTPOLE_FALL_STATE0, CARTPOLE_FALL_ACTIONS, CARTPOLE_FALL_STEPS,
                             CARTPOLE_FALL_STATE, CARTPOLE_FALL_OBS, CARTPOLE_FALL_REWARD, CARTPOLE_FALL_TERMINATED);
    ok = ok && cartpole_case("CartPole edge", CARTPOLE_EDGE_STATE0, CARTPOLE_EDGE_ACTIONS, CARTPOLE_EDGE_STEPS,
                             CARTPOLE_EDGE_STATE, CARTPOLE_EDGE_OBS, CARTPOLE_EDGE_REWARD, CARTPOLE_EDGE_TERMINATED);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* One Euler step worked out by hand: from rest, upright, pushed right. */
static int check_cartpole_by_hand(void) {
    CartPoleState s = {0, 0, 0, 0, -1};
    float o[4];
    bool term;
    double r = cartpole_step(&s, 1, o, &term);
    /* temp = 10 / 1.1; thetaacc = -temp / (0.5 (4/3 - 0.1 / 1.1)); xacc = temp - 0.05
     * thetaacc / 1.1. Euler: positions keep their old (zero) velocities. */
    double temp = 10.0 / 1.1, thetaacc = -temp / (0.5 * (4.0 / 3.0 - 0.1 / 1.1));
    double xacc = temp - 0.05 * thetaacc / 1.1;
    bool ok = expect_true(s.x == 0 && s.theta == 0, "positions moved in the first Euler step: %g %g", s.x, s.theta);
    ok = ok && expect_true(fabs(s.x_dot - 0.02 * xacc) < 1e-15 && fabs(s.theta_dot - 0.02 * thetaacc) < 1e-15,
                           "velocities %.17g %.17g, want %.17g %.17g", s.x_dot, s.theta_dot, 0.02 * xacc,
                           0.02 * thetaacc);
    ok = ok && expect_true(fabs(0.02 * xacc - 0.19512195121951223) < 1e-15, "x_dot %.17g", 0.02 * xacc);
    ok = ok && expect_true(r == 1.0 && !term, "reward %g terminated %d", r, term);
    /* 12 degrees: just inside goes on, just outside ends */
    CartPoleState in = {0, 0, 12 * M_PI / 180 - 1e-9, 0, -1}, out = {0, 0, 12 * M_PI / 180 - 1e-9, 1.0, -1};
    cartpole_step(&in, 0, o, &term);
    ok = ok && expect_true(!term, "terminated at %.12g rad (< 12 degrees)", in.theta);
    cartpole_step(&out, 0, o, &term);
    ok = ok && expect_true(term, "not terminated at %.12g rad (> 12 degrees)", out.theta);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static bool acrobot_case(const char *what, const double *s0, const int *actions, int n, const double (*state)[4],
                         const float (*obs)[6], const double *reward, const int *terminated) {
    AcrobotState s = {{s0[0], s0[1], s0[2], s0[3]}};
    bool ok = true;
    for (int t = 0; ok && t < n; t++) {
        float o[6];
        bool term;
        double r = acrobot_step(&s, actions[t], o, &term);
        ok = same_doubles(what, t + 1, s.s, state[t], 4) && same_floats(what, t + 1, o, obs[t], 6) &&
             same_step(what, t + 1, r, reward[t], term, terminated[t]);
    }
    return ok;
}

static int check_acrobot_reference(void) {
    bool ok = acrobot_case("Acrobot mixed", ACROBOT_MIXED_STATE0, ACROBOT_MIXED_ACTIONS, ACROBOT_MIXED_STEPS,
                           ACROBOT_MIXED_STATE, ACROBOT_MIXED_OBS, ACROBOT_MIXED_REWARD, ACROBOT_MIXED_TERMINATED);
    ok = ok && acrobot_case("Acrobot swing", ACROBOT_SWING_STATE0, ACROBOT_SWING_ACTIONS, ACROBOT_SWING_STEPS,
                            ACROBOT_SWING_STATE, ACROBOT_SWING_OBS, ACROBOT_SWING_REWARD, ACROBOT_SWING_TERMINATED);
    ok = ok && acrobot_case("Acrobot spin", ACROBOT_SPIN_STATE0, ACROBOT_SPIN_ACTIONS, ACROBOT_SPIN_STEPS,
                            ACROBOT_SPIN_STATE, ACROBOT_SPIN_OBS, ACROBOT_SPIN_REWARD, ACROBOT_SPIN_TERMINATED);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Hanging at rest without torque is an equilibrium: the state stays exactly zero. */
static int check_acrobot_by_hand(void) {
    AcrobotState s = {{0, 0, 0, 0}};
    float o[6];
    bool term;
    double r = acrobot_step(&s, 1, o, &term);
    bool ok = expect_true(fabs(s.s[0]) < 1e-15 && fabs(s.s[1]) < 1e-15 && fabs(s.s[2]) < 1e-15 && fabs(s.s[3]) < 1e-15,
                          "rest moved: %g %g %g %g", s.s[0], s.s[1], s.s[2], s.s[3]);
    ok = ok && expect_true(o[0] == 1.0f && o[2] == 1.0f && r == -1.0 && !term, "obs %g %g reward %g term %d",
                           (double)o[0], (double)o[2], r, term);
    /* torque +1 on the elbow at rest: the second link turns positive, the first negative */
    AcrobotState p = {{0, 0, 0, 0}};
    acrobot_step(&p, 2, o, &term);
    ok = ok && expect_true(p.s[3] > 0 && p.s[2] < 0, "torque +1: velocities %g %g", p.s[2], p.s[3]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static bool pendulum_case(const char *what, const double *s0, const float *torques, int n, const double (*state)[2],
                          const float (*obs)[3], const double *reward) {
    PendulumState s = {s0[0], s0[1], 0, false};
    bool ok = true;
    for (int t = 0; ok && t < n; t++) {
        float o[3];
        double r = pendulum_step(&s, torques[t], o);
        double got[2] = {s.theta, s.theta_dot};
        ok = same_doubles(what, t + 1, got, state[t], 2) && same_floats(what, t + 1, o, obs[t], 3) &&
             expect_true(r == reward[t], "%s, step %d: reward %.17g, want %.17g", what, t + 1, r, reward[t]);
    }
    return ok;
}

static int check_pendulum_reference(void) {
    bool ok = pendulum_case("Pendulum mixed", PENDULUM_MIXED_STATE0, PENDULUM_MIXED_ACTIONS, PENDULUM_MIXED_STEPS,
                            PENDULUM_MIXED_STATE, PENDULUM_MIXED_OBS, PENDULUM_MIXED_REWARD);
    ok = ok && pendulum_case("Pendulum fast", PENDULUM_FAST_STATE0, PENDULUM_FAST_ACTIONS, PENDULUM_FAST_STEPS,
                             PENDULUM_FAST_STATE, PENDULUM_FAST_OBS, PENDULUM_FAST_REWARD);
    ok = ok && pendulum_case("Pendulum wrap", PENDULUM_WRAP_STATE0, PENDULUM_WRAP_ACTIONS, PENDULUM_WRAP_STEPS,
                             PENDULUM_WRAP_STATE, PENDULUM_WRAP_OBS, PENDULUM_WRAP_REWARD);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Upright and still with no torque: reward 0, nothing moves. A turn later (2 pi): the
 * same reward, since the cost wraps the angle. */
static int check_pendulum_by_hand(void) {
    PendulumState s = {0, 0, 0, false};
    float o[3];
    double r = pendulum_step(&s, 0.0f, o);
    bool ok = expect_true(r == 0.0 && s.theta == 0 && s.theta_dot == 0, "upright: reward %g, state %g %g", r,
                          s.theta, s.theta_dot);
    PendulumState a = {0.5, 0.25, 0, false}, b = {0.5 + 2 * M_PI, 0.25, 0, false};
    double ra = pendulum_step(&a, 1.0f, o), rb = pendulum_step(&b, 1.0f, o);
    ok = ok && expect_true(fabs(ra - rb) < 1e-12, "a whole turn changed the reward: %.17g vs %.17g", ra, rb);
    /* -(0.5^2 + 0.1 * 0.25^2 + 0.001 * 1^2), the last term as float32 0.001f (NumPy 2) */
    ok = ok && expect_true(fabs(ra + (0.25 + 0.00625 + (double)0.001f)) < 1e-15, "reward %.17g", ra);
    /* a torque of 5 counts as 2 */
    PendulumState c = {0.5, 0.25, 0, false}, d = {0.5, 0.25, 0, false};
    double rc = pendulum_step(&c, 5.0f, o), rd = pendulum_step(&d, 2.0f, o);
    ok = ok && expect_true(rc == rd && c.theta_dot == d.theta_dot, "torque 5 is not clipped to 2");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ resets and seeding */

static int check_reset_reference(void) {
    VecEnv c = vec_env_create(&CARTPOLE_SPEC, 3, RL_REF_RESET_SEED);
    VecEnv a = vec_env_create(&ACROBOT_SPEC, 3, RL_REF_RESET_SEED);
    VecEnv p = vec_env_create(&PENDULUM_SPEC, 3, RL_REF_RESET_SEED);
    bool ok = true;
    for (int i = 0; ok && i < 3; i++) {
        const CartPoleState *cs = vec_env_state(&c, i);
        double cv[4] = {cs->x, cs->x_dot, cs->theta, cs->theta_dot};
        const AcrobotState *as = vec_env_state(&a, i);
        const PendulumState *ps = vec_env_state(&p, i);
        double pv[2] = {ps->theta, ps->theta_dot};
        ok = same_doubles("CartPole reset, copy i", i, cv, CARTPOLE_RESET[i], 4) &&
             same_doubles("Acrobot reset, copy i", i, as->s, ACROBOT_RESET[i], 4) &&
             same_doubles("Pendulum reset, copy i", i, pv, PENDULUM_RESET[i], 2);
        float want_obs[4] = {(float)cv[0], (float)cv[1], (float)cv[2], (float)cv[3]};
        ok = ok && same_floats("CartPole first observation", i, c.obs + 4 * i, want_obs, 4);
    }
#ifdef HAVE_BOX2D
    VecEnv l = vec_env_create(&LUNAR_LANDER_SPEC, 1, RL_REF_RESET_SEED);
    const LunarLanderState *ls = vec_env_state(&l, 0);
    ok = ok && same_doubles("LunarLander terrain", 0, ls->terrain_y, LUNAR_RESET_TERRAIN_Y, LANDER_TERRAIN_POINTS);
    vec_env_free(&l);
#endif
    vec_env_free(&c);
    vec_env_free(&a);
    vec_env_free(&p);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_resets_in_range(void) {
    Rng rng;
    rng_seed(&rng, 5, RL_ENV_STREAM);
    double lo[3][4], hi[3][4];
    for (int e = 0; e < 3; e++)
        for (int k = 0; k < 4; k++) lo[e][k] = INFINITY, hi[e][k] = -INFINITY;
    for (int n = 0; n < 3000; n++) {
        CartPoleState c;
        AcrobotState a;
        PendulumState p;
        float o[6];
        cartpole_reset(&c, &rng, o);
        acrobot_reset(&a, &rng, o);
        pendulum_reset(&p, &rng, o);
        double v[3][4] = {{c.x, c.x_dot, c.theta, c.theta_dot}, {a.s[0], a.s[1], a.s[2], a.s[3]},
                          {p.theta, p.theta_dot, 0, 0}};
        for (int e = 0; e < 3; e++)
            for (int k = 0; k < 4; k++) lo[e][k] = fmin(lo[e][k], v[e][k]), hi[e][k] = fmax(hi[e][k], v[e][k]);
    }
    /* inside the ranges, and spread over them (3000 draws reach within 1% of each end) */
    const double want[3][4] = {{0.05, 0.05, 0.05, 0.05}, {0.1, 0.1, 0.1, 0.1}, {M_PI, 1.0, 0, 0}};
    bool ok = true;
    for (int e = 0; ok && e < 3; e++)
        for (int k = 0; ok && k < 4; k++) {
            double w = want[e][k];
            if (w == 0) continue;
            ok = expect_true(lo[e][k] >= -w && hi[e][k] <= w && lo[e][k] < -0.99 * w && hi[e][k] > 0.99 * w,
                             "env %d component %d: resets in [%.6g, %.6g], want spread over [-%g, %g]", e, k,
                             lo[e][k], hi[e][k], w, w);
        }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ termination, truncation, auto-reset */

/* CartPole balanced by a simple rule lasts the whole 500 steps: truncated at step 500
 * (not terminated), never before; the next observation is the next episode's first, as
 * a single copy with the same seed resets to; the final observation is the 500th. */
static int check_truncation_and_autoreset(void) {
    VecEnv v = vec_env_create(&CARTPOLE_SPEC, 1, 77);
    Env e = env_create(&CARTPOLE_SPEC, 77);
    float eo[4], next_first[4];
    env_reset(&e, eo);
    bool ok = same_floats("copy 0 vs Env after reset", 0, v.obs, eo, 4);
    for (int t = 1; ok && t <= 500; t++) {
        float a = v.obs[2] + 0.5f * v.obs[3] > 0 ? 1.0f : 0.0f;
        vec_env_step(&v, &a);
        bool term, trunc;
        double r = env_step(&e, &a, eo, &term, &trunc);
        ok = expect_true(v.truncated[0] == (t == 500) && trunc == (t == 500) && !v.terminated[0] && !term,
                         "step %d: truncated %d (Env %d), terminated %d", t, v.truncated[0], trunc, v.terminated[0]);
        ok = ok && expect_true(v.rewards[0] == (float)r && r == 1.0, "step %d: reward %g vs Env %g", t,
                               (double)v.rewards[0], r);
        if (t < 500) ok = ok && same_floats("observation", t, v.obs, eo, 4);
    }
    if (ok) {
        ok = same_floats("final observation", 500, v.final_obs, eo, 4);
        env_reset(&e, next_first);
        ok = ok && same_floats("first observation after the auto-reset", 501, v.obs, next_first, 4);
        ok = ok && expect_true(v.episode_return[0] == 500.0 && v.episode_length[0] == 500 && v.stats.total == 1,
                               "episode return %g length %d, %lld episodes", v.episode_return[0],
                               v.episode_length[0], (long long)v.stats.total);
    }
    vec_env_free(&v);
    env_free(&e);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Pushing right: the pole falls in a few steps; terminated (not truncated) there, reward
 * 1 on that step, the vector resets the copy the same step. Acrobot without torque and
 * Pendulum run to their limits: 500 and 200. */
static int check_termination_and_limits(void) {
    VecEnv v = vec_env_create(&CARTPOLE_SPEC, 2, 3);
    float push[2] = {1, 1};
    int ended = 0;
    bool ok = true;
    for (int t = 1; ok && t <= 30 && !ended; t++) {
        vec_env_step(&v, push);
        for (int i = 0; i < 2; i++) {
            if (!v.terminated[i]) continue;
            ended = t;
            const float *f = v.final_obs + 4 * i;
            ok = expect_true(fabsf(f[2]) > (float)(12 * M_PI / 180) || fabsf(f[0]) > 2.4f,
                             "terminated with angle %g, position %g", (double)f[2], (double)f[0]);
            ok = ok && expect_true(!v.truncated[i] && v.rewards[i] == 1.0f && v.episode_length[i] == t &&
                                       v.episode_return[i] == t,
                                   "terminating step: truncated %d reward %g length %d return %g", v.truncated[i],
                                   (double)v.rewards[i], v.episode_length[i], v.episode_return[i]);
            ok = ok && expect_true(fabsf(v.obs[4 * i + 2]) <= 0.05f && fabsf(v.obs[4 * i]) <= 0.05f,
                                   "not reset: observation %g %g", (double)v.obs[4 * i], (double)v.obs[4 * i + 2]);
        }
    }
    ok = ok && expect_true(ended >= 5 && ended <= 20, "the pole fell at step %d (pushing right always)", ended);
    vec_env_free(&v);

    const EnvSpec *specs[2] = {&ACROBOT_SPEC, &PENDULUM_SPEC};
    const int limits[2] = {500, 200};
    for (int k = 0; ok && k < 2; k++) {
        VecEnv w = vec_env_create(specs[k], 1, 9);
        float a = k == 0 ? 1.0f : 0.0f; /* no torque */
        int t = 0;
        do {
            vec_env_step(&w, &a);
            t++;
        } while (!w.truncated[0] && !w.terminated[0] && t < 1000);
        ok = expect_true(t == limits[k] && w.truncated[0] && !w.terminated[0], "%s: ended at step %d (truncated %d), want %d",
                         specs[k]->id, t, w.truncated[0], limits[k]);
        double want_return = k == 0 ? -500.0 : NAN;
        if (k == 0) ok = ok && expect_true(w.episode_return[0] == want_return, "Acrobot return %g", w.episode_return[0]);
        vec_env_free(&w);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Statistics against sums kept here: every finished episode's return and length, in the
 * ring (which wraps after 100), the means of the last k, and the total count. */
static int check_episode_statistics(void) {
    const int n = 4, steps = 2500;
    VecEnv v = vec_env_create(&CARTPOLE_SPEC, n, 11);
    Rng rng;
    rng_seed(&rng, 1, 1);
    double ret[4] = {0}, done_ret[1000];
    int len[4] = {0}, done_len[1000], done = 0;
    float actions[4];
    bool ok = expect_true(isnan(episode_stats_mean_return(&v.stats, 20)), "a mean before any episode ended");
    for (int t = 0; ok && t < steps; t++) {
        for (int i = 0; i < n; i++) actions[i] = (float)rng_below(&rng, 2);
        vec_env_step(&v, actions);
        for (int i = 0; i < n; i++) {
            ret[i] += v.rewards[i];
            len[i]++;
            if (v.terminated[i] || v.truncated[i]) {
                ok = ok && expect_true(v.episode_return[i] == ret[i] && v.episode_length[i] == len[i],
                                       "copy %d: episode return %g length %d, counted %g %d", i, v.episode_return[i],
                                       v.episode_length[i], ret[i], len[i]);
                if (done < 1000) done_ret[done] = ret[i], done_len[done] = len[i];
                done++;
                ret[i] = 0, len[i] = 0;
            }
        }
    }
    ok = ok && expect_true(done > 150 && done < 1000 && v.stats.total == done && v.stats.count == 100,
                           "%d episodes counted here, %lld by the statistics (ring holds %d)", done,
                           (long long)v.stats.total, v.stats.count);
    ok = ok && expect_true(v.total_steps == (int64_t)n * steps, "total steps %lld", (long long)v.total_steps);
    const int ks[3] = {1, 20, 100};
    for (int j = 0; ok && j < 3; j++) {
        double sr = 0, sl = 0;
        for (int e = done - ks[j]; e < done; e++) sr += done_ret[e], sl += done_len[e];
        double mr = episode_stats_mean_return(&v.stats, ks[j]), ml = episode_stats_mean_length(&v.stats, ks[j]);
        ok = expect_true(fabs(mr - sr / ks[j]) < 1e-9 && fabs(ml - sl / ks[j]) < 1e-9,
                         "last %d: mean return %g length %g, want %g %g", ks[j], mr, ml, sr / ks[j], sl / ks[j]);
    }
    vec_env_free(&v);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ determinism */

static bool run_trace(const EnvSpec *spec, int n, uint64_t seed, int steps, float *trace) {
    VecEnv v = vec_env_create(spec, n, seed);
    Rng rng;
    rng_seed(&rng, 99, 3);
    float *a = calloc((size_t)n * spec->action_dim, sizeof(float));
    for (int t = 0; t < steps; t++) {
        for (int i = 0; i < n * spec->action_dim; i++)
            a[i] = spec->action_kind == ACTION_DISCRETE ? (float)rng_below(&rng, (uint32_t)spec->num_actions)
                                                        : rng_uniform_range(&rng, -2.5f, 2.5f);
        vec_env_step(&v, a);
        float *row = trace + (size_t)t * n * (spec->obs_dim + 1);
        memcpy(row, v.obs, (size_t)n * spec->obs_dim * sizeof(float));
        memcpy(row + (size_t)n * spec->obs_dim, v.rewards, (size_t)n * sizeof(float));
    }
    free(a);
    vec_env_free(&v);
    return true;
}

static int check_determinism(void) {
    const EnvSpec *specs[] = {&CARTPOLE_SPEC, &ACROBOT_SPEC, &PENDULUM_SPEC};
    const int n = 3, steps = 300;
    bool ok = true;
    for (int k = 0; ok && k < 3; k++) {
        size_t size = (size_t)steps * n * (specs[k]->obs_dim + 1);
        float *a = calloc(size, sizeof(float)), *b = calloc(size, sizeof(float)), *c = calloc(size, sizeof(float));
        run_trace(specs[k], n, 123, steps, a);
        run_trace(specs[k], n, 123, steps, b);
        run_trace(specs[k], n, 124, steps, c);
        ok = expect_true(memcmp(a, b, size * sizeof(float)) == 0, "%s: the same seed gave two trajectories", specs[k]->id);
        ok = ok && expect_true(memcmp(a, c, size * sizeof(float)) != 0, "%s: seeds 123 and 124 gave one trajectory",
                               specs[k]->id);
        /* the copies differ from each other (own streams) */
        ok = ok && expect_true(memcmp(a, a + specs[k]->obs_dim, (size_t)specs[k]->obs_dim * sizeof(float)) != 0,
                               "%s: copies 0 and 1 start alike", specs[k]->id);
        free(a), free(b), free(c);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ LunarLander (Box2D) */

#ifdef HAVE_BOX2D
/* Gymnasium's heuristic lander (lunar_lander.py, heuristic()), discrete actions. */
static void heuristic_policy(void *ctx, const float *s, float *action) {
    (void)ctx;
    double angle_targ = s[0] * 0.5 + s[2] * 1.0;
    if (angle_targ > 0.4) angle_targ = 0.4;
    if (angle_targ < -0.4) angle_targ = -0.4;
    double hover_targ = 0.55 * fabs((double)s[0]);
    double angle_todo = (angle_targ - s[4]) * 0.5 - s[5] * 1.0;
    double hover_todo = (hover_targ - s[1]) * 0.5 - s[3] * 0.5;
    if (s[6] != 0 || s[7] != 0) {
        angle_todo = 0;
        hover_todo = -s[3] * 0.5;
    }
    int a = 0;
    if (hover_todo > fabs(angle_todo) && hover_todo > 0.05)
        a = 2;
    else if (angle_todo < -0.05)
        a = 3;
    else if (angle_todo > +0.05)
        a = 1;
    action[0] = (float)a;
}

static void idle_policy(void *ctx, const float *s, float *action) {
    (void)ctx, (void)s;
    action[0] = 0;
}
#endif

/* The heuristic lands (Gymnasium's scores above 200 on most seeds): at rest, +100 at the
 * end; every other step's reward is the shaping difference minus fuel. */
static int check_lunar_lander_heuristic(void) {
#ifndef HAVE_BOX2D
    printf("built without Box2D (libbox2d-dev)\n");
    return CHECK_SKIP;
#else
    Env e = env_create(&LUNAR_LANDER_SPEC, 2024);
    bool ok = true;
    double total = 0;
    int landed = 0;
    for (int ep = 0; ok && ep < 5; ep++) {
        float o[8];
        env_reset(&e, o);
        ok = expect_true(o[6] == 0 && o[7] == 0 && o[1] > 1.2f && o[1] < 1.6f && fabsf(o[0]) < 0.05f,
                         "first observation: x %g y %g legs %g %g", (double)o[0], (double)o[1], (double)o[6],
                         (double)o[7]);
        const LunarLanderState *s = e.state;
        double prev = s->prev_shaping, ret = 0;
        for (int t = 0; ok; t++) {
            float a;
            heuristic_policy(NULL, o, &a);
            bool term, trunc;
            double r = env_step(&e, &a, o, &term, &trunc);
            ret += r;
            double fuel = a == 2 ? 0.3 : (a == 1 || a == 3) ? 0.03 : 0;
            if (!term)
                ok = expect_true(fabs(r - (s->prev_shaping - prev - fuel)) < 1e-12,
                                 "episode %d step %d: reward %.17g, shaping difference minus fuel %.17g", ep, t, r,
                                 s->prev_shaping - prev - fuel);
            double st[8];
            for (int k = 0; k < 8; k++) st[k] = o[k];
            ok = ok && expect_true(fabs(lunar_lander_shaping(st) - s->prev_shaping) < 1e-3,
                                   "shaping of the observation %.9g, kept %.9g", lunar_lander_shaping(st),
                                   s->prev_shaping);
            prev = s->prev_shaping;
            if (term || trunc) {
                if (term && r == 100.0) landed++;
                break;
            }
        }
        total += ret;
    }
    ok = ok && expect_true(landed >= 4 && total / 5 > 150, "the heuristic landed %d of 5 times, mean return %.1f",
                           landed, total / 5);
    env_free(&e);
    return ok ? CHECK_PASS : CHECK_FAIL;
#endif
}

/* With the engines off the lander falls onto the moon: a crash (-100) or, if it lands on
 * its legs and comes to rest, +100; either way within a few hundred steps, and the legs
 * touch first. Truncation is at 1000. */
static int check_lunar_lander_fall(void) {
#ifndef HAVE_BOX2D
    printf("built without Box2D (libbox2d-dev)\n");
    return CHECK_SKIP;
#else
    Episode ep = episode_play(&LUNAR_LANDER_SPEC, 7, idle_policy, NULL);
    bool ok = expect_true(ep.terminated && ep.length > 20 && ep.length < 400,
                          "falling: ended after %d steps (terminated %d)", ep.length, ep.terminated);
    ok = ok && expect_true(ep.ret < 0, "falling freely earned %g", ep.ret);
    ok = ok && expect_true(LUNAR_LANDER_SPEC.max_episode_steps == 1000 && LUNAR_LANDER_SPEC.num_actions == 4 &&
                               LUNAR_LANDER_SPEC.obs_dim == 8,
                           "LunarLander-v3's spaces or time limit");
    episode_free(&ep);
    /* the same seed and actions: the same episode (the pictures rely on it), on threads too */
    VecEnv a = vec_env_create(&LUNAR_LANDER_SPEC, 4, 5), b = vec_env_create(&LUNAR_LANDER_SPEC, 4, 5);
    float act[4] = {2, 1, 3, 0};
    for (int t = 0; ok && t < 150; t++) {
        vec_env_step(&a, act);
        vec_env_step(&b, act);
        ok = expect_true(memcmp(a.obs, b.obs, sizeof(float) * 32) == 0 && memcmp(a.rewards, b.rewards, 16) == 0,
                         "step %d: two runs with one seed differ", t);
    }
    vec_env_free(&a);
    vec_env_free(&b);
    return ok ? CHECK_PASS : CHECK_FAIL;
#endif
}

/* ------------------------------------------------------------ rasteriser and pictures */

static bool pixel_is(const Image *img, int x, int y, Rgb want, const char *what) {
    Rgb got = image_pixel(img, x, y);
    return expect_true(got.r == want.r && got.g == want.g && got.b == want.b,
                       "%s: pixel (%d, %d) is (%d, %d, %d), want (%d, %d, %d)", what, x, y, got.r, got.g, got.b,
                       want.r, want.g, want.b);
}

static int count_colour(const Image *img, Rgb c) {
    int n = 0;
    for (int i = 0; i < img->width * img->height; i++)
        n += img->pixels[3 * i] == c.r && img->pixels[3 * i + 1] == c.g && img->pixels[3 * i + 2] == c.b;
    return n;
}

static int check_raster(void) {
    Image img = image_create(10, 8);
    const Rgb red = {255, 0, 0}, blue = {0, 0, 255}, black = {0, 0, 0};
    /* a square from 1.5 to 4.5 covers the centres 2, 3, 4 in each direction: 9 pixels */
    float sq[8] = {1.5f, 1.5f, 4.5f, 1.5f, 4.5f, 4.5f, 1.5f, 4.5f};
    draw_polygon(&img, sq, 4, red);
    bool ok = expect_true(count_colour(&img, red) == 9, "square: %d pixels, want 9", count_colour(&img, red));
    ok = ok && pixel_is(&img, 2, 2, red, "square") && pixel_is(&img, 4, 4, red, "square") &&
         pixel_is(&img, 5, 4, black, "square") && pixel_is(&img, 1, 2, black, "square");
    /* two rectangles sharing the edge x = 6: 2 + 2 columns, none painted twice */
    image_fill(&img, black);
    float left[8] = {4, 0, 6, 0, 6, 8, 4, 8}, right[8] = {6, 0, 8, 0, 8, 8, 6, 8};
    draw_polygon(&img, left, 4, red);
    draw_polygon(&img, right, 4, blue);
    ok = ok && expect_true(count_colour(&img, red) == 16 && count_colour(&img, blue) == 16,
                           "shared edge: %d red, %d blue, want 16 each", count_colour(&img, red),
                           count_colour(&img, blue));
    /* a triangle, either winding: the same pixels */
    Image t1 = image_create(20, 20), t2 = image_create(20, 20);
    float tri[6] = {2, 3, 17, 8, 6, 16}, rev[6] = {6, 16, 17, 8, 2, 3};
    draw_polygon(&t1, tri, 3, red);
    draw_polygon(&t2, rev, 3, red);
    ok = ok && expect_true(memcmp(t1.pixels, t2.pixels, 20 * 20 * 3) == 0 && count_colour(&t1, red) > 40,
                           "a triangle's pixels depend on its winding (%d pixels)", count_colour(&t1, red));
    /* a circle of radius 2 at (10, 10): centres within 2: 13 pixels */
    image_fill(&t1, black);
    draw_circle(&t1, 10, 10, 2, blue);
    ok = ok && expect_true(count_colour(&t1, blue) == 13, "circle r=2: %d pixels, want 13", count_colour(&t1, blue));
    /* a horizontal line of width 1 at y = 5 from 0 to 19: row 5 only */
    image_fill(&t1, black);
    draw_line(&t1, 0, 5, 19, 5, 1, red);
    ok = ok && expect_true(count_colour(&t1, red) == 20, "line: %d pixels, want 20", count_colour(&t1, red));
    ok = ok && pixel_is(&t1, 0, 5, red, "line") && pixel_is(&t1, 19, 5, red, "line") &&
         pixel_is(&t1, 7, 4, black, "line") && pixel_is(&t1, 7, 6, black, "line");
    /* shapes partly or wholly outside are clipped, not written past the buffer */
    float big[8] = {-100, -50, 300, -40, 250, 400, -80, 300};
    draw_polygon(&t1, big, 4, blue);
    draw_circle(&t1, -30, 500, 1000, red);
    draw_line(&t1, -1e6f, -1e6f, 1e6f, 1e6f, 3, red);
    image_free(&t1);
    image_free(&t2);
    image_free(&img);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_renderers(void) {
    const Rgb white = {255, 255, 255}, black = {0, 0, 0};
    bool ok = true;
    /* CartPole at the centre, the pole tilted right by 0.2 rad */
    Image f = image_create(600, 400);
    CartPoleState c = {0, 0, 0.2, 0, -1};
    cartpole_render(&c, &f);
    /* gym's y up, flipped: the cart spans y 85..115 -> rows 284..314; the axle at y 107 ->
     * row 292; the track at y 100 -> row 299 */
    ok = pixel_is(&f, 300, 310, black, "cart") && pixel_is(&f, 276, 290, black, "cart's left end") &&
         pixel_is(&f, 10, 299, black, "track") && pixel_is(&f, 10, 100, white, "background");
    ok = ok && pixel_is(&f, 300, 292, (Rgb){129, 132, 203}, "axle");
    /* 100 px up the pole from the axle (107.5): x = 300 + 100 sin 0.2, y = 107.5 + 100 cos 0.2 */
    int px = (int)lround(300 + 100 * sin(0.2)), py = (int)lround(399 - (107.5 + 100 * cos(0.2)));
    ok = ok && pixel_is(&f, px, py, (Rgb){202, 152, 101}, "pole (tilted right)");
    ok = ok && pixel_is(&f, (int)lround(300 - 100 * sin(0.2)), py, white, "left of the pole");
    image_free(&f);

    /* Acrobot hanging down: both links below the pivot (250, 249), the target line 1 link up */
    Image g = image_create(500, 500);
    AcrobotState a = {{0, 0, 0, 0}};
    acrobot_render(&a, &g);
    double scale = 500 / 4.4;
    ok = ok && pixel_is(&g, 250, 249 + 60, (Rgb){0, 204, 204}, "first link") &&
         pixel_is(&g, 250, (int)lround(249 + 1.6 * scale), (Rgb){0, 204, 204}, "second link") &&
         pixel_is(&g, 250, 249, (Rgb){204, 204, 0}, "pivot") &&
         pixel_is(&g, 250, (int)lround(249 + scale), (Rgb){204, 204, 0}, "elbow") &&
         pixel_is(&g, 250, 249 - 60, white, "above the pivot") &&
         pixel_is(&g, 30, (int)floor(499 - (scale + 250) + 0.5), black, "target line");

    /* Pendulum upright (theta 0): the rod points up from the axle; a torque draws an arrow */
    PendulumState p = {0, 0, 0, false};
    pendulum_render(&p, &g);
    ok = ok && pixel_is(&g, 250, 249 - 80, (Rgb){204, 77, 77}, "rod") &&
         pixel_is(&g, 250, 249 + 80, white, "below the axle") && pixel_is(&g, 250, 249, black, "axle");
    int before = count_colour(&g, (Rgb){40, 40, 40});
    p.has_last = true, p.last_u = 2.0f;
    pendulum_render(&p, &g);
    ok = ok && expect_true(before == 0 && count_colour(&g, (Rgb){40, 40, 40}) > 100, "torque arrow: %d pixels, %d before",
                           count_colour(&g, (Rgb){40, 40, 40}), before);
    image_free(&g);

#ifdef HAVE_BOX2D
    Env e = env_create(&LUNAR_LANDER_SPEC, 3);
    float o[8], idle = 0;
    bool term, trunc;
    env_reset(&e, o);
    for (int t = 0; t < 40; t++) env_step(&e, &idle, o, &term, &trunc); /* into the picture */
    Image l = image_create(600, 400);
    env_render(&e, &l);
    const LunarLanderState *s = e.state;
    LanderBodyState b = lander_world_read(s->world);
    ok = ok && pixel_is(&l, 3, 3, black, "sky") && pixel_is(&l, 3, 396, white, "moon") &&
         pixel_is(&l, (int)lround(b.x * 30), (int)lround(399 - b.y * 30), (Rgb){128, 102, 230}, "lander") &&
         pixel_is(&l, (int)lround(s->helipad_x1 * 30 + 5), (int)lround(399 - (s->helipad_y * 30 + 45)),
                  (Rgb){204, 204, 0}, "left flag") &&
         pixel_is(&l, (int)lround(s->helipad_x2 * 30), (int)lround(399 - (s->helipad_y * 30 + 20)), white,
                  "right pole");
    image_free(&l);
    env_free(&e);
#endif
    return ok ? CHECK_PASS : CHECK_FAIL;
}

#if defined(HAVE_GIF) || defined(HAVE_STB)
static void push_right(void *ctx, const float *obs, float *action) {
    (void)ctx, (void)obs;
    action[0] = 1;
}

/* Renders frame `step` of an episode directly (reset, then the recorded actions). */
static Image render_step(const Episode *ep, int step) {
    Env e = env_create(ep->spec, ep->seed);
    float o[8];
    bool term, trunc;
    env_reset(&e, o);
    for (int t = 0; t < step; t++) env_step(&e, ep->actions + t, o, &term, &trunc);
    Image img = image_create(ep->spec->render_width, ep->spec->render_height);
    env_render(&e, &img);
    env_free(&e);
    return img;
}
#endif

static int body_gif(const char *dir) {
#ifndef HAVE_GIF
    (void)dir;
    printf("built without giflib (libgif-dev)\n");
    return CHECK_SKIP;
#else
    char path[512];
    path_in(path, sizeof path, dir, "cartpole.gif");
    Episode ep = episode_play(&CARTPOLE_SPEC, 4, push_right, NULL);
    episode_write_gif(&ep, path, 1);
    int err = 0;
    GifFileType *gif = DGifOpenFileName(path, &err);
    bool ok = expect_true(gif != NULL, "giflib cannot open %s: %s", path, GifErrorString(err));
    ok = ok && expect_true(DGifSlurp(gif) == GIF_OK, "giflib cannot read %s", path);
    ok = ok && expect_true(gif->SWidth == 600 && gif->SHeight == 400 && gif->ImageCount == ep.length + 1,
                           "GIF %d x %d with %d frames, want 600 x 400 and %d", gif->SWidth, gif->SHeight,
                           gif->ImageCount, ep.length + 1);
    /* the first and the last frame decode to the rendered pictures, pixel for pixel */
    const int frames[2] = {0, ep.length};
    for (int k = 0; ok && k < 2; k++) {
        SavedImage *si = &gif->SavedImages[frames[k]];
        ColorMapObject *map = si->ImageDesc.ColorMap ? si->ImageDesc.ColorMap : gif->SColorMap;
        Image want = render_step(&ep, frames[k]);
        for (int i = 0; ok && i < 600 * 400; i++) {
            GifColorType c = map->Colors[si->RasterBits[i]];
            ok = expect_true(c.Red == want.pixels[3 * i] && c.Green == want.pixels[3 * i + 1] &&
                                 c.Blue == want.pixels[3 * i + 2],
                             "frame %d pixel (%d, %d): (%d, %d, %d), rendered (%d, %d, %d)", frames[k], i % 600,
                             i / 600, c.Red, c.Green, c.Blue, want.pixels[3 * i], want.pixels[3 * i + 1],
                             want.pixels[3 * i + 2]);
        }
        GraphicsControlBlock gcb;
        ok = ok && expect_true(DGifSavedExtensionToGCB(gif, frames[k], &gcb) == GIF_OK && gcb.DelayTime == 2,
                               "frame %d: delay %d cs, want 2 (50 fps)", frames[k], gcb.DelayTime);
        image_free(&want);
    }
    if (gif) DGifCloseFile(gif, &err);
    episode_free(&ep);
    return ok ? CHECK_PASS : CHECK_FAIL;
#endif
}
static int check_gif(void) { return with_tmpdir("test_rl", body_gif); }

static int body_png(const char *dir) {
#ifndef HAVE_STB
    (void)dir;
    printf("built without stb (libstb-dev)\n");
    return CHECK_SKIP;
#else
    char path[512];
    path_in(path, sizeof path, dir, "strip.png");
    Episode ep = episode_play(&CARTPOLE_SPEC, 4, push_right, NULL);
    episode_write_png_strip(&ep, path, 4, 2);
    int w = 0, h = 0, comp = 0;
    unsigned char *px = stbi_load(path, &w, &h, &comp, 3);
    bool ok = expect_true(px != NULL, "stb_image cannot read %s: %s", path, stbi_failure_reason());
    ok = ok && expect_true(w == 4 * 300 + 3 * 4 && h == 200, "strip %d x %d, want 1212 x 200", w, h);
    /* panel k shows step round(k * length / 3), shrunk by 2 */
    for (int k = 0; ok && k < 4; k++) {
        int step = (int)lround(k * (double)ep.length / 3);
        Image full = render_step(&ep, step), small = image_downscale(&full, 2);
        for (int y = 0; ok && y < 200; y++)
            ok = expect_true(memcmp(px + ((size_t)y * w + k * 304) * 3, small.pixels + (size_t)y * 300 * 3, 300 * 3) == 0,
                             "panel %d (step %d), row %d differs from the rendered frame", k, step, y);
        image_free(&full);
        image_free(&small);
    }
    ok = ok && expect_true(px[300 * 3] == 128 && px[300 * 3 + 1] == 128, "no grey gap after the first panel");
    stbi_image_free(px);
    episode_free(&ep);
    return ok ? CHECK_PASS : CHECK_FAIL;
#endif
}
static int check_png(void) { return with_tmpdir("test_rl", body_png); }

/* Issue 30, fault 8: a GIF and a PNG a participant shares are readable by others: mode
 * 0666 less the umask (0644 under 022), as giflib's own open (0600) did not make them.
 * Fault 2: a link planted at their name stops the program; its target keeps its bytes. */
static void write_picture(const char *path) {
    Image img = image_create(4, 4);
    size_t n = strlen(path);
    if (n > 4 && strcmp(path + n - 4, ".gif") == 0) {
        GifWriter *g = gif_open(path, 4, 4, 2);
        gif_add_frame(g, &img);
        gif_close(g);
    } else {
        png_write(path, &img);
    }
    image_free(&img);
}
static void body_picture_child(void *arg) { write_picture((const char *)arg); }

static int body_picture_files(const char *dir) {
    const char *names[2] = {"episode.gif", "strip.png"};
    const bool have[2] = {picture_have_gif(), picture_have_png()};
    bool ok = true;
    for (int k = 0; ok && k < 2; k++) {
        if (!have[k]) {
            printf("    %s: this build cannot write it (skipped)\n", names[k]);
            continue;
        }
        char path[512], link[600], target[512];
        path_in(path, sizeof path, dir, names[k]);
        mode_t old = umask(022);
        write_picture(path);
        umask(old);
        struct stat st;
        ok = expect_true(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644, "%s has mode %04o, want "
                         "0644 (0666 less the umask 022)", names[k], (unsigned)(st.st_mode & 07777));
        path_in(target, sizeof target, dir, "precious.txt");
        FILE *f = fopen(target, "w");
        ok = ok && expect_true(f && fputs("precious", f) >= 0 && fclose(f) == 0, "cannot write %s", target);
        snprintf(link, sizeof link, "%s/link-%s", dir, names[k]);
        ok = ok && expect_true(symlink(target, link) == 0, "symlink: %s", strerror(errno));
        ChildResult r;
        run_child(body_picture_child, link, &r);
        ok = ok && expect_exit("a picture at a planted link", &r, 1, link, "symbolic link", (const char *)NULL);
        ok = ok && expect_true(stat(target, &st) == 0 && st.st_size == 8, "the link's target was "
                               "overwritten (%lld bytes)", (long long)st.st_size);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_picture_files(void) { return with_tmpdir("test_rl", body_picture_files); }

/* ------------------------------------------------------------ bad arguments */

static void body_unknown_env(void *arg) {
    (void)arg;
    env_find("cartpol");
}
static void body_zero_envs(void *arg) {
    (void)arg;
    vec_env_create(&CARTPOLE_SPEC, 0, 1);
}
static void body_bad_action(void *arg) {
    VecEnv v = vec_env_create(&CARTPOLE_SPEC, 2, 1);
    float a[2] = {0, *(const float *)arg};
    vec_env_step(&v, a);
}
static void body_nan_torque(void *arg) {
    (void)arg;
    Env e = env_create(&PENDULUM_SPEC, 1);
    float o[3], a = NAN;
    bool t, u;
    env_reset(&e, o);
    env_step(&e, &a, o, &t, &u);
}
static void body_gif_nowhere(void *arg) {
    (void)arg;
    GifWriter *g = gif_open("/nonexistent-dir/x.gif", 10, 10, 2);
    (void)g;
}
static void body_png_nowhere(void *arg) {
    (void)arg;
    Image img = image_create(4, 4);
    png_write("/nonexistent-dir/x.png", &img);
}
static void body_lunar(void *arg) {
    (void)arg;
    const EnvSpec *s = env_find("lunarlander");
    printf("found %s\n", s->id);
}

static int check_bad_arguments(void) {
    ChildResult r;
    run_child(body_unknown_env, NULL, &r);
    bool ok = expect_exit("unknown environment", &r, 1, "cartpol", "cartpole, acrobot, pendulum", (const char *)NULL);
    run_child(body_zero_envs, NULL, &r);
    ok = ok && expect_exit("0 copies", &r, 1, "0 environment copies", "--num-envs", (const char *)NULL);
    float two = 2, half = 0.5f;
    run_child(body_bad_action, &two, &r);
    ok = ok && expect_exit("action 2 for CartPole", &r, 2, "CartPole-v1 copy 1", "action 2", "0..1", (const char *)NULL);
    run_child(body_bad_action, &half, &r);
    ok = ok && expect_exit("action 0.5 for CartPole", &r, 2, "action 0.5", (const char *)NULL);
    run_child(body_nan_torque, NULL, &r);
    ok = ok && expect_exit("NaN torque", &r, 2, "Pendulum-v1", "NaN", (const char *)NULL);
    run_child(body_gif_nowhere, NULL, &r);
    ok = ok && expect_exit("GIF in a missing directory", &r, 1, "/nonexistent-dir/x.gif",
                           picture_have_gif() ? "cannot write the GIF" : "libgif-dev", (const char *)NULL);
    run_child(body_png_nowhere, NULL, &r);
    ok = ok && expect_exit("PNG in a missing directory", &r, 1, "/nonexistent-dir/x.png",
                           picture_have_png() ? "cannot write the PNG" : "libstb-dev", (const char *)NULL);
    run_child(body_lunar, NULL, &r);
#ifdef HAVE_BOX2D
    ok = ok && expect_exit("lunarlander with Box2D", &r, 0, "found LunarLander-v3", (const char *)NULL);
#else
    ok = ok && expect_exit("lunarlander without Box2D", &r, 1, "libbox2d-dev", (const char *)NULL);
#endif
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("lib/rl");
    check_run(NULL, "CartPole-v1 transitions match Gymnasium's formulas (reference file)", check_cartpole_reference, 20);
    check_run(NULL, "CartPole-v1: one Euler step and the 12-degree rule by hand", check_cartpole_by_hand, 20);
    check_run(NULL, "Acrobot-v1 transitions (RK4) match Gymnasium's formulas", check_acrobot_reference, 20);
    check_run(NULL, "Acrobot-v1: rest is an equilibrium; torque turns the links apart", check_acrobot_by_hand, 20);
    check_run(NULL, "Pendulum-v1 transitions match Gymnasium's formulas (NumPy 2 float32 torque)",
              check_pendulum_reference, 20);
    check_run(NULL, "Pendulum-v1: reward by hand, angle wrapped, torque clipped", check_pendulum_by_hand, 20);
    check_run(NULL, "resets: the first states of seeded copies, drawn as documented", check_reset_reference, 20);
    check_run(NULL, "resets lie in Gymnasium's ranges and spread over them", check_resets_in_range, 20);
    check_run(NULL, "truncation at 500, auto-reset, final observation (CartPole)", check_truncation_and_autoreset, 20);
    check_run(NULL, "termination when the pole falls; Acrobot 500 and Pendulum 200 steps", check_termination_and_limits,
              20);
    check_run(NULL, "episode statistics: returns, lengths, ring of 100, means", check_episode_statistics, 20);
    check_run(NULL, "the same seed gives the same trajectories, another seed others", check_determinism, 20);
    check_run(NULL, "LunarLander-v3: Gymnasium's heuristic lands; reward is shaping minus fuel",
              check_lunar_lander_heuristic, 60);
    check_run(NULL, "LunarLander-v3: falling ends the episode; deterministic", check_lunar_lander_fall, 60);
    check_run(NULL, "rasteriser: polygons, lines, circles cover the right pixels", check_raster, 20);
    check_run(NULL, "frame renderers draw each part at its place", check_renderers, 20);
    check_run(NULL, "an episode's GIF reads back with giflib, frame for frame", check_gif, 60);
    check_run(NULL, "an episode's PNG strip reads back with stb_image", check_png, 60);
    check_run(NULL, "GIF and PNG files are 0644 under umask 022; a planted link is not written through",
              check_picture_files, 20);
    check_run(NULL, "bad names, counts, actions and paths stop with a clear message", check_bad_arguments, 20);
    return check_end();
}
