/* lib/dist and lib/parallel with several ranks: started by tests/dist/run.sh as
 *   mpirun -n 2|3 build/tests/dist/test_collectives [--fault hang|die|mismatch]
 * Every rank runs every check; a check passes when it passes on all ranks, and rank 0
 * prints one line per check and "N passed, M failed". (The check framework's fork per
 * check does not mix with MPI, so the checks run one after the other in the ranks.)
 *
 * With --fault, one rank misbehaves and the job must end, with a message, within the
 * timeout: "hang" stops rank 1 in a busy loop, "die" kills rank 1, "mismatch" gives
 * rank 1 a model of another size. run.sh checks the exit status, time and message. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/dataset.h"
#include "dist/dist.h"
#include "dist/rank_checks.h"
#include "layers/softmax_xent.h"
#include "models/cnn.h"
#include "parallel/ddp.h"
#include "train/optim.h"
#include "train/sampler.h"


/* A failed expectation on this rank: said on stderr with the rank, counted. */
static bool expect(bool cond, const char *what, int64_t at, double got, double want) {
    if (!cond)
        fprintf(stderr, "rank %d: %s at %lld: got %.9g, expected %.9g\n", g_dist->rank, what,
                (long long)at, got, want);
    return cond;
}

/* ------------------------------------------------------------ collectives */

static bool check_broadcast(Dist *d) {
    Tensor t = tensor_zeros(1, 1000);
    const int root = d->world_size - 1;
    for (int i = 0; i < 1000; i++) t.data[i] = d->rank == root ? (float)i * 0.5f : -1.0f;
    dist_broadcast(d, &t, root);
    bool ok = true;
    for (int i = 0; ok && i < 1000; i++) ok = expect(t.data[i] == i * 0.5f, "broadcast", i, t.data[i], i * 0.5);
    tensor_free(&t);
    return ok;
}

static bool check_all_reduce(Dist *d) {
    const int n = 100003, W = d->world_size; /* not a multiple of anything */
    Tensor t = tensor_zeros(1, n);
    bool ok = true;
    const DistOp ops[3] = {DIST_SUM, DIST_AVG, DIST_MAX};
    for (int k = 0; k < 3 && ok; k++) {
        for (int i = 0; i < n; i++) t.data[i] = (float)(d->rank + i % 17); /* exact sums */
        if (k == 2) dist_wait(d, dist_all_reduce_start(d, &t, ops[k])); /* the non-blocking form */
        else dist_all_reduce(d, &t, ops[k]);
        for (int i = 0; ok && i < n; i++) {
            double sum = W * (double)(i % 17) + W * (W - 1) / 2.0;
            double want = k == 0 ? sum : k == 1 ? sum / W : (double)(W - 1 + i % 17);
            ok = expect(fabs(t.data[i] - want) <= 1e-6 * fabs(want), k == 0 ? "all-reduce sum"
                        : k == 1 ? "all-reduce average" : "all-reduce max", i, t.data[i], want);
        }
    }
    tensor_free(&t);
    return ok;
}

static bool check_gather_scatter(Dist *d) {
    const int n = 37, W = d->world_size;
    Tensor in = tensor_zeros(1, n), out = tensor_zeros(1, n * W);
    for (int i = 0; i < n; i++) in.data[i] = (float)(1000 * d->rank + i);
    dist_all_gather(d, &out, &in);
    bool ok = true;
    for (int j = 0; ok && j < n * W; j++)
        ok = expect(out.data[j] == 1000 * (j / n) + j % n, "all-gather", j, out.data[j], 1000 * (j / n) + j % n);
    /* reduce-scatter: rank r gets block r of the sum of every rank's [W * n] */
    for (int j = 0; j < n * W; j++) out.data[j] = (float)(d->rank + j);
    dist_reduce_scatter(d, &in, &out, DIST_SUM);
    for (int i = 0; ok && i < n; i++) {
        double want = W * (double)(d->rank * n + i) + W * (W - 1) / 2.0;
        ok = expect(in.data[i] == want, "reduce-scatter", i, in.data[i], want);
    }
    tensor_free(&in), tensor_free(&out);
    return ok;
}

/* Every rank sends to the next and receives from the previous one, non-blocking. */
static bool check_ring_send_recv(Dist *d) {
    const int W = d->world_size, next = (d->rank + 1) % W, prev = (d->rank + W - 1) % W;
    Tensor out = tensor_zeros(1, 65536), in = tensor_zeros(1, 65536);
    for (int i = 0; i < 65536; i++) out.data[i] = (float)(d->rank * 7 + i);
    DistRequest *r = dist_recv_start(d, &in, prev), *s = dist_send_start(d, &out, next);
    dist_wait(d, s);
    dist_wait(d, r);
    bool ok = true;
    for (int i = 0; ok && i < 65536; i++) ok = expect(in.data[i] == prev * 7 + i, "receive", i, in.data[i], prev * 7 + i);
    dist_barrier(d);
    tensor_free(&out), tensor_free(&in);
    return ok;
}

