/* ZeRO's windows (zero.h): stage 3's blocks gathered just in time, and stages 2 and 3's
 * gradients reduce-scattered block by block during the backward. */
#include "core/check.h"
#include "core/timer.h"
#include "parallel/zero_internal.h"

void zero_point_grads(Zero *z, const ZeroUnit *u, float *base) {
    for (int i = u->first_param; i < u->first_param + u->params; i++) {
        Param *p = z->params->items[i];
        p->grad.data = base ? base + (p->offset - u->start) : NULL;
    }
}

void zero_point_window(Zero *z, const ZeroUnit *u, const Tensor *w) {
    const bool sixteen = z->blocks->dtype != DTYPE_F32;
    for (int i = u->first_param; i < u->first_param + u->params; i++) {
        Param *p = z->params->items[i];
        void *at = w ? (char *)w->raw + (size_t)(p->offset - u->start) * dtype_size(w->dtype) : NULL;
        if (sixteen) p->work.raw = at, p->value.data = NULL;
        else p->value.data = at;
    }
}

/* Lets MPI move the data of everything in flight (it progresses only inside its calls). */
static void progress_all(Zero *z) {
    for (int w = 0; w < 2; w++) {
        if (z->grad_windows[w].pending) dist_test(z->dist, z->grad_windows[w].pending);
        const ZeroWindow *pw = &z->param_windows[w];
        if (pw->unit >= 0 && z->units[pw->unit].gather) dist_test(z->dist, z->units[pw->unit].gather);
    }
}

void zero_wait_timed(Zero *z, DistRequest **r) {
    if (!*r) return;
    const double t0 = now_seconds();
    dist_wait(z->dist, *r);
    *r = NULL;
    z->exposed_s += now_seconds() - t0;
}

DistRequest *zero_start_reduce(Zero *z, Tensor *piece, Tensor *full) {
    DistRequest *r = z->ops->reduce_gradients(z->dist, piece, full);
    CHECK(r, "ZeroOps' reduce_gradients returned no request (NULL): return the one "
          "dist_reduce_scatter_start gives; the library waits for it");
    return r;
}

DistRequest *zero_start_gather(Zero *z, Tensor *full, const Tensor *piece) {
    DistRequest *r = z->ops->gather_params(z->dist, full, piece);
    CHECK(r, "ZeroOps' gather_params returned no request (NULL): return the one "
          "dist_all_gather_start gives; the library waits for it");
    return r;
}

/* ---------------------------------------------------------------- stage 3's mechanics */

void zero_gather(Zero *z, ZeroUnit *u) {
    if (u->window >= 0) return; /* there, or on its way */
    ZeroWindow *w = NULL;
    for (int k = 0; k < 2 && !w; k++)
        if (z->param_windows[k].unit < 0) w = &z->param_windows[k];
    if (!w) return; /* both in use: zero_await gathers it once one is free */
    w->unit = (int)(u - z->units);
    u->window = (int)(w - z->param_windows);
    Tensor full = tensor_range(&w->data, 0, u->piece * z->dist->world_size);
    Tensor piece = zero_gather_piece(z, u);
    u->gather = zero_start_gather(z, &full, &piece);
    progress_all(z);
}

void zero_await(Zero *z, ZeroUnit *u) {
    CHECK(z->stage == 3, "zero_await at stage %d: only stage 3 gathers blocks", z->stage);
    zero_gather(z, u);
    CHECK(u->window >= 0, "block %d's parameters: both parameter windows are in use (a hook "
          "gathered blocks without releasing them: zero_release after each pass)", u->block);
    zero_wait_timed(z, &u->gather);
    zero_point_window(z, u, &z->param_windows[u->window].data);
}

void zero_stage3_guard(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after) {
    (void)l;
    Zero *z = ctx;
    ZeroUnit *u = zero_unit_of(z, b);
    if (!u || after) return;
    const Param *first = z->params->items[u->first_param];
    const void *there = z->blocks->dtype != DTYPE_F32 ? first->work.raw : first->value.raw;
    CHECK(u->window >= 0 && !u->gather && there,
          "block %d ('%s')'s %s is about to run without its parameters (%s): stage 3's hook "
          "must zero_await the block before each pass", b->index, b->name,
          pass == BLOCK_FORWARD ? "forward" : "backward",
          u->window < 0 ? "not gathered" : u->gather ? "gathered, but not waited for" : "not pointed at");
}

void zero_release(Zero *z, ZeroUnit *u) {
    if (u->window < 0) return;
    zero_wait_timed(z, &u->gather); /* a prefetch nobody used: finish it before reusing */
    zero_point_window(z, u, NULL);
    z->param_windows[u->window].unit = -1;
    u->window = -1;
}

/* ---------------------------------------------------------------- stages 2 and 3: gradients */

static ZeroWindow *grad_window_of(Zero *z, const ZeroUnit *u) {
    for (int k = 0; k < 2; k++)
        if (z->grad_windows[k].unit == (int)(u - z->units)) return &z->grad_windows[k];
    return NULL;
}

/* Before a block's backward: a zeroed window for its gradients; after: their average's
 * piece to this rank (reduce-scatter, in flight while the blocks before it compute). */
void zero_gradient_hook(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after) {
    (void)l;
    Zero *z = ctx;
    ZeroUnit *u = pass == BLOCK_BACKWARD ? zero_unit_of(z, b) : NULL;
    if (!u) return;
    CHECK(z->in_step, "a backward outside zero_begin_step / zero_finish_gradients");
    if (!after) {
        ZeroWindow *w = &z->grad_windows[z->next_grad_window];
        z->next_grad_window ^= 1;
        zero_wait_timed(z, &w->pending); /* the window's last reduce-scatter must be done */
        w->unit = (int)(u - z->units);
        Tensor range = tensor_range(&w->data, 0, u->piece * z->dist->world_size); /* not the rest */
        tensor_fill(&range, 0.0f);
        zero_point_grads(z, u, w->data.data);
    } else {
        ZeroWindow *w = grad_window_of(z, u);
        CHECK(w, "block %d's backward ended without its gradient window", u->block);
        Tensor full = tensor_range(&w->data, 0, u->piece * z->dist->world_size);
        Tensor piece = zero_grad_piece(z, u);
        w->pending = zero_start_reduce(z, &piece, &full);
        zero_point_grads(z, u, NULL);
    }
    progress_all(z);
}
