#include "ddp.h"

#include "core/check.h"
#include "core/timer.h"

static void start_bucket(Ddp *p, DdpBucket *b) {
    Tensor range = tensor_range(&p->params->grads, b->start, b->count);
    b->request = dist_all_reduce_start(p->dist, &range, DIST_AVG);
}

/* The model's backward has finished parameter q: its bucket may be complete. */
static void grad_ready(void *ctx, const Param *q) {
    Ddp *p = ctx;
    int i = 0;
    while (i < p->params->count && p->params->items[i] != q) i++;
    CHECK(i < p->params->count, "gradient of '%s', which is not in this model", q->name);
    DdpBucket *b = &p->buckets[p->bucket_of[i]];
    CHECK(b->waiting > 0, "the gradient of '%s' was reported twice in one backward (call "
          "ddp_finish_gradients after every backward)", q->name);
    if (--b->waiting == 0 && p->overlap) start_bucket(p, b);
    for (int k = 0; k < p->nbuckets; k++) /* MPI moves data only when asked: ask now */
        if (p->buckets[k].request) dist_test(p->dist, p->buckets[k].request);
}

void ddp_init(Ddp *p, Dist *dist, ParamList *params, double bucket_mb, bool overlap) {
    CHECK(params->values.data, "ddp_init before params_allocate");
    CHECK(bucket_mb > 0, "buckets of %g MB", bucket_mb);
    *p = (Ddp){.dist = dist, .params = params, .overlap = overlap};
    dist_check_same(dist, params->total, "the number of parameters (the model's size)");
    dist_check_same(dist, params->count, "the number of parameter tensors");
    const int64_t cap = (int64_t)(bucket_mb * 1e6 / sizeof(float));
    p->buckets = xcalloc((size_t)params->count, sizeof *p->buckets);
    p->bucket_of = xcalloc((size_t)params->count, sizeof *p->bucket_of);
    /* from the last parameter back: the order in which the backward finishes them */
    for (int i = params->count - 1; i >= 0; i--) {
        const Param *q = params->items[i];
        DdpBucket *b = &p->buckets[p->nbuckets ? p->nbuckets - 1 : 0];
        if (p->nbuckets == 0 || b->count >= cap) {
            b = &p->buckets[p->nbuckets++];
            b->start = q->offset + q->value.size;
        }
        b->start -= q->value.size; /* the bucket grows downwards in the buffer */
        b->count += q->value.size;
        b->params++;
        b->waiting++;
        p->bucket_of[i] = (int)(b - p->buckets);
    }
    params_listen(params, grad_ready, p);
}

void ddp_broadcast_params(Ddp *p) { dist_broadcast(p->dist, &p->params->values, 0); }

void ddp_finish_gradients(Ddp *p) {
    const double t0 = now_seconds();
    for (int k = 0; k < p->nbuckets; k++) {
        DdpBucket *b = &p->buckets[k];
        if (!b->request) {
            CHECK(!p->overlap || b->waiting > 0, "bucket %d complete but never started", k);
            start_bucket(p, b); /* not overlapped, or the model reports no gradients */
        }
    }
    for (int k = 0; k < p->nbuckets; k++) {
        dist_wait(p->dist, p->buckets[k].request);
        p->buckets[k].request = NULL;
    }
    p->exposed_s += now_seconds() - t0;
    p->steps++;
    for (int k = 0; k < p->nbuckets; k++) p->buckets[k].waiting = p->buckets[k].params;
}

void ddp_free(Ddp *p) {
    params_unlisten(p->params, grad_ready, p);
    xfree(p->buckets);
    xfree(p->bucket_of);
    *p = (Ddp){0};
}
