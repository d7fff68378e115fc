/* Tanh, PyTorch's nn.Tanh: y = tanh(x), dy/dx = 1 - y^2.
 *
 * The backward needs only the output, so the forward may run in place. The MLP policy
 * of lesson 05 evaluates some 1,300 of these per environment step (two hidden layers of
 * 64, actor and critic, forward and backward, four epochs), so the C library's tanhf
 * (a call and a branch per value, about 15 ns) would cost more than the matrix products
 * around it. tanh_values() computes it from expm1 written out in plain arithmetic that
 * the compiler turns into vector instructions (8 values per AVX2 instruction):
 *
 *   tanh(x) = sign(x) * e / (e + 2),  e = expm1(2|x|) = 2^n (expm1(r) + 1) - 1,
 *   2|x| = n ln 2 + r, |r| <= ln(2)/2, expm1(r) by its Taylor series to r^8,
 *
 * within 3 units in the last place of the exact value (tests/unit/test_mlp_policy.c
 * checks every float in [-10, 10] against tanh in double); |x| >= 9 gives +-1 exactly,
 * as tanhf does. There are no CUDA twins: lesson 05 trains on the CPU (its README
 * says why). */
#ifndef LAYERS_TANH_H
#define LAYERS_TANH_H

#include <stdint.h>

#include "core/tensor.h"

/* out [n] = tanh(in [n]); out may be in. */
void tanh_values(float *out, const float *in, int64_t n);
/* din [n] += dout [n] * (1 - out[n]^2), out the forward's output; din is not dout. */
void tanh_backward_values(float *din, const float *dout, const float *out, int64_t n);

/* The same on tensors of any shape (the sizes must match). */
void tanh_forward(Tensor *out, const Tensor *in);
void tanh_backward(Tensor *din, const Tensor *dout, const Tensor *out); /* din += dout * (1 - out^2) */

#endif
