/* Lesson 05: the program (given; worth reading, TODOs 5.1 to 5.6 are called from here).
 *
 *   train --env cartpole                           # 500,000 steps, CleanRL's settings
 *   train --env cartpole --target-return 475       # stop once the last 20 episodes average 475
 *   train --env acrobot --metrics acrobot.jsonl --gif acrobot.gif
 *
 * Each update: a rollout (TODO 5.1), the critic's values (library), advantages by GAE
 * (TODO 5.2), then update_epochs passes of mini-batches (TODO 5.6) with your losses
 * (TODOs 5.3 to 5.5). One line per update; --metrics writes the same as JSON lines. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"
#include "core/trace.h"
#include "lesson.h"
#include "rl/episode.h"
#include "rl/picture.h"
#include "train/checkpoint.h"
#include "train/loop.h"
#include "train/run_trace.h"

typedef struct {
    PpoConfig ppo;
    const char *env, *metrics, *gif, *target, *trace;
    int seed, threads, log_every;
    int no_anneal_lr, no_norm_adv, no_clip_vloss;
} Config;

/* The value of --env NAME (or --env=NAME) on the command line, or "cartpole". */
static const char *env_option(int argc, char **argv) {
    const char *env = "cartpole";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--env") == 0 && i + 1 < argc) env = argv[++i];
        else if (strncmp(argv[i], "--env=", 6) == 0) env = argv[i] + 6;
    }
    return env;
}

static Config parse_args(int argc, char **argv) {
    /* the environment's defaults first (ppo_config_for), then the options over them */
    const char *env = env_option(argc, argv);
    Config c = {.ppo = ppo_config_for(env_find(env)), .env = env, .seed = 1, .threads = 1, .log_every = 1};
    PpoConfig *p = &c.ppo;
    static char env_help[160];
    snprintf(env_help, sizeof env_help, "the environment: %s (or Gymnasium's id)", env_names());
    const ArgSpec specs[] = {
        {"env", ARG_STRING, &c.env, env_help, NULL},
        {"steps", ARG_INT, &p->total_steps, "environment steps in all (all copies together)", NULL},
        {"num-envs", ARG_INT, &p->num_envs, "environment copies stepped together", NULL},
        {"num-steps", ARG_INT, &p->num_steps, "steps of each copy per rollout", NULL},
        {"seed", ARG_INT, &c.seed, "seed of the environments, the weights and the sampling", NULL},
        {"threads", ARG_INT, &c.threads, "OpenMP threads (2: actor and critic update side by side)", NULL},
        {"metrics", ARG_STRING, &c.metrics, "write one JSON object per update to FILE", NULL},
        {"trace", ARG_STRING, &c.trace, "where the time goes: write Chrome's trace format to FILE (make trace)", NULL},
        {"gif", ARG_STRING, &c.gif, "draw an episode before and after training: FILE-before.gif, FILE.gif (and .png strips)", NULL},
        {"target-return", ARG_STRING, &c.target, "stop once the last 20 episodes' mean return reaches R", NULL},
        {"log-every", ARG_INT, &c.log_every, "print every Nth update (the metrics get every one)", NULL},
        {"lr", ARG_FLOAT, &p->lr, "Adam's learning rate", NULL},
        {"no-anneal-lr", ARG_FLAG, &c.no_anneal_lr, "keep the learning rate (default: down to 0 linearly)", NULL},
        {"adam-eps", ARG_FLOAT, &p->adam_eps, "Adam's epsilon", NULL},
        {"gamma", ARG_FLOAT, &p->gamma, "discount factor", NULL},
        {"gae-lambda", ARG_FLOAT, &p->gae_lambda, "GAE's lambda", NULL},
        {"num-minibatches", ARG_INT, &p->num_minibatches, "mini-batches per epoch", NULL},
        {"update-epochs", ARG_INT, &p->update_epochs, "passes over each rollout", NULL},
        {"no-norm-adv", ARG_FLAG, &c.no_norm_adv, "do not normalise the advantages per mini-batch", NULL},
        {"clip-coef", ARG_FLOAT, &p->clip_coef, "the surrogate's (and value's) clip range", NULL},
        {"no-clip-vloss", ARG_FLAG, &c.no_clip_vloss, "do not clip the value loss", NULL},
        {"ent-coef", ARG_FLOAT, &p->ent_coef, "weight of the entropy bonus", NULL},
        {"vf-coef", ARG_FLOAT, &p->vf_coef, "weight of the value loss", NULL},
        {"max-grad-norm", ARG_FLOAT, &p->max_grad_norm, "clip the global gradient norm to this", NULL},
        {"target-kl", ARG_FLOAT, &p->target_kl, "stop an update's epochs once approx_kl passes it (0: off)", NULL},
        {"reward-scale", ARG_FLOAT, &p->reward_scale, "multiply the rewards the critic learns by this", NULL},
        {"hidden", ARG_INT, &p->hidden, "width of the two hidden layers of actor and critic", NULL},
    };
    args_parse(argc, argv, specs, ARRAY_LEN(specs),
               "Lesson 05: proximal policy optimisation (PPO) on CartPole, Acrobot, Pendulum, ...");
    p->anneal_lr = !c.no_anneal_lr;
    p->norm_adv = !c.no_norm_adv;
    p->clip_vloss = !c.no_clip_vloss;
    if (c.threads < 1 || c.threads > 1024) fatal("--threads must be 1 to 1024, got %d", c.threads);
    if (c.log_every < 1) fatal("--log-every must be 1 or more, got %d", c.log_every);
    if (c.seed < 0) fatal("--seed must be 0 or more, got %d", c.seed);
    ppo_config_check(p);
    return c;
}

