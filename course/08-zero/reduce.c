/* TODO 8.2: the gradients, reduce-scattered.
 *
 * Plain data parallel all-reduces the gradients: every rank ends with the average of
 * all of them, and 2 (N - 1) / N of the buffer crosses each rank's link. But a rank
 * that updates only its own shard needs only its shard's average: a reduce-scatter,
 * the first half of a ring all-reduce, (N - 1) / N of the traffic. The all-gather of
 * the updated parameters (TODO 8.4) is the other half: the same bytes as DDP in all.
 *
 * In place: piece is a view of full at rank * s (stage 1), or a buffer of its own
 * (stages 2 and 3: the gradients of a block live in a window until reduced); the
 * library's collectives take both (lib/dist/dist.h). The request is waited for later:
 * at stage 2 the blocks before this one compute their backward meanwhile. */
#include "lesson.h"

DistRequest *lesson_reduce_gradients(Dist *d, Tensor *piece, Tensor *full) {
#ifdef SOLUTION
    return dist_reduce_scatter_start(d, piece, full, DIST_AVG);
#else
    /* TODO 8.2: start the average (DIST_AVG) reduce-scatter of full into piece and
     * return its request: dist_reduce_scatter_start(d, out, in, op). */
    TODO_STOP("8.2");
#endif
}

/* Part 2 (--collectives): the reduce-scatter by hand. In [N s]: block j is [j s, j s +
 * s). In N - 1 steps around the ring, rank r sends one block to r + 1 and receives one
 * from r - 1, adding it to its own copy of that block: at step k it sends block
 * (r - k - 1) mod N (its running sum) and receives block (r - k - 2) mod N. After N - 1
 * steps rank r holds the sum of block r of every rank: out. */
void lesson_ring_reduce_scatter(Dist *d, Tensor *out, const Tensor *in) {
#ifdef SOLUTION
    const int N = d->world_size, r = d->rank;
    const int64_t s = out->size;
    CHECK(in->size == s * N, "ring reduce-scatter of %lld into %lld on %d ranks",
          (long long)in->size, (long long)s, N);
    Tensor acc = tensor_zeros_like(in), got = tensor_zeros_like(out);
    tensor_copy(&acc, in);
    for (int k = 0; k < N - 1; k++) {
        const int send = ((r - k - 1) % N + N) % N, recv = ((r - k - 2) % N + N) % N;
        Tensor out_block = tensor_range(&acc, send * s, s);
        dist_sendrecv(d, &out_block, (r + 1) % N, &got, (r - 1 + N) % N);
        float *into = acc.data + recv * s;
        for (int64_t i = 0; i < s; i++) into[i] += got.data[i];
    }
    Tensor mine = tensor_range(&acc, r * s, s);
    tensor_copy(out, &mine);
    tensor_free(&acc), tensor_free(&got);
#else
    /* TODO 8.2, part 2: copy in into a buffer of your own (acc: tensor_zeros_like(in),
     * then tensor_copy; got, one block: tensor_zeros_like(out)); N - 1 times: send
     * block (r - k - 1) mod N of acc to rank r + 1 while receiving a block from r - 1
     * (dist_sendrecv: both at once, or every rank sends first and waits forever), and
     * add what came into block (r - k - 2) mod N of acc; then out = block r of acc.
     * Only send-receives: the library's collectives are refused here. */
    TODO_STOP("8.2");
#endif
}
