/* Grader of lesson 08. TODOs 8.1 and 8.6 are checked in one process; the others need
 * ranks: each such check starts
 *   mpirun -n 2 (and 3) <this grader> --worker NAME
 * whose ranks run your function with the library's versions of the others (so that a
 * check tests one TODO) and print what they saw (tests/graders/ranks.h). Such a check
 * SKIPs where there is no mpirun, never PASSes; every check has a time limit, so a
 * deadlock fails that check and the rest go on. The program's check trains on 2 and 3
 * ranks at every stage and compares the digests with plain data parallel's. A TODO whose
 * file uses the library's twin of it (ZERO_LIBRARY's parts, zero_update_piece,
 * zero_memory_formula) fails, named.
 * Run with `make check-lesson 8` (your code) or `make check-lesson 8 SOLUTION=1`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "framework/check.h"
#include "graders/ranks.h"
#include "lesson.h"
#include "models/transformer.h"

#ifndef LESSON_PATH /* the lesson's directory, from the Makefile: lessons/... or solutions/... */
#define LESSON_PATH "lessons/08-zero"
#endif

/* A rank that found a mistake says so and ends the job at once: the other ranks would
 * otherwise wait in a collective until their timeout and report a silent rank. */
#define FAIL(...)                                                                          \
    do {                                                                                   \
        say(false, __VA_ARGS__);                                                           \
        fflush(stdout);                                                                    \
        _exit(1);                                                                          \
    } while (0)

/* The ring by hand (TODO 8.2, part 2) may use send-receives only. */
static bool lesson_function(const char *name) { return strcmp(name, "lesson_ring_reduce_scatter") == 0; }
#include "graders/refuse_library.h"
#include "graders/source_uses.h"

/* Which lesson function called (dladdr on the return address; "" for another caller). */
static const char *caller_name(void *caller) {
    Dl_info info;
    return dladdr(caller, &info) && info.dli_sname ? info.dli_sname : "";
}

/* TODOs 8.2 and 8.4 each start one collective: the other collectives, or the right one
 * with its buffers swapped, are named here (the numbers alone would not say which). */
static void watch_collective(const char *fn, void *caller, Dist *d, const Tensor *o, const Tensor *i) {
    const char *who = caller_name(caller);
    const bool reduce = strcmp(who, "lesson_reduce_gradients") == 0, gather = strcmp(who, "lesson_gather_params") == 0;
    if (!reduce && !gather) return;
    const bool all_reduce = strstr(fn, "all_reduce") != NULL, scatter = strstr(fn, "reduce_scatter") != NULL;
    if (reduce && all_reduce)
        FAIL("lesson_reduce_gradients calls %s: an all-reduce gives every rank the whole average "
             "(twice a reduce-scatter's bytes), and the piece it needs arrives only when piece is a "
             "view of full; a reduce-scatter: dist_reduce_scatter_start(d, piece, full, DIST_AVG)", fn);
    if (reduce && scatter && d && o && i && o->size == i->size * d->world_size)
        FAIL("lesson_reduce_gradients calls %s with its tensors swapped: out (%lld scalars) is %d "
             "times in (%lld): out first, the piece [s], then in, the whole block full [N s]: "
             "dist_reduce_scatter_start(d, piece, full, DIST_AVG)", fn, (long long)o->size,
             d->world_size, (long long)i->size);
    if (gather && strstr(fn, "all_gather") && d && o && i && o->size * d->world_size == i->size)
        FAIL("lesson_gather_params calls %s with its tensors swapped: out (%lld scalars) is 1 / %d "
             "of in (%lld): out first, the whole block full [N s] that the pieces fill, then in, this "
             "rank's piece [s]: dist_all_gather_start(d, full, piece)", fn, (long long)o->size,
             d->world_size, (long long)i->size);
    if (gather && (all_reduce || scatter))
        FAIL("lesson_gather_params calls %s: that sums the ranks' values; the pieces must be put "
             "side by side, every rank's in its place of full: an all-gather, "
             "dist_all_gather_start(d, full, piece)", fn);
}