/* --target-return R as a number, or NAN when not given. */
static double target_return(const char *text) {
    if (!text) return NAN;
    char *end;
    const double r = strtod(text, &end);
    if (end == text || *end || !isfinite(r)) fatal("--target-return expects a number, got '%s'", text);
    return r;
}

/* path's name without ".gif", then suffix and ext: "run.gif" -> "run-before.png" */
static void sibling(char *out, size_t cap, const char *path, const char *suffix, const char *ext) {
    const size_t n = strlen(path);
    const int gif = n > 4 && strcmp(path + n - 4, ".gif") == 0;
    snprintf(out, cap, "%.*s%s%s", (int)(gif ? n - 4 : n), path, suffix, ext);
}

/* One episode of the current policy's most likely actions, as an animated GIF and (with
 * stb_image_write) a strip of 8 frames: the seed's "before and after training" pictures. */
static void draw_episode(Ppo *p, const char *gif_path, const char *suffix, uint64_t seed) {
    char gif[1024], png[1024];
    sibling(gif, sizeof gif, gif_path, suffix, ".gif");
    Episode ep = episode_play(p->spec, seed, ppo_greedy_policy, p);
    episode_write_gif(&ep, gif, 1);
    print0("%s: an episode of %d steps, return %.1f (%s)", gif, ep.length, ep.ret,
           ep.terminated ? "terminated" : "truncated by the time limit");
    if (picture_have_png()) {
        sibling(png, sizeof png, gif_path, suffix, ".png");
        episode_write_png_strip(&ep, png, 8, 2);
        print0("; %s: 8 frames of it", png);
    }
    print0("\n");
    episode_free(&ep);
}

static void print_header(const Ppo *p, const Config *c) {
    const EnvSpec *s = p->spec;
    const int batch = ppo_batch_size(p), updates = ppo_num_updates(p);
    char actions[64];
    if (s->action_kind == ACTION_DISCRETE) snprintf(actions, sizeof actions, "%d actions", s->num_actions);
    else snprintf(actions, sizeof actions, "%d continuous action%s", s->action_dim, s->action_dim > 1 ? "s" : "");
    print0("env: %s (%d observations, %s), %d cop%s x %d steps = %d per update, %d updates (%d steps)\n", s->id,
           s->obs_dim, actions, c->ppo.num_envs, c->ppo.num_envs > 1 ? "ies" : "y", c->ppo.num_steps, batch, updates,
           batch * updates);
    print0("model: actor %d-%d-%d-%d and critic %d-%d-%d-1, tanh, %lld parameters; Adam lr %g%s, eps %g; "
           "%d epochs x %d mini-batches of %d; %d thread%s\n",
           s->obs_dim, c->ppo.hidden, c->ppo.hidden, p->policy.actor_out, s->obs_dim, c->ppo.hidden, c->ppo.hidden,
           (long long)p->policy.params.total, (double)c->ppo.lr, c->ppo.anneal_lr ? " annealed to 0" : "",
           (double)c->ppo.adam_eps, c->ppo.update_epochs, c->ppo.num_minibatches, ppo_minibatch_size(p), c->threads,
           c->threads > 1 ? "s" : "");
}

