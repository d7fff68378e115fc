#include "rl/exact_fp.h"

#include "rl/cartpole.h"

#include <math.h>

#include "rl/env.h"

/* Gymnasium's constants, computed as it does (each product rounded in double). */
static const double GRAVITY = 9.8, MASS_CART = 1.0, MASS_POLE = 0.1, HALF_LENGTH = 0.5;
static const double FORCE_MAG = 10.0, TAU = 0.02, X_THRESHOLD = 2.4;
#define THETA_THRESHOLD (12 * 2 * M_PI / 360)

void cartpole_observe(const CartPoleState *s, float obs[4]) {
    obs[0] = (float)s->x;
    obs[1] = (float)s->x_dot;
    obs[2] = (float)s->theta;
    obs[3] = (float)s->theta_dot;
}

void cartpole_reset(CartPoleState *s, Rng *rng, float obs[4]) {
    s->x = rl_uniform(rng, -0.05, 0.05);
    s->x_dot = rl_uniform(rng, -0.05, 0.05);
    s->theta = rl_uniform(rng, -0.05, 0.05);
    s->theta_dot = rl_uniform(rng, -0.05, 0.05);
    s->steps_beyond_terminated = -1;
    cartpole_observe(s, obs);
}

double cartpole_step(CartPoleState *s, int action, float obs[4], bool *terminated) {
    const double total_mass = MASS_POLE + MASS_CART;
    const double polemass_length = MASS_POLE * HALF_LENGTH;
    double force = action == 1 ? FORCE_MAG : -FORCE_MAG;
    double costheta = cos(s->theta), sintheta = sin(s->theta);
    double temp = (force + polemass_length * (s->theta_dot * s->theta_dot) * sintheta) / total_mass;
    double thetaacc = (GRAVITY * sintheta - costheta * temp) /
                      (HALF_LENGTH * (4.0 / 3.0 - MASS_POLE * (costheta * costheta) / total_mass));
    double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
    /* Euler: positions move with the old velocities */
    s->x = s->x + TAU * s->x_dot;
    s->x_dot = s->x_dot + TAU * xacc;
    s->theta = s->theta + TAU * s->theta_dot;
    s->theta_dot = s->theta_dot + TAU * thetaacc;

    *terminated = s->x < -X_THRESHOLD || s->x > X_THRESHOLD || s->theta < -THETA_THRESHOLD ||
                  s->theta > THETA_THRESHOLD;
    double reward = 1.0;
    if (*terminated) {
        if (s->steps_beyond_terminated < 0) {
            s->steps_beyond_terminated = 0; /* the pole just fell: this step still counts */
        } else {
            s->steps_beyond_terminated++;
            reward = 0.0;
        }
    }
    cartpole_observe(s, obs);
    return reward;
}

/* Gymnasium's picture: a black cart on a black track, a brown pole, a blue axle. */
void cartpole_render(const CartPoleState *s, Image *frame) {
    const int W = 600, H = 400;
    const double scale = W / (X_THRESHOLD * 2), polewidth = 10.0, polelen = scale * (2 * HALF_LENGTH);
    const double cartwidth = 50.0, cartheight = 30.0, axleoffset = cartheight / 4.0;
    const double cartx = s->x * scale + W / 2.0, carty = 100; /* the top of the cart */
    const Rgb black = {0, 0, 0}, pole = {202, 152, 101}, axle = {129, 132, 203};
    image_fill(frame, (Rgb){255, 255, 255});
    /* Gymnasium draws with y up and flips the picture at the end: y -> H - 1 - y */
#define FLIP(y) ((float)(H - 1 - (y)))
    double l = -cartwidth / 2, r = cartwidth / 2, t = cartheight / 2, b = -cartheight / 2;
    float cart[8] = {(float)(l + cartx), FLIP(b + carty), (float)(l + cartx), FLIP(t + carty),
                     (float)(r + cartx), FLIP(t + carty), (float)(r + cartx), FLIP(b + carty)};
    draw_polygon(frame, cart, 4, black);

    l = -polewidth / 2, r = polewidth / 2, t = polelen - polewidth / 2, b = -polewidth / 2;
    const double corners[4][2] = {{l, b}, {l, t}, {r, t}, {r, b}};
    double c = cos(-s->theta), sn = sin(-s->theta);
    float quad[8];
    for (int k = 0; k < 4; k++) {
        double px = corners[k][0] * c - corners[k][1] * sn;
        double py = corners[k][0] * sn + corners[k][1] * c;
        quad[2 * k] = (float)(px + cartx);
        quad[2 * k + 1] = FLIP(py + carty + axleoffset);
    }
    draw_polygon(frame, quad, 4, pole);
    draw_circle(frame, (float)(int)cartx, FLIP((int)(carty + axleoffset)), (float)(int)(polewidth / 2), axle);
    draw_line(frame, 0, FLIP(carty), (float)W, FLIP(carty), 1, black);
#undef FLIP
}

static void reset_fn(void *state, Rng *rng, float *obs) { cartpole_reset(state, rng, obs); }
static double step_fn(void *state, Rng *rng, const float *action, float *obs, bool *terminated) {
    (void)rng;
    return cartpole_step(state, (int)action[0], obs, terminated);
}
static void render_fn(const void *state, Image *frame) { cartpole_render(state, frame); }

static const float OBS_HIGH[4] = {4.8f, 3.4028234663852886e38f, (float)(THETA_THRESHOLD * 2),
                                  3.4028234663852886e38f};
static const float OBS_LOW[4] = {-4.8f, -3.4028234663852886e38f, -(float)(THETA_THRESHOLD * 2),
                                 -3.4028234663852886e38f};

const EnvSpec CARTPOLE_SPEC = {
    .id = "CartPole-v1",
    .name = "cartpole",
    .obs_dim = 4,
    .obs_low = OBS_LOW,
    .obs_high = OBS_HIGH,
    .action_kind = ACTION_DISCRETE,
    .num_actions = 2,
    .action_dim = 1,
    .max_episode_steps = 500,
    .reward_threshold = 475.0,
    .render_width = 600,
    .render_height = 400,
    .render_fps = 50,
    .state_size = sizeof(CartPoleState),
    .reset = reset_fn,
    .step = step_fn,
    .render = render_fn,
};
