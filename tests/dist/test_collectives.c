/* lib/dist and lib/parallel with several ranks: started by tests/dist/run.sh as
 *   mpirun -n 2|3 build/tests/dist/test_collectives [--fault KIND]
 * Every rank runs every check; a check passes when it passes on all ranks, and rank 0
 * prints one line per check and "N passed, M failed". (The check framework's fork per
 * check does not mix with MPI, so the checks run one after the other in the ranks.)
 *
 * With --fault, one rank misbehaves (faults.h has the kinds) and the job must end, with a
 * message naming it, within the timeout. run.sh checks the exit status, time and message. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/dtype.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/dataset.h"
#include "dist/dist.h"
#include "dist/faults.h"
#include "dist/rank_checks.h"
#include "layers/softmax_xent.h"
#include "models/cnn.h"
#include "parallel/ddp.h"
#include "train/loss_scale.h"
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

/* ------------------------------------------------------------ 16-bit tensors */

static float value16(DType dt, uint16_t h) {
    return dt == DTYPE_BF16 ? dtype_f32_from_bf16(h) : dtype_f32_from_f16(h);
}
static uint16_t bits16(DType dt, float x) {
    return dt == DTYPE_BF16 ? dtype_bf16_from_f32(x) : dtype_f16_from_f32(x);
}

/* bfloat16 and float16 through every collective: small integers whose sums are exact
 * in 16 bits (sum, maximum, reduce-scatter), an average within one rounding, sums that
 * round at every hop the same on every rank, and every 16-bit pattern (NaNs too)
 * gathered, broadcast and sent bit for bit. */
static bool check_16_bit(Dist *d) {
    const int W = d->world_size, n = 10007, next = (d->rank + 1) % W, prev = (d->rank + W - 1) % W;
    bool ok = true;
    for (int k = DTYPE_BF16; k <= DTYPE_F16 && ok; k++) {
        const DType dt = (DType)k;
        const double ulp = dt == DTYPE_BF16 ? 1.0 / 128 : 1.0 / 1024; /* relative, at most */
        Tensor t = tensor_zeros_typed(DEVICE_CPU, dt, 1, n);
        const DistOp ops[3] = {DIST_SUM, DIST_AVG, DIST_MAX};
        for (int o = 0; o < 3 && ok; o++) {
            for (int i = 0; i < n; i++) t.bits16[i] = bits16(dt, (float)(d->rank + i % 17));
            dist_all_reduce(d, &t, ops[o]);
            for (int i = 0; i < n && ok; i++) {
                const double sum = W * (double)(i % 17) + W * (W - 1) / 2.0;
                const double want = o == 0 ? sum : o == 1 ? sum / W : (double)(W - 1 + i % 17);
                const double got = value16(dt, t.bits16[i]);
                ok = expect(o == 1 ? fabs(got - want) <= ulp * want : got == want,
                            o == 0 ? "16-bit all-reduce sum" : o == 1 ? "16-bit all-reduce average"
                                                                     : "16-bit all-reduce max",
                            i, got, want);
            }
        }
        /* sums that do not fit 16 bits: rounded at every addition, the same bits everywhere */
        for (int i = 0; i < n; i++) t.bits16[i] = bits16(dt, 1.0f + (float)((i * 31 + d->rank * 7) % 97) / 97.0f);
        dist_all_reduce(d, &t, DIST_SUM);
        uint64_t hash = 1469598103934665603ULL;
        for (int i = 0; i < n; i++) {
            double exact = 0;
            for (int r = 0; r < W; r++) exact += value16(dt, bits16(dt, 1.0f + (float)((i * 31 + r * 7) % 97) / 97.0f));
            const double got = value16(dt, t.bits16[i]);
            if (ok) ok = expect(fabs(got - exact) <= W * ulp * exact, "16-bit rounded sum", i, got, exact);
            hash = (hash ^ t.bits16[i]) * 1099511628211ULL;
        }
        dist_check_same(d, (int64_t)hash, "a 16-bit all-reduce's bits (a hash)");
        /* every pattern, rank by rank, gathered */
        Tensor all = tensor_zeros_typed(DEVICE_CPU, dt, 1, 65536), mine = tensor_zeros_typed(DEVICE_CPU, dt, 1, 65536 / 4);
        Tensor got = tensor_zeros_typed(DEVICE_CPU, dt, 1, 65536 / 4 * W);
        for (int i = 0; i < 65536 / 4; i++) mine.bits16[i] = (uint16_t)(i * 4 + d->rank);
        dist_all_gather(d, &got, &mine);
        for (int j = 0; j < 65536 / 4 * W && ok; j++)
            ok = expect(got.bits16[j] == (uint16_t)(j % (65536 / 4) * 4 + j / (65536 / 4)),
                        "16-bit all-gather", j, got.bits16[j], j % (65536 / 4) * 4 + j / (65536 / 4));
        /* reduce-scatter: block r of the exact small sums */
        for (int j = 0; j < 65536 / 4 * W; j++) got.bits16[j] = bits16(dt, (float)((d->rank + j) % 5));
        dist_reduce_scatter(d, &mine, &got, DIST_SUM);
        for (int i = 0; i < 65536 / 4 && ok; i++) {
            double want = 0;
            for (int r = 0; r < W; r++) want += (r + d->rank * (65536 / 4) + i) % 5;
            ok = expect(value16(dt, mine.bits16[i]) == want, "16-bit reduce-scatter", i,
                        value16(dt, mine.bits16[i]), want);
        }
        /* every pattern broadcast from the last rank, and sent around the ring */
        for (int i = 0; i < 65536; i++) all.bits16[i] = d->rank == W - 1 ? (uint16_t)i : 0;
        dist_broadcast(d, &all, W - 1);
        for (int i = 0; i < 65536 && ok; i++) ok = expect(all.bits16[i] == i, "16-bit broadcast", i, all.bits16[i], i);
        Tensor out = tensor_zeros_typed(DEVICE_CPU, dt, 1, 65536), in = tensor_zeros_typed(DEVICE_CPU, dt, 1, 65536);
        for (int i = 0; i < 65536; i++) out.bits16[i] = (uint16_t)(i ^ d->rank);
        dist_sendrecv(d, &out, next, &in, prev);
        for (int i = 0; i < 65536 && ok; i++)
            ok = expect(in.bits16[i] == (uint16_t)(i ^ prev), "16-bit send and receive", i, in.bits16[i], i ^ prev);
        tensor_free(&t), tensor_free(&all), tensor_free(&mine), tensor_free(&got);
        tensor_free(&out), tensor_free(&in);
    }
    return ok;
}