static void print_columns(void) {
    print0("%7s %9s %8s %7s %9s %9s %8s %9s %8s %8s %8s\n", "update", "step", "return", "length", "pg_loss",
           "v_loss", "entropy", "approx_kl", "clipfrac", "expl_var", "steps/s");
}

/* "   12.5" or "      -" where no episode has ended yet */
static void print_mean(double v, int width, int decimals) {
    if (isnan(v)) printf(" %*s", width, "-");
    else printf(" %*.*f", width, decimals, v);
}

static void report_update(const Ppo *p, const PpoUpdateStats *s, MetricsFile *m, double wall, double rate,
                          bool print) {
    const double ret = episode_stats_mean_return(&p->env.stats, 20);
    const double len = episode_stats_mean_length(&p->env.stats, 20);
    const long long step = (long long)p->env.total_steps;
    if (print) {
        printf("%7lld %9lld", (long long)p->updates, step);
        print_mean(ret, 8, 1);
        print_mean(len, 7, 1);
        printf(" %9.4f %9.4f %8.4f %9.5f %8.4f %8.3f %8.0f\n", s->policy_loss, s->value_loss, s->entropy,
               s->approx_kl, s->clip_fraction, s->explained_variance, rate);
        fflush(stdout);
    }
    metrics_begin(m);
    metrics_int(m, "step", step);
    metrics_num(m, "mean_return", ret);
    metrics_num(m, "episode_length", len);
    metrics_num(m, "policy_loss", s->policy_loss);
    metrics_num(m, "value_loss", s->value_loss);
    metrics_num(m, "entropy", s->entropy);
    metrics_num(m, "approx_kl", s->approx_kl);
    metrics_num(m, "clip_fraction", s->clip_fraction);
    metrics_num(m, "explained_variance", s->explained_variance);
    metrics_num(m, "steps_per_s", rate);
    metrics_num(m, "wall_s", wall);
    metrics_end(m);
}

static void print_summary(const Ppo *p, double wall) {
    const PpoTimes *t = &p->time;
    const double other = wall - t->env - t->act - t->values - t->update;
    print0("time: %.2f s, %.0f steps/s: environments %.3f s, actor in rollouts %.3f s, critic values %.3f s, "
           "updates %.3f s, the rest %.3f s\n",
           wall, (double)p->env.total_steps / wall, t->env, t->act, t->values, t->update, other);
    print0("parameter digest: %016llx\n", (unsigned long long)params_digest(&p->policy.params));
}

/* A policy that no longer explores: a discrete one that puts nearly all its probability
 * on one action (entropy under 1 % of the uniform policy's, ln actions), a Gaussian one
 * whose spread shrank a thousandfold in every dimension from the initial 1 (entropy
 * 0.5 ln(2 pi e) - ln 1000 per dimension). Training goes on without a NaN, but the return
 * stays where it is (a learning rate far too large does it within an update or two). */
static bool collapsed(const Ppo *p, double entropy) {
    const EnvSpec *e = p->spec;
    if (e->action_kind == ACTION_DISCRETE) return entropy < 0.01 * log((double)e->num_actions);
    return entropy < e->action_dim * (0.5 * log(2 * M_PI * M_E) - log(1000.0));
}

/* Stuck: the mean return has not risen by a tenth of its first size since the first
 * update (a trained policy may be nearly deterministic: that is no collapse). */
static bool stuck(double first, double now) {
    return isnan(first) || isnan(now) || now <= first + 0.1 * fabs(first);
}

