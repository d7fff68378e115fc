/* Finite-difference gradient checks, shared by the unit tests and the graders.
 *
 * For a layer with output `out` take the scalar
 *   L = sum_i out_i * R_i
 * for a fixed random R (weighted_sum), so dL/dout = R is what the backward is fed,
 * and compare the backward's gradient for each input entry x with the central
 * difference
 *   (L(x + eps) - L(x - eps)) / ((x + eps) - (x - eps))
 * where L is summed in double and the denominator uses the float values actually
 * stored (x +- eps rounded), so the only errors left are these:
 *  - truncation, O(eps^2 * L'''): zero where L is linear in x (a linear layer's
 *    weights, an addition), small for smooth layers;
 *  - float32 rounding of the forward: each output is rounded to ~6e-8 relative; only
 *    the outputs that x touches change, so L's noise is a few 1e-7 * |out|, divided
 *    by 2 eps: a few 1e-5 on the numeric gradient for eps = 1e-2;
 *  - float32 rounding of the backward's own sums: ~1e-6 relative.
 * With eps = 1e-2, 1e-3 absolute + 2e-3 relative is far above that noise and far below
 * what a wrong index, a missed term or a wrong scale gives (O(1) errors). A smaller
 * eps only amplifies the float32 noise (it scales as 1/eps). Each test states its
 * own eps and tolerances and why. */
#ifndef TESTS_GRADCHECK_H
#define TESTS_GRADCHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

/* L of the current inputs, computed by running the forward. */
typedef double (*Objective)(void *ctx);

/* sum_i out_i * R_i in double */
double weighted_sum(const Tensor *out, const Tensor *R);

/* Compares analytic[i] with the central difference of f in x[i], for every i < n:
 * passes when |numeric - analytic| <= atol + rtol * |numeric|. Prints the first few
 * wrong entries and the worst difference as a share of the tolerance (shown when the
 * check fails). x is restored after each probe. */
bool fd_check(const char *what, float *x, const float *analytic, int64_t n, Objective f,
              void *ctx, float eps, double atol, double rtol);

/* fd_check on every step-th entry only (0, step, 2 step, ...): for tensors whose
 * every entry would cost too many forwards (a grader's time limit). */
bool fd_check_sampled(const char *what, float *x, const float *analytic, int64_t n, int64_t step,
                      Objective f, void *ctx, float eps, double atol, double rtol);

#endif
