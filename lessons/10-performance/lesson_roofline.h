/* Lesson 10, part 1: the roofline and MFU (TODOs 10.4 and 10.5, roofline.c), and the
 * program's --roofline mode (roofline_run.c, given). lesson.h includes this.
 *
 * The machine's two roofs are measured (core/machine.h: the FMA peak and a STREAM
 * triad, on the run's threads); each layer of lesson 04's model is timed alone; your
 * functions count what a layer costs and place it under the roofs. */
#ifndef LESSON10_ROOFLINE_H
#define LESSON10_ROOFLINE_H

#include "core/machine.h"
#include "core/roofline.h"

/* TODO 10.4 (roofline.c): the FLOP and the bytes of one forward call of a linear layer
 * (s->kind LAYER_LINEAR: rows N, in K, out M) or a layer norm (LAYER_LAYERNORM: rows N,
 * in D), by the conventions in roofline.c. The other kinds are the library's
 * (roofline_layer_cost), which the program calls for them. */
LayerCost lesson_layer_cost(const LayerShape *s);

/* TODO 10.5 (roofline.c): where a call that cost c and took `seconds` sits under the
 * roofs of m: intensity (FLOP per byte), attained GFLOP/s, the roof at that intensity
 * (min of the peak and bandwidth x intensity), the percentage of it, and the bound
 * (memory below the ridge, peak / bandwidth; compute from it up). */
RooflinePoint lesson_roofline_point(LayerCost c, double seconds, const MachineRoof *m);

/* TODO 10.5 (roofline.c): the model FLOPs utilisation of a training step, a fraction
 * (0.3 for 30%): the step's FLOP (forward, backward: 3 x the forward FLOP per token x
 * its tokens) a second, over the peak given in GFLOP/s. */
double lesson_mfu(double forward_flop_per_token, double tokens, double step_seconds,
                  double peak_gflops);

/* Given (roofline_run.c): the program with --roofline; main() calls it. */
int roofline_main(int argc, char **argv);

#endif
