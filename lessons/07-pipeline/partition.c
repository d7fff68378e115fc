/* TODO 7.1: which blocks each stage holds.
 *
 * A pipeline runs at the pace of its slowest stage: every micro-batch passes through
 * each stage, and the others wait for the slowest. So the layers are cut where the
 * cost is shared most evenly. Lesson 04's model is a list of blocks (embedding, L
 * encoder layers, decoder); their forward FLOPs per token are the costs (the backward
 * is about twice each, so the same proportions). With the tutorial's small width and
 * 28,782 words, the decoder alone costs more than both encoder layers: cutting "half
 * the layers on each GPU", as the seed exercise does, would leave one stage idle most
 * of the time. */
#include <math.h>

#include "lesson.h"

void lesson_partition(const double *costs, int blocks, int stages, int *first) {
    /* TODO 7.1: fill first[0..stages] so that stage s holds blocks [first[s],
     * first[s + 1]): first[0] = 0, first[stages] = blocks, each stage at least one
     * block, and the largest stage cost (the sum of its blocks' costs) as small as
     * possible.
     * Hint: dynamic programming over prefixes. With prefix sums P[k] = costs[0] + ...
     * + costs[k - 1], let best[s][k] be the least largest cost of blocks [0, k) cut
     * into s + 1 stages: best[0][k] = P[k], and best[s][k] is the least over j of
     * max(best[s - 1][j], P[k] - P[j]) (stage s holds [j, k)). Remember the best j of
     * each (s, k), then walk back from (stages - 1, blocks). A few hundred blocks at
     * most: O(stages * blocks^2) is fine. */
    TODO_STOP("7.1");
}
