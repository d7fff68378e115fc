/* TODOs 6.2 to 6.5: what makes training data-parallel.
 *
 * Horovod's recipe, the same in PyTorch's DDP: (1) start every rank from the same
 * weights; (2) give each rank its own share of every epoch; (3) after each backward,
 * average the gradients over the ranks, so that every rank takes the same step, the
 * step of one big batch; (4) count the metrics over all ranks; (5) let one rank write. */
#include "lesson.h"

void lesson_broadcast_weights(Run *run) {
    /* all parameters are one buffer: one broadcast from rank 0 */
    dist_broadcast(run->dist, &run->model.params.values, 0);
}

void lesson_make_sampler(Run *run) {
    const Dist *d = run->dist;
    sampler_init_distributed(&run->sampler, run->train.count, true,
                             (uint64_t)run->cfg.train.seed, d->world_size, d->rank, false);
}

void lesson_start_epoch(Run *run, int epoch) {
    sampler_set_epoch(&run->sampler, epoch); /* a new permutation, the same on all ranks */
}

void lesson_average_gradients(Run *run) {
    Tensor *g = &run->model.params.grads; /* every gradient: one buffer */
    if (g->device != DEVICE_CPU) { /* in GPU memory: no host loop over it, NCCL averages */
        dist_all_reduce(run->dist, g, DIST_AVG);
        return;
    }
    dist_all_reduce(run->dist, g, DIST_SUM);
    const float inv = 1.0f / (float)run->dist->world_size;
    for (int64_t i = 0; i < g->size; i++) g->data[i] *= inv;
}

void lesson_sum_stats(Run *run, EpochStats *s) {
    s->loss_sum = dist_sum_double(run->dist, s->loss_sum);
    s->correct = dist_sum_double(run->dist, s->correct);
    s->examples = dist_sum_double(run->dist, s->examples);
}
