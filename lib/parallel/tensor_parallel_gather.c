/* The whole model from a tensor-parallel (and pipelined) run's slices: for digests
 * that every layout can print, and for tests that compare a run with the unsplit one. */
#include <string.h>

#include "core/check.h"
#include "parallel/tensor_parallel_slices.h"

/* whole = the group's slices of one parameter, put where tp_slice_layout says. */
static void assemble(TensorParallel *tp, TpSplit split, const Param *local, Param *whole) {
    Tensor mine = tensor_to(&local->value, DEVICE_CPU);
    Tensor all = tensor_zeros(1, (int)(mine.size * tp->t)); /* rank r's slice at r * size */
    dist_all_gather(tp->group, &all, &mine);
    const int lr = mine.shape[0], lc = (int)(mine.size / lr);
    const int wc = (int)(whole->value.size / whole->value.shape[0]);
    int *rows_of = xmalloc((size_t)lr * sizeof *rows_of), col0;
    for (int r = 0; r < (split == TP_REPLICATED ? 1 : tp->t); r++) {
        tp_slice_layout(tp, split, &whole->value, &mine, r, rows_of, &col0);
        const float *piece = all.data + (size_t)r * mine.size;
        for (int i = 0; i < lr; i++)
            if (rows_of[i] >= 0)
                memcpy(whole->value.data + (size_t)rows_of[i] * wc + col0,
                       piece + (size_t)i * lc, sizeof(float) * (size_t)lc);
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
        assemble(tp, tp->split[i], p, w);
    }
    if (!pipe || pipe->world_size == 1) return;
    for (int s = 0; s < pipe->world_size; s++) { /* stage s's parameters: one range of the buffer */
        const Block *a = &whole->items[first_block[s]];
        const Block *z = &whole->items[first_block[s + 1] - 1];
        const Param *last = whole->params->items[z->first_param + z->params - 1];
        const int64_t start = whole->params->items[a->first_param]->offset;
        Tensor range = tensor_range(&whole->params->values, start, last->offset + last->value.size - start);
        dist_broadcast(pipe, &range, s);
    }
}
