/* Lesson 10: where a step's time goes, then mixed precision. The functions you write,
 * and the run they work on.
 *
 * Part 1 (profile): lesson 04's transformer trained data-parallel on 2 ranks, as in
 * lesson 06, with a trace per rank (core/trace.h). You put ranges around a step's
 * phases (10.1), read the trace back and split the steps into compute, exposed
 * communication, data and idle (10.2) and the communication in flight into hidden and
 * exposed (10.3), place the layers on a roofline (10.4-10.5, lesson_roofline.h), and
 * fix the slow data loader the trace shows (10.6). Part 2 (mixed precision, 10.7-10.10)
 * is declared in lesson_precision.h. */
#ifndef LESSON10_H
#define LESSON10_H

#include <stdbool.h>
#include <stdint.h>

#include "core/check.h"
#include "core/todo.h"
#include "core/trace.h"
#include "core/trace_load.h"
#include "core/trace_shares.h"
#include "data/prefetch.h"
#include "data/text.h"
#include "data/token_file.h"
#include "dist/dist.h"
#include "models/transformer.h"
#include "parallel/ddp.h"
#include "train/optim.h"

#define LESSON_DIR "lessons/10-performance"
#define TODO_STOP(id) todo_stop(id, LESSON_DIR, __func__)

/* ---------------------------------------------------------------- the data loader */

/* Where a rank's batches come from (--loader):
 *   plain: the split in memory (text_get_batch), as lessons 04-09;
 *   slow:  the token file, one read per sequence with --read-latency-us each, when the
 *          step asks for the batch: the planted bottleneck;
 *   mine:  the token file through the library's loader thread (data/prefetch.h), your
 *          TODO 10.6 deciding when each read starts. */
typedef struct {
    const char *kind;         /* "plain", "slow" or "mine" */
    const int64_t *rows;      /* [count] the batches in training order (get_batch's i) */
    int64_t count, next;      /* how many; the index of the next one to hand out */
    const TextBatches *split; /* plain: the split in memory */
    TokenFile file;           /* slow, mine: the token file (data/token_file.h) */
    Prefetch *prefetch;       /* mine: the loader thread */
    int bptt, col0, n;        /* this rank's columns col0 .. col0 + n, bptt tokens each */
    TokenBatch own;           /* plain, slow: the batch read now ([n * bptt] each) */
} Loader;

/* Given (program.c): the next batch of l by its kind (mine: lesson_next_batch). */
const TokenBatch *loader_next(Loader *l);

/* TODO 10.6 (prefetch.c): the next batch, l->rows[l->next], with the read of the batch
 * after it started before returning, so that it runs while this one trains. */
const TokenBatch *lesson_next_batch(Loader *l);

/* ---------------------------------------------------------------- a step */

typedef struct {
    Transformer *lm;
    ParamList *params;        /* the model's parameters and gradients */
    Ddp *ddp;                 /* the gradients' all-reduce (lesson 06's buckets) */
    Adam *adam;
    float clip;               /* largest gradient norm (0: none) */
    Loader *loader;
    int *tokens, *targets;    /* [B * T] in the model's device memory, batch-major */
} Step;

/* Given (program.c): the loader's next batch copied to s->tokens, s->targets. */
void step_load_batch(Step *s);
/* Given (program.c): wait until every rank has the average gradient (the all-reduces
 * the backward started; the library's own ranges, of category comm). */
void step_sync_gradients(Step *s);

/* TODO 10.1 (ranges.c): one training step, its phases in ranges: the mean loss of this
 * rank's batch. */
float lesson_step(Step *s);

/* ---------------------------------------------------------------- the trace read back */

/* TODO 10.2 (shares.c): rank pid's steps split into compute, exposed communication,
 * data and idle (core/trace_shares.h says what each is); the library's twin is
 * trace_step_shares. */
StepShares lesson_step_shares(const TraceFile *t, int pid);

/* TODO 10.3 (shares.c): the communication of rank pid's steps: in flight, hidden,
 * exposed; the library's twin is trace_comm_split. */
CommSplit lesson_comm_split(const TraceFile *t, int pid);

/* Given (program.c): the whole program; main() calls it, the grader too. */
int lesson_main(int argc, char **argv);

/* Part 1's roofline (TODOs 10.4-10.5) and part 2 (TODOs 10.7-10.10), with the
 * programs behind --roofline, --precision-demo and --compare-precision. */
#include "lesson_roofline.h"
#include "lesson_precision.h"

#endif
