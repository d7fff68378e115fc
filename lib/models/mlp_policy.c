#include "mlp_policy.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "layers/linear_small.h"
#include "layers/tanh.h"

/* ---------------------------------------------------------------- orthogonal init */

void orthogonal_init(float *w, int rows, int cols, float gain, Rng *rng) {
    CHECK(rows > 0 && cols > 0, "orthogonal_init: a %d x %d matrix", rows, cols);
    /* QR of a tall Gaussian matrix m [tall, wide] (w's transpose when w is wide); Gram-Schmidt
     * gives R a positive diagonal, which is PyTorch's q * sign(diag(r)) */
    const bool wide = rows < cols;
    const int tall = wide ? cols : rows, narrow = wide ? rows : cols;
    double *m = xcalloc((size_t)tall * narrow, sizeof *m); /* column j: m[j * tall ...] */
    for (int r = 0; r < rows; r++) /* drawn in w's row-major order, as PyTorch fills it */
        for (int c = 0; c < cols; c++) {
            const double g = rng_normal(rng);
            if (wide) m[(size_t)r * tall + c] = g; /* column r of w^T */
            else m[(size_t)c * tall + r] = g;      /* column c of w */
        }
    for (int j = 0; j < narrow; j++) {
        double *q = m + (size_t)j * tall;
        for (int pass = 0; pass < 2; pass++) /* twice: orthogonal to float precision */
            for (int i = 0; i < j; i++) {
                const double *qi = m + (size_t)i * tall;
                double dot = 0;
                for (int k = 0; k < tall; k++) dot += qi[k] * q[k];
                for (int k = 0; k < tall; k++) q[k] -= dot * qi[k];
            }
        double norm = 0;
        for (int k = 0; k < tall; k++) norm += q[k] * q[k];
        norm = sqrt(norm);
        CHECK(norm > 1e-12, "orthogonal_init: a degenerate Gaussian draw (column %d)", j);
        for (int k = 0; k < tall; k++) q[k] /= norm;
    }
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            w[(size_t)r * cols + c] = (float)(gain * (wide ? m[(size_t)r * tall + c] : m[(size_t)c * tall + r]));
    xfree(m);
}

/* ---------------------------------------------------------------- one network */

static void mlp_declare(Mlp *m, ParamList *list, const char *name, int in, int hidden, int out, int max_batch) {
    *m = (Mlp){.in = in, .hidden = hidden, .out = out, .max_batch = max_batch};
    const int sizes[3][2] = {{hidden, in}, {hidden, hidden}, {out, hidden}};
    for (int l = 0; l < 3; l++) {
        char pname[PARAM_NAME_MAX];
        snprintf(pname, sizeof pname, "%s.%d.weight", name, 2 * l);
        m->w[l] = params_add(list, pname, 2, sizes[l]);
        snprintf(pname, sizeof pname, "%s.%d.bias", name, 2 * l);
        m->b[l] = params_add(list, pname, 1, &sizes[l][0]);
    }
    for (int l = 0; l < 3; l++) m->wt[l] = xcalloc((size_t)sizes[l][0] * sizes[l][1], sizeof(float));
    m->wt_version = MLP_NO_VERSION;
    m->h1 = xcalloc((size_t)max_batch * hidden, sizeof(float));
    m->h2 = xcalloc((size_t)max_batch * hidden, sizeof(float));
    m->y = xcalloc((size_t)max_batch * out, sizeof(float));
    m->dh = xcalloc((size_t)max_batch * hidden, sizeof(float));
    m->dz = xcalloc((size_t)max_batch * hidden, sizeof(float));
}

static void mlp_init_values(Mlp *m, float head_gain, Rng *rng) {
    const float gains[3] = {sqrtf(2.0f), sqrtf(2.0f), head_gain};
    for (int l = 0; l < 3; l++) {
        Tensor *w = &m->w[l]->value;
        orthogonal_init(w->data, w->shape[0], w->shape[1], gains[l], rng);
        tensor_fill(&m->b[l]->value, 0.0f);
    }
}

static void mlp_free(Mlp *m) {
    float *bufs[] = {m->wt[0], m->wt[1], m->wt[2], m->h1, m->h2, m->y, m->dh, m->dz};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) xfree(bufs[i]);
    memset(m, 0, sizeof *m);
}

/* The forward on the transposed weights m->wt, as they are. */
static const float *forward_t(Mlp *m, const float *x, int batch) {
    CHECK(batch >= 1 && batch <= m->max_batch, "mlp_forward: batch of %d, room for 1 to %d", batch, m->max_batch);
    const int H = m->hidden;
    const int64_t nh = (int64_t)batch * H;
#define LAYER(l) m->w[l]->value.data, m->wt[l], m->b[l]->value.data
    linear_small_forward_t(m->h1, x, LAYER(0), batch, m->in, H);
    tanh_values(m->h1, m->h1, nh);
    linear_small_forward_t(m->h2, m->h1, LAYER(1), batch, H, H);
    tanh_values(m->h2, m->h2, nh);
    linear_small_forward_t(m->y, m->h2, LAYER(2), batch, H, m->out);
#undef LAYER
    return m->y;
}

static void transpose_all(Mlp *m) {
    const int sizes[3][2] = {{m->in, m->hidden}, {m->hidden, m->hidden}, {m->hidden, m->out}}; /* [in, out] */
    for (int l = 0; l < 3; l++) linear_small_transpose(m->wt[l], m->w[l]->value.data, sizes[l][0], sizes[l][1]);
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
    const int H = m->hidden;
    const size_t bytes = (size_t)batch * H * sizeof(float);
    const int64_t nh = (int64_t)batch * H;
#define GRADS(l) m->w[l]->grad.data, m->b[l]->grad.data
    memset(m->dh, 0, bytes); /* dh = dL/dh2 */
    linear_small_backward(m->dh, GRADS(2), dy, m->h2, m->w[2]->value.data, batch, H, m->out);
    memset(m->dz, 0, bytes); /* dz = dL/d(h2 before tanh) */
    tanh_backward_values(m->dz, m->dh, m->h2, nh);
    memset(m->dh, 0, bytes); /* dh = dL/dh1 */
    linear_small_backward(m->dh, GRADS(1), m->dz, m->h1, m->w[1]->value.data, batch, H, H);
    memset(m->dz, 0, bytes);
    tanh_backward_values(m->dz, m->dh, m->h1, nh);
    linear_small_backward(NULL, GRADS(0), m->dz, x, m->w[0]->value.data, batch, m->in, H);
#undef GRADS
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
    mlp_declare(&p->critic, &p->params, "critic", obs_dim, hidden, 1, max_batch);
    mlp_declare(&p->actor, &p->params, continuous ? "actor_mean" : "actor", obs_dim, hidden, actor_out, max_batch);
    if (continuous) p->logstd = params_add(&p->params, "actor_logstd", 2, (int[]){1, actor_out});
    params_allocate(&p->params);
    mlp_init_values(&p->critic, 1.0f, rng);
    mlp_init_values(&p->actor, 0.01f, rng);
    /* actor_logstd starts at 0 (standard deviation 1): params_allocate zeroed it */
}

void mlp_policy_free(MlpPolicy *p) {
    mlp_free(&p->critic);
    mlp_free(&p->actor);
    params_free(&p->params);
    memset(p, 0, sizeof *p);
}
