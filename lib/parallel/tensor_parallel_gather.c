/* The whole model from a tensor-parallel (and pipelined) run's slices: its digest, which
 * every layout can print, one parameter at a time; and the whole model itself, for tests
 * that compare a run with the unsplit one. */
#include <string.h>

#include "core/check.h"
#include "parallel/tensor_parallel_slices.h"
#include "train/checkpoint.h"

/* A host tensor's collective on a communicator whose backend reduces device memory only
 * (NCCL, or the single backend on a GPU) goes through a copy there. */
static void all_gather_host(Dist *d, Tensor *all, const Tensor *mine) {
    if (d->device == DEVICE_CPU) {
        dist_all_gather(d, all, mine);
        return;
    }
    Tensor a = tensor_to(all, d->device), m = tensor_to(mine, d->device);
    dist_all_gather(d, &a, &m);
    tensor_copy(all, &a);
    tensor_free(&a), tensor_free(&m);
}

static void broadcast_host(Dist *d, Tensor *t, int root) {
    if (d->device == DEVICE_CPU) {
        dist_broadcast(d, t, root);
        return;
    }
    Tensor there = tensor_to(t, d->device);
    dist_broadcast(d, &there, root);
    tensor_copy(t, &there);
    tensor_free(&there);
}

/* The whole parameter's rows and columns (a [n] one: n x 1) from a slice's. */
static void whole_shape(const TensorParallel *tp, TpSplit split, const Tensor *local, int *rows,
                        int *cols) {
    const int lr = local->shape[0], lc = (int)(local->size / lr);
    *rows = split == TP_WORDS ? tp->vocab : split == TP_REPLICATED || split == TP_COLUMNS ? lr : lr * tp->t;
    *cols = split == TP_COLUMNS ? lc * tp->t : lc;
}

/* The group's slices of one parameter in host memory (whole [rows * cols], zeros where
 * nothing is), put where tp_slice_layout says. */
static void assemble(TensorParallel *tp, TpSplit split, const Param *local, Tensor *whole) {
    Tensor mine = tensor_to(&local->value, DEVICE_CPU);
    Tensor all = tensor_zeros(1, (int)(mine.size * tp->t)); /* rank r's slice at r * size */
    all_gather_host(tp->group, &all, &mine);
    const int lr = mine.shape[0], lc = (int)(mine.size / lr);
    int rows, wc;
    whole_shape(tp, split, &mine, &rows, &wc);
    const Tensor shape = block_shape(2, rows, wc);
    int *rows_of = xmalloc((size_t)lr * sizeof *rows_of), col0;
    for (int r = 0; r < (split == TP_REPLICATED ? 1 : tp->t); r++) {
        tp_slice_layout(tp, split, &shape, &mine, r, rows_of, &col0);
        const float *piece = all.data + (size_t)r * mine.size;
        for (int i = 0; i < lr; i++)
            if (rows_of[i] >= 0)
                memcpy(whole->data + (size_t)rows_of[i] * wc + col0, piece + (size_t)i * lc,
                       sizeof(float) * (size_t)lc);
    }
    xfree(rows_of);
    tensor_free(&all);
    tensor_free(&mine);
}

void tensor_parallel_gather(TensorParallel *tp, const ParamList *local, BlockList *whole,
                            Dist *pipe, const int *first_block) {
    CHECK(whole->params->values.device == DEVICE_CPU, "the whole model is gathered into host memory");
    CHECK(tp->split_count == local->count, "the parameters (%d) are not the sharded model's (%d)",
          local->count, tp->split_count);
    for (int i = 0; i < local->count; i++) {
        const Param *p = local->items[i];
        Param *w = params_find(whole->params, p->name);
        CHECK(w != NULL, "the whole model has no parameter %s", p->name);
        assemble(tp, tp->split[i], p, &w->value);
    }
    if (!pipe || pipe->world_size == 1) return;
    for (int s = 0; s < pipe->world_size; s++) { /* stage s's parameters: one range of the buffer */
        const Block *a = &whole->items[first_block[s]];
        const Block *z = &whole->items[first_block[s + 1] - 1];
        const Param *last = whole->params->items[z->first_param + z->params - 1];
        const int64_t start = whole->params->items[a->first_param]->offset;
        Tensor range = tensor_range(&whole->params->values, start, last->offset + last->value.size - start);
        broadcast_host(pipe, &range, s);
    }
}

uint64_t tensor_parallel_digest(TensorParallel *tp, const ParamList *local, Dist *pipe) {
    CHECK(tp->split_count == local->count, "the parameters (%d) are not the sharded model's (%d)",
          local->count, tp->split_count);
    const int stages = pipe ? pipe->world_size : 1, mine = pipe ? pipe->rank : 0;
    double *sizes = xmalloc((size_t)stages * sizeof *sizes);
    uint64_t h = 0; /* params_digest's chain: one hash per parameter, in the model's order */
    for (int s = 0; s < stages; s++) {
        if (pipe) dist_all_gather_double(pipe, s == mine ? local->count : 0, sizes);
        const int count = pipe ? (int)sizes[s] : local->count;
        for (int i = 0; i < count; i++) {
            double size = 0;
            Tensor whole = {0};
            if (s == mine) {
                int rows, cols;
                whole_shape(tp, tp->split[i], &local->items[i]->value, &rows, &cols);
                whole = tensor_zeros(1, (int)((int64_t)rows * cols));
                assemble(tp, tp->split[i], local->items[i], &whole);
                size = (double)whole.size;
            }
            if (pipe) { /* the other stages learn its size, then its values */
                dist_all_gather_double(pipe, size, sizes);
                if (s != mine) whole = tensor_zeros(1, (int)sizes[s]);
                broadcast_host(pipe, &whole, s);
            }
            h = ckpt_hash64(whole.data, (size_t)whole.size * 4, h);
            tensor_free(&whole);
        }
    }
    xfree(sizes);
    return h;
}
