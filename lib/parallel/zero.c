#include "zero.h"

#include <math.h>

#include "core/check.h"
#include "core/timer.h"
#include "parallel/zero_internal.h"
#include "train/clip.h"

/* ---------------------------------------------------------------- the library's parts */

static ZeroRange library_shard_range(int64_t n, int world, int rank) {
    ZeroRange r = {.piece = (n + world - 1) / world};
    r.padded = r.piece * world;
    r.start = r.piece * rank;
    const int64_t end = r.start + r.piece < n ? r.start + r.piece : n;
    r.own = end > r.start ? end - r.start : 0;
    return r;
}

static DistRequest *library_reduce_gradients(Dist *d, Tensor *piece, Tensor *full) {
    return dist_reduce_scatter_start(d, piece, full, DIST_AVG);
}

static void library_step(Zero *z) {
    const int64_t t = z->optimizer == ZERO_ADAMW ? ++z->adam.step : ++z->sgd.step;
    for (int k = 0; k < z->nunits; k++) zero_update_piece(z, &z->units[k], t);
}

static DistRequest *library_gather_params(Dist *d, Tensor *full, const Tensor *piece) {
    return dist_all_gather_start(d, full, piece);
}

/* Stage 3: a block's parameters there for each pass, the next block's on their way. */
static void library_stage3_hook(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after) {
    (void)l;
    Zero *z = ctx;
    ZeroUnit *u = zero_unit_of(z, b);
    if (!u) return;
    if (after) {
        zero_release(z, u);
        return;
    }
    zero_await(z, u);
    const int next = (int)(u - z->units) + (pass == BLOCK_FORWARD ? 1 : -1);
    if (next >= 0 && next < z->nunits) zero_gather(z, &z->units[next]);
}

const ZeroOps ZERO_LIBRARY = {library_shard_range, library_reduce_gradients, library_step,
                              library_gather_params, library_stage3_hook};

/* ---------------------------------------------------------------- views */

Tensor zero_param_piece(Zero *z, const ZeroUnit *u) {
    if (z->stage == 3) return tensor_range(&z->shard_values, u->local, u->piece);
    return tensor_range(&z->params->values, u->start + z->dist->rank * u->piece, u->piece);
}

Tensor zero_gather_piece(Zero *z, const ZeroUnit *u) {
    if (z->shard_working.raw) return tensor_range(&z->shard_working, u->local, u->piece);
    return zero_param_piece(z, u);
}

void zero_refresh_shard_working(Zero *z) {
    if (z->shard_working.raw) tensor_convert(&z->shard_working, &z->shard_values);
}

Tensor zero_grad_piece(Zero *z, const ZeroUnit *u) {
    if (z->stage == 1) return tensor_range(&z->params->grads, u->start + z->dist->rank * u->piece, u->piece);
    return tensor_range(&z->shard_grads, u->local, u->piece);
}

Tensor zero_state_piece(Zero *z, const ZeroUnit *u, int which) {
    CHECK(which == 0 || (which == 1 && z->optimizer == ZERO_ADAMW), "optimiser state %d of %s",
          which, z->optimizer == ZERO_ADAMW ? "AdamW (0: m, 1: v)" : "SGD (0: momentum)");
    Tensor *t = z->optimizer == ZERO_SGD ? &z->sgd.buf : which == 0 ? &z->adam.m : &z->adam.v;
    CHECK(t->data, "the optimiser's state before zero_optimizer_adamw or zero_optimizer_sgd");
    return tensor_range(t, u->local, u->piece);
}

Tensor zero_param_range(Zero *z, const ZeroUnit *u) {
    CHECK(z->stage < 3, "stage 3 keeps no whole parameter buffer (zero_await gathers a block)");
    return tensor_range(&z->params->values, u->start, u->piece * z->dist->world_size);
}

void zero_update_piece(Zero *z, const ZeroUnit *u, int64_t t) {
    Tensor p = zero_param_piece(z, u), g = zero_grad_piece(z, u), m = zero_state_piece(z, u, 0);
    if (z->optimizer == ZERO_SGD) {
        sgd_update_on(z->device, p.data, g.data, m.data, u->piece, &z->sgd, t == 1);
        return;
    }
    Tensor v = zero_state_piece(z, u, 1);
    adam_update_on(z->device, p.data, g.data, m.data, v.data, u->piece, &z->adam, t);
}

