/* Sharded checkpoints of ZeRO's pieces and of a plain (stage 0) model: each gives the
 * files its shard of every unit (zero_checkpoint.h). */
#include <string.h>

#include "core/check.h"
#include "cuda/device.h"
#include "parallel/zero_checkpoint_internal.h"
#include "parallel/zero_internal.h"

/* ---------------------------------------------------------------- ZeRO's pieces */

static Model zero_model(const Zero *z) {
    CHECK(z->adam.m.data || z->sgd.buf.data, "a sharded checkpoint before zero_optimizer_adamw or _sgd");
    CHECK(!z->in_step, "a sharded checkpoint between zero_begin_step and zero_finish_gradients");
    Model m = {.nunits = z->nunits, .size = xcalloc((size_t)z->nunits, sizeof(int64_t)),
               .block = xcalloc((size_t)z->nunits, sizeof(int)), .optimizer = z->optimizer,
               .opt_step = z->optimizer == ZERO_ADAMW ? z->adam.step : z->sgd.step};
    for (int k = 0; k < z->nunits; k++) m.size[k] = z->units[k].size, m.block[k] = z->units[k].block;
    return m;
}

static Tensor piece_view(Zero *z, const ZeroUnit *u, int kind) {
    return kind == 0 ? zero_param_piece(z, u) : zero_state_piece(z, u, kind - 1);
}

int zero_ckpt_save(ZeroCkpt *c, Zero *z, int64_t step, CkptError *err) {
    Model m = zero_model(z);
    const int kinds = zckpt_kinds(m.optimizer);
    Tensor host[3];
    zckpt_host_buffers(host, kinds, z->shard);
    for (int k = 0; k < z->nunits; k++)
        for (int kind = 0; kind < kinds; kind++) {
            const Tensor piece = piece_view(z, &z->units[k], kind);
            device_copy(host[kind].data + z->units[k].local, DEVICE_CPU, piece.data, z->device,
                        (size_t)piece.size * sizeof(float));
        }
    const int rc = zckpt_save_core(c, z->dist, &m, host, step, err);
    zckpt_host_free(host, kinds);
    zckpt_model_free(&m);
    return rc;
}

int zero_ckpt_load_latest(ZeroCkpt *c, Zero *z, int64_t *step, CkptError *err) {
    Model m = zero_model(z);
    const int kinds = zckpt_kinds(m.optimizer);
    Tensor host[3];
    zckpt_host_buffers(host, kinds, z->shard);
    const int rc = zckpt_load_core(c, z->dist, &m, z->dist->world_size, z->dist->rank, host, step, err);
    for (int k = 0; rc == 1 && k < z->nunits; k++) {
        const ZeroUnit *u = &z->units[k];
        for (int kind = 0; kind < kinds; kind++) {
            Tensor piece = piece_view(z, u, kind);
            device_copy(piece.data, z->device, host[kind].data + u->local, DEVICE_CPU,
                        (size_t)piece.size * sizeof(float));
        }
        if (z->stage < 3) { /* the whole buffer again: every rank's piece, in place */
            Tensor full = zero_param_range(z, u), piece = zero_param_piece(z, u);
            dist_all_gather(z->dist, &full, &piece);
        }
    }
    if (rc == 1) {
        if (z->optimizer == ZERO_ADAMW) z->adam.step = m.opt_step;
        else z->sgd.step = m.opt_step;
        if (z->stage < 3 && z->blocks->dtype != DTYPE_F32) params_refresh_working(z->params);
        zero_refresh_shard_working(z); /* stage 3 of a 16-bit model: its rounded shard */
    }
    zckpt_host_free(host, kinds);
    zckpt_model_free(&m);
    return rc;
}

/* ---------------------------------------------------------------- stage 0 */

/* The units ZeRO would make of `blocks` (each block's parameters one run, in order),
 * and the whole optimiser state (*state: [total] buffers after the parameters). */