static bool check_scalars_and_split(Dist *d) {
    bool ok = expect(dist_sum_double(d, d->rank + 0.25) == d->world_size * 0.25 + d->world_size * (d->world_size - 1) / 2.0,
                     "sum of doubles", 0, 0, 0);
    dist_check_same(d, 12345, "a value all ranks share");
    /* even and odd ranks in groups of their own */
    Dist *g = dist_split(d, d->rank % 2, d->rank);
    const int size = (d->world_size + (d->rank % 2 ? 0 : 1)) / 2;
    ok = expect(g->world_size == size && g->rank == d->rank / 2, "group size and rank", 0,
                g->world_size, size) && ok;
    Tensor t = tensor_zeros(1, 3);
    tensor_fill(&t, (float)d->rank);
    dist_all_reduce(g, &t, DIST_SUM);
    double want = 0;
    for (int r = d->rank % 2; r < d->world_size; r += 2) want += r;
    ok = expect(t.data[2] == want, "all-reduce within the group", 2, t.data[2], want) && ok;
    dist_finalize(g);
    tensor_free(&t);
    return ok;
}

/* ------------------------------------------------------------ samplers */

/* Together the ranks visit every example once per epoch, padded by repeating the first
 * ones; each rank's share is its positions of the same permutation. */
static bool check_distributed_sampler(Dist *d) {
    const int count = 103, W = d->world_size, per = (count + W - 1) / W;
    Sampler s;
    sampler_init_distributed(&s, count, true, 7, W, d->rank, false);
    sampler_set_epoch(&s, 3);
    Tensor mine = tensor_zeros(1, per), all = tensor_zeros(1, per * W);
    int idx[128];
    int n = sampler_next(&s, idx, 128);
    for (int i = 0; i < n; i++) mine.data[i] = (float)idx[i];
    bool ok = expect(n == per, "this rank's share", 0, n, per);
    dist_all_gather(d, &all, &mine);
    int seen[103] = {0};
    for (int j = 0; j < per * W; j++) seen[(int)all.data[j]]++;
    int pad = per * W - count;
    for (int e = 0; ok && e < count; e++) ok = expect(seen[e] >= 1 && seen[e] <= 2, "visits of an example", e, seen[e], 1);
    int twice = 0;
    for (int e = 0; e < count; e++) twice += seen[e] == 2;
    ok = expect(twice == pad, "examples repeated as padding", 0, twice, pad) && ok;
    sampler_free(&s);
    tensor_free(&mine), tensor_free(&all);
    return ok;
}

/* ------------------------------------------------------------ data parallel */

/* STEPS Adam steps of the CNN: every rank on its share of each batch of W * B images
 * through Ddp (buckets of 0.1 MB, overlapped), against one model that takes the whole
 * batch, computed on every rank. Step 1 starts from the same weights: its loss may
 * differ by summation order only (1e-5 relative). The parameters must be bit-identical
 * across ranks (all apply the same averaged gradient). Against the single model they
 * differ by rounding, which Adam can turn into a step of up to lr for a gradient near
 * 0 (its sign decides); so each parameter may be off by at most 2 lr per step, and the
 * mean difference must stay far below that (1e-5). */
enum { STEPS = 4, B = 8 };

