/* Inside lib/parallel: what zero.c, zero_windows.c and zero_whole.c share. */
#ifndef PARALLEL_ZERO_INTERNAL_H
#define PARALLEL_ZERO_INTERNAL_H

#include "parallel/zero.h"

/* Points unit u's parameters' gradients at `base` + their place in its range; NULL: at
 * nothing (between passes). */
void zero_point_grads(Zero *z, const ZeroUnit *u, float *base);
/* Stage 3: points unit u's parameters at the window `w` holds them in: their float32
 * values, or a 16-bit model's working copy (its values then at nothing: its blocks
 * read only the copy); w NULL: both at nothing. */
void zero_point_window(Zero *z, const ZeroUnit *u, const Tensor *w);
/* Stage 3: unit u's piece of what the windows gather (shard_values, or for a 16-bit
 * model shard_working). */
Tensor zero_gather_piece(Zero *z, const ZeroUnit *u);
/* Stage 3 of a 16-bit model: shard_working = shard_values rounded (after a step, a
 * load); nothing otherwise. */
void zero_refresh_shard_working(Zero *z);
/* Waits for *r (if any), counted as exposed communication; *r = NULL after. */
void zero_wait_timed(Zero *z, DistRequest **r);
/* ZeroOps' collectives, started, their request checked (a part that returns none is
 * named, not left to crash a wait later). */
DistRequest *zero_start_reduce(Zero *z, Tensor *piece, Tensor *full);
DistRequest *zero_start_gather(Zero *z, Tensor *full, const Tensor *piece);
/* Stage 3, after the ops' hook: a block about to run without its parameters there, or
 * still waiting for them, stops with a message that names it. */
void zero_stage3_guard(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after);
/* Stages 2 and 3's hook: a block's gradients in a window, reduce-scattered after its
 * backward. */
void zero_gradient_hook(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after);

#endif
