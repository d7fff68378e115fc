#include "rl/exact_fp.h"

#include "rl/pendulum.h"

#include <math.h>

#include "rl/env.h"

static const double MAX_SPEED = 8, DT = 0.05, G = 10.0, M = 1.0, L = 1.0;
static const float MAX_TORQUE = 2.0f;

/* Gymnasium's angle_normalize: ((x + pi) mod 2 pi) - pi, with Python's (floored) mod */
static double angle_normalize(double x) {
    double y = x + M_PI, period = 2 * M_PI;
    double r = fmod(y, period);
    if (r != 0 && r < 0) r += period;
    return r - M_PI;
}

void pendulum_observe(const PendulumState *s, float obs[3]) {
    obs[0] = (float)cos(s->theta);
    obs[1] = (float)sin(s->theta);
    obs[2] = (float)s->theta_dot;
}

void pendulum_reset(PendulumState *s, Rng *rng, float obs[3]) {
    s->theta = rl_uniform(rng, -M_PI, M_PI);
    s->theta_dot = rl_uniform(rng, -1.0, 1.0);
    s->has_last = false;
    s->last_u = 0;
    pendulum_observe(s, obs);
}

double pendulum_step(PendulumState *s, float torque, float obs[3]) {
    float u = fminf(fmaxf(torque, -MAX_TORQUE), MAX_TORQUE);
    s->last_u = u;
    s->has_last = true;
    double th = s->theta, thdot = s->theta_dot, an = angle_normalize(th);
    float u2 = u * u;
    double costs = an * an + 0.1 * (thdot * thdot) + (double)(0.001f * u2);
    /* 3 / (m l^2) is a Python float: NumPy 2 multiplies it with the float32 torque in float32 */
    float torque_term = (float)(3.0 / (M * (L * L))) * u;
    double newthdot = thdot + (3 * G / (2 * L) * sin(th) + (double)torque_term) * DT;
    newthdot = fmin(fmax(newthdot, -MAX_SPEED), MAX_SPEED);
    s->theta = th + newthdot * DT;
    s->theta_dot = newthdot;
    pendulum_observe(s, obs);
    return -costs;
}

/* Gymnasium's picture: a red rod with round ends, a black axle, and an arrow whose size
 * shows the last torque (Gymnasium blits an image; here a drawn arc with a head). */
void pendulum_render(const PendulumState *s, Image *frame) {
    const int D = 500;
    const double scale = D / (2.2 * 2), rod_length = 1 * scale, rod_width = 0.2 * scale;
    const int offset = D / 2;
    const Rgb red = {204, 77, 77}, black = {0, 0, 0}, arrow = {40, 40, 40};
    image_fill(frame, (Rgb){255, 255, 255});
#define FLIP(y) ((float)(D - 1 - (y)))
    if (s->has_last && s->last_u != 0) {
        /* an arc of 3/4 turn around the axle, radius growing with |torque|; clockwise
         * (on screen) for negative torque, as Gymnasium's arrow */
        double radius = scale * fabs((double)s->last_u) / 4, dir = s->last_u > 0 ? 1.0 : -1.0;
        double a0 = M_PI / 2, a1 = a0 + dir * 1.5 * M_PI;
        const int segs = 24;
        double px = 0, py = 0;
        for (int k = 0; k <= segs; k++) {
            double a = a0 + (a1 - a0) * k / segs;
            double x = offset + radius * cos(a), y = offset + radius * sin(a);
            if (k) draw_line(frame, (float)px, FLIP(py), (float)x, FLIP(y), 3, arrow);
            px = x, py = y;
        }
        double tx = -sin(a1) * dir, ty = cos(a1) * dir, h = 0.25 * radius + 4; /* tangent */
        float head[6] = {(float)(px + tx * h), FLIP(py + ty * h),
                         (float)(px - tx * 0.3 * h + cos(a1) * h * 0.6), FLIP(py - ty * 0.3 * h + sin(a1) * h * 0.6),
                         (float)(px - tx * 0.3 * h - cos(a1) * h * 0.6), FLIP(py - ty * 0.3 * h - sin(a1) * h * 0.6)};
        draw_polygon(frame, head, 3, arrow);
    }
    double l = 0, r = rod_length, t = rod_width / 2, b = -rod_width / 2;
    const double corners[4][2] = {{l, b}, {l, t}, {r, t}, {r, b}};
    double angle = s->theta + M_PI / 2, c = cos(angle), sn = sin(angle);
    float quad[8];
    for (int k = 0; k < 4; k++) {
        quad[2 * k] = (float)(corners[k][0] * c - corners[k][1] * sn + offset);
        quad[2 * k + 1] = FLIP(corners[k][0] * sn + corners[k][1] * c + offset);
    }
    draw_polygon(frame, quad, 4, red);
    float end_radius = (float)(int)(rod_width / 2);
    draw_circle(frame, (float)offset, FLIP(offset), end_radius, red);
    int ex = (int)(rod_length * c + offset), ey = (int)(rod_length * sn + offset);
    draw_circle(frame, (float)ex, FLIP(ey), end_radius, red);
    draw_circle(frame, (float)offset, FLIP(offset), (float)(int)(0.05 * scale), black);
#undef FLIP
}

static void reset_fn(void *state, Rng *rng, float *obs) { pendulum_reset(state, rng, obs); }
static double step_fn(void *state, Rng *rng, const float *action, float *obs, bool *terminated) {
    (void)rng;
    *terminated = false;
    return pendulum_step(state, action[0], obs);
}
static void render_fn(const void *state, Image *frame) { pendulum_render(state, frame); }

static const float OBS_HIGH[3] = {1, 1, 8};
static const float OBS_LOW[3] = {-1, -1, -8};

const EnvSpec PENDULUM_SPEC = {
    .id = "Pendulum-v1",
    .name = "pendulum",
    .obs_dim = 3,
    .obs_low = OBS_LOW,
    .obs_high = OBS_HIGH,
    .action_kind = ACTION_CONTINUOUS,
    .num_actions = 0,
    .action_dim = 1,
    .action_low = -2.0f,
    .action_high = 2.0f,
    .max_episode_steps = 200,
    .reward_threshold = NAN,
    .render_width = 500,
    .render_height = 500,
    .render_fps = 30,
    .state_size = sizeof(PendulumState),
    .reset = reset_fn,
    .step = step_fn,
    .render = render_fn,
};
