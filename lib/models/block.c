#include "block.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/trace.h"
#include "layers/rounded.h"

static Tensor shape_of(DType dtype, int ndim, va_list ap) {
    CHECK(ndim >= 1 && ndim <= TENSOR_MAX_DIMS, "a shape of %d dimensions", ndim);
    Tensor t = {.ndim = ndim, .size = 1, .dtype = dtype};
    for (int i = 0; i < ndim; i++) t.shape[i] = va_arg(ap, int), t.size *= t.shape[i];
    return t;
}

Tensor block_shape(int ndim, ...) {
    va_list ap;
    va_start(ap, ndim);
    const Tensor t = shape_of(DTYPE_F32, ndim, ap);
    va_end(ap);
    return t;
}

Tensor block_shape_typed(DType dtype, int ndim, ...) {
    va_list ap;
    va_start(ap, ndim);
    const Tensor t = shape_of(dtype, ndim, ap);
    va_end(ap);
    return t;
}

const Tensor *block_param(const Block *b, const Param *p) {
    if (b->dtype == DTYPE_F32) return &p->value;
    if (!p->work.raw || p->work.dtype != b->dtype)
        fatal("block '%s' runs in %s, and parameter %s has %s: make the model's working copy "
              "with params_set_working(&params, %s) (transformer_set_precision does)", b->name,
              dtype_name(b->dtype), p->name,
              p->work.raw ? dtype_name(p->work.dtype) : "no 16-bit working copy",
              b->dtype == DTYPE_BF16 ? "DTYPE_BF16" : "DTYPE_F16");
    return &p->work;
}

/* A zero-filled tensor of a shape-only tensor's shape and dtype, on the device. */
static Tensor zeros_like_shape(Device device, const Tensor *s) {
    Tensor where = *s;
    where.device = device;
    return tensor_zeros_like(&where);
}

/* Scratch views start on 256-byte boundaries, as separate cudaMalloc allocations would
 * (cuBLAS may pick its kernels by the pointers' alignment): a view's bytes, rounded up. */
static int64_t padded(const Tensor *view) { return ((int64_t)tensor_bytes(view) + 255) / 256 * 256; }

static Block *item(const BlockList *l, int index) {
    CHECK(index >= l->first && index < l->first + l->count,
          "block %d: this model holds blocks %d to %d", index, l->first, l->first + l->count - 1);
    return &l->items[index - l->first];
}

void blocks_init(BlockList *l, ParamList *params, const LayerOps *layers, int first, int total,
                 int B_max, int T_max) {
    CHECK(B_max >= 1 && T_max >= 1 && first >= 0 && first < total,
          "blocks from %d of %d for batches of %d x %d", first, total, B_max, T_max);
    memset(l, 0, sizeof *l);
    l->params = params, l->layers = layers, l->device = layers->device;
    l->first = first, l->total = total, l->training = true;
    l->B_max = l->B = B_max, l->T_max = l->T = T_max;
}

Block *blocks_add(BlockList *l, const BlockType *type, void *state, const char *name, int first_param) {
    CHECK(l->acts.count == 0, "block '%s' added after blocks_allocate", name);
    CHECK(type->saved && type->input && type->forward && type->backward && type->flops && type->init,
          "block type '%s' lacks one of saved, input, forward, backward, flops, init", type->kind);
    CHECK(l->first + l->count < l->total, "block '%s' is one more than the model's %d", name, l->total);
    if (l->count == l->capacity) {
        const int cap = l->capacity ? 2 * l->capacity : 8;
        Block *items = xcalloc((size_t)cap, sizeof *items);
        if (l->count) memcpy(items, l->items, (size_t)l->count * sizeof *items);
        xfree(l->items);
        l->items = items, l->capacity = cap;
    }
    Block *b = &l->items[l->count];
    CHECK(l->dtype == DTYPE_F32 || type->sixteen_bit, "block '%s' (%s) runs in float32 only, "
          "and the list runs in %s", name, type->kind, dtype_name(l->dtype));
    *b = (Block){.type = type, .state = state, .index = l->first + l->count,
                 .first_param = first_param, .params = l->params->count - first_param,
                 .dtype = l->dtype};
    snprintf(b->name, sizeof b->name, "%s", name);
    l->count++;
    return b;
}

