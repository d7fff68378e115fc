#include "rl/episode.h"

#include <math.h>
#include <string.h>

#include "core/check.h"
#include "rl/picture.h"

Episode episode_play(const EnvSpec *spec, uint64_t seed, PolicyFn policy, void *ctx) {
    CHECK(spec != NULL && policy != NULL, "episode_play: no environment or no policy");
    Episode ep = {spec, seed, 0, 0.0, false, NULL};
    const int a = spec->action_dim;
    ep.actions = xcalloc((size_t)spec->max_episode_steps * a, sizeof(float));
    Env env = env_create(spec, seed);
    float *obs = xcalloc((size_t)spec->obs_dim, sizeof(float));
    env_reset(&env, obs);
    for (;;) {
        float *action = ep.actions + (size_t)ep.length * a;
        policy(ctx, obs, action);
        bool terminated, truncated;
        ep.ret += env_step(&env, action, obs, &terminated, &truncated);
        ep.length++;
        if (terminated || truncated) {
            ep.terminated = terminated;
            break;
        }
    }
    xfree(obs);
    env_free(&env);
    return ep;
}

void episode_free(Episode *ep) {
    xfree(ep->actions);
    ep->actions = NULL;
}

/* Replays ep, calling draw(ctx, step, frame) for the reset state (step 0) and after each
 * step t (1..length) that wants(t) says to draw. Stops with a message if the replay does
 * not end as the episode did (which would be a bug in an environment's determinism). */
typedef struct {
    bool (*wants)(void *ctx, int step);
    void (*draw)(void *ctx, int step, const Image *frame);
    void *ctx;
} Replay;

static void replay(const Episode *ep, const Replay *r) {
    const EnvSpec *spec = ep->spec;
    Env env = env_create(spec, ep->seed);
    Image frame = image_create(spec->render_width, spec->render_height);
    float *obs = xcalloc((size_t)spec->obs_dim, sizeof(float));
    env_reset(&env, obs);
    env_render(&env, &frame);
    r->draw(r->ctx, 0, &frame);
    double ret = 0;
    for (int t = 1; t <= ep->length; t++) {
        bool terminated, truncated;
        ret += env_step(&env, ep->actions + (size_t)(t - 1) * spec->action_dim, obs, &terminated, &truncated);
        CHECK((terminated || truncated) == (t == ep->length),
              "%s seed %llu: the replay %s at step %d, the episode at step %d", spec->id,
              (unsigned long long)ep->seed, terminated || truncated ? "ended" : "went on", t, ep->length);
        if (r->wants(r->ctx, t)) {
            env_render(&env, &frame);
            r->draw(r->ctx, t, &frame);
        }
    }
    CHECK(ret == ep->ret, "%s seed %llu: the replay's return %.17g differs from the episode's %.17g", spec->id,
          (unsigned long long)ep->seed, ret, ep->ret);
    xfree(obs);
    image_free(&frame);
    env_free(&env);
}

typedef struct {
    GifWriter *gif;
    int every, length;
} GifCtx;

static bool gif_wants(void *ctx, int step) {
    const GifCtx *c = ctx;
    return step % c->every == 0 || step == c->length;
}
static void gif_draw(void *ctx, int step, const Image *frame) {
    (void)step;
    gif_add_frame(((GifCtx *)ctx)->gif, frame);
}

void episode_write_gif(const Episode *ep, const char *path, int every) {
    CHECK(every >= 1, "episode_write_gif: every %d (1: every step)", every);
    const EnvSpec *spec = ep->spec;
    int delay = (int)lround(100.0 * every / spec->render_fps);
    GifCtx c = {gif_open(path, spec->render_width, spec->render_height, delay < 2 ? 2 : delay), every, ep->length};
    Replay r = {gif_wants, gif_draw, &c};
    replay(ep, &r);
    gif_close(c.gif);
}

enum { STRIP_GAP = 4, STRIP_MAX = 64 };

typedef struct {
    int frames, shrink;
    int *steps; /* [frames]: which steps are drawn, ascending */
    Image strip;
} StripCtx;

static bool strip_wants(void *ctx, int step) {
    const StripCtx *c = ctx;
    for (int k = 0; k < c->frames; k++)
        if (c->steps[k] == step) return true;
    return false;
}

static void strip_draw(void *ctx, int step, const Image *frame) {
    StripCtx *c = ctx;
    Image small = c->shrink > 1 ? image_downscale(frame, c->shrink) : *frame;
    for (int k = 0; k < c->frames; k++) {
        if (c->steps[k] != step) continue;
        int x0 = k * (small.width + STRIP_GAP);
        for (int y = 0; y < small.height; y++)
            memcpy(c->strip.pixels + ((size_t)y * c->strip.width + x0) * 3,
                   small.pixels + (size_t)y * small.width * 3, (size_t)small.width * 3);
    }
    if (c->shrink > 1) image_free(&small);
}

void episode_write_png_strip(const Episode *ep, const char *path, int frames, int shrink) {
    const EnvSpec *spec = ep->spec;
    CHECK(frames >= 2 && frames <= STRIP_MAX, "episode_write_png_strip: %d frames (2..%d)", frames, STRIP_MAX);
    CHECK(shrink >= 1 && shrink <= 16, "episode_write_png_strip: shrink %d (1..16)", shrink);
    if (!picture_have_png()) png_write(path, NULL); /* says what to install */
    int w = spec->render_width / shrink, h = spec->render_height / shrink;
    StripCtx c = {frames, shrink, xcalloc((size_t)frames, sizeof(int)),
                  image_create(frames * w + (frames - 1) * STRIP_GAP, h)};
    image_fill(&c.strip, (Rgb){128, 128, 128}); /* grey gaps */
    for (int k = 0; k < frames; k++) c.steps[k] = (int)lround((double)k * ep->length / (frames - 1));
    Replay r = {strip_wants, strip_draw, &c};
    replay(ep, &r);
    png_write(path, &c.strip);
    image_free(&c.strip);
    xfree(c.steps);
}
