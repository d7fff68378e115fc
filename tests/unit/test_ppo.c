/* Unit tests of lib/rl's PPO: the distributions, the three loss terms and GAE against
 * PyTorch (tests/reference/ppo_reference.h, from make_ppo_reference.py) and finite
 * differences; advantage normalisation and explained variance; the rollout's values
 * (what is bootstrapped from where); one update's determinism (the same seed twice, 1
 * and 2 threads: the same bits); a short CartPole run whose return rises; Pendulum's
 * Gaussian policy; and clear stops on bad settings. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "framework/check.h"
#include "framework/gradcheck.h"
#include "reference/ppo_reference.h"
#include "rl/distributions.h"
#include "rl/gae.h"
#include "rl/ppo.h"
#include "train/checkpoint.h"

enum { N = PPO_REF_N, A = PPO_REF_A, D = PPO_REF_D };

/* ------------------------------------------------------------ against PyTorch */

/* The categorical case's whole loss and its gradients, as ppo_update puts them together. */
static float categorical_loss(float *dlogits, float *dvalues, const float *logits, const float *values, float vclip,
                              PpoPolicyStats *st) {
    float logp[N], dlogp[N] = {0};
    categorical_log_prob(logp, logits, CAT_ACTIONS, N, A);
    const float pg = ppo_policy_loss(dlogp, st, logp, CAT_OLD_LOGP, CAT_ADV, N, PPO_REF_CLIP);
    categorical_log_prob_backward(dlogits, dlogp, logits, CAT_ACTIONS, N, A);
    const float h = ppo_entropy_bonus(dlogits, logits, N, A, PPO_REF_ENT);
    const float vl = ppo_value_loss(dvalues, values, CAT_OLD_VALUES, CAT_RETURNS, N, vclip, PPO_REF_VF);
    return pg - PPO_REF_ENT * h + PPO_REF_VF * vl;
}

