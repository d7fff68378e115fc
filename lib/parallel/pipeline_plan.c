/* The plan of a pipeline, before any rank runs it: the order of each stage's forwards
 * and backwards (GPipe, 1F1B), the bubble they leave, and where to cut the blocks. */
#include <math.h>
#include <stdlib.h>

#include "core/check.h"
#include "pipeline.h"

/* ---------------------------------------------------------------- schedules */

const char *pipeline_schedule_name(PipeSchedule s) { return s == PIPE_GPIPE ? "gpipe" : "1f1b"; }

int pipeline_schedule(PipeSchedule schedule, int stages, int stage, int micro, PipeOp *ops) {
    CHECK(stages >= 1 && stage >= 0 && stage < stages && micro >= 1,
          "stage %d of %d with %d micro-batches", stage, stages, micro);
    int n = 0;
    if (schedule == PIPE_GPIPE) {
        for (int i = 0; i < micro; i++) ops[n++] = (PipeOp){PIPE_FORWARD, i};
        for (int i = 0; i < micro; i++) ops[n++] = (PipeOp){PIPE_BACKWARD, i};
        return n;
    }
    const int warmup = stages - 1 - stage < micro ? stages - 1 - stage : micro;
    for (int i = 0; i < warmup; i++) ops[n++] = (PipeOp){PIPE_FORWARD, i};
    for (int i = 0; i < micro - warmup; i++) {
        ops[n++] = (PipeOp){PIPE_FORWARD, i + warmup};
        ops[n++] = (PipeOp){PIPE_BACKWARD, i};
    }
    for (int i = micro - warmup; i < micro; i++) ops[n++] = (PipeOp){PIPE_BACKWARD, i};
    return n;
}

double pipeline_bubble_formula(int stages, int micro) {
    return (double)(stages - 1) / (double)(micro + stages - 1);
}

double pipeline_bubble_fraction(const double *busy, int ranks, double seconds) {
    if (!(seconds > 0)) return 0;
    double idle = 0;
    for (int r = 0; r < ranks; r++) idle += (seconds - busy[r]) / seconds;
    return idle / ranks;
}

/* ---------------------------------------------------------------- partition */

void pipeline_partition(const double *costs, int blocks, int stages, int *first) {
    CHECK(stages >= 1 && stages <= blocks, "%d stages for %d blocks", stages, blocks);
    /* best[s][k]: the least largest stage cost of blocks [0, k) in s + 1 stages; cut[s][k]
     * where its last stage begins. O(stages * blocks^2): a few hundred blocks at most. */
    double *prefix = xcalloc((size_t)blocks + 1, sizeof *prefix);
    for (int k = 0; k < blocks; k++) prefix[k + 1] = prefix[k] + costs[k];
    double *best = xcalloc((size_t)stages * (blocks + 1), sizeof *best);
    int *cut = xcalloc((size_t)stages * (blocks + 1), sizeof *cut);
#define BEST(s, k) best[(size_t)(s) * (blocks + 1) + (k)]
#define CUT(s, k) cut[(size_t)(s) * (blocks + 1) + (k)]
    for (int k = 1; k <= blocks; k++) BEST(0, k) = prefix[k];
    for (int s = 1; s < stages; s++)
        for (int k = s + 1; k <= blocks; k++) {
            BEST(s, k) = INFINITY;
            for (int j = s; j < k; j++) { /* stage s holds [j, k) */
                const double worst = fmax(BEST(s - 1, j), prefix[k] - prefix[j]);
                if (worst < BEST(s, k)) BEST(s, k) = worst, CUT(s, k) = j;
            }
        }
    first[stages] = blocks;
    for (int s = stages - 1; s > 0; s--) first[s] = CUT(s, first[s + 1]);
    first[0] = 0;
#undef BEST
#undef CUT
    xfree(prefix), xfree(best), xfree(cut);
}

void pipeline_parse_split(const char *text, int blocks, int stages, int *first) {
    const char *p = text;
    first[0] = 0, first[stages] = blocks;
    for (int s = 1; s < stages; s++) {
        char *end;
        const long v = strtol(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0') || (*end == '\0' && s < stages - 1) ||
            (*end == ',' && s == stages - 1))
        {
            if (stages == 2)
                fatal("--split %s: 2 stages take one block number: where stage 1 begins", text);
            fatal("--split %s: %d stages take %d increasing block numbers, comma-separated: "
                  "where stages 1 .. %d begin", text, stages, stages - 1, stages - 1);
        }
        if (v <= first[s - 1] || v >= blocks)
            fatal("--split %s: stage %d cannot begin at block %ld: the numbers must increase, "
                  "from 1 to %d (the model has %d blocks, 0 .. %d)", text, s, v, blocks - 1, blocks,
                  blocks - 1);
        first[s] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (stages == 1 && *text != '\0')
        fatal("--split %s: one stage holds every block: no block numbers", text);
}
