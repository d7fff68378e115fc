/* What one dropout call draws on the host, for the CUDA twins (dropout.cu and the
 * attention's weights in attention.cu): whether it drops anything, the key from the
 * caller's Rng, the threshold and the scale of the kept entries, computed as
 * layers/dropout.c computes them. Entry i's mask is then
 *   dropout_keeps(key, i, threshold) ? keep_scale : 0
 * on either device, so the GPU's mask is the CPU's, bit for bit, and the Rng ends in
 * the same state (tests/gpu/test_gpu_host.c checks both against the CPU layers). */
#ifndef CUDA_DROPOUT_DRAW_H
#define CUDA_DROPOUT_DRAW_H

#include <stdbool.h>
#include <stdint.h>

#include "core/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    bool active;        /* training and p > 0: a key was drawn */
    uint64_t key;       /* 0 when not active */
    const uint64_t *key_at; /* while a CUDA graph records (cuda/graph.h), where the
                             * kernel reads the key from (new at each replay); else NULL */
    uint64_t threshold; /* dropout_threshold(p) */
    float keep_scale;   /* 1 / (1 - p), 0 for p = 1 */
} DropoutDraw;

/* Draws the key (two rng_u32) only when active, like the CPU layers. */
DropoutDraw dropout_draw(float p, bool training, Rng *rng);

#ifdef __cplusplus
}
#endif

#endif
