#include "relu_dropout.h"

#include "dropout.h"
#include "relu.h"

/* The definition: the two layers in order (the fused kernel's reference). */
void relu_dropout_forward(Tensor *out, Tensor *mask, const Tensor *in, float p, bool training,
                          Rng *rng) {
    relu_forward(out, in);
    dropout_forward(out, mask, out, p, training, rng);
}
