/* A model's parameters and their gradients as one named list (a "state dict"),
 * stored in two flat buffers: every parameter one after the other in `values`, every
 * gradient at the same offset in `grads`. Each Param is a named view into them.
 *
 *   ParamList list = {0};
 *   Param *w = params_add(&list, "fc.weight", 2, (int[]){50, 1200});
 *   Param *b = params_add(&list, "fc.bias", 1, (int[]){50});
 *   params_allocate(&list);          // one buffer each for values and grads (CPU)
 *   ... w->value, b->grad ...         // [50, 1200], [50]: views into the buffers
 *   params_to_device(&list, DEVICE_CUDA);   // both buffers move; the views follow
 *
 * So an optimiser step is one loop (or one kernel) over `values` and `grads`, the
 * gradient all-reduce is one call (or a few buckets) over `grads`, and the checkpoint
 * and a pipeline stage each walk one buffer. Names follow PyTorch's state_dict
 * ("conv1.weight", "fc2.bias"). Param pointers stay valid until params_free.
 *
 * Mixed precision: `values` stays the float32 master copy that the optimiser updates
 * (and its state, Adam's m and v, stays float32 beside it), as llm.c keeps them: an
 * update smaller than half a bfloat16 step (2^-8 of the weight) would be lost if the
 * weights themselves were 16-bit, step after step. The compute may read a 16-bit
 * working copy of the same layout instead, made from the master after each step:
 *
 *   params_set_working(&list, DTYPE_BF16);   // one flat buffer, p->work views into it
 *   ... forward/backward read p->work; the optimiser steps on values and grads ...
 *   params_refresh_working(&list);           // working = values rounded (one convert)
 *
 * The gradients stay float32 (see docs/mixed-precision.md). */
#ifndef MODELS_PARAMS_H
#define MODELS_PARAMS_H

#include <stdint.h>

#include "core/rng.h"
#include "core/tensor.h"

enum { PARAM_NAME_MAX = 64 };

typedef struct {
    char name[PARAM_NAME_MAX];
    Tensor value;   /* its shape, a view into the list's values (no data before allocation) */
    Tensor grad;    /* the same shape, a view into grads; backward passes add into it */
    int64_t offset; /* where it starts in values and in grads */
    Tensor work;    /* the same shape, 16-bit: a view into the list's working copy after
                     * params_set_working (else empty, data NULL) */
} Param;

/* Told by a model's backward as soon as a parameter's gradient is final: data-parallel
 * training starts reducing a bucket of gradients while the backward goes on. */
typedef void (*GradReadyFn)(void *ctx, const Param *p);

enum { PARAM_LISTENERS_MAX = 4 };

typedef struct {
    Param **items;        /* count parameters, in the order they were added */
    int count, capacity;
    int64_t total;        /* scalars in all of them */
    Tensor values, grads; /* [total] each, after params_allocate; [size] with gaps after
                           * params_set_layout (a ZeRO shard's padding) */
    Tensor working;       /* [the same size] bfloat16 or float16 after params_set_working:
                           * the values rounded for compute; empty (data NULL) before */
    struct {              /* who is told of each final gradient, in the order they listened */
        GradReadyFn fn;
        void *ctx;
    } listeners[PARAM_LISTENERS_MAX];
    int listener_count;
} ParamList;

/* Declares a parameter of the given shape (before params_allocate); returns it. */
Param *params_add(ParamList *list, const char *name, int ndim, const int *shape);
/* One zero-filled buffer for the values and one for the gradients, on the CPU. */
void params_allocate(ParamList *list);
Param *params_find(ParamList *list, const char *name);
void params_zero_grad(ParamList *list);      /* one fill of the grads buffer */
/* fn(ctx, p) for every gradient a backward finishes, from now until params_unlisten
 * (several listeners: data-parallel buckets, a trace, a sharded optimiser...). */
void params_listen(ParamList *list, GradReadyFn fn, void *ctx);
void params_unlisten(ParamList *list, GradReadyFn fn, void *ctx);
/* A model's backward calls this for each parameter whose gradient it has finished. */
static inline void params_grad_ready(const ParamList *list, const Param *p) {
    for (int i = 0; i < list->listener_count; i++) list->listeners[i].fn(list->listeners[i].ctx, p);
}
int64_t params_count(const ParamList *list); /* number of scalars */
/* Every value of p drawn uniformly from [-bound, bound] (PyTorch's Linear and Conv2d
 * initialise weight and bias so, with bound 1/sqrt(fan_in)). */
void param_uniform(Param *p, float bound, Rng *rng);
/* Lays the buffers out anew, on their device: parameter i at offset[i] of buffers of
 * `size` scalars (in order, not overlapping; the gaps zero), the values copied, the
 * gradients zeroed. A sharded strategy pads each block's parameters to a multiple of
 * the world size this way, so that its collectives run in place. */
void params_set_layout(ParamList *list, const int64_t *offset, int64_t size);
/* Moves both buffers to `device` (the values are copied, the gradients zeroed), and
 * the working copy if there is one (copied as it is). */
void params_to_device(ParamList *list, Device device);
/* Frees the buffers, the working copy and the parameters. */
void params_free(ParamList *list);

/* A working copy of dtype DTYPE_BF16 or DTYPE_F16 (stops with a message otherwise):
 * one flat buffer of the values' size on their device, a `work` view per parameter at
 * its offset, filled from the values (params_refresh_working). Called again, the copy
 * is made anew (of the new dtype). params_set_layout lays it out with the values and
 * refreshes it. */
void params_set_working(ParamList *list, DType dtype);
/* working = values rounded to its dtype (core/dtype.h: nearest even, the same bits on
 * the CPU and the GPU), one tensor_convert over the whole buffer, gaps included: after
 * every optimiser step, and after loading values (a checkpoint, a broadcast). */
void params_refresh_working(ParamList *list);

#endif
