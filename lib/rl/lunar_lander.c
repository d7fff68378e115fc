#include "rl/exact_fp.h"

#ifdef HAVE_BOX2D

#include "rl/lunar_lander.h"

#include <math.h>

#include "core/check.h"
#include "rl/env.h"

/* Gymnasium's constants */
#define FPS 50
#define SCALE 30.0
#define MAIN_ENGINE_POWER 13.0
#define SIDE_ENGINE_POWER 0.6
#define INITIAL_RANDOM 1000.0
#define LEG_DOWN 18
#define SIDE_ENGINE_HEIGHT 14.0
#define SIDE_ENGINE_AWAY 12.0
#define MAIN_ENGINE_Y_LOCATION 4
#define VIEWPORT_W 600
#define VIEWPORT_H 400
#define CHUNKS LANDER_TERRAIN_POINTS

void lunar_lander_init(LunarLanderState *s) { s->world = lander_world_create(); }

void lunar_lander_destroy(LunarLanderState *s) {
    lander_world_destroy(s->world);
    s->world = NULL;
}

double lunar_lander_shaping(const double st[8]) {
    return -100 * sqrt(st[0] * st[0] + st[1] * st[1]) - 100 * sqrt(st[2] * st[2] + st[3] * st[3]) -
           100 * fabs(st[4]) + 10 * st[6] + 10 * st[7];
}

void lunar_lander_reset(LunarLanderState *s, Rng *rng, float obs[8]) {
    const double W = VIEWPORT_W / SCALE, H = VIEWPORT_H / SCALE;
    double height[CHUNKS + 1];
    for (int i = 0; i < CHUNKS + 1; i++) height[i] = rl_uniform(rng, 0, H / 2);
    for (int i = 0; i < CHUNKS; i++) s->terrain_x[i] = W / (CHUNKS - 1) * i;
    s->helipad_x1 = s->terrain_x[CHUNKS / 2 - 1];
    s->helipad_x2 = s->terrain_x[CHUNKS / 2 + 1];
    s->helipad_y = H / 4;
    for (int k = -2; k <= 2; k++) height[CHUNKS / 2 + k] = s->helipad_y;
    for (int i = 0; i < CHUNKS; i++) {
        /* height[i - 1] at i = 0 is Python's height[-1], the last one */
        double before = height[i == 0 ? CHUNKS : i - 1];
        s->terrain_y[i] = 0.33 * (before + height[i + 0] + height[i + 1]);
    }
    double fx = rl_uniform(rng, -INITIAL_RANDOM, INITIAL_RANDOM);
    double fy = rl_uniform(rng, -INITIAL_RANDOM, INITIAL_RANDOM);
    lander_world_build(s->world, s->terrain_x, s->terrain_y, fx, fy);
    s->has_prev_shaping = false;
    bool terminated;
    lunar_lander_step(s, rng, 0, obs, &terminated);
}

double lunar_lander_step(LunarLanderState *s, Rng *rng, int action, float obs[8], bool *terminated) {
    LanderBodyState b = lander_world_read(s->world);
    double tip[2] = {sin((double)b.angle), cos((double)b.angle)};
    double side[2] = {-tip[1], tip[0]};
    double dispersion[2];
    for (int k = 0; k < 2; k++) dispersion[k] = rl_uniform(rng, -1.0, +1.0) / SCALE;

    double m_power = 0.0;
    if (action == 2) { /* main engine; 4 moves it a bit down, +-2 for randomness */
        m_power = 1.0;
        double ox = tip[0] * (MAIN_ENGINE_Y_LOCATION / SCALE + 2 * dispersion[0]) + side[0] * dispersion[1];
        double oy = -tip[1] * (MAIN_ENGINE_Y_LOCATION / SCALE + 2 * dispersion[0]) - side[1] * dispersion[1];
        lander_world_impulse(s->world, -ox * MAIN_ENGINE_POWER * m_power, -oy * MAIN_ENGINE_POWER * m_power,
                             (double)b.x + ox, (double)b.y + oy);
    }
    double s_power = 0.0;
    if (action == 1 || action == 3) { /* orientation engines: 1 left, 3 right */
        int direction = action - 2;
        s_power = 1.0;
        double ox = tip[0] * dispersion[0] + side[0] * (3 * dispersion[1] + direction * SIDE_ENGINE_AWAY / SCALE);
        double oy = -tip[1] * dispersion[0] - side[1] * (3 * dispersion[1] + direction * SIDE_ENGINE_AWAY / SCALE);
        /* 17, not SIDE_ENGINE_HEIGHT: Gymnasium's (documented) quirk, kept */
        double px = (double)b.x + ox - tip[0] * 17 / SCALE;
        double py = (double)b.y + oy + tip[1] * SIDE_ENGINE_HEIGHT / SCALE;
        lander_world_impulse(s->world, -ox * SIDE_ENGINE_POWER * s_power, -oy * SIDE_ENGINE_POWER * s_power, px,
                             py);
    }
    lander_world_step(s->world);

    b = lander_world_read(s->world);
    double st[8] = {
        ((double)b.x - VIEWPORT_W / SCALE / 2) / (VIEWPORT_W / SCALE / 2),
        ((double)b.y - (s->helipad_y + LEG_DOWN / SCALE)) / (VIEWPORT_H / SCALE / 2),
        (double)b.vx * (VIEWPORT_W / SCALE / 2) / FPS,
        (double)b.vy * (VIEWPORT_H / SCALE / 2) / FPS,
        (double)b.angle,
        20.0 * (double)b.angular_velocity / FPS,
        b.leg_contact[0] ? 1.0 : 0.0,
        b.leg_contact[1] ? 1.0 : 0.0,
    };
    double reward = 0;
    double shaping = lunar_lander_shaping(st);
    if (s->has_prev_shaping) reward = shaping - s->prev_shaping;
    s->prev_shaping = shaping;
    s->has_prev_shaping = true;
    reward -= m_power * 0.30; /* less fuel spent is better */
    reward -= s_power * 0.03;

    *terminated = false;
    if (b.body_contact || fabs(st[0]) >= 1.0) {
        *terminated = true;
        reward = -100;
    }
    if (!b.awake) {
        *terminated = true;
        reward = +100;
    }
    for (int k = 0; k < 8; k++) obs[k] = (float)st[k];
    return reward;
}

