/* Data-parallel training (PyTorch's DistributedDataParallel, in C): every rank holds the
 * whole model, trains on its own share of each batch, and the ranks average their
 * gradients before each optimiser step, so all of them take the same step.
 *
 *   Ddp ddp;
 *   ddp_init(&ddp, dist, &model.params, 25.0, true);   // buckets of 25 MB, overlapped
 *   ddp_broadcast_params(&ddp);                        // rank 0's weights everywhere
 *   for each step:
 *       forward, loss
 *       params_zero_grad(&model.params);
 *       cnn_backward(...);          // buckets start their all-reduce as they fill up
 *       ddp_finish_gradients(&ddp); // the rest, then wait: every rank has the average
 *       adam_step(...);
 *
 * The gradients are one flat buffer (models/params.h), cut into buckets of about
 * bucket_mb megabytes in reverse parameter order, the order the backward finishes
 * them: each bucket is a contiguous range of the buffer and one all-reduce. With
 * overlap, a bucket is reduced (non-blocking) as soon as the backward has finished
 * all its parameters, while the layers before it still compute. */
#ifndef PARALLEL_DDP_H
#define PARALLEL_DDP_H

#include <stdbool.h>
#include <stdint.h>

#include "dist/dist.h"
#include "models/params.h"

typedef struct {
    int64_t start, count;   /* the range of the gradient buffer */
    int params;             /* parameters in it */
    int waiting;            /* those whose gradients are not final yet in this backward */
    DistRequest *request;   /* its all-reduce, while in flight */
} DdpBucket;

typedef struct {
    Dist *dist;
    ParamList *params;
    bool overlap;           /* reduce buckets during the backward (else all after it) */
    DdpBucket *buckets;     /* nbuckets, the first one ends the buffer */
    int nbuckets;
    int *bucket_of;         /* [params->count] the bucket of each parameter */
    double exposed_s;       /* time waited for communication after the backward, summed */
    int64_t steps;
} Ddp;

/* Checks that every rank has the same parameters (count and sizes), then cuts the
 * gradient buffer into buckets and listens to the model's backward. */
void ddp_init(Ddp *p, Dist *dist, ParamList *params, double bucket_mb, bool overlap);
/* Rank 0's parameter values to every rank: the same starting point everywhere. */
void ddp_broadcast_params(Ddp *p);
/* After the backward: starts the buckets not started yet, waits for all of them;
 * then every rank's gradients are the average over the ranks. */
void ddp_finish_gradients(Ddp *p);
void ddp_free(Ddp *p);

#endif
