/* --trace FILE in a program of one process (lessons 01-05): core/trace.h's trace opened
 * as rank 0 of 1, with a range for each forward and backward of its models' blocks.
 *
 *   RunTrace t;
 *   run_trace_start(&t, cfg.trace);          // NULL or "": no trace, every call a no-op
 *   run_trace_blocks(&t, &model.blocks);     // each block list to show (at most 4)
 *   ... training: the library's ranges (steps, data loading, the optimiser) fill it ...
 *   run_trace_finish(&t);                    // writes the file and says where it is
 *
 * A multi-rank program opens its traces with dist/dist_trace.h instead (one file per
 * rank, one clock). */
#ifndef TRAIN_RUN_TRACE_H
#define TRAIN_RUN_TRACE_H

#include "models/block_trace.h"

enum { RUN_TRACE_LISTS = 4 };

typedef struct {
    const char *path;                      /* NULL: no trace */
    BlockTrace *blocks[RUN_TRACE_LISTS];
    int count;
} RunTrace;

/* Opens the trace to path (a path that cannot be written stops the program now); on a
 * GPU (cuda_init called before), with the GPU's counters (cuda/trace_gpu.h). */
void run_trace_start(RunTrace *t, const char *path);
void run_trace_blocks(RunTrace *t, BlockList *l);
/* Detaches the blocks' ranges, writes the file, prints "trace: FILE (make trace ...)". */
void run_trace_finish(RunTrace *t);

#endif