#define WATCH_VOID(name, params, args, o, i)                                                \
    void __real_##name params;                                                              \
    void __wrap_##name params;                                                              \
    void __wrap_##name params {                                                             \
        watch_collective(#name, __builtin_return_address(0), d, o, i);                      \
        refuse_from_lesson(#name, __builtin_return_address(0));                             \
        __real_##name args;                                                                 \
    }
#define WATCH_VALUE(type, name, params, args, o, i)                                         \
    type __real_##name params;                                                              \
    type __wrap_##name params;                                                              \
    type __wrap_##name params {                                                             \
        watch_collective(#name, __builtin_return_address(0), d, o, i);                      \
        refuse_from_lesson(#name, __builtin_return_address(0));                             \
        return __real_##name args;                                                          \
    }
WATCH_VOID(dist_reduce_scatter, (Dist *d, Tensor *o, const Tensor *i, DistOp op), (d, o, i, op), o, i)
WATCH_VALUE(DistRequest *, dist_reduce_scatter_start, (Dist *d, Tensor *o, const Tensor *i, DistOp op), (d, o, i, op), o, i)
WATCH_VOID(dist_all_reduce, (Dist *d, Tensor *t, DistOp op), (d, t, op), t, NULL)
WATCH_VALUE(DistRequest *, dist_all_reduce_start, (Dist *d, Tensor *t, DistOp op), (d, t, op), t, NULL)
WATCH_VOID(dist_all_gather, (Dist *d, Tensor *o, const Tensor *i), (d, o, i), o, i)
WATCH_VALUE(DistRequest *, dist_all_gather_start, (Dist *d, Tensor *o, const Tensor *i), (d, o, i), o, i)

/* ZeRO's own parts (ZERO_LIBRARY's functions are static, reached through the table) and
 * its formula cannot be wrapped: a TODO's file is read instead (source_uses.h). Returns
 * the first of the library's names it uses, or NULL; "" when the file cannot be read. */
static const char *source_uses_library(const char *file) {
    static const char *const names[] = {"ZERO_LIBRARY", "zero_memory_formula", "zero_update_piece", NULL};
    char path[512];
    snprintf(path, sizeof path, "%s/%s", LESSON_PATH, file);
    bool readable;
    const char *used = source_uses(path, names, true, &readable);
    return readable ? used : "";
}

/* A check's first step: its TODO's file must not use the library's twin of it. */
static bool refuse_twin(const char *file) {
    const char *name = source_uses_library(file);
    if (name && !*name) {
        printf("cannot read %s/%s (run the grader from the repository's top: make check-lesson 8)\n",
               LESSON_PATH, file);
        return true;
    }
    if (!name) return false;
    printf("%s uses the library's %s: write this TODO yourself (the library's version is there "
           "to compare with once your checks pass)\n", file, name);
    return true;
}

/* ================================================================ the ranks' side */

/* The ring must send and receive in one call: a blocking send first waits, for a large
 * block, until the neighbour receives, and the neighbour is sending too. */
static void refuse_blocking(const char *fn, void *caller) {
    Dl_info info;
    if (!dladdr(caller, &info) || !info.dli_sname || !lesson_function(info.dli_sname)) return;
    FAIL("lesson_ring_reduce_scatter calls %s: a blocking %s. When every rank sends first, a "
         "large block waits forever for a receive that never starts; send to r + 1 and receive "
         "from r - 1 in one call: dist_sendrecv(d, out_block, to, in_block, from)", fn,
         strcmp(fn, "dist_recv") == 0 ? "receive, paired with a send on its own" : "send");
}
void __real_dist_send(Dist *d, const Tensor *t, int peer);
void __wrap_dist_send(Dist *d, const Tensor *t, int peer);
void __wrap_dist_send(Dist *d, const Tensor *t, int peer) {
    refuse_blocking("dist_send", __builtin_return_address(0));
    __real_dist_send(d, t, peer);
}
void __real_dist_recv(Dist *d, Tensor *t, int peer);
void __wrap_dist_recv(Dist *d, Tensor *t, int peer);
void __wrap_dist_recv(Dist *d, Tensor *t, int peer) {
    refuse_blocking("dist_recv", __builtin_return_address(0));
    __real_dist_recv(d, t, peer);
}

/* Rank r's block j of a buffer: small integers times 1/4, exact in float, so that any
 * order of adding them gives the same sum; never 0, so that a block left as it was
 * (zeros) is told from one that arrived. */
static float value_of(int rank, int64_t i) { return (float)((rank + 1) * (i % 97 + 1)) * 0.25f; }

/* TODO 8.2: the average of every rank's block `rank`, in place and into a buffer. */
static void worker_reduce(void) {
    Dist *d = library_dist();
    const int W = d->world_size, r = d->rank;
    static const int64_t sizes[] = {1, 5, 1000, 40001};
    for (int in_place = 0; in_place < 2; in_place++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            const int64_t s = sizes[k];
            Tensor full = tensor_zeros(1, (int)(s * W)), own = tensor_zeros(1, (int)s);
            for (int64_t i = 0; i < s * W; i++) full.data[i] = value_of(r, i);
            Tensor piece = in_place ? tensor_range(&full, r * s, s) : own;
            DistRequest *q = lesson_reduce_gradients(d, &piece, &full);
            if (!q) {
                FAIL("lesson_reduce_gradients returned no request: return the one "
                    "dist_reduce_scatter_start gives (the library waits for it later)");
                return;
            }
            dist_wait(d, q);
            for (int64_t i = 0; i < s; i++) {
                const int64_t at = r * s + i;
                double sum = 0;
                for (int q2 = 0; q2 < W; q2++) sum += value_of(q2, at);
                const float want = (float)(sum / W), got = piece.data[i];
                if (fabsf(got - want) > 1e-5f * fmaxf(1.0f, fabsf(want))) {
                    const char *why = fabs(got - sum) < 1e-3 ? ": the sum, not the average (DIST_AVG)"
                                      : fabsf(got - value_of(r, at)) < 1e-6f ? ": this rank's own value, not reduced"
                                                                             : "";
                    FAIL("%s, %lld scalars a rank, rank %d's element %lld: %g, expected %g "
                        "(the mean over the ranks of element %lld of full)%s",
                        in_place ? "in place (piece = full at rank * s)" : "into a buffer of its own",
                        (long long)s, r, (long long)i, got, want, (long long)at, why);
                    return;
                }
            }
            tensor_free(&full), tensor_free(&own);
        }
    say(true, "reduce-scatter");
}

/* What block j of the ring's acc holds on rank r after the N - 1 steps: the sum over the
 * ranks j + 1 .. r, going round (all N of them for j = r, the block the ring completes). */
static double ring_partial(int W, int r, int j, int64_t at) {
    const int count = j == r ? W : ((r - j) % W + W) % W;
    double sum = 0;
    for (int k = 0; k < count; k++) sum += value_of(((r - k) % W + W) % W, at);
    return sum;
}

/* The ring of TODO 8.2 with its blocks as written (block (q - k - 1) mod N sent at step
 * k, what arrives added into block (q - k - 2) mod N) but every rank sending to q + dir
 * and receiving from q - dir, on all W ranks at once: block r of rank r's acc at the end
 * into out [s]. The values are exact in float, so any order of adding gives these. */
static void ring_simulate(int W, int dir, int r, int64_t s, double *out) {
    double *acc = xmalloc((size_t)(W * W * s) * sizeof *acc), *msg = xmalloc((size_t)(W * s) * sizeof *msg);
    for (int q = 0; q < W; q++)
        for (int64_t i = 0; i < W * s; i++) acc[q * W * s + i] = value_of(q, i);
    for (int k = 0; k < W - 1; k++) {
        for (int q = 0; q < W; q++) /* what q sends at step k */
            memcpy(msg + q * s, acc + q * W * s + (((q - k - 1) % W + W) % W) * s, (size_t)s * sizeof *msg);
        for (int q = 0; q < W; q++) {
            const int from = ((q - dir) % W + W) % W, into = ((q - k - 2) % W + W) % W;
            for (int64_t i = 0; i < s; i++) acc[q * W * s + into * s + i] += msg[from * s + i];
        }
    }
    memcpy(out, acc + r * W * s + r * s, (size_t)s * sizeof *out);
    xfree(acc), xfree(msg);
}

/* The ring's out [s] on rank r, not the sum of block r: which known mistake it shows (every
 * element of it), or "". */
static const char *ring_mistake(int W, int r, int64_t s, const float *out, char *buf, size_t cap) {
    bool avg = true, own = true, reversed = W > 2;
    for (int64_t i = 0; i < s; i++) {
        avg &= out[i] == (float)(ring_partial(W, r, r, r * s + i) / W);
        own &= out[i] == value_of(r, r * s + i);
    }
    if (avg) return ": the sum divided by N: this ring gives the sum, as the library's reduce-scatter "
                    "with DIST_SUM (the check's reference) does: do not divide";
    if (own) return ": rank's own block, never added to (the received block goes into acc)";
    if (reversed) {
        double *back = xmalloc((size_t)s * sizeof *back);
        ring_simulate(W, -1, r, s, back);
        for (int64_t i = 0; i < s && reversed; i++) reversed = out[i] == (float)back[i];
        xfree(back);
    }
    if (reversed) return ": what a ring the wrong way round gives: every rank sends to r - 1 and receives "
                         "from r + 1, while the blocks it sends and adds go round r -> r + 1 (on 2 ranks the "
                         "two neighbours are one rank, so it passed there): send to (r + 1) % N, receive "
                         "from (r - 1 + N) % N";
    for (int j = 0; j < W; j++) {
        if (j == r) continue;
        bool partial = true, whole = true;
        for (int64_t i = 0; i < s; i++) {
            partial &= out[i] == (float)ring_partial(W, r, j, j * s + i);
            whole &= out[i] == (float)ring_partial(W, j, j, j * s + i);
        }
        if (partial) {
            snprintf(buf, cap, ": what block %d of acc holds at the end (block r + %d, mod N): out is block "
                     "r = %d of acc, the one the N - 1 steps complete on this rank: "
                     "tensor_range(&acc, r * s, s)", j, ((j - r) % W + W) % W, r);
            return buf;
        }
        if (whole) return ": the sum of another rank's block (check which block is sent and which "
                          "received at step k)";
    }
    return "";
}

/* The ring's communicator: a step that waits 10 s is a hang (a receive from a rank that
 * sends elsewhere), far above what 240 kB take between processes of one machine. */
static Dist *ring_dist(void) {
    g_dist = dist_init(&(DistOptions){.backend = "auto", .timeout_s = 10});
    return g_dist;
}

/* TODO 8.2, part 2: the ring against the library's sums (exact: the values add exactly).
 * Every size runs on every rank before one says what is wrong (a rank that stopped
 * early would leave the others waiting); the largest size that failed says which
 * mistake it is (s = 1 has one element, too few to tell). */
static void worker_ring(void) {
    Dist *d = ring_dist();
    const int W = d->world_size, r = d->rank;
    static const int64_t sizes[] = {1, 3, 1000, 60000};
    char first[300] = "", kind[400] = "", traffic[600] = "";
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const int64_t s = sizes[k];
        Tensor in = tensor_zeros(1, (int)(s * W)), out = tensor_zeros(1, (int)s);
        for (int64_t i = 0; i < s * W; i++) in.data[i] = value_of(r, i);
        dist_counts_reset(d);
        lesson_ring_reduce_scatter(d, &out, &in);
        /* N - 1 steps of one block each: a step more still gives the sums (the last one
         * sends a block nobody adds to its own), at a block's traffic more per call */
        const DistCounts sent = dist_counts(d, DIST_KIND_SEND);
        const int64_t want_bytes = (W - 1) * s * 4;
        if (sent.bytes_sent != want_bytes && !*traffic)
            snprintf(traffic, sizeof traffic, "%lld scalars a rank: rank %d sent %lld bytes in %lld "
                     "send-receives, %lld blocks of %lld scalars; a ring sends N - 1 = %d blocks of s = "
                     "%lld (%lld bytes)%s", (long long)s, r, (long long)sent.bytes_sent, (long long)sent.calls,
                     (long long)(sent.bytes_sent / (4 * s)), (long long)s, W - 1, (long long)s,
                     (long long)want_bytes,
                     sent.bytes_sent == W * s * 4 ? ": N steps, not N - 1: after N - 1 steps block r "
                     "holds the whole sum already, and the step more sends it on to a rank that does "
                     "not need it (the sums are right, the traffic is N / (N - 1) times a ring's): "
                     "for (k = 0; k < N - 1; k++)" : "");
        for (int64_t i = 0; i < s * W; i++)
            if (in.data[i] != value_of(r, i)) {
                FAIL("the ring changed its input `in` (element %lld): copy it into a "
                    "buffer of your own first", (long long)i);
                return;
            }
        for (int64_t i = 0; i < s; i++) {
            const double want = ring_partial(W, r, r, r * s + i);
            if (out.data[i] == (float)want) continue;
            if (!*first)
                snprintf(first, sizeof first, "%lld scalars a rank: rank %d's element %lld is %g, "
                         "expected %g (the sum of block %d over the ranks)", (long long)s, r,
                         (long long)i, out.data[i], want, r);
            char buf[300];
            const char *why = ring_mistake(W, r, s, out.data, buf, sizeof buf);
            if (*why || !*kind) snprintf(kind, sizeof kind, "%s", why);
            break;
        }
        tensor_free(&in), tensor_free(&out);
    }
    if (*first) FAIL("%s%s", first, kind);
    if (*traffic) FAIL("%s", traffic);
    say(true, "ring reduce-scatter");
}

/* TODO 8.4: every rank's piece, in rank order, in place and into a buffer. */
static void worker_gather(void) {
    Dist *d = library_dist();
    const int W = d->world_size, r = d->rank;
    static const int64_t sizes[] = {1, 7, 50001};
    for (int in_place = 0; in_place < 2; in_place++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            const int64_t s = sizes[k];
            Tensor full = tensor_zeros(1, (int)(s * W)), own = tensor_zeros(1, (int)s);
            Tensor piece = in_place ? tensor_range(&full, r * s, s) : own;
            for (int64_t i = 0; i < s; i++) piece.data[i] = value_of(r, i);
            DistRequest *q = lesson_gather_params(d, &full, &piece);
            if (!q) {
                FAIL("lesson_gather_params returned no request: return dist_all_gather_start's");
                return;
            }
            dist_wait(d, q);
            for (int j = 0; j < W; j++)
                for (int64_t i = 0; i < s; i++)
                    if (full.data[j * s + i] != value_of(j, i)) {
                        FAIL("%s, %lld scalars a rank: block %d of full holds %g at %lld, rank "
                            "%d's piece has %g%s", in_place ? "in place" : "from a buffer",
                            (long long)s, j, full.data[j * s + i], (long long)i, j, value_of(j, i),
                            full.data[j * s + i] == 0 ? " (nothing arrived: an all-gather of every rank's piece)" : "");
                        return;
                    }
            tensor_free(&full), tensor_free(&own);
        }
    say(true, "all-gather");
}

/* ---------------------------------------------------------------- training workers */

enum { VOCAB = 37, B = 4, T = 6, STEPS = 3 };

static TransformerConfig small_config(void) {
    return (TransformerConfig){.vocab = VOCAB, .d_model = 16, .heads = 2, .d_ff = 24,
                               .layers = 2, .max_len = 64, .dropout = 0.1f};
}

static void make_batch(Dist *d, int step, int *tokens, int *targets) {
    Rng rng;
    rng_seed(&rng, 77 + 100u * (uint64_t)step, (uint64_t)d->rank);
    for (int i = 0; i < B * T; i++) tokens[i] = (int)rng_below(&rng, VOCAB);
    for (int i = 0; i < B * T; i++) targets[i] = (int)rng_below(&rng, VOCAB);
}

/* What a stage-3 run does at each of the lesson's hook's calls, seen right after it by
 * the grader's hook that wraps it (watched_hook). The units array gets a guard on either
 * side (units[-1], units[nunits]): a hook that gathers past an end starts the guard's
 * gather instead of reading past the array, and is named. A next block not on its way is
 * noted, not failed at once: the run goes on (zero_await gathers what is missing), and
 * what the other blocks and the other pass show says which mistake it is (no prefetch,
 * the directions swapped, a block skipped, the bound at the pass's last block). So is a
 * block left without its parameters before its pass (the watch gathers them): what the
 * hook does after the pass tells an after flag read the wrong way round. A next block
 * gathered and at once waited for fails there and then: nothing overlaps. */
typedef struct {
    Zero *z;
    ZeroUnit *library_units; /* zero_init's array, back in place before zero_free */
    ZeroUnit *guarded;       /* [nunits + 2]: guard, the units, guard */
    bool *had;               /* [nunits]: held a window when this hook last ran */
    int missed[2];           /* passes (forward, backward) whose next block was not on its way */
    int other_way[2];        /* ... while the block on the other side was gathered since */
    int skipped[2];          /* ... or the one after the next */
    int at_end[2];           /* ... where the next one is the pass's last block */
    char first[2][300];      /* the first such, per pass */
    bool *unready;           /* [nunits]: the hook left it without its parameters before its pass */
    char unready_why[300];   /* the first such */
} Watch;

static void watch_start(Watch *w, Zero *z) {
    *w = (Watch){.z = z, .library_units = z->units};
    w->guarded = xcalloc((size_t)z->nunits + 2, sizeof *w->guarded);
    memcpy(w->guarded + 1, z->units, (size_t)z->nunits * sizeof *z->units);
    for (int g = 0; g < 2; g++) { /* unit 0's sizes: a guard's gather is a valid one */
        ZeroUnit *guard = &w->guarded[g ? z->nunits + 1 : 0];
        *guard = z->units[0];
        guard->window = -1, guard->gather = NULL, guard->block = -1;
    }
    z->units = w->guarded + 1;
    w->had = xcalloc((size_t)z->nunits, sizeof *w->had);
    w->unready = xcalloc((size_t)z->nunits, sizeof *w->unready);
}

static void watch_stop(Watch *w) {
    memcpy(w->library_units, w->z->units, (size_t)w->z->nunits * sizeof *w->z->units);
    w->z->units = w->library_units;
    xfree(w->guarded), xfree(w->had), xfree(w->unready);
}

/* Unit j got a window since the watch last looked: the hook gathered it. */
static bool newly_gathered(const Watch *w, int j) {
    return j >= 0 && j < w->z->nunits && w->z->units[j].window >= 0 && !w->had[j];
}

static void watch_look(Watch *w, ZeroUnit *u, BlockPass pass, bool after) {
    Zero *z = w->z;
    const int k = (int)(u - z->units), step = pass == BLOCK_FORWARD ? 1 : -1, next = k + step;
    const int pi = pass == BLOCK_FORWARD ? 0 : 1;
    const char *p = pass == BLOCK_FORWARD ? "forward" : "backward";
    for (int g = 0; g < 2; g++)
        if (z->units[g ? z->nunits : -1].window >= 0)
            FAIL("%s block %d's %s the hook started a gather of z->units[%d], past the %s of the "
                 "%d units: no block runs next there; start the next one only where 0 <= next < "
                 "z->nunits", after ? "after" : "before", u->block, p, g ? z->nunits : -1,
                 g ? "last" : "first", z->nunits);
    if (!after) { /* what the library's guard checks next: the block's parameters are there */
        const Param *first = z->params->items[u->first_param];
        const void *there = z->blocks->dtype != DTYPE_F32 ? first->work.raw : first->value.raw;
        if (u->window < 0 || u->gather || !there) {
            if (!w->unready_why[0])
                snprintf(w->unready_why, sizeof w->unready_why, "block %d's %s was about to begin "
                         "without its parameters (%s)", u->block, p, u->window < 0 ? "not gathered"
                         : u->gather ? "gathered, but not waited for" : "not pointed at");
            w->unready[k] = true;
            zero_await(z, u); /* so that the run goes on: what the hook does after the pass says more */
        }
    }
    if (after && w->unready[k]) {
        if (u->window >= 0 && next >= 0 && next < z->nunits && newly_gathered(w, next))
            FAIL("%s, and after the pass the hook kept its window and started the next block's (%d) "
                 "gather: the after flag is read the wrong way round: after == true is the call once "
                 "the pass is over (zero_release), after == false the one before it (zero_await, then "
                 "the next block's zero_gather)", w->unready_why, z->units[next].block);
        FAIL("%s: before the pass (after == false) the hook must zero_await(z, u): it gathers the "
             "block if need be, waits for it and points the block's parameters at the window%s",
             w->unready_why, u->window >= 0 ? "; after the pass, zero_release(z, u)" : "");
    }
    if (after && u->window >= 0)
        FAIL("block %d's window was still held after its %s: zero_release it when the pass is "
             "over (after == true)", u->block, p);
    if (after || next < 0 || next >= z->nunits) return;
    if (newly_gathered(w, next) && !z->units[next].gather)
        FAIL("before block %d's %s the hook gathered the next block (%d) and waited for it at once: "
             "zero_await of the next unit stops the rank until its parameters have arrived, so nothing "
             "travels while block %d computes; start it and go on: zero_gather(z, &z->units[next]) "
             "(its own pass's zero_await waits for it)", u->block, p, z->units[next].block, u->block);
    if (z->units[next].window >= 0) return;
    if (!w->missed[pi]++)
        snprintf(w->first[pi], sizeof w->first[pi], "block %d's %s began and the next block's (%d) "
                 "gather had not started", u->block, p, z->units[next].block);
    w->at_end[pi] += next == (pi ? 0 : z->nunits - 1);
    const int back = k - step, skip = k + 2 * step;
    w->other_way[pi] += newly_gathered(w, back);
    w->skipped[pi] += newly_gathered(w, skip);
}

/* The hook under watch (the lesson's) and its watch: the grader's hook runs it, then
 * looks, before the library's guard (zero_init adds that after ops' hook) stops a block
 * that would run without its parameters: so the watch sees that too, and names it. */
static BlockHookFn g_watched;
static Watch *g_watch;

static void watched_hook(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after) {
    g_watched(ctx, l, b, pass, after);
    Watch *w = g_watch;
    ZeroUnit *u = w ? zero_unit_of(w->z, b) : NULL;
    if (!u) return;
    watch_look(w, u, pass, after);
    for (int j = 0; j < w->z->nunits; j++) w->had[j] = w->z->units[j].window >= 0;
}

/* After the run: which mistake the blocks not on their way show, if any. */
static void watch_verdict(const Watch *w) {
    const bool f = w->missed[0] > 0, b = w->missed[1] > 0;
    if (!f && !b) return;
    /* (the block gathered the wrong way holds a window until its next pass: going back
     * the hook may find none free, and what it asked for is not seen) */
    if (f && b && (w->other_way[0] || w->other_way[1]))
        FAIL("%s, and going back the same: the directions are swapped: the hook started the "
             "gather of the block on the other side, the one that had just run. The forward runs "
             "the blocks in order, so the next one is index + 1; the backward in reverse: index - 1",
             w->first[0]);
    for (int pi = 0; pi < 2; pi++)
        if (w->missed[pi] && w->missed[pi] == w->at_end[pi])
            FAIL("%s: only block %d, the last of the %s, was never prefetched: the bound on next "
                 "leaves it out (%s): every unit from 0 to z->nunits - 1 is one, so start the gather "
                 "where 0 <= next < z->nunits", w->first[pi], w->z->units[pi ? 0 : w->z->nunits - 1].block,
                 pi ? "backward's (unit 0)" : "forward's (the last unit)",
                 pi ? "next > 0 where next >= 0" : "next < z->nunits - 1 where next < z->nunits");
    for (int pi = 0; pi < 2; pi++)
        if (w->missed[pi] && w->skipped[pi])
            FAIL("%s: the block after it (index %s 2) was on its way instead: the next one is the "
                 "neighbour, index %s 1", w->first[pi], pi ? "-" : "+", pi ? "-" : "+");
    if (b && !f)
        FAIL("%s: the backward runs the blocks in reverse, so the next one is index - 1 (going "
             "forward it is + 1)%s", w->first[1], w->other_way[1] ? "; block after it was gathered instead" : "");
    if (f && !b)
        FAIL("%s: the forward runs the blocks in order, so the next one is index + 1 (going back it "
             "is - 1)%s", w->first[0], w->other_way[0] ? "; the block before it was gathered instead" : "");
    FAIL("%s: no prefetch: zero_gather(z, &z->units[next]) after zero_await, next = index + 1 "
         "going forward, index - 1 going back", w->first[f ? 0 : 1]);
}

/* 3 AdamW (or SGD) steps at `stage` with ops; the whole parameters and state after
 * (state1: Adam's v, or NULL). */
static void train_with(Dist *d, int stage, const ZeroOps *ops, bool adamw, bool watch, float *values,
                       float *state, float *state1, int64_t *step_count) {
    const TransformerConfig c = small_config();
    Transformer m;
    transformer_init(&m, &c, B, T, 5 + (uint64_t)d->rank);
    Zero z;
    ZeroOps watched = *ops;
    if (watch) g_watched = ops->stage3_hook, watched.stage3_hook = watched_hook;
    zero_init(&z, d, &m.blocks, stage, &watched);
    Watch w;
    if (watch) watch_start(&w, &z), g_watch = &w;
    if (adamw) zero_optimizer_adamw(&z, 1e-2f, 0.01f);
    else zero_optimizer_sgd(&z, 0.1f, 0.9f, 0.001f);
    for (int s = 0; s < STEPS; s++) {
        int tokens[B * T], targets[B * T];
        make_batch(d, s, tokens, targets);
        zero_begin_step(&z);
        transformer_forward_backward(&m, tokens, targets);
        zero_finish_gradients(&z);
        zero_step(&z);
    }
    if (watch) watch_verdict(&w);
    zero_full_params(&z, values);
    zero_full_state(&z, 0, state);
    if (state1) zero_full_state(&z, 1, state1);
    *step_count = adamw ? z.adam.step : z.sgd.step;
    if (watch) g_watch = NULL, watch_stop(&w);
    zero_free(&z);
    transformer_free(&m);
}

/* How many of n scalars are 0 in got where want's are not. */
static int64_t never_written(const float *got, const float *want, int64_t n, int64_t *nonzero) {
    int64_t k = 0;
    *nonzero = 0;
    for (int64_t i = 0; i < n; i++) {
        k += got[i] == 0 && want[i] != 0;
        *nonzero += want[i] != 0;
    }
    return k;
}

/* Your part (ops) against the library's: the same parameters and state, bit for bit. */
static void compare_training(Dist *d, int stage, const ZeroOps *ops, bool watch, const char *what) {
    for (int adamw = 1; adamw >= 0; adamw--) {
        const TransformerConfig c = small_config();
        const int64_t n = transformer_param_count(&c);
        float *want = xmalloc((size_t)n * 4), *wstate = xmalloc((size_t)n * 4), *wv = xmalloc((size_t)n * 4);
        float *got = xmalloc((size_t)n * 4), *gstate = xmalloc((size_t)n * 4), *gv = xmalloc((size_t)n * 4);
        int64_t wsteps, gsteps;
        train_with(d, stage, &ZERO_LIBRARY, adamw, false, want, wstate, adamw ? wv : NULL, &wsteps);
        train_with(d, stage, ops, adamw, watch, got, gstate, adamw ? gv : NULL, &gsteps);
        const char *opt = adamw ? "AdamW" : "SGD with momentum";
        if (gsteps == 0)
            FAIL("%s: after %d steps the optimiser's step count is still 0: count each step "
                 "(++z->adam.step or ++z->sgd.step) and pass it as t: t = 1 at the first", opt, STEPS);
        if (gsteps != wsteps) {
            FAIL("%s: after %d steps the optimiser's step count is %lld: count it once per "
                "step (t, Adam's bias correction), not once per block", opt, STEPS, (long long)gsteps);
            return;
        }
        int64_t bad = -1, bad_state = -1, nonzero, nonzero_v = 0;
        for (int64_t i = 0; i < n; i++) {
            if (got[i] != want[i] && bad < 0) bad = i;
            if ((gstate[i] != wstate[i] || (adamw && gv[i] != wv[i])) && bad_state < 0) bad_state = i;
        }
        const int64_t untouched = never_written(gstate, wstate, n, &nonzero);
        const int64_t untouched_v = adamw ? never_written(gv, wv, n, &nonzero_v) : 0;
        /* every parameter NaN or inf, the library's finite, Adam's v written: the first
         * step's bias corrections divided by 0 (t = 0), and the NaNs went everywhere */
        bool all_nonfinite = adamw, want_finite = true;
        for (int64_t i = 0; i < n; i++) all_nonfinite &= !isfinite(got[i]), want_finite &= isfinite(want[i]) != 0;
        if (all_nonfinite && want_finite && untouched_v < nonzero_v)
            FAIL("%s, stage %d, AdamW: after %d steps all %lld parameters are NaN or inf (the first: %g), "
                 "the library's finite: Adam's bias corrections divide by 1 - beta^t, 0 at t = 0: t is "
                 "the step count once counted, 1 at the first step (t = ++z->adam.step), not the count "
                 "before it (z->adam.step - 1, or z->adam.step++)", what, stage, STEPS, (long long)n, got[0]);
        if (bad >= 0 || bad_state >= 0) {
            char extra[300] = "";
            if (adamw && untouched_v == nonzero_v && nonzero_v > 0 && untouched < nonzero)
                snprintf(extra, sizeof extra, "; Adam's v never changed, anywhere: m and v are two "
                         "buffers, zero_state_piece(z, u, 0) and zero_state_piece(z, u, 1)");
            else if (!adamw && untouched == nonzero && nonzero > 0)
                snprintf(extra, sizeof extra, "; SGD's momentum never changed, anywhere: the step "
                         "does nothing when z->optimizer is ZERO_SGD: sgd_update_on(z->device, p, g, "
                         "buf, u->piece, &z->sgd, t == 1)");
            else if (untouched > 0 || untouched_v > 0)
                snprintf(extra, sizeof extra, "; %lld scalars' state never changed: a block's piece "
                         "was not updated (every unit, z->nunits of them)", (long long)(untouched + untouched_v));
            FAIL("%s, stage %d, %s: after %d steps %s differ from the library's (first at "
                "scalar %lld of %lld)%s", what, stage, opt, STEPS,
                bad >= 0 ? "the parameters" : "the optimiser's state", (long long)(bad >= 0 ? bad : bad_state),
                (long long)n, extra);
            return;
        }
        xfree(want), xfree(wstate), xfree(wv), xfree(got), xfree(gstate), xfree(gv);
    }
    say(true, "%s", what);
}

static void worker_step(void) {
    Dist *d = library_dist();
    ZeroOps ops = ZERO_LIBRARY;
    ops.step = lesson_sharded_step;
    compare_training(d, 1, &ops, false, "your sharded step");
}

static void worker_prefetch(void) {
    Dist *d = library_dist();
    ZeroOps ops = ZERO_LIBRARY;
    ops.stage3_hook = lesson_stage3_hook;
    compare_training(d, 3, &ops, true, "your stage 3 hook");
}

static bool worker(int argc, char **argv) {
    (void)argc;
    if (strcmp(argv[2], "reduce") == 0) worker_reduce();
    else if (strcmp(argv[2], "ring") == 0) worker_ring();
    else if (strcmp(argv[2], "gather") == 0) worker_gather();
    else if (strcmp(argv[2], "step") == 0) worker_step();
    else if (strcmp(argv[2], "prefetch") == 0) worker_prefetch();
    else return false;
    return true;
}

/* ================================================================ the checks */

/* TODO 8.1 against its definition, n = 1..200 and a few large, 1 to 8 ranks. */
static int check_shard_range(void) {
    if (refuse_twin("shard.c")) return CHECK_FAIL;
    static const int64_t big[] = {1000, 1001, 4099, 11120728, 3000000001, 8589934597};
    for (int64_t t = 1; t <= 206; t++) {
        const int64_t n = t <= 200 ? t : big[t - 201];
        for (int world = 1; world <= 8; world++)
            for (int rank = 0; rank < world; rank++) {
                const ZeroRange got = lesson_shard_range(n, world, rank);
                const int64_t piece = (n + world - 1) / world, start = piece * rank;
                const int64_t end = start + piece < n ? start + piece : n;
                const ZeroRange want = {piece, piece * world, start, end > start ? end - start : 0};
                if (memcmp(&got, &want, sizeof got) == 0) continue;
                printf("n = %lld on %d ranks, rank %d: piece %lld, padded %lld, start %lld, own %lld; "
                       "expected %lld, %lld, %lld, %lld\n", (long long)n, world, rank,
                       (long long)got.piece, (long long)got.padded, (long long)got.start,
                       (long long)got.own, (long long)want.piece, (long long)want.padded,
                       (long long)want.start, (long long)want.own);
                if (got.piece == piece && got.start != want.start && got.start == rank * (n / world))
                    printf("hint: start = rank x (n / world) is where an unpadded cut would begin; the pieces "
                           "are piece = ceil(n / world) long, so rank's starts at rank x piece\n");
                else if (got.piece == n / world && n % world)
                    printf("hint: n / world rounded down: the last %lld scalars belong to nobody; round up\n",
                           (long long)(n % world));
                else if (got.padded != got.piece * world)
                    printf("hint: padded is the world's pieces together: world x piece\n");
                else if (n > INT32_MAX && got.piece != piece)
                    printf("hint: n is past 2^31: compute in int64_t throughout\n");
                else if (got.own == want.own - 1 || got.own == want.own + 1)
                    printf("hint: own is one %s: it counts the scalars of [start, start + piece) below n, "
                           "min(start + piece, n) - start (n - start in the last piece that holds any: n is "
                           "one past the last scalar, not the last)\n", got.own < want.own ? "short" : "too many");
                else if (got.own < 0 || got.own > piece)
                    printf("hint: own counts the piece's scalars below n: never negative, never more than the piece\n");
                else if (got.own == piece && want.own < piece)
                    printf("hint: the last piece holds padding: own is only the part below n\n");
                return CHECK_FAIL;
            }
    }
    return CHECK_PASS;
}

/* TODO 8.6's kinds of bytes sharded from the wrong stage on (world > 1): a hint naming the
 * stage and the kind, printed; false when each kind is whole or sharded as its stage says
 * (or is neither: another mistake). */
static bool stage_mistake(int stage, int64_t psi, int world, int64_t K, const ZeroMemory *got) {
    static const char *const kinds[3] = {"the optimiser's state", "the gradients", "the parameters"};
    static const char *const reach[3] = {"stages 1, 2 and 3 shard it", "stages 2 and 3 shard them",
                                         "only stage 3 shards them"};
    const int64_t bytes[3] = {K, 4, 4}, seen[3] = {got->optim, got->grads, got->params};
    for (int k = 0; k < 3 && world > 1; k++) {
        const int from = k + 1; /* optimiser state from stage 1, gradients 2, parameters 3 */
        const int64_t whole = bytes[k] * psi, shard = bytes[k] * psi / world;
        if (stage >= from && seen[k] == whole) {
            printf("hint: stage %d keeps %s whole (%lld psi bytes) where %s: %lld psi / N\n", stage,
                   kinds[k], (long long)bytes[k], reach[k], (long long)bytes[k]);
            return true;
        }
        if (stage < from && stage > 0 && seen[k] == shard) {
            printf("hint: stage %d shards %s (%lld psi / N) where %s: stage %d keeps %s whole, %lld psi\n",
                   stage, kinds[k], (long long)bytes[k], reach[k], stage, k ? "them" : "it", (long long)bytes[k]);
            return true;
        }
    }
    return false;
}

/* TODO 8.6 against the table, stages 0-3, 1-8 ranks, both optimisers. */
static int check_memory(void) {
    if (refuse_twin("memory.c")) return CHECK_FAIL;
    static const int64_t psis[] = {1, 7, 1000, 22670127, 1300000001};
    for (size_t k = 0; k < sizeof psis / sizeof psis[0]; k++)
        for (int opt = 0; opt < 2; opt++)
            for (int stage = 0; stage <= 3; stage++)
                for (int world = 1; world <= 8; world++) {
                    const int64_t psi = psis[k], K = opt == ZERO_ADAMW ? 8 : 4;
                    const ZeroMemory got = lesson_memory_formula(stage, psi, world, (ZeroOptimizer)opt);
                    const ZeroMemory want = {stage >= 3 ? 4 * psi / world : 4 * psi,
                                             stage >= 2 ? 4 * psi / world : 4 * psi,
                                             stage >= 1 ? K * psi / world : K * psi, 0, 0};
                    if (memcmp(&got, &want, sizeof got) == 0) continue;
                    printf("stage %d, %lld parameters on %d ranks, %s: params %lld, grads %lld, optimiser "
                           "%lld, windows %lld bytes; expected %lld, %lld, %lld, 0\n", stage,
                           (long long)psi, world, opt == ZERO_ADAMW ? "AdamW" : "SGD",
                           (long long)got.params, (long long)got.grads, (long long)got.optim,
                           (long long)got.windows, (long long)want.params, (long long)want.grads,
                           (long long)want.optim);
                    if (stage == 0 && world > 1 && (got.optim < want.optim || got.grads < want.grads ||
                                                    got.params < want.params))
                        printf("hint: stage 0 is plain data parallel: every rank holds everything, nothing is divided\n");
                    else if (got.optim == K * (psi / world) && want.optim != got.optim)
                        printf("hint: multiply first, then divide: (K x psi) / N, as (4 x psi) / N (psi / N first drops the remainder K times)\n");
                    else if (stage_mistake(stage, psi, world, K, &got))
                        ;
                    else if (got.optim == want.optim * 2 || got.optim * 2 == want.optim)
                        printf("hint: AdamW keeps two moments (8 bytes a parameter), SGD one momentum buffer (4)\n");
                    else if (got.params == psi || got.grads == psi)
                        printf("hint: bytes, not parameters: float32 is 4 bytes each\n");
                    return CHECK_FAIL;
                }
    return CHECK_PASS;
}

/* A ring the library stopped (its message, file:line, is in the output: the ring's code
 * is the participant's), or one that passed on 2 ranks and hung on 3: there r + 1 and
 * r - 1 are one rank. */
static void explain_ring(int ranks, const CommandResult *r) {
    const char *at = strstr(r->out, "check failed: dist_send: peer ");
    const bool send = at != NULL;
    if (!at) at = strstr(r->out, "check failed: dist_recv: peer ");
    int peer, rank, world;
    if (at && sscanf(strstr(at, "peer "), "peer %d from rank %d of a communicator of %d", &peer, &rank, &world) == 3) {
        printf("hint: TODO 8.2, part 2 (lesson_ring_reduce_scatter, reduce.c): rank %d of %d %s rank "
               "%d, %s: the ring wraps round, rank N - 1 sends to 0 and 0 receives from N - 1: to = "
               "(r + 1) %% N, from = (r - 1 + N) %% N (C's %% keeps the sign: add N first)\n", rank, world,
               send ? "sent to" : "received from", peer,
               peer == rank ? "itself" : peer < 0 ? "before the first" : "past the last");
        return;
    }
    if ((at = strstr(r->out, "check failed: elements "))) {
        long long from, to, size;
        if (sscanf(at, "check failed: elements %lld..%lld of a tensor with %lld", &from, &to, &size) == 3)
            printf("hint: TODO 8.2, part 2 (lesson_ring_reduce_scatter, reduce.c): a block of [%lld, %lld) "
                   "of a buffer of %lld scalars, past its end (the library's tensor_range stopped it): "
                   "block j of acc is tensor_range(&acc, j * s, s), s = out->size (the piece: in holds "
                   "N s), j = (r - k - 1) or (r - k - 2) taken mod N, in 0 .. N - 1\n", from, to, size);
        return;
    }
    if ((at = strstr(r->out, "check failed: ")))
        printf("hint: the library stopped TODO 8.2, part 2 (lesson_ring_reduce_scatter, reduce.c) at the "
               "check above: the ring's tensors and peers are the ones to look at\n");
    /* a receive that never gets its send: the library ends the job early ("can never
     * finish", the deadlock seen) or at its timeout */
    if (ranks == 3 && (r->timed_out || strstr(r->out, "did not finish within") || strstr(r->out, "can never finish")))
        printf("hint: on 2 ranks the ring passed, on 3 a send-receive waited for a message that "
               "never came: on 2 ranks r + 1 and r - 1 are the same rank, on 3 not. Every rank "
               "sends to r + 1, so each receives from r - 1: dist_sendrecv(d, block, (r + 1) %% N, "
               "got, (r - 1 + N) %% N)\n");
}

/* A step that asked SGD for Adam's second buffer (the library's check stopped it). */
static void explain_step(int ranks, const CommandResult *r) {
    (void)ranks;
    if (strstr(r->out, "optimiser state 1 of SGD"))
        printf("hint: with SGD (z->optimizer == ZERO_SGD) there is no v, only the momentum "
               "(zero_state_piece(z, u, 0)): update with sgd_update_on(z->device, p, g, buf, "
               "u->piece, &z->sgd, t == 1); adam_update_on only for ZERO_ADAMW\n");
}

static int check_reduce(void) {
    if (refuse_twin("reduce.c")) return CHECK_FAIL;
    return on_2_and_3("reduce", "the reduce-scatter of gradients", 60);
}
static int check_ring(void) {
    if (refuse_twin("reduce.c")) return CHECK_FAIL;
    return on_2_and_3_explained("ring", "the ring reduce-scatter", 90, explain_ring);
}
static int check_step(void) {
    if (refuse_twin("step.c")) return CHECK_FAIL;
    return on_2_and_3_explained("step", "the sharded optimiser step", 90, explain_step);
}
static int check_gather(void) {
    if (refuse_twin("gather.c")) return CHECK_FAIL;
    return on_2_and_3("gather", "the all-gather of parameters", 60);
}
static int check_prefetch(void) {
    if (refuse_twin("prefetch.c")) return CHECK_FAIL;
    return on_2_and_3("prefetch", "stage 3's hook", 90);
}

/* The program: every stage's digests = stage 0's, on every rank, 2 and 3 ranks. */
static int check_program(void) {
    REQUIRE_RANKS();
    const char *text = "/usr/share/common-licenses/GPL-3"; /* Debian's base-files */
    if (access(text, R_OK) != 0) {
        printf("needs a text: %s is not there\n", text);
        return CHECK_SKIP;
    }
    for (int ranks = 2; ranks <= 3; ranks++) {
        char want[2][64] = {"", ""};
        for (int stage = 0; stage <= 3; stage++) {
            if (ranks == 3 && (stage == 1 || stage == 2)) continue; /* time: 0 and 3 */
            char st[8];
            snprintf(st, sizeof st, "%d", stage);
            const char *args[] = {"main", "--stage", st, "--dataset", "text", "--data", text,
                                  "--d-model", "24", "--heads", "2", "--d-hid", "32", "--layers", "2",
                                  "--bptt", "8", "--batch-size", "12", "--max-steps", "3",
                                  "--dropout", "0", NULL};
            CommandResult r;
            run_ranks(ranks, args, 120, &r);
            char end[96];
            if (r.timed_out || !WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
                printf("the program, --stage %d on %d ranks, ended: %s. It said:\n", stage, ranks,
                       describe_end(&r, end, sizeof end));
                print_ranks_output(r.out);
                return CHECK_FAIL;
            }
            for (int rank = 0; rank < ranks; rank++)
                for (int kind = 0; kind < 2; kind++) {
                    char key[64], got[64] = "";
                    snprintf(key, sizeof key, "rank %d %s digest: ", rank, kind ? "optimizer" : "parameter");
                    const char *at = strstr(r.out, key);
                    if (at) sscanf(at + strlen(key), "%63s", got);
                    if (!*got) {
                        printf("--stage %d on %d ranks: no line \"%s...\"\n", stage, ranks, key);
                        return CHECK_FAIL;
                    }
                    if (!*want[kind]) snprintf(want[kind], sizeof want[kind], "%s", got);
                    else if (strcmp(got, want[kind]) != 0) {
                        printf("--stage %d on %d ranks: rank %d's %s digest %s, stage 0's %s: the "
                               "stages must train the same model\n", stage, ranks, rank,
                               kind ? "optimizer" : "parameter", got, want[kind]);
                        return CHECK_FAIL;
                    }
                }
        }
    }
    return CHECK_PASS;
}

static void checks(void) {
    check_run("TODO 8.1", "shard ranges: equal pieces, padded at the end (n = 1-200 and up to 8.6e9, 1-8 ranks)", check_shard_range, 20);
    check_run("TODO 8.2", "reduce-scatter of gradients: the average's piece, in place and not (2 and 3 ranks)", check_reduce, 120);
    check_run("TODO 8.2", "the ring reduce-scatter by hand: the library's sums, send-receives only (2 and 3 ranks)", check_ring, 180);
    check_run("TODO 8.3", "the sharded step: AdamW and SGD after 3 steps = the library's, bit for bit (2 and 3 ranks)", check_step, 180);
    check_run("TODO 8.4", "all-gather of parameters: every rank's piece in rank order (2 and 3 ranks)", check_gather, 120);
    check_run("TODO 8.5", "stage 3: gathered before each pass, next one prefetched, released after; = the library (2 and 3 ranks)", check_prefetch, 180);
    check_run("TODO 8.6", "memory per rank: the ZeRO table for stages 0-3, AdamW and SGD", check_memory, 10);
    check_run("TODO 8.1-8.6", "the program: stages 0-3 on 2 ranks (0 and 3 on 3): the same digests on every rank", check_program, 300);
}

int main(int argc, char **argv) {
    return ranks_main(argc, argv, "lesson 08: zero", checks, worker, lesson_main);
}