static bool check_ddp_equals_one_big_batch(Dist *d) {
    const int W = d->world_size;
    const float lr = 1e-3f;
    Dataset data;
    dataset_make_synthetic(W * B * STEPS, 1, 28, 4, &data);
    Rng r1, r2;
    rng_seed(&r1, 11, 0), rng_seed(&r2, 11 + (uint64_t)d->rank, 0); /* rank's own init... */
    Cnn big, part;
    cnn_init(&big, 1, 28, 28, 10, W * B, &r1);
    cnn_init(&part, 1, 28, 28, 10, B, &r2); /* ...which the broadcast must replace */
    Ddp ddp;
    ddp_init(&ddp, d, &part.params, 0.1, true);
    ddp_broadcast_params(&ddp);
    Adam ab, ap;
    adam_init(&ab, &big.params, lr), adam_init(&ap, &part.params, lr);
    Tensor bimg = tensor_zeros(4, W * B, 1, 28, 28), pimg = tensor_zeros(4, B, 1, 28, 28);
    int blab[64], plab[64], idx[64];
    bool ok = true;
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < W * B; i++) idx[i] = s * W * B + i;
        dataset_gather(&data, idx, W * B, &bimg, blab);
        dataset_gather(&data, idx + d->rank * B, B, &pimg, plab); /* this rank's share */
        Tensor logits = cnn_forward(&big, &bimg);
        tensor_fill(&big.d_logits, 0.0f);
        float lb = softmax_cross_entropy(&big.d_logits, &logits, blab);
        params_zero_grad(&big.params);
        cnn_backward(&big, &bimg);
        adam_step(&ab, &big.params);

        logits = cnn_forward(&part, &pimg);
        tensor_fill(&part.d_logits, 0.0f);
        double lp = softmax_cross_entropy(&part.d_logits, &logits, plab);
        params_zero_grad(&part.params);
        cnn_backward(&part, &pimg);
        ddp_finish_gradients(&ddp);
        adam_step(&ap, &part.params);
        lp = dist_sum_double(d, lp) / W;
        if (s == 0) ok = expect(fabs(lp - lb) <= 1e-5 * fabs(lb), "step-1 loss", 0, lp, lb) && ok;
    }
    /* the same bits on every rank */
    uint64_t mine = 0;
    for (int64_t i = 0; i < part.params.total; i++) {
        uint32_t u;
        memcpy(&u, &part.params.values.data[i], 4);
        mine = mine * 1099511628211ULL + u;
    }
    dist_check_same(d, (int64_t)mine, "the parameters after data-parallel steps (a hash)");
    double worst = 0, mean = 0;
    for (int64_t i = 0; i < part.params.total; i++) {
        double diff = fabs(part.params.values.data[i] - big.params.values.data[i]);
        worst = diff > worst ? diff : worst;
        mean += diff / part.params.total;
    }
    ok = expect(worst <= 2.0 * STEPS * lr, "largest parameter difference", 0, worst, 2.0 * STEPS * lr) && ok;
    ok = expect(mean <= 1e-5, "mean parameter difference", 0, mean, 1e-5) && ok;
    if (d->rank == 0) printf("        DDP vs one batch of %d: largest difference %.2g, mean %.2g\n", W * B, worst, mean);
    ddp_free(&ddp);
    cnn_free(&big), cnn_free(&part);
    tensor_free(&bimg), tensor_free(&pimg);
    dataset_free(&data);
    return ok;
}

/* ------------------------------------------------------------ faults */

static void fault(Dist *d, const char *kind) {
    Tensor t = tensor_zeros(1, 1000);
    dist_all_reduce(d, &t, DIST_SUM); /* every rank gets this far */
    if (d->rank == 1 && strcmp(kind, "hang") == 0)
        for (volatile long spin = 0;; spin++) {} /* busy in its own work, never calls MPI again */
    if (d->rank == 1 && strcmp(kind, "die") == 0) raise(SIGKILL);
    if (strcmp(kind, "mismatch") == 0) {
        Rng rng;
        rng_seed(&rng, 1, 0);
        Cnn m; /* rank 1's images are larger: a model of another size */
        cnn_init(&m, 1, d->rank == 1 ? 32 : 28, d->rank == 1 ? 32 : 28, 10, 2, &rng);
        Ddp ddp;
        ddp_init(&ddp, d, &m.params, 25, true);
    }
    dist_all_reduce(d, &t, DIST_SUM); /* the others wait here for rank 1 */
    printf("rank %d: the job went on after the fault\n", d->rank);
}

int main(int argc, char **argv) {
    const char *fault_kind = argc == 3 && strcmp(argv[1], "--fault") == 0 ? argv[2] : NULL;
    g_dist = dist_init(&(DistOptions){.backend = "mpi", .timeout_s = fault_kind ? 5 : 60});
    if (fault_kind) {
        fault(g_dist, fault_kind);
        dist_finalize(g_dist);
        return 0;
    }
    if (g_dist->rank == 0) printf("== lib/dist with %d ranks ==\n", g_dist->world_size);
    run("broadcast from the last rank", check_broadcast);
    run("all-reduce: sum, average, maximum (blocking and not) of 100003 floats", check_all_reduce);
    run("all-gather and reduce-scatter in rank order", check_gather_scatter);
    run("send and receive around a ring, non-blocking; barrier", check_ring_send_recv);
    run("sum of doubles, same-value check, split into even and odd groups", check_scalars_and_split);
    run("distributed sampler: every example once per epoch, padding repeats the first", check_distributed_sampler);
    run("DDP: 4 Adam steps on the ranks' shares equal one big batch; ranks bit-identical", check_ddp_equals_one_big_batch);
    const int status = rank_checks_end();
    dist_finalize(g_dist);
    return status;
}
