/* The actor and critic of PPO as CleanRL writes them: two separate multi-layer
 * perceptrons, each  in -> 64 -> tanh -> 64 -> tanh -> out,
 *
 *   critic: observation [obs_dim] -> V(s) [1]
 *   actor:  observation [obs_dim] -> logits [num_actions]   (discrete actions)
 *                                 -> means [action_dim]     (continuous), with one
 *           learned log standard deviation per component, actor_logstd [1, action_dim]
 *
 * Parameters carry PyTorch's names in CleanRL's order ("critic.0.weight", "critic.0.bias",
 * "critic.2.weight", ..., "actor.4.bias", or "actor_mean.*" and "actor_logstd"), in one
 * ParamList: one Adam, one clipping norm and one checkpoint for both networks.
 * Initialisation as CleanRL's layer_init: orthogonal weights (torch.nn.init.orthogonal_)
 * with gain sqrt(2) for the hidden layers, 0.01 for the actor's last layer (every action
 * about equally likely at first) and 1 for the critic's; biases 0; log std 0.
 *
 * Shapes are [batch, features], rows are samples. A forward keeps its activations for
 * the backward that follows it (one batch at a time per network); the backward adds the
 * gradients into the ParamList's grads. Nothing allocates after mlp_policy_init, so the
 * training loop runs without malloc. A policy stays where it was made (its networks'
 * blocks point to its ParamList). */
#ifndef MODELS_MLP_POLICY_H
#define MODELS_MLP_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/rng.h"
#include "models/block.h"
#include "models/mlp_block.h"
#include "models/params.h"

/* One network: in -> hidden -> tanh -> hidden -> tanh -> out, three blocks
 * (models/mlp_block.h) named as an nn.Sequential's layers 0, 2 and 4. */
typedef struct {
    int in, hidden, out, max_batch;
    BlockList blocks;   /* its activations for up to max_batch rows */
    int64_t wt_version; /* the weights' version the blocks' W^T were made for (mlp_forward_cached) */
} Mlp;

typedef struct {
    ParamList params; /* every parameter of both networks: one values and one grads buffer */
    Mlp critic, actor;
    Param *logstd;    /* continuous actions: actor_logstd [1, action_dim]; NULL for discrete */
    bool continuous;
    int obs_dim, actor_out; /* actor_out: num_actions (discrete) or action_dim */
} MlpPolicy;

/* Both networks, their parameters initialised from rng (critic first, as CleanRL), room
 * for batches of up to max_batch rows. */
void mlp_policy_init(MlpPolicy *p, int obs_dim, int actor_out, bool continuous, int hidden, int max_batch,
                     Rng *rng);
void mlp_policy_free(MlpPolicy *p);

/* y [batch, out] of x [batch, in]; returns m->y (valid until the next forward). */
const float *mlp_forward(Mlp *m, const float *x, int batch);
/* The same for many small batches while the weights stay put (a rollout's steps between
 * two updates): the transposed weights the products run on are made only when version
 * differs from the last call's. version: a number that changes whenever the weights do
 * (PPO passes Adam's step count); never MLP_NO_VERSION. */
const float *mlp_forward_cached(Mlp *m, const float *x, int batch, int64_t version);
#define MLP_NO_VERSION INT64_MIN
/* After mlp_forward(m, x, batch): the parameters' grads += d(loss)/d(parameters), given
 * dy = d(loss)/dy [batch, out] (the same batch as the forward's). */
void mlp_backward(Mlp *m, const float *x, const float *dy, int batch);

#endif
