#include "rl/exact_fp.h"

#include "rl/acrobot.h"

#include <math.h>

#include "rl/env.h"

/* Gymnasium's constants (links of mass 1 and length 1, centres of mass half-way,
 * moments of inertia 1). Written out as Gymnasium writes them: the compiler folds only
 * exact constants, so every rounding happens where Python's happens. */
static const double M1 = 1.0, M2 = 1.0, L1 = 1.0, LC1 = 0.5, LC2 = 0.5, I1 = 1.0, I2 = 1.0;
static const double G = 9.8, DT = 0.2;
#define MAX_VEL_1 (4 * M_PI)
#define MAX_VEL_2 (9 * M_PI)

/* ds/dt of y = (theta1, theta2, dtheta1, dtheta2) under torque a (the book's equations). */
static void dsdt(const double y[4], double a, double out[4]) {
    double theta1 = y[0], theta2 = y[1], dtheta1 = y[2], dtheta2 = y[3];
    double d1 = M1 * (LC1 * LC1) + M2 * ((L1 * L1) + (LC2 * LC2) + 2 * L1 * LC2 * cos(theta2)) + I1 + I2;
    double d2 = M2 * ((LC2 * LC2) + L1 * LC2 * cos(theta2)) + I2;
    double phi2 = M2 * LC2 * G * cos(theta1 + theta2 - M_PI / 2.0);
    double phi1 = -M2 * L1 * LC2 * (dtheta2 * dtheta2) * sin(theta2) -
                  2 * M2 * L1 * LC2 * dtheta2 * dtheta1 * sin(theta2) +
                  (M1 * LC1 + M2 * L1) * G * cos(theta1 - M_PI / 2) + phi2;
    double ddtheta2 = (a + d2 / d1 * phi1 - M2 * L1 * LC2 * (dtheta1 * dtheta1) * sin(theta2) - phi2) /
                      (M2 * (LC2 * LC2) + I2 - (d2 * d2) / d1);
    double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    out[0] = dtheta1;
    out[1] = dtheta2;
    out[2] = ddtheta1;
    out[3] = ddtheta2;
}

/* Gymnasium's wrap: into [m, M] by whole turns. */
static double wrap(double x, double m, double M) {
    double diff = M - m;
    while (x > M) x = x - diff;
    while (x < m) x = x + diff;
    return x;
}

static double bound(double x, double m, double M) { return fmin(fmax(x, m), M); }

void acrobot_observe(const AcrobotState *st, float obs[6]) {
    const double *s = st->s;
    obs[0] = (float)cos(s[0]);
    obs[1] = (float)sin(s[0]);
    obs[2] = (float)cos(s[1]);
    obs[3] = (float)sin(s[1]);
    obs[4] = (float)s[2];
    obs[5] = (float)s[3];
}

void acrobot_reset(AcrobotState *st, Rng *rng, float obs[6]) {
    /* Gymnasium keeps the reset state as float32 (and computes this first observation's
     * cosines in float32, which may differ in the last bit from these) */
    for (int k = 0; k < 4; k++) st->s[k] = (double)(float)rl_uniform(rng, -0.1, 0.1);
    acrobot_observe(st, obs);
}

double acrobot_step(AcrobotState *st, int action, float obs[6], bool *terminated) {
    static const double TORQUE[3] = {-1.0, 0.0, 1.0};
    double a = TORQUE[action];
    double y0[4], y[4], k1[4], k2[4], k3[4], k4[4];
    const double dt = DT - 0.0, dt2 = dt / 2.0; /* Gymnasium: t = [0, dt] */
    for (int j = 0; j < 4; j++) y0[j] = st->s[j];
    dsdt(y0, a, k1);
    for (int j = 0; j < 4; j++) y[j] = y0[j] + dt2 * k1[j];
    dsdt(y, a, k2);
    for (int j = 0; j < 4; j++) y[j] = y0[j] + dt2 * k2[j];
    dsdt(y, a, k3);
    for (int j = 0; j < 4; j++) y[j] = y0[j] + dt * k3[j];
    dsdt(y, a, k4);
    for (int j = 0; j < 4; j++) y[j] = y0[j] + dt / 6.0 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);

    st->s[0] = wrap(y[0], -M_PI, M_PI);
    st->s[1] = wrap(y[1], -M_PI, M_PI);
    st->s[2] = bound(y[2], -MAX_VEL_1, MAX_VEL_1);
    st->s[3] = bound(y[3], -MAX_VEL_2, MAX_VEL_2);
    *terminated = -cos(st->s[0]) - cos(st->s[1] + st->s[0]) > 1.0;
    acrobot_observe(st, obs);
    return *terminated ? 0.0 : -1.0;
}

