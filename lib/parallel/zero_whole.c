/* ZeRO's formulas and the whole model gathered from the shards (zero.h). */
#include <string.h>

#include "core/check.h"
#include "cuda/device.h"
#include "parallel/zero_internal.h"

/* ---------------------------------------------------------------- formulas */

ZeroMemory zero_memory_formula(int stage, int64_t psi, int world, ZeroOptimizer optimizer) {
    CHECK(stage >= 0 && stage <= 3 && world >= 1, "stage %d on %d ranks", stage, world);
    const int64_t K = optimizer == ZERO_ADAMW ? 8 : 4, N = world;
    ZeroMemory m = {.params = 4 * psi, .grads = 4 * psi, .optim = K * psi};
    if (stage >= 1) m.optim = K * psi / N;
    if (stage >= 2) m.grads = 4 * psi / N;
    if (stage >= 3) m.params = 4 * psi / N;
    return m;
}

double zero_bytes_formula(int stage, int64_t psi, int world, DType dtype) {
    const double gathered = stage == 3 ? 2.0 * (double)dtype_size(dtype) : 4.0;
    return (gathered + 4.0) * (double)psi * (world - 1) / world;
}

/* ---------------------------------------------------------------- the whole model */

/* Every unit's whole range of `pieces` (its piece of each unit, as piece_of gives it)
 * gathered, then packed by parameter into out [psi] on the host. */
static void gather_packed(Zero *z, Tensor (*piece_of)(Zero *, const ZeroUnit *, int), int which,
                          float *out) {
    Tensor full = tensor_zeros_on(z->device, 1, (int)z->window_size);
    float *host = xmalloc((size_t)z->window_size * sizeof *host);
    int64_t at = 0;
    for (int k = 0; k < z->nunits; k++) {
        const ZeroUnit *u = &z->units[k];
        Tensor range = tensor_range(&full, 0, u->piece * z->dist->world_size);
        Tensor piece = piece_of(z, u, which);
        dist_all_gather(z->dist, &range, &piece);
        device_copy(host, DEVICE_CPU, range.data, z->device, (size_t)range.size * sizeof(float));
        for (int q = u->first_param; q < u->first_param + u->params; q++) {
            const Param *p = z->params->items[q];
            memcpy(out + at, host + (p->offset - u->start), (size_t)p->value.size * sizeof(float));
            at += p->value.size;
        }
    }
    xfree(host);
    tensor_free(&full);
}

static Tensor param_piece_of(Zero *z, const ZeroUnit *u, int which) {
    (void)which;
    return zero_param_piece(z, u);
}

void zero_full_params(Zero *z, float *values) { gather_packed(z, param_piece_of, 0, values); }
void zero_full_state(Zero *z, int which, float *state) { gather_packed(z, zero_state_piece, which, state); }
