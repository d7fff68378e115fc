/* Where a CNN training step goes, layer call by layer call: wraps a model's layer
 * table (layers/layer_ops.h) so that every call is timed, without a second copy of the
 * model's code. Calls are told apart by their order within a step: the n-th
 * conv2d_forward of a step is "conv2d_forward #n". CPU only (no device sync). */
#ifndef BENCH_LAYER_TIMES_H
#define BENCH_LAYER_TIMES_H

#include "layers/layer_ops.h"

/* Replaces the CNN's layers in *ops with timed wrappers of them. */
void layer_times_wrap(LayerOps *ops);

/* Marks the start of a step (call counts restart) and whether its calls count (only
 * once wrapped). */
void layer_times_step(int counted);

/* Prints each call's mean time over the counted steps and its share of step_ms. */
void layer_times_print(double step_ms);

#endif
