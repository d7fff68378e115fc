/* Lesson 07: a pipeline-parallel transformer. The functions you write, and the run
 * they work on.
 *
 * Lesson 04's model is cut by layers into stages, one per rank; a batch is cut into
 * micro-batches that flow through the stages one after the other, so that the stages
 * work at the same time. The library runs the stages (lib/parallel/pipeline.h); the
 * parts that make it a pipeline are yours, plugged into its table of operations
 * (PipelineOps), the way lesson 04 plugged its layers into the model. */
#ifndef LESSON07_H
#define LESSON07_H

#include <stdbool.h>
#include <stdint.h>

#include "core/check.h"
#include "core/metrics.h"
#include "core/todo.h"
#include "data/text.h"
#include "dist/dist.h"
#include "models/transformer.h"
#include "parallel/grid.h"
#include "parallel/pipeline.h"
#include "train/lm_options.h"
#include "train/optim.h"

#define LESSON_DIR "lessons/07-pipeline"
#define TODO_STOP(id) todo_stop(id, LESSON_DIR, __func__)

/* TODO 7.1 (partition.c): cut `blocks` blocks of costs[0..blocks) into `stages`
 * contiguous stages of at least one block each, so that the largest stage's cost is
 * as small as it can be: stage s holds blocks [first[s], first[s + 1]), first[0] = 0,
 * first[stages] = blocks. */
void lesson_partition(const double *costs, int blocks, int stages, int *first);

/* TODO 7.2 (comm.c): the point-to-point messages between neighbouring stages. Sends
 * start and return at once (the request is waited for later); receives wait. */
DistRequest *lesson_send_activation(Pipeline *p, const Tensor *x); /* to stage + 1 */
void lesson_recv_activation(Pipeline *p, Tensor *x);               /* from stage - 1 */
DistRequest *lesson_send_gradient(Pipeline *p, const Tensor *dx);  /* to stage - 1 */
void lesson_recv_gradient(Pipeline *p, Tensor *dy);                /* from stage + 1 */

/* TODO 7.3 (schedule.c): one step of GPipe: every micro-batch forward, then every
 * micro-batch back, with pipeline_forward(p, i) and pipeline_backward(p, i). */
void lesson_run_gpipe(Pipeline *p);
/* TODO 7.4 (schedule.c): one step of 1F1B: a warm-up of forwards, then one forward
 * and one backward in turn, then the remaining backwards. */
void lesson_run_1f1b(Pipeline *p);

/* TODO 7.5 (accumulate.c): the last stage's loss of micro-batch i and its gradient
 * in p->dloss, each the micro-batch's share of the whole batch's. */
float lesson_micro_loss_grad(Pipeline *p, int micro);

/* TODO 7.6 (bubble.c): the bubble of a step, measured: the ranks' idle share of the
 * step's `seconds`, averaged over the ranks (busy[r]: rank r's compute seconds); and
 * what the formula expects for p stages and m micro-batches of equal cost. */
double lesson_bubble_fraction(const double *busy, int ranks, double seconds);
double lesson_bubble_formula(int stages, int micro);

/* Given (program.c): your functions in the pipeline's table. */
void lesson_install(Pipeline *p);

/* Given (program.c): the whole program; main() calls it, the grader too. */
int lesson_main(int argc, char **argv);

#endif
