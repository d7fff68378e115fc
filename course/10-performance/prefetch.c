/* TODO 10.6: the fix: read the next batch while this one trains.
 *
 * --loader slow reads a batch when the step asks for it: one small read per sequence,
 * each waiting --read-latency-us (a parallel file system's latency on small reads), and
 * the rank does nothing meanwhile: the trace's "load batch" bands, the data share. The
 * reads need no CPU, so they can run beside the step's compute: the library's loader
 * thread (data/prefetch.h) reads one batch at a time into the buffer not in use.
 *
 *   prefetch_start(l->prefetch, row)   starts reading batch `row` (one at a time)
 *   prefetch_wait(l->prefetch)         waits for it (at once if it is there) and
 *                                      returns it; it stays valid until the second
 *                                      prefetch_start after
 *   prefetch_in_flight(l->prefetch)    whether a read was started and not waited for
 *
 * The batches, in order: l->rows[0 .. l->count); l->next is the index of the one to
 * return now (the caller checked that there is one). */
#include "lesson.h"

const TokenBatch *lesson_next_batch(Loader *l) {
#ifdef SOLUTION
    if (!prefetch_in_flight(l->prefetch)) prefetch_start(l->prefetch, l->rows[l->next]); /* the first */
    const TokenBatch *b = prefetch_wait(l->prefetch);
    l->next++;
    if (l->next < l->count) prefetch_start(l->prefetch, l->rows[l->next]); /* during this step */
    return b;
#else
    /* TODO 10.6: return batch l->rows[l->next] and advance l->next by one; before
     * returning, start the read of the batch after it (if there is one), so that it is
     * read while this one trains. The first call has nothing in flight: start that
     * batch's read, then wait for it. */
    TODO_STOP("10.6");
    return NULL;
#endif
}