/* ---------------------------------------------------------------- activations */

Tensor *blocks_saved(const BlockList *l, BlockActs *a, int index) {
    return &a->saved[(size_t)(item(l, index) - l->items) * BLOCK_SAVED_MAX];
}

void blocks_acts_init(const BlockList *l, BlockActs *a) {
    memset(a, 0, sizeof *a);
    a->count = l->count;
    a->saved = xcalloc((size_t)l->count * BLOCK_SAVED_MAX, sizeof *a->saved);
    a->saved_count = xcalloc((size_t)l->count, sizeof *a->saved_count);
    a->host = xcalloc((size_t)l->count, sizeof *a->host);
    for (int i = 0; i < l->count; i++) {
        const Block *b = &l->items[i];
        if (b->type->host_bytes) a->host[i] = xcalloc(1, b->type->host_bytes);
        Tensor *t = &a->saved[(size_t)i * BLOCK_SAVED_MAX];
        const int n = b->type->saved(b, l->B_max, l->T_max, t);
        CHECK(n >= 1 && n <= BLOCK_SAVED_MAX, "block '%s' keeps %d activations", b->name, n);
        for (int j = 0; j < n; j++) {
            t[j] = zeros_like_shape(l->device, &t[j]);
            a->bytes += (int64_t)tensor_bytes(&t[j]);
        }
        a->saved_count[i] = n;
    }
    a->B = l->B_max, a->T = l->T_max;
}

void blocks_acts_free(BlockActs *a) {
    for (int i = 0; i < a->count; i++) {
        for (int j = 0; j < a->saved_count[i]; j++) tensor_free(&a->saved[(size_t)i * BLOCK_SAVED_MAX + j]);
        if (a->host) xfree(a->host[i]);
    }
    xfree(a->saved), xfree(a->saved_count), xfree(a->host);
    memset(a, 0, sizeof *a);
}

/* Every activation of a reshaped for B x T: a prefix of its buffer, which stays put. */
static void shape_acts(const BlockList *l, BlockActs *a, int B, int T) {
    CHECK(a->count == l->count, "activations of %d blocks for a model of %d", a->count, l->count);
    if (a->B == B && a->T == T) return;
    Tensor shapes[BLOCK_SAVED_MAX];
    for (int i = 0; i < l->count; i++) {
        const Block *b = &l->items[i];
        const int n = b->type->saved(b, B, T, shapes);
        for (int j = 0; j < n; j++) {
            Tensor *t = &a->saved[(size_t)i * BLOCK_SAVED_MAX + j];
            t->ndim = shapes[j].ndim, t->size = shapes[j].size;
            memcpy(t->shape, shapes[j].shape, sizeof t->shape);
        }
    }
    a->B = B, a->T = T;
}

/* ---------------------------------------------------------------- set-up */

static int64_t scratch_bytes(const Block *b, int B, int T) {
    if (!b->type->scratch) return 0;
    Tensor shapes[BLOCK_SAVED_MAX];
    const int n = b->type->scratch(b, B, T, shapes);
    CHECK(n >= 0 && n <= BLOCK_SAVED_MAX, "block '%s' asks for %d scratch tensors", b->name, n);
    int64_t bytes = 0;
    for (int j = 0; j < n; j++) bytes += padded(&shapes[j]);
    return bytes;
}

void blocks_allocate(BlockList *l) {
    CHECK(l->count > 0 && l->acts.count == 0, "blocks_allocate of %s",
          l->count ? "a list allocated before" : "an empty list");
    blocks_acts_init(l, &l->acts);
    int64_t work = 0, grad = 0;
    for (int i = 0; i < l->count; i++) {
        const Block *b = &l->items[i];
        const int64_t w = scratch_bytes(b, l->B_max, l->T_max);
        work = w > work ? w : work;
        Tensor in;
        b->type->input(b, l->B_max, l->T_max, &in);
        if (i > 0 && in.ndim > 0) grad = in.size > grad ? in.size : grad; /* items[0]'s: din */
    }
    work /= (int64_t)sizeof(float); /* a float32 buffer of those bytes (multiples of 256) */
    CHECK(work <= INT32_MAX && grad <= INT32_MAX, "scratch of %lld floats and gradients between "
          "blocks of %lld elements: more than a tensor holds", (long long)work, (long long)grad);
    if (work) l->work = tensor_zeros_on(l->device, 1, (int)work);
    if (l->loss) { /* the loss's gradient: the last block's output shape (and dtype) */
        Tensor out;
        blocks_output_shape(l, l->first + l->count - 1, l->B_max, l->T_max, &out);
        l->dloss = zeros_like_shape(l->device, &out);
    }
    l->work_views = xcalloc((size_t)l->count * BLOCK_SAVED_MAX, sizeof *l->work_views);
    /* between blocks: the gradients of activations, in the list's dtype */
    for (int k = 0; grad && k < 2; k++) l->grad[k] = tensor_zeros_typed(l->device, l->dtype, 1, (int)grad);
}

