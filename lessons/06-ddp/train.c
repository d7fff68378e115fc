/* TODOs 6.2 to 6.5: what makes training data-parallel.
 *
 * Horovod's recipe, the same in PyTorch's DDP: (1) start every rank from the same
 * weights; (2) give each rank its own share of every epoch; (3) after each backward,
 * average the gradients over the ranks, so that every rank takes the same step, the
 * step of one big batch; (4) count the metrics over all ranks; (5) let one rank write. */
#include "lesson.h"

void lesson_broadcast_weights(Run *run) {
    /* TODO 6.2: each rank initialised its model from its own random numbers. Send
     * rank 0's parameters to every rank: they are one buffer,
     * run->model.params.values (lib/models/params.h), and dist_broadcast(d, &t, root)
     * (lib/dist/dist.h) copies root's t into every rank's t. */
    TODO_STOP("6.2");
}

void lesson_make_sampler(Run *run) {
    /* TODO 6.3: the sampler of this rank: sampler_init_distributed(&run->sampler,
     * examples, shuffle, seed, num_replicas, rank, drop_last) (lib/train/sampler.h),
     * over run->train.count examples, shuffled, with the program's seed
     * (run->cfg.train.seed: the same on every rank, so all ranks agree on the
     * permutation), one replica per rank, and drop_last false (pad instead). */
    TODO_STOP("6.3");
}

void lesson_start_epoch(Run *run, int epoch) {
    /* TODO 6.3: a new shuffle for this epoch, the same on every rank: set the
     * sampler's epoch (PyTorch's set_epoch), which also rewinds it to the start of
     * its share. Forget it, and the sampler stays at the end of epoch 0: the next
     * epoch gets no batches (the program stops and says so). */
    (void)epoch;
    TODO_STOP("6.3");
}

void lesson_average_gradients(Run *run) {
    /* TODO 6.4: each rank's gradients come from its own share of the batch. Sum them
     * over the ranks with dist_all_reduce(d, &grads, DIST_SUM) on the one buffer
     * run->model.params.grads, then divide every element by the world size: the
     * gradient of the mean loss over the whole batch (each rank's loss is already
     * the mean over its own share). (DIST_AVG does both in one call; do it by hand
     * here once: on CPU gradients the grader refuses DIST_AVG.) With --device cuda
     * the buffer is in GPU memory, which a loop on the CPU cannot touch (it would
     * crash): there, check grads.device != DEVICE_CPU and use DIST_AVG, which NCCL
     * does on the GPU. */
    TODO_STOP("6.4");
}

void lesson_sum_stats(Run *run, EpochStats *s) {
    /* TODO 6.5: replace each field of *s by its sum over all ranks:
     * dist_sum_double(d, value) returns the sum of every rank's value. Then the mean
     * loss (loss_sum / examples) is the whole job's, not only this rank's. */
    (void)s;
    TODO_STOP("6.5");
}