ZeroUnit *zero_unit_of(Zero *z, const Block *b) {
    const int i = b->index - z->blocks->first;
    CHECK(i >= 0 && i < z->blocks->count, "block %d is not in this model", b->index);
    return z->unit_of_block[i] < 0 ? NULL : &z->units[z->unit_of_block[i]];
}

/* Points unit u's parameter values (or gradients) at `base` + their place in its range;
 * NULL: at nothing (stage 3 between passes). */
/* ---------------------------------------------------------------- making it */

static void check_same_model(Zero *z) {
    dist_check_same(z->dist, z->psi, "the number of parameters (the model's size)");
    dist_check_same(z->dist, z->params->count, "the number of parameter tensors");
    dist_check_same(z->dist, z->blocks->count, "the number of blocks");
    dist_check_same(z->dist, z->stage, "the ZeRO stage (--stage)");
}

/* One unit per block with parameters; their ranges padded to N pieces, in order. */
static void make_units(Zero *z) {
    BlockList *l = z->blocks;
    const int W = z->dist->world_size, rank = z->dist->rank;
    z->units = xcalloc((size_t)l->count, sizeof *z->units);
    z->unit_of_block = xcalloc((size_t)l->count, sizeof *z->unit_of_block);
    int64_t *offset = xcalloc((size_t)z->params->count, sizeof *offset);
    int covered = 0;
    for (int i = 0; i < l->count; i++) {
        const Block *b = &l->items[i];
        z->unit_of_block[i] = -1;
        if (b->params == 0) continue;
        CHECK(b->first_param == covered, "block '%s' declares parameters %d.. but %d came before: "
              "ZeRO needs each block's parameters in one run", b->name, b->first_param, covered);
        ZeroUnit *u = &z->units[z->nunits];
        *u = (ZeroUnit){.block = b->index, .first_param = b->first_param, .params = b->params,
                        .start = z->padded, .local = z->shard, .window = -1};
        for (int q = b->first_param; q < b->first_param + b->params; q++) {
            offset[q] = z->padded + u->size;
            u->size += z->params->items[q]->value.size;
        }
        const ZeroRange r = z->ops->shard_range(u->size, W, rank);
        CHECK(r.piece * W == r.padded && r.padded >= u->size && r.padded < u->size + W &&
              r.start == r.piece * rank && r.own >= 0 && r.own <= r.piece,
              "shard_range(%lld scalars, %d ranks, rank %d) gave piece %lld, padded %lld, start "
              "%lld, own %lld: not N equal pieces covering the range", (long long)u->size, W, rank,
              (long long)r.piece, (long long)r.padded, (long long)r.start, (long long)r.own);
        u->piece = r.piece, u->own = r.own;
        z->padded += r.padded;
        z->shard += r.piece;
        if (r.padded > z->window_size) z->window_size = r.padded;
        z->unit_of_block[i] = z->nunits++;
        covered += b->params;
    }
    CHECK(covered == z->params->count, "%d of the model's %d parameters belong to no block: ZeRO "
          "shards blocks", z->params->count - covered, z->params->count);
    params_set_layout(z->params, offset, z->padded);
    xfree(offset);
}

static Tensor zeros(Zero *z, int64_t n) {
    CHECK(n <= INT32_MAX, "a buffer of %lld scalars", (long long)n);
    return tensor_zeros_on(z->device, 1, (int)n);
}