/* Its own buffers given back (the blocks and their tables stay): before they are made
 * anew in another dtype. */
static void free_buffers(BlockList *l) {
    blocks_acts_free(&l->acts);
    tensor_free(&l->work), tensor_free(&l->grad[0]), tensor_free(&l->grad[1]);
    tensor_free(&l->dloss), tensor_free(&l->dloss32);
    xfree(l->work_views);
    l->views_B = l->views_T = 0;
}

void blocks_set_precision(BlockList *l, DType dtype) {
    CHECK(dtype == DTYPE_F32 || dtype == DTYPE_BF16 || dtype == DTYPE_F16, "a precision of dtype %d",
          (int)dtype);
    for (int i = 0; i < l->count; i++)
        if (dtype != DTYPE_F32 && !l->items[i].type->sixteen_bit)
            fatal("block '%s' (%s) runs in float32 only: it cannot run in %s", l->items[i].name,
                  l->items[i].type->kind, dtype_name(dtype));
    if (l->dtype == dtype) return;
    const bool allocated = l->acts.count > 0;
    if (allocated) {
        CHECK(l->pinned == 0, "the model's precision changes while a strategy (a pipeline) holds "
              "buffers made for it: set the precision first");
        free_buffers(l);
    }
    l->dtype = dtype;
    for (int i = 0; i < l->count; i++) l->items[i].dtype = dtype;
    if (allocated) blocks_allocate(l);
}

void blocks_free(BlockList *l) {
    CHECK(l->pinned == 0, "a model freed while a strategy (a pipeline) still holds its buffers: "
          "free that first");
    for (int i = 0; i < l->count; i++) {
        Block *b = &l->items[i];
        if (b->type->free) b->type->free(b);
        else xfree(b->state);
    }
    free_buffers(l);
    xfree(l->items);
    if (l->dtype != DTYPE_F32) rounded_release(); /* the CPU's 16-bit scratch (this thread's) */
    memset(l, 0, sizeof *l);
}

/* A buffer to `device`; one never allocated (a list without scratch, a one-block list's
 * gradients between blocks) stays empty. */
static void move(Tensor *t, Device device) {
    if (!t->raw) return;
    Tensor moved = tensor_to(t, device);
    tensor_free(t);
    *t = moved;
}

void blocks_to_device(BlockList *l, Device device) {
    if (l->device == device) return;
    CHECK(l->pinned == 0, "the model moves to the %s while a strategy (a pipeline) holds buffers "
          "made for it on the %s: move the model first", device_name(device), device_name(l->device));
    for (int i = 0; i < l->count; i++)
        if (l->items[i].type->to_device) l->items[i].type->to_device(&l->items[i], device);
    l->device = device;
    if (l->acts.count) { /* contents are scratch: new buffers, as large as at the start */
        blocks_acts_free(&l->acts);
        blocks_acts_init(l, &l->acts);
    }
    move(&l->work, device), move(&l->grad[0], device), move(&l->grad[1], device);
    move(&l->dloss, device), move(&l->dloss32, device);
    l->views_B = l->views_T = 0; /* laid out again in the new buffer */
}

void blocks_set_batch(BlockList *l, int B, int T) {
    if (B < 1 || B > l->B_max || T < 1 || T > l->T_max)
        fatal("a batch of %d x %d: the model was built for 1 to %d sequences of 1 to %d "
              "tokens", B, T, l->B_max, l->T_max);
    l->B = B, l->T = T;
}

