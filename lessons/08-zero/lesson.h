/* Lesson 08: sharded data parallel, ZeRO stages 1 to 3. The functions you write, and
 * the run they work on.
 *
 * Every rank trains lesson 04's transformer on its share of each batch, as in lesson
 * 06, but keeps only a shard of what plain data parallel keeps whole: the optimiser
 * state (stage 1), the gradients (stage 2), the parameters (stage 3). The library runs
 * the stages (lib/parallel/zero.h); the parts that shard are yours, plugged into its
 * table of operations (ZeroOps), the way lesson 07 plugged its messages into the
 * pipeline. */
#ifndef LESSON08_H
#define LESSON08_H

#include <stdbool.h>
#include <stdint.h>

#include "core/check.h"
#include "core/todo.h"
#include "dist/dist.h"
#include "models/block.h"
#include "parallel/zero.h"

#define LESSON_DIR "lessons/08-zero"
#define TODO_STOP(id) todo_stop(id, LESSON_DIR, __func__)

/* TODO 8.1 (shard.c): cut n scalars into `world` equal pieces, padded with zeros at the
 * end (the last pieces may hold some padding, or only padding): each rank's piece, the padded size, where rank's piece starts, and how many of
 * its scalars are real (not padding). */
ZeroRange lesson_shard_range(int64_t n, int world, int rank);

/* TODO 8.2 (reduce.c): start the reduce-scatter of one block's gradients: piece [s] =
 * this rank's part of the average over the ranks of full [N s]; return the request. */
DistRequest *lesson_reduce_gradients(Dist *d, Tensor *piece, Tensor *full);
/* TODO 8.2, part 2 (reduce.c): the same sum by hand, from send-receives alone: a ring. */
void lesson_ring_reduce_scatter(Dist *d, Tensor *out, const Tensor *in);

/* TODO 8.3 (step.c): the optimiser's step on this rank's shard: every block's piece. */
void lesson_sharded_step(Zero *z);

/* TODO 8.4 (gather.c): start the all-gather of every rank's piece [s] into full [N s]. */
DistRequest *lesson_gather_params(Dist *d, Tensor *full, const Tensor *piece);

/* TODO 8.5 (prefetch.c): stage 3's hook, called before and after each pass of each
 * block: the block's parameters gathered before, the next block's gather started
 * (prefetch), the window given back after. */
void lesson_stage3_hook(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after);

/* TODO 8.6 (memory.c): the bytes a rank holds at `stage` (0-3) for psi parameters on
 * `world` ranks: parameters, gradients and optimiser state (AdamW: two moments; SGD:
 * one momentum buffer), float32, no padding. */
ZeroMemory lesson_memory_formula(int stage, int64_t psi, int world, ZeroOptimizer optimizer);

/* Given (program.c): your parts in ZeRO's table. */
extern const ZeroOps LESSON_OPS;

/* Given (program.c): the whole program; main() calls it, the grader too. */
int lesson_main(int argc, char **argv);

#endif
