/* Lesson 05: proximal policy optimisation (PPO). The functions you write, and what they
 * work on.
 *
 * The library (lib/rl/ppo.h) holds the whole training state in a Ppo: the vectorised
 * environments (p->env), the actor and critic (p->policy), Adam (p->opt), the rollout
 * buffer (p->buf), one mini-batch (p->mb) and the random streams. Each of your functions
 * has a twin in the library that the grader compares it with (declared, with what it
 * computes, in the header named here):
 *
 *   TODO 5.1 lesson_collect_rollout   ppo_collect           (lib/rl/ppo.h)
 *   TODO 5.2 lesson_gae               gae                   (lib/rl/gae.h)
 *   TODO 5.3 lesson_policy_loss       ppo_policy_loss       (lib/rl/ppo_loss.h)
 *   TODO 5.4 lesson_value_loss        ppo_value_loss        (lib/rl/ppo_loss.h)
 *   TODO 5.5 lesson_entropy_bonus     ppo_entropy_bonus     (lib/rl/ppo_loss.h)
 *   TODO 5.6 lesson_update            ppo_update            (lib/rl/ppo.h)
 *
 * Write them yourself: the grader fails a TODO that calls its twin. Once your checks
 * pass, compare with the library's code: lib/rl/ppo_collect.c, gae.c, ppo_loss.c,
 * distributions.c (the entropy's gradient) and ppo_update.c.
 *
 * Arrays of a rollout are [T, N]: step t of environment i at t * N + i (T = num_steps,
 * N = num_envs). Gradients are added (+=), never assigned, as everywhere in the course. */
#ifndef LESSON05_H
#define LESSON05_H

#include <stdint.h>

#include "core/check.h"
#include "core/todo.h"
#include "rl/ppo.h"

#define LESSON_DIR "lessons/05-ppo"
#define TODO_STOP(id) todo_stop(id, LESSON_DIR, __func__)

/* TODO 5.1 (rollout.c): num_steps steps of every environment with the current policy,
 * each step's transition stored in p->buf; p->buf.next_obs: where the rollout stopped. */
void lesson_collect_rollout(Ppo *p);

/* TODO 5.2 (gae.c): advantages [T, N] and returns [T, N] by generalised advantage
 * estimation (lib/rl/gae.h has the formulas). */
void lesson_gae(float *advantages, float *returns, const float *rewards, const float *values,
                const float *next_values, const uint8_t *terminated, const uint8_t *truncated, int T, int N,
                float gamma, float lambda);

/* TODO 5.3 (loss.c): the clipped surrogate objective of n samples: returns the mean
 * loss, adds its gradient d loss / d logp into dlogp [n], fills *stats (approx_kl,
 * old_approx_kl, clip_fraction). */
float lesson_policy_loss(float *dlogp, PpoPolicyStats *stats, const float *logp, const float *old_logp,
                         const float *advantages, int n, float clip_coef);

/* TODO 5.4 (loss.c): the clipped value loss: returns 1/2 mean max(unclipped, clipped
 * squared error) (unclipped when clip_coef <= 0), adds vf_coef * d loss / d value into
 * dvalue [n]. */
float lesson_value_loss(float *dvalue, const float *value, const float *old_value, const float *returns, int n,
                        float clip_coef, float vf_coef);

/* TODO 5.5 (loss.c): the entropy bonus of the categorical policies with logits
 * [n, num_actions]: returns the mean entropy, adds -ent_coef * d(mean entropy)/d logits
 * into dlogits [n, num_actions]. */
float lesson_entropy_bonus(float *dlogits, const float *logits, int n, int num_actions, float ent_coef);

/* TODO 5.6 (update.c): the update: update_epochs passes over the rollout in shuffled
 * mini-batches, one Adam step each; the means of the mini-batches' losses in *stats. */
void lesson_update(Ppo *p, PpoUpdateStats *stats);

/* Given (loss.c): your three loss functions, in the form p->losses takes. */
extern const PpoLosses LESSON_LOSSES;

/* Given (program.c): the whole program; main() calls it. */
int lesson_main(int argc, char **argv);

#endif
