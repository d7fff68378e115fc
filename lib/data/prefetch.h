/* Reading the next batch while this one trains: one loader thread, two buffers.
 *
 *   Prefetch *p = prefetch_init(&file, bptt, col0, n);
 *   prefetch_start(p, rows[0]);                   // the first read
 *   for (k = 0; k < steps; k++) {
 *       const TokenBatch *b = prefetch_wait(p);   // batch k (ready, or waited for)
 *       if (k + 1 < steps) prefetch_start(p, rows[k + 1]);  // read k + 1 during step k
 *       ... train on b->tokens, b->targets ...
 *   }
 *   prefetch_free(p);
 *
 * The thread reads with token_file_read_batch (data/token_file.h) into the buffer that
 * is not in use: a batch prefetch_wait returned stays valid until the second
 * prefetch_start after it. One read at a time: prefetch_start with a read in flight, or
 * prefetch_wait with none, is a programming error (stops, saying so). A read error
 * stops the program at the next prefetch_wait, on the host thread, with the reader's
 * message.
 *
 * With a trace open, prefetch_wait is a range "wait batch" (data) on the host track, and
 * the read it waited for goes on the "data loader" track (TRACE_TID_LOADER) as "read
 * batch", from when the thread began it to when it finished: the host places it, since
 * only the thread that opened the trace traces. */
#ifndef DATA_PREFETCH_H
#define DATA_PREFETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "data/token_file.h"

typedef struct {
    int *tokens, *targets;          /* [n * bptt] batch-major */
    int64_t row;                    /* which batch: get_batch's i */
    int64_t read_start_ns, read_end_ns; /* the read, on trace_now_ns's clock */
} TokenBatch;

typedef struct Prefetch Prefetch;

Prefetch *prefetch_init(const TokenFile *f, int bptt, int col0, int n);
void prefetch_start(Prefetch *p, int64_t row);
const TokenBatch *prefetch_wait(Prefetch *p);
bool prefetch_in_flight(const Prefetch *p);
/* Ends the thread (after the read in flight, if any: its batch is dropped). */
void prefetch_free(Prefetch *p);

#endif
