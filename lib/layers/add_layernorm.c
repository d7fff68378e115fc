#include "add_layernorm.h"

#include "add.h"
#include "core/check.h"
#include "layernorm.h"

void add_layernorm_check_forward(const Tensor *r, const Tensor *y, const Tensor *mean,
                                 const Tensor *rstd, const Tensor *a, const Tensor *b,
                                 const Tensor *gamma, const Tensor *beta, float eps) {
    add_check_forward(r, a, b);
    layernorm_check_forward(y, mean, rstd, r, gamma, beta, eps);
    CHECK(y->raw != a->raw && y->raw != b->raw,
          "add + layer norm: y must not be a or b (r may be: y is written after r)");
}

/* The definition: the two layers in order (the fused kernel's reference). */
void add_layernorm_forward(Tensor *r, Tensor *y, Tensor *mean, Tensor *rstd, const Tensor *a,
                           const Tensor *b, const Tensor *gamma, const Tensor *beta, float eps) {
    add_layernorm_check_forward(r, y, mean, rstd, a, b, gamma, beta, eps);
    add_forward(r, a, b);
    layernorm_forward(y, mean, rstd, r, gamma, beta, eps);
}
