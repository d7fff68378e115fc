/* A trace for every rank of a job (core/trace.h), with one clock: the ranks leave a
 * barrier together and that moment is ts 0 in every rank's file.
 *
 *   dist_trace_start(d, cfg.trace);   // --trace run.json: rank r writes run.rank<r>.json
 *   ... training: the library's ranges fill it ...
 *   dist_trace_finish(d);             // every rank writes its file
 *
 * Every collective of lib/dist is a range on the host track named after its kind
 * ("all-reduce", "send", "send+receive", ...; category comm, with its tensor's bytes): a
 * blocking one from its call to its return, and the wait of a non-blocking one ("wait
 * all-reduce"), whose whole flight, from its start to the moment it was seen finished
 * (dist_test or dist_wait), is on a lane of its own. The host scalars of
 * dist_sum_double and friends are ranges too ("all-reduce (scalars)", ...). */
#ifndef DIST_DIST_TRACE_H
#define DIST_DIST_TRACE_H

#include "dist/dist.h"

/* Collective over d: nothing when path is NULL or empty (every rank alike: --trace is
 * an option the ranks share); else a barrier, then this rank's trace is opened with the
 * barrier's end as its time origin; on a GPU (cuda_init called before), with the GPU's
 * counters (cuda/trace_gpu.h). */
void dist_trace_start(Dist *d, const char *path);
/* Writes this rank's file (nothing without a trace); rank 0 names the files, and a rank
 * whose trace reached its cap says how many events it dropped. Not a collective. */
void dist_trace_finish(Dist *d, const char *path);

/* For dist.c: r started (a lane from now), the host's range around its wait, r seen
 * finished. Nothing happens while no trace is open. */
void dist_trace_request(DistRequest *r, const char *name, int64_t bytes);
void dist_trace_wait_begin(DistRequest *r);
void dist_trace_wait_end(DistRequest *r);
void dist_trace_finished(DistRequest *r);

#endif