static Model plain_model(BlockList *blocks, Adam *adam, Sgd *sgd, Tensor *state) {
    CHECK((adam != NULL) != (sgd != NULL), "a plain sharded checkpoint with %s: give one of adam, sgd",
          adam ? "both Adam and SGD" : "no optimiser");
    const ParamList *p = blocks->params;
    CHECK(p->values.data && p->values.size == p->total, "a plain sharded checkpoint of a model "
          "laid out by ZeRO (params_set_layout): use zero_ckpt_save / zero_ckpt_load_latest");
    Model m = {.size = xcalloc((size_t)blocks->count + 1, sizeof(int64_t)),
               .block = xcalloc((size_t)blocks->count + 1, sizeof(int)),
               .optimizer = adam ? ZERO_ADAMW : ZERO_SGD, .opt_step = adam ? adam->step : sgd->step};
    int covered = 0;
    for (int i = 0; i < blocks->count; i++) {
        const Block *b = &blocks->items[i];
        if (b->params == 0) continue;
        CHECK(b->first_param == covered, "block '%s' declares parameters %d.. but %d came before: "
              "a sharded checkpoint needs each block's parameters in one run", b->name,
              b->first_param, covered);
        for (int q = b->first_param; q < b->first_param + b->params; q++)
            m.size[m.nunits] += p->items[q]->value.size;
        m.block[m.nunits++] = b->index;
        covered += b->params;
    }
    CHECK(covered == p->count, "%d of the model's %d parameters belong to no block",
          p->count - covered, p->count);
    state[0] = p->values;
    if (adam) state[1] = adam->m, state[2] = adam->v;
    else state[1] = sgd->buf;
    for (int kind = 1; kind < zckpt_kinds(m.optimizer); kind++)
        CHECK(state[kind].data && state[kind].size == p->total, "the optimiser's state is not "
              "the model's size: initialise it (adamw_init, sgd_init) for these parameters");
    return m;
}

int zero_ckpt_save_plain(ZeroCkpt *c, Dist *d, BlockList *blocks, Adam *adam, Sgd *sgd,
                         int64_t step, CkptError *err) {
    Tensor state[3];
    Model m = plain_model(blocks, adam, sgd, state);
    const int kinds = zckpt_kinds(m.optimizer), W = d->world_size, r = d->rank;
    const int64_t total = blocks->params->total;
    Tensor whole[3], host[3];
    zckpt_host_buffers(whole, kinds, total);
    zckpt_host_buffers(host, kinds, zckpt_shard_size(&m, W));
    for (int kind = 0; kind < kinds; kind++)
        device_copy(whole[kind].data, DEVICE_CPU, state[kind].data, state[kind].device,
                    (size_t)total * sizeof(float));
    int64_t base = 0, at = 0; /* unit k in the packed buffers, its piece in the shard */
    for (int k = 0; k < m.nunits; k++) {
        const int64_t n = m.size[k], s = zckpt_piece(n, W), a = r * s;
        const int64_t own = a + s < n ? s : n > a ? n - a : 0;
        for (int kind = 0; own > 0 && kind < kinds; kind++)
            memcpy(host[kind].data + at, whole[kind].data + base + a, (size_t)own * sizeof(float));
        base += n, at += s;
    }
    const int rc = zckpt_save_core(c, d, &m, host, step, err);
    zckpt_host_free(whole, kinds);
    zckpt_host_free(host, kinds);
    zckpt_model_free(&m);
    return rc;
}

int zero_ckpt_load_latest_plain(ZeroCkpt *c, Dist *d, BlockList *blocks, Adam *adam, Sgd *sgd,
                                int64_t *step, CkptError *err) {
    Tensor state[3];
    Model m = plain_model(blocks, adam, sgd, state);
    const int kinds = zckpt_kinds(m.optimizer);
    const int64_t total = blocks->params->total;
    Tensor host[3]; /* one rank of one: the pieces are the units, packed as the parameters */
    zckpt_host_buffers(host, kinds, total);
    const int rc = zckpt_load_core(c, d, &m, 1, 0, host, step, err);
    for (int kind = 0; rc == 1 && kind < kinds; kind++)
        device_copy(state[kind].data, state[kind].device, host[kind].data, DEVICE_CPU,
                    (size_t)total * sizeof(float));
    if (rc == 1) {
        if (adam) adam->step = m.opt_step;
        else sgd->step = m.opt_step;
    }
    zckpt_host_free(host, kinds);
    zckpt_model_free(&m);
    return rc;
}
