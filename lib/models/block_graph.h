/* A whole block list's training step on the GPU from two CUDA graphs (cuda/graph.h):
 *
 *   forward graph -> the loss, run as usual (its mean is summed on the host) -> backward graph
 *
 * each graph one launch instead of a hundred kernels and cuBLAS calls. The loss stays
 * outside: it reads its per-row losses back to the host, which a graph cannot. Bit for
 * bit the step without graphs (tests/gpu/check_graph.c on the emulator): the same
 * kernels on the same memory, the same dropout keys from the same Rngs.
 *
 *   BlockGraphs g = {0};
 *   loss = block_graphs_step(&l, &g, ids, targets, &dloss);   // each step
 *   block_graphs_free(&g);
 *
 * The first step of a batch shape runs without graphs (it allocates what the layers
 * keep: a recording may not); the next one of that shape records and launches; later
 * ones only launch. A step of another shape (an epoch's shorter last batch) runs
 * without graphs and keeps them, unless it freed device memory (a layer's scratch
 * regrown): graphs recorded before any cuda_free are dropped and recorded again, as
 * they may name the freed buffers. So does every step of a list on the CPU, or with
 * hooks or gradient listeners (a trace timing each block, fp16's unscale, data-parallel
 * buckets: host code between the blocks, which a replay would skip). Inputs must come
 * at the same addresses each step (ids: a batch copied into one buffer). */
#ifndef MODELS_BLOCK_GRAPH_H
#define MODELS_BLOCK_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "cuda/graph.h"
#include "models/block.h"

typedef struct {
    CudaGraph *forward, *backward;
    /* the step they replay (before they exist: the last step run without them); a
     * step with anything else runs without them */
    const int *ids;
    const void *dloss;
    int B, T;
    bool training;
    DType dtype;
    int64_t recorded, replayed, eager; /* steps of each kind */
    int64_t dropped;    /* graphs dropped: stale (device memory freed since), or unusable */
} BlockGraphs;

/* Why a list's steps cannot use graphs at all (NULL: they can). */
const char *block_graphs_unusable(const BlockList *l);

/* out = blocks_forward(l, &l->acts, first, last, ids, NULL); loss = blocks_loss(l, out,
 * targets, dloss); blocks_backward(l, &l->acts, ..., dloss, NULL, NULL) over the whole
 * list, from graphs where it can (above). Returns the loss. */
float block_graphs_step(BlockList *l, BlockGraphs *g, const int *ids, const int *targets,
                        Tensor *dloss);
void block_graphs_free(BlockGraphs *g);

#endif
