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
    /* best[s][k]: the least largest cost of blocks [0, k) in stages 0..s; cut[s][k]:
     * where stage s begins in it. Stage s holds [j, k): try every j. */
    double prefix[1025], best[65][1025];
    int cut[65][1025];
    CHECK(blocks <= 1024 && stages <= 64 && stages <= blocks, "%d stages of %d blocks", stages, blocks);
    prefix[0] = 0;
    for (int k = 0; k < blocks; k++) prefix[k + 1] = prefix[k] + costs[k];
    for (int k = 1; k <= blocks; k++) best[0][k] = prefix[k];
    for (int s = 1; s < stages; s++)
        for (int k = s + 1; k <= blocks; k++) {
            best[s][k] = INFINITY;
            for (int j = s; j < k; j++) {
                const double worst = fmax(best[s - 1][j], prefix[k] - prefix[j]);
                if (worst < best[s][k]) best[s][k] = worst, cut[s][k] = j;
            }
        }
    first[0] = 0, first[stages] = blocks;
    for (int s = stages - 1; s > 0; s--) first[s] = cut[s][first[s + 1]];
}