/* Gymnasium's picture: two cyan links, yellow joints, the black target line. */
void acrobot_render(const AcrobotState *st, Image *frame) {
    const int D = 500;
    const double *s = st->s;
    const double bound_ = L1 + 1.0 + 0.2, scale = D / (bound_ * 2), offset = D / 2.0;
    const Rgb black = {0, 0, 0}, link = {0, 204, 204}, joint = {204, 204, 0};
    image_fill(frame, (Rgb){255, 255, 255});
#define FLIP(y) ((float)(D - 1 - (y)))
    draw_line(frame, (float)(-2.2 * scale + offset), FLIP(1 * scale + offset),
              (float)(2.2 * scale + offset), FLIP(1 * scale + offset), 1, black);
    /* the pivot and the elbow, (x, y) swapped as Gymnasium does */
    double p1x = L1 * sin(s[0]) * scale, p1y = -L1 * cos(s[0]) * scale;
    const double xs[2] = {0.0, p1x}, ys[2] = {0.0, p1y};
    const double thetas[2] = {s[0] - M_PI / 2, s[0] + s[1] - M_PI / 2};
    for (int i = 0; i < 2; i++) {
        double x = xs[i] + offset, y = ys[i] + offset, llen = 1.0 * scale;
        double l = 0, r = llen, t = 0.1 * scale, b = -0.1 * scale;
        const double corners[4][2] = {{l, b}, {l, t}, {r, t}, {r, b}};
        double c = cos(thetas[i]), sn = sin(thetas[i]);
        float quad[8];
        for (int k = 0; k < 4; k++) {
            quad[2 * k] = (float)(corners[k][0] * c - corners[k][1] * sn + x);
            quad[2 * k + 1] = FLIP(corners[k][0] * sn + corners[k][1] * c + y);
        }
        draw_polygon(frame, quad, 4, link);
        draw_circle(frame, (float)(int)x, FLIP((int)y), (float)(int)(0.1 * scale), joint);
    }
#undef FLIP
}

static void reset_fn(void *state, Rng *rng, float *obs) { acrobot_reset(state, rng, obs); }
static double step_fn(void *state, Rng *rng, const float *action, float *obs, bool *terminated) {
    (void)rng;
    return acrobot_step(state, (int)action[0], obs, terminated);
}
static void render_fn(const void *state, Image *frame) { acrobot_render(state, frame); }

static const float OBS_HIGH[6] = {1, 1, 1, 1, (float)MAX_VEL_1, (float)MAX_VEL_2};
static const float OBS_LOW[6] = {-1, -1, -1, -1, -(float)MAX_VEL_1, -(float)MAX_VEL_2};

const EnvSpec ACROBOT_SPEC = {
    .id = "Acrobot-v1",
    .name = "acrobot",
    .obs_dim = 6,
    .obs_low = OBS_LOW,
    .obs_high = OBS_HIGH,
    .action_kind = ACTION_DISCRETE,
    .num_actions = 3,
    .action_dim = 1,
    .max_episode_steps = 500,
    .reward_threshold = -100.0,
    .render_width = 500,
    .render_height = 500,
    .render_fps = 15,
    .state_size = sizeof(AcrobotState),
    .reset = reset_fn,
    .step = step_fn,
    .render = render_fn,
};
