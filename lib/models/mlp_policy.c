#include "mlp_policy.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "models/mlp_block.h"

/* ---------------------------------------------------------------- one network */

static void mlp_declare(Mlp *m, ParamList *list, const char *name, int in, int hidden, int out,
                        float head_gain, int max_batch) {
    *m = (Mlp){.in = in, .hidden = hidden, .out = out, .max_batch = max_batch,
               .wt_version = MLP_NO_VERSION};
    blocks_init(&m->blocks, list, layer_ops(DEVICE_CPU), 0, 3, max_batch, 1);
    const int sizes[3][2] = {{in, hidden}, {hidden, hidden}, {hidden, out}}; /* [in, out] */
    for (int l = 0; l < 3; l++) {
        char prefix[PARAM_NAME_MAX];
        snprintf(prefix, sizeof prefix, "%s.%d", name, 2 * l);
        mlp_block_add(&m->blocks, prefix, sizes[l][0], sizes[l][1], l < 2, l < 2 ? sqrtf(2.0f) : head_gain);
    }
}

static void transpose_all(Mlp *m) {
    for (int l = 0; l < 3; l++) mlp_block_transpose(&m->blocks.items[l]);
}

/* The forward on the blocks' W^T, as they are. */
static const float *forward_t(Mlp *m, const float *x, int batch) {
    CHECK(batch >= 1 && batch <= m->max_batch, "mlp_forward: batch of %d, room for 1 to %d", batch, m->max_batch);
    blocks_set_batch(&m->blocks, batch, 1);
    const Tensor in = {.data = (float *)x, .ndim = 2, .shape = {batch, m->in}, .size = (int64_t)batch * m->in};
    return blocks_forward(&m->blocks, &m->blocks.acts, 0, 3, NULL, &in)->data;
}

const float *mlp_forward(Mlp *m, const float *x, int batch) {
    transpose_all(m);
    m->wt_version = MLP_NO_VERSION; /* made for weights of no known version */
    return forward_t(m, x, batch);
}

const float *mlp_forward_cached(Mlp *m, const float *x, int batch, int64_t version) {
    CHECK(version != MLP_NO_VERSION, "mlp_forward_cached: version MLP_NO_VERSION is reserved");
    if (version != m->wt_version) {
        transpose_all(m);
        m->wt_version = version;
    }
    return forward_t(m, x, batch);
}

void mlp_backward(Mlp *m, const float *x, const float *dy, int batch) {
    CHECK(batch >= 1 && batch <= m->max_batch, "mlp_backward: batch of %d, room for 1 to %d", batch, m->max_batch);
    const Tensor in = {.data = (float *)x, .ndim = 2, .shape = {batch, m->in}, .size = (int64_t)batch * m->in};
    const Tensor dout = {.data = (float *)dy, .ndim = 2, .shape = {batch, m->out}, .size = (int64_t)batch * m->out};
    blocks_backward(&m->blocks, &m->blocks.acts, 0, 3, &dout, &in, NULL); /* no gradient for x */
}

/* ---------------------------------------------------------------- the policy */

void mlp_policy_init(MlpPolicy *p, int obs_dim, int actor_out, bool continuous, int hidden, int max_batch,
                     Rng *rng) {
    CHECK(obs_dim > 0 && actor_out > 0 && hidden > 0 && max_batch > 0,
          "mlp_policy_init: obs_dim %d, actor_out %d, hidden %d, max_batch %d", obs_dim, actor_out, hidden,
          max_batch);
    memset(p, 0, sizeof *p);
    p->obs_dim = obs_dim;
    p->actor_out = actor_out;
    p->continuous = continuous;
    /* gains: sqrt(2) for the hidden layers, 1 for the critic's head, 0.01 for the actor's */
    mlp_declare(&p->critic, &p->params, "critic", obs_dim, hidden, 1, 1.0f, max_batch);
    mlp_declare(&p->actor, &p->params, continuous ? "actor_mean" : "actor", obs_dim, hidden, actor_out,
                0.01f, max_batch);
    if (continuous) p->logstd = params_add(&p->params, "actor_logstd", 2, (int[]){1, actor_out});
    params_allocate(&p->params);
    Mlp *nets[2] = {&p->critic, &p->actor}; /* critic first, as CleanRL draws them */
    for (int n = 0; n < 2; n++) {
        for (int l = 0; l < 3; l++) nets[n]->blocks.items[l].type->init(&nets[n]->blocks.items[l], rng);
        blocks_allocate(&nets[n]->blocks);
    }
    /* actor_logstd starts at 0 (standard deviation 1): params_allocate zeroed it */
}

void mlp_policy_free(MlpPolicy *p) {
    blocks_free(&p->critic.blocks);
    blocks_free(&p->actor.blocks);
    params_free(&p->params);
    memset(p, 0, sizeof *p);
}
