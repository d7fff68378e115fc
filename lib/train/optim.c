#include "optim.h"

#include <math.h>
#include <string.h>

#include "core/check.h"

void sgd_init(Sgd *opt, const ParamList *params, float lr, float momentum, float weight_decay) {
    memset(opt, 0, sizeof *opt);
    opt->lr = lr;
    opt->momentum = momentum;
    opt->weight_decay = weight_decay;
    for (int i = 0; i < params->count; i++) opt->buf[i] = tensor_zeros_like(&params->items[i].value);
}

void sgd_step(Sgd *opt, ParamList *params) {
    opt->step++;
    for (int i = 0; i < params->count; i++) {
        float *p = params->items[i].value.data, *buf = opt->buf[i].data;
        const float *g = params->items[i].grad.data;
        for (int64_t k = 0; k < params->items[i].value.size; k++) {
            float d = g[k] + opt->weight_decay * p[k];
            if (opt->momentum != 0.0f) {
                buf[k] = opt->step == 1 ? d : opt->momentum * buf[k] + d;
                d = buf[k];
            }
            p[k] -= opt->lr * d;
        }
    }
}

void sgd_free(Sgd *opt) {
    for (int i = 0; i < PARAMS_MAX; i++)
        if (opt->buf[i].data) tensor_free(&opt->buf[i]);
}

void adam_init(Adam *opt, const ParamList *params, float lr) {
    memset(opt, 0, sizeof *opt);
    opt->lr = lr;
    opt->beta1 = 0.9f;
    opt->beta2 = 0.999f;
    opt->eps = 1e-8f;
    for (int i = 0; i < params->count; i++) {
        opt->m[i] = tensor_zeros_like(&params->items[i].value);
        opt->v[i] = tensor_zeros_like(&params->items[i].value);
    }
}

void adam_update(float *p, const float *g, float *m, float *v, int64_t n, const Adam *opt,
                 int64_t t) {
    const float b1 = opt->beta1, b2 = opt->beta2;
    const float bias1 = 1.0f - powf(b1, (float)t);
    const float bias2_sqrt = sqrtf(1.0f - powf(b2, (float)t));
    const float step_size = opt->lr / bias1;
    const float wd = opt->weight_decay;
    for (int64_t k = 0; k < n; k++) {
        float grad = g[k];
        if (wd != 0.0f) {
            if (opt->decoupled) p[k] *= 1.0f - opt->lr * wd;
            else grad += wd * p[k];
        }
        m[k] = b1 * m[k] + (1.0f - b1) * grad;
        v[k] = b2 * v[k] + (1.0f - b2) * grad * grad;
        p[k] -= step_size * m[k] / (sqrtf(v[k]) / bias2_sqrt + opt->eps);
    }
}

void adam_step(Adam *opt, ParamList *params) {
    opt->step++;
    for (int i = 0; i < params->count; i++) {
        Param *q = &params->items[i];
        CHECK(opt->m[i].size == q->value.size, "Adam state %d does not match parameter '%s'", i,
              q->name);
        adam_update(q->value.data, q->grad.data, opt->m[i].data, opt->v[i].data, q->value.size,
                    opt, opt->step);
    }
}

void adam_free(Adam *opt) {
    for (int i = 0; i < PARAMS_MAX; i++) {
        if (opt->m[i].data) tensor_free(&opt->m[i]);
        if (opt->v[i].data) tensor_free(&opt->v[i]);
    }
}
