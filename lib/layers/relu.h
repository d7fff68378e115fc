/* ReLU: y = max(0, x). The backward needs only the output (y > 0 exactly where
 * x > 0), so it may run in place on the forward's buffer. */
#ifndef LAYERS_RELU_H
#define LAYERS_RELU_H

#include "core/tensor.h"

void relu_forward(Tensor *out, const Tensor *in);                          /* out may be in */
void relu_backward(Tensor *din, const Tensor *dout, const Tensor *out);     /* din += dout * (out > 0) */

#endif