/* ---------------------------------------------------------------- running */

static void hooks(BlockList *l, Block *b, BlockPass pass, bool after) {
    for (int i = 0; i < l->hook_count; i++) l->hooks[i].fn(l->hooks[i].ctx, l, b, pass, after);
}

/* Block i's scratch for B x T, laid out in the list's buffer; every block's, made again
 * only when the batch changes (a step's passes, PPO's many small ones, reuse them). */
static Tensor *scratch_views(BlockList *l, int i, int B, int T) {
    if (l->views_B != B || l->views_T != T) {
        for (int k = 0; k < l->count; k++) {
            const Block *b = &l->items[k];
            Tensor *views = &l->work_views[(size_t)k * BLOCK_SAVED_MAX];
            const int n = b->type->scratch ? b->type->scratch(b, B, T, views) : 0;
            unsigned char *p = l->work.raw;
            for (int j = 0; j < n; j++) {
                views[j].raw = p, views[j].device = l->device;
                p += padded(&views[j]);
            }
        }
        l->views_B = B, l->views_T = T;
    }
    return &l->work_views[(size_t)i * BLOCK_SAVED_MAX];
}

static void check_range(const BlockList *l, int first, int last) {
    CHECK(first >= l->first && last <= l->first + l->count && first < last,
          "blocks [%d, %d) outside the model's [%d, %d)", first, last, l->first, l->first + l->count);
}

/* Whether block `first` reads ids; else `in` must be its input for B x T, on the device. */
static bool reads_ids(const BlockList *l, int first, int B, int T, const Tensor *in) {
    const Block *b = item(l, first);
    Tensor want;
    b->type->input(b, B, T, &want);
    if (want.ndim == 0) return true;
    CHECK(in, "block %d (%s)'s input is missing", first, b->name);
    if (!tensor_same_shape(in, &want)) {
        char got[64], exp[64];
        die_at(__FILE__, __LINE__, "block %d (%s) takes %s, given %s", first, b->name,
               tensor_shape_str(&want, exp, 64), tensor_shape_str(in, got, 64));
    }
    CHECK_DEVICE(in, l->device);
    if (in->dtype != want.dtype)
        die_at(__FILE__, __LINE__, "block %d (%s) takes %s, given %s", first, b->name,
               dtype_name(want.dtype), dtype_name(in->dtype));
    return false;
}

const Tensor *blocks_forward_host(BlockList *l, BlockActs *a, const int *ids) {
    const Block *b = &l->items[0];
    Tensor want;
    b->type->input(b, l->B, l->T, &want);
    CHECK(want.ndim == 0 && ids, "blocks_forward_host: block %d (%s) does not read ids",
          l->first, b->name);
    shape_acts(l, a, l->B, l->T);
    a->ids = ids;
    return &blocks_saved(l, a, l->first + l->count - 1)[0];
}

const Tensor *blocks_forward(BlockList *l, BlockActs *a, int first, int last, const int *ids,
                             const Tensor *in) {
    check_range(l, first, last);
    shape_acts(l, a, l->B, l->T);
    if (reads_ids(l, first, l->B, l->T, in)) {
        CHECK(ids, "block %d (%s) reads ids, and none were given", first, item(l, first)->name);
        a->ids = ids;
    }
    const Tensor *x = in;
    for (int k = first; k < last; k++) {
        const int i = k - l->first;
        Block *b = &l->items[i];
        const BlockCall c = {.ops = l->layers, .device = l->device, .B = l->B, .T = l->T,
                             .training = l->training, .rng = &b->rng,
                             .saved = &a->saved[(size_t)i * BLOCK_SAVED_MAX], .in = x,
                             .ids = a->ids, .work = scratch_views(l, i, l->B, l->T),
                             .host = a->host[i]};
        hooks(l, b, BLOCK_FORWARD, false);
        b->type->forward(b, &c);
        hooks(l, b, BLOCK_FORWARD, true);
        x = &c.saved[0];
    }
    return x;
}

