#include "optim.h"

#include <math.h>
#include <string.h>

#include "core/check.h"
#include "core/trace.h"
#include "cuda/optim.h"

/* Parameters below this many are updated on one thread (a parallel region costs more). */
enum { OPTIM_PARALLEL_MIN = 1 << 16 };

/* The optimiser state must cover exactly the list's buffers, on the same device. */
static void check_state(const Tensor *state, const ParamList *params, const char *what) {
    CHECK(state->size == params->total && state->device == params->values.device,
          "%s state has %lld values on the %s, the parameters %lld on the %s: initialise the "
          "optimiser after moving the model (and after params_allocate)", what,
          (long long)state->size, device_name(state->device), (long long)params->total,
          device_name(params->values.device));
}

void sgd_init(Sgd *opt, const ParamList *params, float lr, float momentum, float weight_decay) {
    memset(opt, 0, sizeof *opt);
    opt->lr = lr;
    opt->momentum = momentum;
    opt->weight_decay = weight_decay;
    /* plain SGD keeps no state (as torch.optim.SGD without momentum): a buffer as large
     * as the parameters would be memory spent for nothing (5.2 GB for a 1.3B model) */
    if (momentum != 0.0f) opt->buf = tensor_zeros_like(&params->values);
}

void sgd_update_on(Device device, float *p, const float *g, float *buf, int64_t n, const Sgd *opt,
                   bool first_step) {
    const float lr = opt->lr, wd = opt->weight_decay, momentum = opt->momentum;
    if (device != DEVICE_CPU) {
        cuda_sgd_update(p, g, buf, n, lr, momentum, wd, first_step);
        return;
    }
    /* element-wise: any split over threads gives the same bits */
#pragma omp parallel for simd schedule(static) if (parallel : n > OPTIM_PARALLEL_MIN)
    for (int64_t k = 0; k < n; k++) {
        float d = g[k] + wd * p[k];
        if (momentum != 0.0f) {
            buf[k] = first_step ? d : momentum * buf[k] + d;
            d = buf[k];
        }
        p[k] -= lr * d;
    }
}

void sgd_step(Sgd *opt, ParamList *params) {
    if (opt->momentum != 0.0f) check_state(&opt->buf, params, "SGD");
    CHECK_DEVICE(&params->grads, params->values.device);
    opt->step++;
    trace_begin("sgd step", TRACE_COMPUTE);
    sgd_update_on(params->values.device, params->values.data, params->grads.data, opt->buf.data,
                  params->total, opt, opt->step == 1);
    trace_end("sgd step");
}

void sgd_free(Sgd *opt) { tensor_free(&opt->buf); }

void adam_init(Adam *opt, const ParamList *params, float lr) {
    memset(opt, 0, sizeof *opt);
    opt->lr = lr;
    opt->beta1 = 0.9f;
    opt->beta2 = 0.999f;
    opt->eps = 1e-8f;
    opt->m = tensor_zeros_like(&params->values);
    opt->v = tensor_zeros_like(&params->values);
}

void adamw_init(Adam *opt, const ParamList *params, float lr, float weight_decay) {
    adam_init(opt, params, lr);
    opt->weight_decay = weight_decay;
    opt->decoupled = true;
}

void adam_update(float *p, const float *g, float *m, float *v, int64_t n, const Adam *opt,
                 int64_t t) {
    /* Every setting in a local: read through opt inside the loop, each would be loaded
     * again per element (a store to p, m or v might change it). */
    const float b1 = opt->beta1, b2 = opt->beta2, lr = opt->lr, eps = opt->eps;
    const float bias1 = 1.0f - powf(b1, (float)t);
    const float bias2_sqrt = sqrtf(1.0f - powf(b2, (float)t));
    const float step_size = lr / bias1;
    const float decay = opt->decoupled ? opt->weight_decay : 0.0f; /* AdamW: p shrinks first */
    const float l2 = opt->decoupled ? 0.0f : opt->weight_decay;    /* Adam: joins the gradient */
#pragma omp parallel for simd schedule(static) if (parallel : n > OPTIM_PARALLEL_MIN)
    for (int64_t k = 0; k < n; k++) {
        float grad = g[k];
        if (decay != 0.0f) p[k] *= 1.0f - lr * decay;
        if (l2 != 0.0f) grad += l2 * p[k];
        m[k] = b1 * m[k] + (1.0f - b1) * grad;
        v[k] = b2 * v[k] + (1.0f - b2) * grad * grad;
        p[k] -= step_size * m[k] / (sqrtf(v[k]) / bias2_sqrt + eps);
    }
}

void adam_update_on(Device device, float *p, const float *g, float *m, float *v, int64_t n,
                    const Adam *opt, int64_t t) {
    if (device == DEVICE_CPU) {
        adam_update(p, g, m, v, n, opt, t);
        return;
    }
    /* the bias corrections exactly as adam_update computes them */
    const float bias1 = 1.0f - powf(opt->beta1, (float)t);
    const float bias2_sqrt = sqrtf(1.0f - powf(opt->beta2, (float)t));
    cuda_adam_update(p, g, m, v, n, opt->beta1, opt->beta2, opt->lr / bias1, bias2_sqrt, opt->eps,
                     opt->lr, opt->weight_decay, opt->decoupled);
}

void adam_step(Adam *opt, ParamList *params) {
    check_state(&opt->m, params, "Adam");
    CHECK_DEVICE(&params->grads, params->values.device);
    opt->step++;
    trace_begin("adam step", TRACE_COMPUTE);
    adam_update_on(params->values.device, params->values.data, params->grads.data, opt->m.data,
                   opt->v.data, params->total, opt, opt->step);
    trace_end("adam step");
}

void adam_free(Adam *opt) {
    tensor_free(&opt->m);
    tensor_free(&opt->v);
}