void zero_init(Zero *z, Dist *dist, BlockList *blocks, int stage, const ZeroOps *ops) {
    CHECK(stage >= 1 && stage <= 3, "ZeRO stage %d: 1, 2 or 3 (0 is plain data parallel: ddp.h)", stage);
    CHECK(blocks->params && blocks->params->values.data, "zero_init before the model's parameters exist");
    /* 16 bits: stages 1 and 2 keep the parameters whole on every rank, and with them the
     * model's working copy, rounded again after each step's all-gather (zero_step). Stage
     * 3 keeps a rounded copy of its float32 shard and gathers that, 16-bit, into each
     * block's window for its pass: the blocks read only their weights' working copy, so
     * the float32 values are never gathered (half the bytes of a float32 model's gather).
     * fp16's loss scaling unscales params->grads, which stage 2 does not keep whole
     * (docs/mixed-precision.md). */
    if (blocks->dtype == DTYPE_F16)
        fatal("ZeRO runs float32 or bfloat16 models: this one computes in float16, whose loss "
              "scaling divides the whole gradient buffer, which ZeRO shards (use bf16 or fp32)");
    CHECK(blocks->dtype == DTYPE_F32 || (blocks->params->working.raw &&
                                         blocks->params->working.dtype == blocks->dtype),
          "a %s model without a %s working copy of its parameters (transformer_set_precision)",
          dtype_name(blocks->dtype), dtype_name(blocks->dtype));
    *z = (Zero){.dist = dist, .stage = stage, .ops = ops, .blocks = blocks, .params = blocks->params,
                .device = blocks->params->values.device, .psi = blocks->params->total};
    check_same_model(z);
    dist_broadcast(dist, &z->params->values, 0); /* rank 0's model everywhere, before sharding */
    if (blocks->dtype != DTYPE_F32) params_refresh_working(z->params); /* its 16-bit copy too */
    make_units(z);
    for (int k = 0; k < 2; k++) {
        z->grad_windows[k] = (ZeroWindow){.unit = -1};
        z->param_windows[k] = (ZeroWindow){.unit = -1};
    }
    z->memory.params = z->memory.grads = 4 * z->padded;
    if (stage >= 2) {
        z->shard_grads = zeros(z, z->shard);
        for (int k = 0; k < 2; k++) z->grad_windows[k].data = zeros(z, z->window_size);
        tensor_free(&z->params->grads);
        for (int i = 0; i < z->params->count; i++) z->params->items[i]->grad.data = NULL;
        z->memory.grads = 4 * z->shard;
        z->memory.windows += 2 * 4 * z->window_size;
        blocks_add_hook(blocks, zero_gradient_hook, z);
    }
    if (stage == 3) {
        z->shard_values = zeros(z, z->shard);
        for (int k = 0; k < z->nunits; k++) {
            const ZeroUnit *u = &z->units[k];
            Tensor mine = tensor_range(&z->params->values, u->start + dist->rank * u->piece, u->piece);
            Tensor to = zero_param_piece(z, u);
            tensor_copy(&to, &mine);
        }
        const DType wt = blocks->dtype; /* what the windows hold: what the blocks read */
        CHECK(z->window_size <= INT32_MAX, "a window of %lld scalars", (long long)z->window_size);
        for (int k = 0; k < 2; k++)
            z->param_windows[k].data = tensor_zeros_typed(z->device, wt, 1, (int)z->window_size);
        tensor_free(&z->params->values);
        for (int i = 0; i < z->params->count; i++) z->params->items[i]->value.data = NULL;
        z->memory.params = 4 * z->shard;
        if (wt != DTYPE_F32) { /* the whole model's working copy gives way to the shard's */
            z->shard_working = tensor_zeros_typed(z->device, wt, 1, (int)z->shard);
            zero_refresh_shard_working(z);
            tensor_free(&z->params->working);
            for (int i = 0; i < z->params->count; i++) z->params->items[i]->work.raw = NULL;
            z->memory.working = (int64_t)dtype_size(wt) * z->shard;
        }
        z->memory.windows += 2 * (int64_t)dtype_size(wt) * z->window_size;
        blocks_add_hook(blocks, ops->stage3_hook, z);
        blocks_add_hook(blocks, zero_stage3_guard, z);
    }
}

void zero_optimizer_adamw(Zero *z, float lr, float weight_decay) {
    z->optimizer = ZERO_ADAMW;
    z->adam = (Adam){.lr = lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                     .weight_decay = weight_decay, .decoupled = true};
    z->adam.m = zeros(z, z->shard);
    z->adam.v = zeros(z, z->shard);
    z->memory.optim = 8 * z->shard;
}

void zero_optimizer_sgd(Zero *z, float lr, float momentum, float weight_decay) {
    z->optimizer = ZERO_SGD;
    z->sgd = (Sgd){.lr = lr, .momentum = momentum, .weight_decay = weight_decay};
    z->sgd.buf = zeros(z, z->shard);
    z->memory.optim = 4 * z->shard;
}