void blocks_backward(BlockList *l, BlockActs *a, int first, int last, const Tensor *dout,
                     const Tensor *in, Tensor *din) {
    check_range(l, first, last);
    CHECK_SAME_SHAPE(dout, &blocks_saved(l, a, last - 1)[0]);
    if (reads_ids(l, first, a->B, a->T, in))
        CHECK(!din, "block %d (%s) reads ids: it has no input gradient", first, item(l, first)->name);
    else if (din)
        CHECK_SAME_SHAPE(din, in);
    /* between blocks, the gradient goes to one of two buffers in turn, so that a block
     * never reads what it writes */
    Tensor between[2];
    const Tensor *g = dout;
    for (int k = last - 1, turn = 0; k >= first; k--, turn ^= 1) {
        const int i = k - l->first;
        Block *b = &l->items[i];
        const Tensor *x = k == first ? in : &a->saved[(size_t)(i - 1) * BLOCK_SAVED_MAX];
        Tensor *target = din;
        if (k > first) { /* the input's gradient: the previous block's output's shape */
            CHECK(x->dtype == l->grad[turn].dtype, "block %d's input is %s in a %s list", k,
                  dtype_name(x->dtype), dtype_name(l->grad[turn].dtype));
            between[turn] = l->grad[turn];
            between[turn].ndim = x->ndim, between[turn].size = x->size;
            memcpy(between[turn].shape, x->shape, sizeof x->shape);
            tensor_fill(&between[turn], 0.0f);
            target = &between[turn];
        }
        const BlockCall c = {.ops = l->layers, .device = l->device, .B = a->B, .T = a->T,
                             .training = l->training, .rng = &b->rng,
                             .saved = &a->saved[(size_t)i * BLOCK_SAVED_MAX], .in = x,
                             .ids = a->ids, .work = scratch_views(l, i, a->B, a->T), .dout = g,
                             .din = target, .host = a->host[i]};
        hooks(l, b, BLOCK_BACKWARD, false);
        b->type->backward(b, &c);
        for (int j = b->params - 1; j >= 0; j--) /* final: data parallel may reduce them */
            params_grad_ready(l->params, l->params->items[b->first_param + j]);
        hooks(l, b, BLOCK_BACKWARD, true);
        g = target;
    }
}

/* l->dloss32, made on first use (a 16-bit pipeline's last stage, blocks_loss_f32): [2n]
 * float32, n the loss gradient's elements at B_max x T_max; the first half holds the
 * logits read as float32, the second the float32 gradient. */
static void need_dloss32(BlockList *l, int64_t n) {
    if (l->dloss32.raw) return;
    if (l->dloss.raw) n = l->dloss.size;
    CHECK(2 * n <= INT32_MAX, "a loss gradient of %lld elements", (long long)n);
    l->dloss32 = tensor_zeros_on(l->device, 1, (int)(2 * n));
}

/* A float32 view of dloss32's second half in t's shape. */
static Tensor grad32_like(BlockList *l, const Tensor *t) {
    need_dloss32(l, t->size);
    CHECK(2 * t->size <= l->dloss32.size, "a loss gradient of %lld elements for a buffer of %lld",
          (long long)t->size, (long long)l->dloss32.size / 2);
    Tensor g = tensor_range(&l->dloss32, l->dloss32.size / 2, t->size);
    g.ndim = t->ndim;
    memcpy(g.shape, t->shape, sizeof g.shape);
    return g;
}

Tensor blocks_dloss_f32(BlockList *l) {
    CHECK(l->loss && l->dloss.raw, "this model has no loss of its own (or no buffers yet)");
    return grad32_like(l, &l->dloss);
}

/* l->loss of out, and dout (NULL: the loss alone) times the list's loss scale: inside the
 * loss when it can (loss_scaled), before a 16-bit dout's one rounding. */
static float scaled_loss(BlockList *l, const Tensor *out, const int *targets, Tensor *dout) {
    if (!dout || l->loss_scale == 0.0f || l->loss_scale == 1.0f)
        return l->loss(l->loss_ctx, l->layers, out, targets, dout);
    if (l->loss_scaled)
        return l->loss_scaled(l->loss_ctx, l->layers, out, targets, dout, l->loss_scale);
    CHECK(dout->dtype == DTYPE_F32,
          "a loss scale of %g for a %s loss gradient, but this model's loss cannot scale its "
          "gradient before rounding it (BlockList.loss_scaled)",
          (double)l->loss_scale, dtype_name(dout->dtype));
    const float loss = l->loss(l->loss_ctx, l->layers, out, targets, dout);
    tensor_scale(dout, l->loss_scale);
    return loss;
}