static int check_categorical_reference(void) {
    float logp[N], h[N], dlogits[N * A] = {0}, dvalues[N] = {0};
    categorical_log_prob(logp, CAT_LOGITS, CAT_ACTIONS, N, A);
    categorical_entropy(h, CAT_LOGITS, N, A);
    bool ok = expect_close("log-probabilities", logp, CAT_LOGP, N, 1e-6f, 1e-6f) &&
              expect_close("entropies", h, CAT_ENTROPY, N, 1e-6f, 1e-6f);
    float dlogp[N] = {0};
    PpoPolicyStats st;
    const float pg = ppo_policy_loss(dlogp, &st, CAT_LOGP, CAT_OLD_LOGP, CAT_ADV, N, PPO_REF_CLIP);
    const float got[5] = {pg, (float)st.approx_kl, (float)st.old_approx_kl, (float)st.clip_fraction,
                          ppo_value_loss(dvalues, CAT_VALUES, CAT_OLD_VALUES, CAT_RETURNS, N, PPO_REF_CLIP, PPO_REF_VF)};
    const float want[5] = {CAT_PG_LOSS, CAT_APPROX_KL, CAT_OLD_APPROX_KL, CAT_CLIPFRAC, CAT_V_LOSS};
    ok = ok && expect_close("pg_loss, approx_kl, old_approx_kl, clip fraction, v_loss", got, want, 5, 1e-6f, 1e-5f);
    memset(dvalues, 0, sizeof dvalues);
    float vl_noclip = ppo_value_loss(dvalues, CAT_VALUES, CAT_OLD_VALUES, CAT_RETURNS, N, 0.0f, PPO_REF_VF);
    ok = ok && expect_close("v_loss unclipped", &vl_noclip, &CAT_NOCLIP_V_LOSS, 1, 1e-6f, 1e-5f) &&
         expect_close("d v_loss unclipped / d values", dvalues, CAT_NOCLIP_DVALUES, N, 1e-7f, 1e-5f);
    memset(dvalues, 0, sizeof dvalues);
    categorical_loss(dlogits, dvalues, CAT_LOGITS, CAT_VALUES, PPO_REF_CLIP, NULL);
    ok = ok && expect_close("d loss / d logits (autograd)", dlogits, CAT_DLOGITS, N * A, 1e-7f, 1e-5f) &&
         expect_close("d loss / d values (autograd)", dvalues, CAT_DVALUES, N, 1e-7f, 1e-5f);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_gaussian_reference(void) {
    float logp[N], dlogp[N] = {0}, dmean[N * D] = {0}, dlogstd[D] = {0};
    gaussian_log_prob(logp, GAUSS_MEAN, GAUSS_LOGSTD, GAUSS_ACTIONS, N, D);
    bool ok = expect_close("log-probabilities", logp, GAUSS_LOGP, N, 1e-6f, 1e-6f);
    const float h = gaussian_entropy(GAUSS_LOGSTD, D);
    ok = ok && expect_close("entropy", &h, &GAUSS_ENTROPY, 1, 1e-6f, 1e-6f);
    const float pg = ppo_policy_loss(dlogp, NULL, logp, GAUSS_OLD_LOGP, GAUSS_ADV, N, PPO_REF_CLIP);
    ok = ok && expect_close("pg_loss", &pg, &GAUSS_PG_LOSS, 1, 1e-6f, 1e-5f);
    gaussian_log_prob_backward(dmean, dlogstd, dlogp, GAUSS_MEAN, GAUSS_LOGSTD, GAUSS_ACTIONS, N, D);
    for (int d = 0; d < D; d++) dlogstd[d] -= PPO_REF_ENT; /* d(-0.01 H)/d logstd, as ppo_update adds it */
    ok = ok && expect_close("d loss / d means (autograd)", dmean, GAUSS_DMEAN, N * D, 1e-7f, 1e-5f) &&
         expect_close("d loss / d logstd (autograd)", dlogstd, GAUSS_DLOGSTD, D, 1e-7f, 1e-5f);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_gae_reference(void) {
    enum { T = GAE_REF_T, E = GAE_REF_N };
    uint8_t term[T * E], trunc[T * E];
    for (int k = 0; k < T * E; k++) term[k] = GAE_TERMINATED[k] > 0, trunc[k] = GAE_TRUNCATED[k] > 0;
    float adv[T * E], ret[T * E];
    gae(adv, ret, GAE_REWARDS, GAE_VALUES, GAE_NEXT_VALUES, term, trunc, T, E, GAE_REF_GAMMA, GAE_REF_LAMBDA);
    const bool ok = expect_close("advantages", adv, GAE_ADVANTAGES, T * E, 1e-6f, 1e-5f) &&
                    expect_close("returns", ret, GAE_RETURNS, T * E, 1e-6f, 1e-5f);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* One episode of 3 steps, worked out by hand: gamma 0.5, lambda 0.5. */
static int check_gae_by_hand(void) {
    const float r[3] = {1, 1, 1}, v[3] = {2, 1, 0.5f}, nv[3] = {1, 0.5f, 7};
    const uint8_t term[3] = {0, 0, 1}, trunc[3] = {0};
    float adv[3], ret[3];
    gae(adv, ret, r, v, nv, term, trunc, 3, 1, 0.5f, 0.5f);
    /* delta = (1 + 0.5 * 1 - 2, 1 + 0.5 * 0.5 - 1, 1 - 0.5) = (-0.5, 0.25, 0.5)
     * A_2 = 0.5, A_1 = 0.25 + 0.25 * 0.5 = 0.375, A_0 = -0.5 + 0.25 * 0.375 = -0.40625 */
    const float want[3] = {-0.40625f, 0.375f, 0.5f}, want_ret[3] = {1.59375f, 1.375f, 1.0f};
    const bool ok = expect_close("advantages", adv, want, 3, 1e-7f, 0) && expect_close("returns", ret, want_ret, 3, 1e-7f, 0);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_normalize(void) {
    float x[N];
    memcpy(x, NORM_IN, sizeof x);
    ppo_normalize_advantages(x, N);
    bool ok = expect_close("(A - mean) / (std + 1e-8)", x, NORM_OUT, N, 1e-6f, 1e-6f);
    const float v[4] = {1, 2, 3, 4}, y[4] = {1, 2, 3, 5}, same[4] = {3, 3, 3, 3};
    const double ev = ppo_explained_variance(v, y, 4); /* 1 - var(0,0,0,1) / var(1,2,3,5) = 1 - 0.1875 / 2.1875 */
    ok = ok && expect_true(fabs(ev - (1.0 - 0.1875 / 2.1875)) < 1e-12, "explained variance %.12g", ev) &&
         expect_true(isnan(ppo_explained_variance(v, same, 4)), "explained variance of constant returns is not NaN");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ finite differences */

typedef struct {
    float logits[N * A], values[N];
    float vclip;
} LossSetup;

static double loss_objective(void *ctx) {
    LossSetup *s = ctx;
    float dl[N * A] = {0}, dv[N] = {0};
    return categorical_loss(dl, dv, s->logits, s->values, s->vclip, NULL);
}

/* The whole loss (clipped surrogate, entropy, clipped value loss) against finite
 * differences in the logits and values. The reference inputs put some ratios and
 * values beyond the clip; the nearest log-ratio lies 0.009 from an edge, so eps = 3e-3
 * crosses none. The loss comes back as a float (about 1e-7 of rounding, divided by
 * 2 eps: some 2e-5 of noise in the difference quotient), hence atol 4e-5. */
static int check_loss_fd(void) {
    bool ok = true;
    for (int clipv = 0; clipv < 2; clipv++) {
        LossSetup s;
        memcpy(s.logits, CAT_LOGITS, sizeof s.logits);
        memcpy(s.values, CAT_VALUES, sizeof s.values);
        s.vclip = clipv ? PPO_REF_CLIP : 0.0f;
        float dl[N * A] = {0}, dv[N] = {0};
        categorical_loss(dl, dv, s.logits, s.values, s.vclip, NULL);
        ok = fd_check("d loss / d logits", s.logits, dl, N * A, loss_objective, &s, 3e-3f, 4e-5, 2e-3) && ok;
        ok = fd_check("d loss / d values", s.values, dv, N, loss_objective, &s, 3e-3f, 4e-5, 2e-3) && ok;
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

typedef struct {
    float mean[N * D], logstd[D];
} GaussSetup;

static double gauss_objective(void *ctx) {
    GaussSetup *s = ctx;
    float logp[N], dlogp[N] = {0};
    gaussian_log_prob(logp, s->mean, s->logstd, GAUSS_ACTIONS, N, D);
    return ppo_policy_loss(dlogp, NULL, logp, GAUSS_OLD_LOGP, GAUSS_ADV, N, PPO_REF_CLIP) -
           PPO_REF_ENT * gaussian_entropy(s->logstd, D);
}

static int check_gaussian_fd(void) {
    GaussSetup s;
    memcpy(s.mean, GAUSS_MEAN, sizeof s.mean);
    memcpy(s.logstd, GAUSS_LOGSTD, sizeof s.logstd);
    float logp[N], dlogp[N] = {0}, dmean[N * D] = {0}, dlogstd[D] = {0};
    gaussian_log_prob(logp, s.mean, s.logstd, GAUSS_ACTIONS, N, D);
    ppo_policy_loss(dlogp, NULL, logp, GAUSS_OLD_LOGP, GAUSS_ADV, N, PPO_REF_CLIP);
    gaussian_log_prob_backward(dmean, dlogstd, dlogp, s.mean, s.logstd, GAUSS_ACTIONS, N, D);
    for (int d = 0; d < D; d++) dlogstd[d] -= PPO_REF_ENT;
    bool ok = fd_check("d loss / d means", s.mean, dmean, N * D, gauss_objective, &s, 1e-3f, 1e-5, 2e-3);
    ok = fd_check("d loss / d logstd", s.logstd, dlogstd, D, gauss_objective, &s, 1e-3f, 1e-5, 2e-3) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Sampling follows the distribution: 200,000 draws of softmax(0.3, -0.2, 1.0) and of
 * N(0.5, exp(-0.7)^2); their log-probabilities are those of the actions drawn. */
static int check_sampling(void) {
    enum { DRAWS = 200000 };
    const float z[3] = {0.3f, -0.2f, 1.0f};
    double p[3], norm = 0;
    for (int j = 0; j < 3; j++) norm += p[j] = exp(z[j]);
    Rng rng;
    rng_seed(&rng, 3, 9);
    int counts[3] = {0};
    bool ok = true;
    for (int i = 0; i < DRAWS && ok; i++) {
        float a, lp;
        categorical_sample(&a, &lp, z, 1, 3, &rng);
        counts[(int)a]++;
        ok = expect_true(fabs(lp - log(p[(int)a] / norm)) < 1e-6, "logp %g of action %g", (double)lp, (double)a);
    }
    for (int j = 0; ok && j < 3; j++)
        ok = expect_true(fabs(counts[j] / (double)DRAWS - p[j] / norm) < 0.005, "action %d drawn %.4f of the time, p = %.4f",
                         j, counts[j] / (double)DRAWS, p[j] / norm);
    const float mean = 0.5f, logstd = -0.7f;
    double s1 = 0, s2 = 0;
    for (int i = 0; i < DRAWS && ok; i++) {
        float a, lp, want;
        gaussian_sample(&a, &lp, &mean, &logstd, 1, 1, &rng);
        gaussian_log_prob(&want, &mean, &logstd, &a, 1, 1);
        ok = expect_true(lp == want, "logp of a drawn action");
        s1 += a, s2 += (double)a * a;
    }
    const double m = s1 / DRAWS, sd = sqrt(s2 / DRAWS - m * m);
    ok = ok && expect_true(fabs(m - 0.5) < 0.005 && fabs(sd - exp(-0.7)) < 0.005, "Gaussian draws: mean %.4f, std %.4f", m, sd);
    float mode;
    const float tie[3] = {1, 2, 2};
    categorical_mode(&mode, tie, 1, 3);
    ok = ok && expect_true(mode == 1.0f, "mode of (1, 2, 2) is %g, want 1 (the first largest)", (double)mode);
    const float huge[2] = {1000.0f, -1000.0f};
    float h, lp2, dz[2] = {0}, one = 1;
    categorical_entropy(&h, huge, 1, 2);
    categorical_log_prob(&lp2, huge, &one, 1, 2);
    categorical_entropy_backward(dz, &one, huge, 1, 2);
    ok = ok && expect_true(isfinite(h) && isfinite(lp2) && isfinite(dz[0]) && isfinite(dz[1]),
                           "logits of +-1000: entropy %g, log p %g, gradient %g %g", (double)h, (double)lp2,
                           (double)dz[0], (double)dz[1]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ the pipeline */

static PpoConfig small_config(void) {
    PpoConfig c = ppo_config_defaults();
    c.num_steps = 64;
    c.total_steps = 64 * 4 * 100;
    return c;
}

/* Values after a Pendulum rollout (every episode truncated at 200 steps): each step's
 * next value is the next row's value, V(next_obs) after the last step, V(its last
 * observation) where truncated. CartPole: 0 where terminated. */
static int check_values(void) {
    bool ok = true;
    const char *envs[2] = {"pendulum", "cartpole"};
    for (int e = 0; e < 2; e++) {
        PpoConfig c = ppo_config_defaults();
        c.num_envs = 2;
        c.num_steps = 256;
        Ppo p;
        ppo_init(&p, env_find(envs[e]), &c, 5, 1);
        ppo_collect(&p);
        ppo_compute_values(&p);
        const RolloutBuffer *b = &p.buf;
        const int T = b->num_steps, E = b->num_envs, d = b->obs_dim;
        int truncs = 0, terms = 0;
        for (int k = 0; ok && k < T * E; k++) {
            float want;
            const float *obs = b->terminated[k] ? NULL : b->truncated[k] ? b->final_obs + k * d
                                                     : k + E < T * E       ? b->obs + (k + E) * d
                                                                           : b->next_obs + (k - (T - 1) * E) * d;
            want = obs ? mlp_forward(&p.policy.critic, obs, 1)[0] : 0.0f;
            const float v = mlp_forward(&p.policy.critic, b->obs + k * d, 1)[0];
            truncs += b->truncated[k], terms += b->terminated[k];
            ok = expect_true(fabsf(b->next_values[k] - want) <= 1e-5f * (1 + fabsf(want)) &&
                                 fabsf(b->values[k] - v) <= 1e-5f * (1 + fabsf(v)),
                             "%s row %d: value %g next %g, want %g and %g", envs[e], k, (double)b->values[k],
                             (double)b->next_values[k], (double)v, (double)want);
        }
        ok = ok && expect_true(e == 0 ? truncs == 2 && terms == 0 : terms > 5,
                               "%s: %d truncations and %d terminations in the rollout", envs[e], truncs, terms);
        ppo_free(&p);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The parameter digest after 3 iterations. */
static uint64_t run_digest(const char *env, uint64_t seed, int threads) {
    omp_set_num_threads(threads);
    PpoConfig c = small_config();
    Ppo p;
    ppo_init(&p, env_find(env), &c, seed, threads);
    PpoUpdateStats s;
    for (int i = 0; i < 3; i++) ppo_iteration(&p, &s);
    const uint64_t d = params_digest(&p.policy.params) ^ (uint64_t)p.env.total_steps;
    ppo_free(&p);
    return d;
}

static int check_deterministic(void) {
    bool ok = true;
    const char *envs[2] = {"cartpole", "pendulum"};
    for (int e = 0; e < 2; e++) {
        const uint64_t a = run_digest(envs[e], 7, 1), b = run_digest(envs[e], 7, 1), c = run_digest(envs[e], 7, 2),
                       d = run_digest(envs[e], 8, 1);
        ok = expect_true(a == b && a == c, "%s: seed 7 gives %016llx, %016llx (again), %016llx (2 threads)", envs[e],
                         (unsigned long long)a, (unsigned long long)b, (unsigned long long)c) &&
             expect_true(a != d, "%s: seeds 7 and 8 give the same parameters", envs[e]) && ok;
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* 60 updates of 256 steps (15,360 steps): the mean return of CartPole rises from about
 * 22 (random actions) to over 100. */
static int check_cartpole_learns(void) {
    omp_set_num_threads(1);
    PpoConfig c = small_config();
    Ppo p;
    ppo_init(&p, env_find("cartpole"), &c, 1, 1);
    PpoUpdateStats s;
    ppo_iteration(&p, &s);
    const double first = episode_stats_mean_return(&p.env.stats, 20);
    for (int i = 1; i < 60; i++) ppo_iteration(&p, &s);
    const double last = episode_stats_mean_return(&p.env.stats, 20);
    printf("mean return %.1f after the first update, %.1f after 60 (15,360 steps)\n", first, last);
    const bool ok = expect_true(first < 40 && last > 100, "return %.1f -> %.1f: it should rise above 100", first, last) &&
                    expect_true(isfinite(s.value_loss) && s.entropy > 0 && s.entropy < log(2.0) &&
                                    s.epochs == 4 && s.minibatches == 16,
                                "last update: value loss %g, entropy %g, %d epochs, %d mini-batches", s.value_loss,
                                s.entropy, s.epochs, s.minibatches);
    ppo_free(&p);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Pendulum's Gaussian policy updates its log std; target_kl stops epochs early. */
static int check_pendulum_and_target_kl(void) {
    omp_set_num_threads(1);
    PpoConfig c = small_config();
    c.target_kl = 1e-9f; /* any movement passes it: one epoch */
    Ppo p;
    ppo_init(&p, env_find("pendulum"), &c, 3, 1);
    PpoUpdateStats s;
    ppo_iteration(&p, &s);
    const float logstd = p.policy.logstd->value.data[0];
    const bool ok = expect_true(s.epochs == 1 && s.minibatches == 4, "target_kl 1e-9: %d epochs, %d mini-batches", s.epochs,
                                s.minibatches) &&
                    expect_true(logstd != 0.0f && isfinite(logstd) && isfinite(s.policy_loss),
                                "log std %g after an update (starts at 0), policy loss %g", (double)logstd, s.policy_loss);
    ppo_free(&p);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_minibatch_gather(void) {
    RolloutBuffer b;
    rollout_init(&b, 3, 2, 2, 1);
    for (int k = 0; k < 6; k++) {
        b.obs[2 * k] = (float)k, b.obs[2 * k + 1] = -(float)k, b.actions[k] = (float)(k % 2);
        b.logprobs[k] = 10.0f + k, b.advantages[k] = 20.0f + k, b.returns[k] = 30.0f + k, b.values[k] = 40.0f + k;
    }
    Minibatch mb;
    minibatch_init(&mb, 3, 2, 1, 2);
    const int rows[3] = {4, 0, 5};
    minibatch_gather(&mb, &b, rows, 3);
    bool ok = true;
    for (int j = 0; ok && j < 3; j++) {
        const int k = rows[j];
        ok = expect_true(mb.obs[2 * j] == k && mb.obs[2 * j + 1] == -k && mb.actions[j] == k % 2 &&
                             mb.old_logp[j] == 10.0f + k && mb.advantages[j] == 20.0f + k && mb.returns[j] == 30.0f + k &&
                             mb.old_values[j] == 40.0f + k,
                         "mini-batch row %d is not rollout row %d", j, k);
    }
    minibatch_free(&mb);
    rollout_free(&b);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ CleanRL's defaults */

/* Every field of ppo_config_defaults() against CleanRL's ppo.py (the values issue 12
 * lists): a changed default changes what lesson 05 measures, so it must show here. */
static int check_cleanrl_defaults(void) {
    const PpoConfig c = ppo_config_defaults();
    bool ok = true;
#define SAME_INT(field, want)                                                                          \
    ok = expect_true(c.field == (want), #field ": %d, CleanRL's is %d", (int)c.field, (int)(want)) && ok
#define SAME_FLOAT(field, want)                                                                        \
    ok = expect_true(c.field == (want), #field ": %.9g, CleanRL's is %.9g", (double)c.field, (double)(want)) && ok
    SAME_FLOAT(lr, 2.5e-4f);
    SAME_INT(anneal_lr, 1);
    SAME_FLOAT(adam_eps, 1e-5f);
    SAME_INT(num_envs, 4);
    SAME_INT(num_steps, 128);
    SAME_FLOAT(gamma, 0.99f);
    SAME_FLOAT(gae_lambda, 0.95f);
    SAME_INT(update_epochs, 4);
    SAME_INT(num_minibatches, 4);
    SAME_FLOAT(clip_coef, 0.2f);
    SAME_INT(clip_vloss, 1);
    SAME_FLOAT(vf_coef, 0.5f);
    SAME_FLOAT(ent_coef, 0.01f);
    SAME_FLOAT(max_grad_norm, 0.5f);
    SAME_INT(total_steps, 500000);
    SAME_INT(hidden, 64);
    SAME_INT(norm_adv, 1);
    /* Not CleanRL options but part of the struct: off and neutral by default. */
    SAME_FLOAT(target_kl, 0.0f);
    SAME_FLOAT(reward_scale, 1.0f);
#undef SAME_INT
#undef SAME_FLOAT
    /* The struct has exactly these 19 fields (a new one must be added here). */
    ok = expect_true(sizeof(PpoConfig) == 19 * 4, "sizeof(PpoConfig) %zu: a field was added or removed; pin its "
                     "default in this check", sizeof(PpoConfig)) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ bad settings */

static void body_config(void *arg) {
    PpoConfig c = ppo_config_defaults();
    switch ((int)(intptr_t)arg) {
    case 0: c.num_minibatches = 3; break;   /* 512 is not divisible by 3 */
    case 1: c.total_steps = 100; break;     /* less than one rollout */
    case 2: c.lr = -1; break;
    case 3: c.gamma = 1.5f; break;
    default: c.num_envs = 0; break;
    }
    ppo_config_check(&c);
}

static int check_bad_config(void) {
    const char *words[][2] = {{"--num-minibatches 3", "512"}, {"--steps 100", "one rollout"}, {"--lr", "positive"},
                              {"--gamma", "[0, 1]"},           {"--num-envs", "got 0"}};
    bool ok = true;
    for (int i = 0; i < 5; i++) {
        ChildResult r;
        run_child(body_config, (void *)(intptr_t)i, &r);
        ok = expect_exit(words[i][0], &r, 1, words[i][0], words[i][1], (const char *)NULL) && ok;
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("rl/ppo");
    check_run(NULL, "categorical policy: log-probs, entropy, PPO losses and gradients as PyTorch's autograd", check_categorical_reference, 10);
    check_run(NULL, "Gaussian policy: log-probs, entropy and gradients as PyTorch's autograd", check_gaussian_reference, 10);
    check_run(NULL, "GAE with terminations and truncations as PyTorch (bootstrapped truncations)", check_gae_reference, 10);
    check_run(NULL, "GAE worked out by hand", check_gae_by_hand, 10);
    check_run(NULL, "advantage normalisation as torch.std; explained variance", check_normalize, 10);
    check_run(NULL, "the whole loss against finite differences (value loss clipped and not)", check_loss_fd, 10);
    check_run(NULL, "Gaussian policy loss against finite differences (means, log std)", check_gaussian_fd, 10);
    check_run(NULL, "sampling follows the distributions; modes; logits of +-1000", check_sampling, 20);
    check_run(NULL, "mini-batches gather the rollout's rows", check_minibatch_gather, 10);
    check_run(NULL, "values: next row, V(last observation) where truncated, 0 where terminated", check_values, 20);
    check_run(NULL, "three updates: the same bits twice and on 2 threads; another seed differs", check_deterministic, 60);
    check_run(NULL, "CartPole: the mean return rises above 100 in 60 small updates", check_cartpole_learns, 60);
    check_run(NULL, "Pendulum: the Gaussian policy's log std learns; target_kl stops the epochs", check_pendulum_and_target_kl, 20);
    check_run(NULL, "defaults are CleanRL's: lr 2.5e-4 annealed, eps 1e-5, 4 x 128, 0.99/0.95, 4 x 4, clip 0.2, ...", check_cleanrl_defaults, 10);
    check_run(NULL, "bad settings stop with the option's name (exit 1)", check_bad_config, 10);
    return check_end();
}
