/* TODOs 6.7 and 6.8: the all-reduce itself, built from send and receive.
 *
 * The ring: rank r sends to r + 1 and receives from r - 1 (mod W). Cut the tensor
 * into W chunks. Reduce-scatter: in W - 1 steps, each rank passes one chunk on to the
 * next rank, which adds it to its own copy of that chunk; afterwards rank r holds the
 * full sum of chunk (r + 1) mod W. All-gather: in W - 1 more steps the finished chunks
 * travel around the ring, each rank overwriting its copy. Every rank sends 2 (W - 1)
 * chunks of size n / W: about 2n values whatever W is, which is why NCCL and MPI use
 * the ring for large tensors. */
#include "lesson.h"

/* Chunk k of W over n values: [start, start + count); the first n % W chunks are one
 * longer, so any n works (some chunks are empty when n < W). */
static void chunk(int64_t n, int W, int k, int64_t *start, int64_t *count) {
    const int64_t base = n / W, extra = n % W;
    *start = k * base + (k < extra ? k : extra);
    *count = base + (k < extra ? 1 : 0);
}

void lesson_ring_all_reduce(Dist *d, Tensor *t) {
    const int W = d->world_size, r = d->rank, next = (r + 1) % W, prev = (r + W - 1) % W;
    if (W == 1) return;
    int64_t max_count, unused;
    chunk(t->size, W, 0, &unused, &max_count);
    Tensor incoming = tensor_zeros(1, (int)(max_count > 0 ? max_count : 1)); /* a chunk */
    /* TODO 6.7: with chunk(t->size, W, k, &start, &count) for chunk k:
     *   reduce-scatter, for s = 0 .. W-2: send chunk (r - s) mod W of t to `next`
     *     (tensor_range(t, start, count) is that part of t), receive chunk
     *     (r - s - 1) mod W from `prev` into `incoming`, and add it into t's copy of
     *     that chunk;
     *   all-gather, for s = 0 .. W-2: send chunk (r + 1 - s) mod W to `next`, receive
     *     chunk (r - s) mod W from `prev` straight into t (it is whole: overwrite).
     * Send and receive with one call, dist_sendrecv(d, &out, next, &in, prev): if
     * every rank first sent and then received, a large send could wait for a receive
     * that no rank has started. An empty chunk (count 0) is sent or received as NULL,
     * and has no view: tensor_range refuses a count of 0 (build it only when count > 0).
     * In C, -1 % W is -1: write ((x % W) + W) % W. */
    (void)next, (void)prev, (void)chunk;
    TODO_STOP("6.7");
    tensor_free(&incoming);
}

double lesson_bus_bandwidth(double bytes, double seconds, int ranks) {
    /* TODO 6.8: the algorithm bandwidth is bytes / seconds (in GB/s: / 1e9). An
     * all-reduce moves 2 (n - 1) / n times the tensor over each rank's link (the ring's
     * two phases), so its bus bandwidth is algbw * 2 (n - 1) / n, n = ranks: the
     * number to compare with the link's speed, whatever the rank count
     * (nccl-tests' definition). */
    (void)bytes, (void)seconds, (void)ranks;
    TODO_STOP("6.8");
}