/* The counters after a known sequence of calls, against the ring formulas of dist.h;
 * and over all ranks, the bytes sent of each kind are the bytes received (sends'
 * bytes the receives'). */
static bool check_byte_counts(Dist *d) {
    const int64_t W = d->world_size, r = d->rank, n = 100003; /* W does not divide n */
    const int next = (int)((r + 1) % W), prev = (int)((r + W - 1) % W);
    Tensor f = tensor_zeros(1, (int)n), f2 = tensor_zeros(1, (int)n);
    Tensor b = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 1, (int)n);
    Tensor h = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 1, 1000), h2 = tensor_zeros_like(&h);
    Tensor hw = tensor_zeros_typed(DEVICE_CPU, DTYPE_F16, 1, (int)(1000 * W));
    dist_counts_reset(d);
    dist_all_reduce(d, &f, DIST_SUM);                              /* 4 n bytes */
    dist_wait(d, dist_all_reduce_start(d, &b, DIST_AVG));         /* 2 n bytes */
    dist_all_gather(d, &hw, &h);                                   /* into 2000 W bytes */
    dist_reduce_scatter(d, &h, &hw, DIST_SUM);                     /* from 2000 W bytes */
    dist_broadcast(d, &b, 0);                                      /* 2 n bytes from rank 0 */
    dist_sendrecv(d, &h, next, &h2, prev);                         /* 2000 bytes each way */
    DistRequest *s = dist_send_start(d, &f, next), *q = dist_recv_start(d, &f2, prev);
    dist_wait(d, s), dist_wait(d, q);                              /* 4 n bytes each way */
    dist_barrier(d);
    const int64_t ar = 2 * (W - 1) * 4 * n / W + 2 * (W - 1) * 2 * n / W, ag = (W - 1) * 2000;
    const int64_t bs = r == W - 1 ? 0 : 2 * n, br = r == 0 ? 0 : 2 * n;
    const struct { DistKind kind; int64_t calls, sent, received; } want[] = {
        {DIST_KIND_ALL_REDUCE, 2, ar, ar},        {DIST_KIND_ALL_GATHER, 1, ag, ag},
        {DIST_KIND_REDUCE_SCATTER, 1, ag, ag},    {DIST_KIND_BROADCAST, 1, bs, br},
        {DIST_KIND_SEND, 2, 2000 + 4 * n, 0},     {DIST_KIND_RECV, 2, 0, 2000 + 4 * n},
        {DIST_KIND_BARRIER, 1, 0, 0}};
    bool ok = true;
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        const DistCounts c = dist_counts(d, want[k].kind);
        const char *name = dist_kind_name(want[k].kind);
        ok = expect(c.calls == want[k].calls, name, 0, (double)c.calls, (double)want[k].calls) &&
             expect(c.bytes_sent == want[k].sent, name, 1, (double)c.bytes_sent, (double)want[k].sent) &&
             expect(c.bytes_received == want[k].received, name, 2, (double)c.bytes_received,
                    (double)want[k].received) && ok;
        if (want[k].kind == DIST_KIND_SEND || want[k].kind == DIST_KIND_RECV) continue;
        const double sent = dist_sum_double(d, (double)c.bytes_sent);
        const double received = dist_sum_double(d, (double)c.bytes_received);
        ok = expect(sent == received, name, 3, sent, received) && ok;
    }
    /* what was sent point to point is what was received */
    const double sent = dist_sum_double(d, (double)dist_counts(d, DIST_KIND_SEND).bytes_sent);
    const double received = dist_sum_double(d, (double)dist_counts(d, DIST_KIND_RECV).bytes_received);
    ok = expect(sent == received, "sends and receives", 3, sent, received) && ok;
    if (d->rank == 0)
        printf("        rank 0 of %d: all-reduce %lld bytes sent, broadcast %lld, all-gather %lld\n",
               d->world_size, (long long)dist_counts(d, DIST_KIND_ALL_REDUCE).bytes_sent,
               (long long)dist_counts(d, DIST_KIND_BROADCAST).bytes_sent,
               (long long)dist_counts(d, DIST_KIND_ALL_GATHER).bytes_sent);
    tensor_free(&f), tensor_free(&f2), tensor_free(&b), tensor_free(&h), tensor_free(&h2);
    tensor_free(&hw);
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

