/* Optimisers with PyTorch's update rules and defaults, so the same hyper-parameters
 * give the same training here as in the seeds' PyTorch scripts.
 *
 *   SGD  (torch.optim.SGD):   g += wd*p;  buf = momentum*buf + g (buf = g at step 1);
 *                             p -= lr*buf
 *   Adam (torch.optim.Adam):  g += wd*p;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2;
 *                             p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
 *   AdamW: as Adam, but p *= 1 - lr*wd instead of g += wd*p (decoupled decay).
 *
 * The state (momentum, m, v) is flat like the parameter list it was made for: one
 * buffer each, element k belonging to element k of params->values. A step is one
 * loop over all of them on the CPU, one kernel launch on the GPU (the parameters'
 * device picks which: lib/cuda/optim.h is the CUDA twin). */
#ifndef TRAIN_OPTIM_H
#define TRAIN_OPTIM_H

#include <stdbool.h>
#include <stdint.h>

#include "models/params.h"

typedef struct {
    float lr, momentum, weight_decay;
    int64_t step;
    Tensor buf; /* [params total] momentum buffer, on the parameters' device; none
                 * (empty) when momentum is 0 */
} Sgd;

void sgd_init(Sgd *opt, const ParamList *params, float lr, float momentum, float weight_decay);
void sgd_step(Sgd *opt, ParamList *params);
/* One SGD update of n values (p, g and the momentum buf on `device`), the first step's
 * rule when first_step: what sgd_step runs over the whole buffer, for a piece of it (a
 * ZeRO shard). */
void sgd_update_on(Device device, float *p, const float *g, float *buf, int64_t n, const Sgd *opt,
                   bool first_step);
void sgd_free(Sgd *opt);

typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    bool decoupled;             /* true: AdamW */
    int64_t step;               /* t, the number of updates so far */
    Tensor m, v;                /* [params total] first and second moments */
} Adam;

/* Adam with PyTorch's defaults: betas (0.9, 0.999), eps 1e-8, no weight decay. */
void adam_init(Adam *opt, const ParamList *params, float lr);
/* AdamW: Adam with decoupled weight decay (torch.optim.AdamW's default decay is 0.01). */
void adamw_init(Adam *opt, const ParamList *params, float lr, float weight_decay);
void adam_step(Adam *opt, ParamList *params);
void adam_free(Adam *opt);

/* One Adam update of n values at step t (t >= 1): the loop adam_step runs on the CPU. */
void adam_update(float *p, const float *g, float *m, float *v, int64_t n, const Adam *opt,
                 int64_t t);
/* The same on `device` (the CPU loop or one CUDA kernel): what adam_step runs over the
 * whole buffer, for a piece of it (a ZeRO shard). */
void adam_update_on(Device device, float *p, const float *g, float *m, float *v, int64_t n,
                    const Adam *opt, int64_t t);

#endif