/* Gymnasium's picture: black sky above the white moon, the purple lander, the pad's
 * white poles with yellow flags. (Gymnasium also draws the engines' exhaust particles;
 * they do not touch the lander and are left out here.) */
void lunar_lander_render(const LunarLanderState *s, Image *frame) {
    const int Hpx = VIEWPORT_H;
    const double H = VIEWPORT_H / SCALE;
    const Rgb white = {255, 255, 255}, black = {0, 0, 0}, fill = {128, 102, 230}, edge = {77, 77, 128};
    const Rgb flag = {204, 204, 0};
    image_fill(frame, white);
#define FLIP(y) ((float)(Hpx - 1 - (y)))
    for (int i = 0; i < CHUNKS - 1; i++) {
        float sky[8] = {(float)(s->terrain_x[i] * SCALE),     FLIP(s->terrain_y[i] * SCALE),
                        (float)(s->terrain_x[i + 1] * SCALE), FLIP(s->terrain_y[i + 1] * SCALE),
                        (float)(s->terrain_x[i + 1] * SCALE), FLIP(H * SCALE),
                        (float)(s->terrain_x[i] * SCALE),     FLIP(H * SCALE)};
        draw_polygon(frame, sky, 4, black);
    }
    LanderPolygon polys[3];
    lander_world_polygons(s->world, polys);
    for (int k = 0; k < 3; k++) {
        float xy[16];
        for (int v = 0; v < polys[k].count; v++) {
            xy[2 * v] = (float)(polys[k].xy[v][0] * SCALE);
            xy[2 * v + 1] = FLIP(polys[k].xy[v][1] * SCALE);
        }
        draw_polygon(frame, xy, polys[k].count, fill);
        draw_polygon_outline(frame, xy, polys[k].count, 1, edge);
    }
    const double pads[2] = {s->helipad_x1, s->helipad_x2};
    for (int k = 0; k < 2; k++) {
        double x = pads[k] * SCALE, flagy1 = s->helipad_y * SCALE, flagy2 = flagy1 + 50;
        draw_line(frame, (float)x, FLIP(flagy1), (float)x, FLIP(flagy2), 1, white);
        float tri[6] = {(float)x, FLIP(flagy2), (float)x, FLIP(flagy2 - 10), (float)(x + 25), FLIP(flagy2 - 5)};
        draw_polygon(frame, tri, 3, flag);
    }
#undef FLIP
}

static void init_fn(void *state) { lunar_lander_init(state); }
static void destroy_fn(void *state) { lunar_lander_destroy(state); }
static void reset_fn(void *state, Rng *rng, float *obs) { lunar_lander_reset(state, rng, obs); }
static double step_fn(void *state, Rng *rng, const float *action, float *obs, bool *terminated) {
    return lunar_lander_step(state, rng, (int)action[0], obs, terminated);
}
static void render_fn(const void *state, Image *frame) { lunar_lander_render(state, frame); }

static const float OBS_HIGH[8] = {2.5f, 2.5f, 10.0f, 10.0f, (float)(2 * M_PI), 10.0f, 1.0f, 1.0f};
static const float OBS_LOW[8] = {-2.5f, -2.5f, -10.0f, -10.0f, -(float)(2 * M_PI), -10.0f, -0.0f, -0.0f};

const EnvSpec LUNAR_LANDER_SPEC = {
    .id = "LunarLander-v3",
    .name = "lunarlander",
    .obs_dim = 8,
    .obs_low = OBS_LOW,
    .obs_high = OBS_HIGH,
    .action_kind = ACTION_DISCRETE,
    .num_actions = 4,
    .action_dim = 1,
    .max_episode_steps = 1000,
    .reward_threshold = 200.0,
    .render_width = VIEWPORT_W,
    .render_height = VIEWPORT_H,
    .render_fps = FPS,
    .heavy = true,
    .state_size = sizeof(LunarLanderState),
    .init = init_fn,
    .destroy = destroy_fn,
    .reset = reset_fn,
    .step = step_fn,
    .render = render_fn,
};

#else
/* Built without Box2D: env_find("lunarlander") says what to install. */
typedef int lunar_lander_needs_box2d;
#endif