/* ------------------------------------------------------------ loss scaling */

/* The call docs/mixed-precision.md and train/loss_scale.h tell the caller to make. */
static bool any_rank(void *d, bool found) { return dist_sum_double(d, found) > 0.0; }

/* Dynamic loss scaling on ranks that hold different gradients (a pipeline's stages, a
 * ZeRO shard): an inf on the last rank only makes every rank skip and halve; a clean
 * step after it steps everywhere; the scales stay equal. */
static bool check_loss_scale_agree(Dist *d) {
    Tensor g = tensor_zeros(1, 1000);
    LossScaler ls;
    loss_scale_init(&ls);
    bool ok = true;
    for (int step = 0; step < 2; step++) {
        for (int64_t i = 0; i < g.size; i++) g.data[i] = (float)(d->rank + 1) * (float)(i % 7);
        const bool inject = step == 0 && d->rank == d->world_size - 1;
        if (inject) g.data[500] = INFINITY;
        const bool local = loss_scale_unscale(&ls, &g);
        loss_scale_agree(&ls, any_rank, d);
        const bool stepped = loss_scale_should_step(&ls);
        loss_scale_update(&ls);
        ok = expect(local == inject, "this rank's own verdict", step, local, inject) && ok;
        ok = expect(stepped == (step == 1), "stepped", step, stepped, step == 1) && ok;
    }
    ok = expect(ls.scale == 32768.0f && ls.steps_skipped == 1 && ls.steps_taken == 1,
                "scale after a skipped and a clean step", 0, ls.scale, 32768.0) && ok;
    dist_check_same(d, (int64_t)ls.scale, "the loss scale");
    tensor_free(&g);
    return ok;
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
    run("bfloat16 and float16: all-reduce (sum, average, maximum, rounded sums), all-gather, reduce-scatter, broadcast, send and receive", check_16_bit);
    run("byte counters against the ring formulas; over all ranks bytes sent = bytes received", check_byte_counts);
    run("distributed sampler: every example once per epoch, padding repeats the first", check_distributed_sampler);
    run("DDP: 4 Adam steps on the ranks' shares equal one big batch; ranks bit-identical", check_ddp_equals_one_big_batch);
    run("loss scaling: an inf on the last rank only skips the step and halves the scale on every rank", check_loss_scale_agree);
    const int status = rank_checks_end();
    dist_finalize(g_dist);
    return status;
}