int lesson_main(int argc, char **argv) {
    const Config c = parse_args(argc, argv);
    const double target = target_return(c.target);
    const EnvSpec *spec = env_find(c.env);
    omp_set_num_threads(c.threads);
    MetricsFile *metrics = metrics_open(c.metrics);
    if (c.gif && !picture_have_gif())
        fatal("--gif needs giflib, which this build did not find: sudo apt-get install libgif-dev, then make");

    Ppo p;
    ppo_init(&p, spec, &c.ppo, (uint64_t)c.seed, c.threads);
    p.losses = LESSON_LOSSES; /* your TODOs 5.3 to 5.5 */
    print_header(&p, &c);
    if (c.gif) draw_episode(&p, c.gif, "-before", (uint64_t)c.seed + 1000);
    print_columns();
    RunTrace trace; /* --trace FILE: each update (a step), its rollout, GAE and mini-batches */
    run_trace_start(&trace, c.trace);
    run_trace_blocks(&trace, &p.policy.critic.blocks);
    run_trace_blocks(&trace, &p.policy.actor.blocks);

    const int updates = ppo_num_updates(&p);
    const double start = now_seconds();
    double last = start;
    bool reached = false, warned = false;
    double first_return = NAN;
    for (int u = 0; u < updates && !reached; u++) {
        trace_begin("update", TRACE_STEP);
        ppo_set_lr(&p);
        trace_begin("collect rollout", TRACE_DATA);
        lesson_collect_rollout(&p); /* TODO 5.1 */
        trace_end("collect rollout");
        trace_begin("values and GAE", TRACE_COMPUTE);
        ppo_compute_values(&p);
        RolloutBuffer *b = &p.buf;
        lesson_gae(b->advantages, b->returns, b->rewards, b->values, b->next_values, b->terminated, b->truncated,
                   b->num_steps, b->num_envs, p.cfg.gamma, p.cfg.gae_lambda); /* TODO 5.2 */
        trace_end("values and GAE");
        PpoUpdateStats s;
        const double t0 = now_seconds();
        trace_begin("PPO update", TRACE_COMPUTE);
        lesson_update(&p, &s); /* TODO 5.6 */
        trace_end("PPO update");
        trace_end("update");
        const double now = now_seconds();
        p.time.update += now - t0;
        p.updates++;
        if (!isfinite(s.policy_loss) || !isfinite(s.value_loss)) {
            char advice[768]; /* the options set that can cause it (--reward-scale ...), or --lr */
            train_divergence_advice(advice, sizeof advice, c.ppo.lr);
            fatal("update %lld: the loss is %g (policy) and %g (value): training diverged. %s Or "
                  "check TODOs 5.3 to 5.5", (long long)p.updates, s.policy_loss, s.value_loss, advice);
        }
        reached = !isnan(target) && episode_stats_mean_return(&p.env.stats, 20) >= target;
        const double mean_return = episode_stats_mean_return(&p.env.stats, 20);
        if (u == 0) first_return = mean_return;
        if (!warned && collapsed(&p, s.entropy) && stuck(first_return, mean_return)) {
            warned = true;
            fprintf(stderr, "warning: update %lld: the policy has collapsed: entropy %.4g, so it takes "
                    "nearly one action only and stops exploring, while the mean return is %.1f (%.1f "
                    "after the first update). A smaller --lr (now %g) or a larger --ent-coef (now %g)\n",
                    (long long)p.updates, s.entropy, mean_return, first_return, (double)c.ppo.lr,
                    (double)c.ppo.ent_coef);
        }
        report_update(&p, &s, metrics, now - start, ppo_batch_size(&p) / (now - last),
                      reached || u + 1 == updates || p.updates % c.log_every == 0);
        last = now;
    }
    const double wall = now_seconds() - start;
    const double mean = episode_stats_mean_return(&p.env.stats, 20);
    if (reached)
        print0("reached a mean return of %.1f (last 20 episodes) at step %lld, %.2f s after the start\n", mean,
               (long long)p.env.total_steps, wall);
    else if (!isnan(target))
        print0("the mean return (last 20 episodes) is %.1f at step %lld after %.2f s: below the target of %g "
               "(exit status 1)%s\n", mean, (long long)p.env.total_steps, wall, target,
               warned ? "; the policy collapsed (the warning above)" : "");
    print_summary(&p, wall);
    run_trace_finish(&trace);
    if (c.gif) draw_episode(&p, c.gif, "", (uint64_t)c.seed + 1000);
    metrics_close(metrics);
    ppo_free(&p);
    return !isnan(target) && !reached ? 1 : 0; /* a batch job that missed its target fails */
}
