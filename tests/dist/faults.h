/* The mistakes of tests/dist/run.sh's fault tests, made on purpose by ranks of
 * test_collectives (--fault KIND): each must end the whole job, within the timeout (5 s),
 * with a message that names the world rank at fault and what it did instead.
 *   hang        rank 1 spins in its own code, never calls lib/dist again
 *   die         rank 1 is killed
 *   mismatch    rank 1 builds a model of another size (DDP's check)
 *   skip-last   every rank but the last all-reduces the sums; the last goes on to the
 *               next all-reduce (TODO 9.4's mistake)
 *   only-first  rank 0 alone all-reduces the sums; the others finish
 *   ring-back   a ring step that receives from r + 1 instead of r - 1: a deadlock
 *   chain       the last rank of a ring does not send to rank 0 (a chain)
 *   stop-group  4 ranks in groups {0, 1} and {2, 3}: world rank 2 stops (SIGSTOP), and
 *               world rank 3 waits for it in their group
 *   check       a CHECK fails on rank 1
 *   slow        no fault: waits of 2 and 3 s for ranks busy in their own code, which
 *               must not end the job (its probe looks after a second or so) */
#ifndef TESTS_DIST_FAULTS_H
#define TESTS_DIST_FAULTS_H

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/rng.h"
#include "core/timer.h"
#include "dist/dist.h"
#include "models/cnn.h"
#include "parallel/ddp.h"

/* A step of a ring reduce-scatter of lesson 08: send block k to `to`, receive one from
 * `from` (either -1: that half is left out). */
static void ring_step(Dist *d, Tensor *out, int to, Tensor *in, int from) {
    dist_sendrecv(d, to >= 0 ? out : NULL, to, from >= 0 ? in : NULL, from);
}

/* Rank 1's images are larger: a model of another size, which DDP's start refuses. */
static void cnn_of_another_size(Dist *d) {
    Rng rng;
    rng_seed(&rng, 1, 0);
    Cnn m;
    cnn_init(&m, 1, d->rank == 1 ? 32 : 28, d->rank == 1 ? 32 : 28, 10, 2, &rng);
    Ddp ddp;
    ddp_init(&ddp, d, &m.params, 25, true);
}

static void fault(Dist *d, const char *kind) {
    const int r = d->rank, W = d->world_size;
    Tensor t = tensor_zeros(1, 1000), sums = tensor_zeros(1, 24);
    dist_all_reduce(d, &t, DIST_SUM); /* every rank gets this far */
    if (r == 1 && strcmp(kind, "hang") == 0)
        for (volatile long spin = 0;; spin++) {} /* busy in its own work, never calls MPI again */
    if (r == 1 && strcmp(kind, "die") == 0) raise(SIGKILL);
    if (strcmp(kind, "mismatch") == 0) cnn_of_another_size(d);
    if (strcmp(kind, "skip-last") == 0 && r != W - 1) dist_all_reduce(d, &sums, DIST_SUM);
    if (strcmp(kind, "only-first") == 0 && r == 0) dist_all_reduce(d, &sums, DIST_SUM);
    if (strcmp(kind, "only-first") == 0 && r != 0) return; /* to dist_finalize */
    if (strcmp(kind, "ring-back") == 0 || strcmp(kind, "chain") == 0) {
        Tensor a = tensor_zeros(1, 100), b = tensor_zeros(1, 100);
        const bool back = strcmp(kind, "ring-back") == 0;
        for (int k = 0; k < W - 1; k++)
            ring_step(d, &a, back || r + 1 < W ? (r + 1) % W : -1, &b, back ? (r + 1) % W : (r - 1 + W) % W);
        tensor_free(&a), tensor_free(&b);
    }
    if (strcmp(kind, "stop-group") == 0) { /* world rank 3 is the one that waits */
        Dist *g = dist_split(d, r / 2, r); /* {0, 1} and {2, 3}: tensor groups of 2 */
        const double until = now_seconds() + 30;
        for (int step = 0; now_seconds() < until; step++) {
            if (r == 2 && step == 5) raise(SIGSTOP);
            dist_all_reduce(g, &sums, DIST_SUM);
        }
    }
    if (strcmp(kind, "check") == 0) CHECK(r != 1, "a check planted on rank %d", r);
    if (strcmp(kind, "slow") == 0) { /* no fault: long waits for ranks at work, left alone */
        if (r == 1) sleep(3); /* the others wait for it in the all-reduce below */
        dist_all_reduce(d, &t, DIST_SUM);
        Tensor a = tensor_zeros(1, 100); /* a chain 0 -> 1 -> 2 behind rank 0's 2 s of work */
        if (r == 0) sleep(2);
        if (r > 0) dist_recv(d, &a, r - 1);
        if (r < W - 1) dist_send(d, &a, r + 1);
        tensor_free(&a);
    }
    dist_all_reduce(d, &t, DIST_SUM); /* the others wait here */
    dist_all_reduce(d, &t, DIST_SUM);
    printf("rank %d: the job went on after the fault\n", r);
    tensor_free(&t), tensor_free(&sums);
}

#endif