/* The loss of out (any dtype, read exactly as float32) and its float32 gradient times the
 * loss scale into g (the float32 values blocks_loss would round); g must not be dloss32's
 * first half. */
static float loss_f32(BlockList *l, const Tensor *out, const int *targets, Tensor *g) {
    CHECK_FLOAT32(g);
    CHECK(out->size == g->size, "a loss gradient of %lld elements for an output of %lld",
          (long long)g->size, (long long)out->size);
    Tensor x = *out;
    if (out->dtype != DTYPE_F32) {
        need_dloss32(l, out->size);
        CHECK(2 * out->size <= l->dloss32.size, "logits of %lld elements for a buffer of %lld",
              (long long)out->size, (long long)l->dloss32.size / 2);
        x = tensor_range(&l->dloss32, 0, out->size);
        CHECK((const char *)g->raw >= (const char *)x.raw + tensor_bytes(&x) ||
              (const char *)g->raw + tensor_bytes(g) <= (const char *)x.raw,
              "the float32 loss gradient overlaps the float32 copy of the logits");
        x.ndim = out->ndim;
        memcpy(x.shape, out->shape, sizeof x.shape);
        tensor_convert(&x, out);
    }
    return scaled_loss(l, &x, targets, g);
}

float blocks_loss_f32(BlockList *l, const Tensor *out, const int *targets, Tensor *dout32) {
    CHECK(l->loss, "this model has no loss of its own");
    trace_begin("loss", TRACE_COMPUTE);
    const float loss = loss_f32(l, out, targets, dout32);
    trace_end("loss");
    return loss;
}

float blocks_loss(BlockList *l, const Tensor *out, const int *targets, Tensor *dout) {
    CHECK(l->loss, "this model has no loss of its own");
    trace_begin("loss", TRACE_COMPUTE);
    /* with a 16-bit dout, S x the float32 gradient rounded once inside the loss: a
     * gradient that float16 would flush to zero unscaled keeps its digits */
    const float loss = scaled_loss(l, out, targets, dout);
    trace_end("loss");
    return loss;
}

void blocks_add_hook(BlockList *l, BlockHookFn fn, void *ctx) {
    CHECK(l->hook_count < BLOCK_HOOKS_MAX, "more than %d hooks on one model", BLOCK_HOOKS_MAX);
    l->hooks[l->hook_count].fn = fn;
    l->hooks[l->hook_count++].ctx = ctx;
}

void blocks_remove_hook(BlockList *l, BlockHookFn fn, void *ctx) {
    int k = 0;
    while (k < l->hook_count && (l->hooks[k].fn != fn || l->hooks[k].ctx != ctx)) k++;
    CHECK(k < l->hook_count, "blocks_remove_hook of a hook that was never added");
    for (; k + 1 < l->hook_count; k++) l->hooks[k] = l->hooks[k + 1];
    l->hook_count--;
}

/* ---------------------------------------------------------------- counts */

int64_t blocks_saved_bytes(const BlockList *l, int first, int last, int B, int T) {
    check_range(l, first, last);
    Tensor shapes[BLOCK_SAVED_MAX];
    int64_t bytes = 0;
    for (int k = first; k < last; k++) {
        const Block *b = item(l, k);
        const int n = b->type->saved(b, B, T, shapes);
        for (int j = 0; j < n; j++) bytes += (int64_t)tensor_bytes(&shapes[j]);
    }
    return bytes;
}

void blocks_costs(const BlockList *l, int T, double *costs) {
    for (int i = 0; i < l->count; i++) costs[i] = l->items[i].type->flops(&l->items[i], T);
}

void blocks_input_shape(const BlockList *l, int index, int B, int T, Tensor *shape) {
    const Block *b = item(l, index);
    b->type->input(b, B, T, shape);
}

void blocks_output_shape(const BlockList *l, int index, int B, int T, Tensor *shape) {
    const Block *b = item(l, index);
    Tensor shapes[BLOCK_SAVED_MAX];
    b->type->saved(b, B, T, shapes);
    *shape = shapes[0];
}