void zero_free(Zero *z) {
    for (int k = 0; k < z->nunits; k++) zero_release(z, &z->units[k]);
    for (int k = 0; k < 2; k++) {
        zero_wait_timed(z, &z->grad_windows[k].pending);
        tensor_free(&z->grad_windows[k].data);
        tensor_free(&z->param_windows[k].data);
    }
    if (z->stage >= 2) blocks_remove_hook(z->blocks, zero_gradient_hook, z);
    if (z->stage == 3) {
        blocks_remove_hook(z->blocks, zero_stage3_guard, z);
        blocks_remove_hook(z->blocks, z->ops->stage3_hook, z);
    }
    tensor_free(&z->shard_values);
    tensor_free(&z->shard_working);
    tensor_free(&z->shard_grads);
    tensor_free(&z->adam.m), tensor_free(&z->adam.v), tensor_free(&z->sgd.buf);
    xfree(z->units);
    xfree(z->unit_of_block);
    *z = (Zero){0};
}

/* ---------------------------------------------------------------- a step */

void zero_begin_step(Zero *z) {
    CHECK(!z->in_step, "zero_begin_step twice without zero_finish_gradients");
    if (z->stage == 1) params_zero_grad(z->params);
    z->in_step = true;
}

void zero_finish_gradients(Zero *z) {
    CHECK(z->in_step, "zero_finish_gradients without zero_begin_step");
    const double t0 = now_seconds();
    if (z->stage == 1) { /* all after the backward: one reduce-scatter per block, in place */
        DistRequest **r = xcalloc((size_t)z->nunits, sizeof *r);
        for (int k = z->nunits - 1; k >= 0; k--) {
            Tensor full = tensor_range(&z->params->grads, z->units[k].start, z->units[k].piece * z->dist->world_size);
            Tensor piece = zero_grad_piece(z, &z->units[k]);
            r[k] = zero_start_reduce(z, &piece, &full);
        }
        for (int k = z->nunits - 1; k >= 0; k--) dist_wait(z->dist, r[k]);
        xfree(r);
        z->exposed_s += now_seconds() - t0;
    } else { /* stages 2, 3: started by the hooks; the last ones may still be in flight */
        for (int k = 0; k < 2; k++) {
            zero_wait_timed(z, &z->grad_windows[k].pending);
            z->grad_windows[k].unit = -1;
        }
    }
    z->in_step = false;
}

float zero_clip(Zero *z, float max_norm) {
    CHECK(max_norm > 0.0f, "zero_clip with max_norm %g: it must be positive", (double)max_norm);
    double sq = 0;
    for (int k = 0; k < z->nunits; k++) {
        const Tensor g = zero_grad_piece(z, &z->units[k]);
        sq += grad_sum_squares(&g);
    }
    const float norm = (float)sqrt(dist_sum_double(z->dist, sq));
    const float coef = max_norm / (norm + 1e-6f); /* clip_grad_norm's rule */
    if (!(coef < 1.0f) && !isnan(coef)) return norm;
    for (int k = 0; k < z->nunits; k++) {
        Tensor g = zero_grad_piece(z, &z->units[k]);
        tensor_scale(&g, coef);
    }
    return norm;
}

void zero_step(Zero *z) {
    CHECK(!z->in_step, "zero_step before zero_finish_gradients");
    CHECK(z->adam.m.data || z->sgd.buf.data, "zero_step before zero_optimizer_adamw or _sgd");
    /* a block a hook left gathered holds the values of before the step: dropped, so the
     * next pass gathers the new ones */
    for (int k = 0; z->stage == 3 && k < z->nunits; k++) zero_release(z, &z->units[k]);
    z->ops->step(z);
    if (z->stage == 3) { /* the shard is the parameters: the next forward gathers */
        zero_refresh_shard_working(z);
        return;
    }
    const double t0 = now_seconds();
    DistRequest **r = xcalloc((size_t)z->nunits, sizeof *r);
    for (int k = 0; k < z->nunits; k++) {
        Tensor full = zero_param_range(z, &z->units[k]);
        Tensor piece = zero_param_piece(z, &z->units[k]);
        r[k] = zero_start_gather(z, &full, &piece);
    }
    for (int k = 0; k < z->nunits; k++) dist_wait(z->dist, r[k]);
    xfree(r);
    z->exposed_s += now_seconds() - t0;
    if (z->blocks->dtype != DTYPE_F32) params_refresh_working(z->params); /* the new values, rounded */
}
