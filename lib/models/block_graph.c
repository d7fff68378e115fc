#include "models/block_graph.h"

#include "core/check.h"

const char *block_graphs_unusable(const BlockList *l) {
    if (l->device != DEVICE_CUDA) return "the model is not on a GPU";
    if (l->hook_count > 0)
        return "hooks run host code between its blocks (a trace timing each block, fp16's "
               "unscale, a sharded optimiser), which a replay would skip";
    if (l->params->listener_count > 0)
        return "its gradients have listeners (data-parallel buckets), which a replay would "
               "not call";
    if (!l->loss) return "the model has no loss of its own";
    return NULL;
}

static bool same_step(const BlockGraphs *g, const BlockList *l, const int *ids,
                      const Tensor *dloss) {
    return g->ids == ids && g->dloss == dloss->raw && g->B == l->B && g->T == l->T &&
           g->training == l->training && g->dtype == l->dtype;
}

static void remember(BlockGraphs *g, const BlockList *l, const int *ids, const Tensor *dloss) {
    g->ids = ids, g->dloss = dloss->raw, g->B = l->B, g->T = l->T;
    g->training = l->training, g->dtype = l->dtype;
}

float block_graphs_step(BlockList *l, BlockGraphs *g, const int *ids, const int *targets,
                        Tensor *dloss) {
    const int first = l->first, last = l->first + l->count;
    const bool usable = !block_graphs_unusable(l);
    /* graphs that may name freed memory, or of a list that cannot replay them now (its
     * buffers may move meanwhile, as a sharded optimiser lays them out anew): dropped */
    if (g->forward && (!usable || cuda_graph_stale(g->forward) || cuda_graph_stale(g->backward))) {
        cuda_graph_free(g->forward);
        cuda_graph_free(g->backward);
        g->forward = g->backward = NULL;
        g->ids = NULL; /* the next step runs without graphs, the one after records */
        g->dropped++;
    }
    const bool same = usable && same_step(g, l, ids, dloss);
    if (same && g->forward) { /* replay: the host's part of the forward, then the graphs */
        const Tensor *out = blocks_forward_host(l, &l->acts, ids);
        cuda_graph_launch(g->forward);
        const float loss = blocks_loss(l, out, targets, dloss);
        cuda_graph_launch(g->backward);
        g->replayed++;
        return loss;
    }
    if (same && !g->forward) { /* the second step of this shape: record */
        cuda_graph_begin();
        const Tensor *out = blocks_forward(l, &l->acts, first, last, ids, NULL);
        g->forward = cuda_graph_end();
        cuda_graph_launch(g->forward);
        const float loss = blocks_loss(l, out, targets, dloss);
        cuda_graph_begin();
        blocks_backward(l, &l->acts, first, last, dloss, NULL, NULL);
        g->backward = cuda_graph_end();
        cuda_graph_launch(g->backward);
        g->recorded++;
        return loss;
    }
    /* without graphs: the first step of a shape (the next one of it records), another
     * shape than the graphs' (they stay), or a list that cannot use them */
    if (usable && !g->forward) remember(g, l, ids, dloss);
    const Tensor *out = blocks_forward(l, &l->acts, first, last, ids, NULL);
    const float loss = blocks_loss(l, out, targets, dloss);
    blocks_backward(l, &l->acts, first, last, dloss, NULL, NULL);
    g->eager++;
    return loss;
}

void block_graphs_free(BlockGraphs *g) {
    cuda_graph_free(g->forward);
    cuda_graph_free(g->backward);
    *g = (BlockGraphs){0};
}
