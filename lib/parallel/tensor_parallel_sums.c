/* The sums over the tensor group in a 16-bit model (docs/mixed-precision.md's contract):
 * a row-parallel linear's output and a column-parallel linear's input gradient are sums
 * of the ranks' partial products. The unsplit 16-bit layer rounds such a sum once, from
 * float32; so here each rank's partial stays float32 (float32 scratch), the all-reduce
 * adds float32, and the whole sum is rounded once into the 16-bit tensor. Rounding each
 * partial to 16 bits first would round t + 1 times, and the sums would no longer be the
 * unsplit layer's to float32's order.
 *
 * A 16-bit operand is converted exactly into float32 scratch and the float32 layer runs
 * on it: on the CPU that is what the 16-bit linear does inside (layers/rounded.h), so at
 * t = 1 the sharded block computes the unsplit one's float32 sums on the same numbers.
 * A float32 block passes its tensors through untouched: the same calls as before. */
#include <string.h>

#include "core/check.h"
#include "parallel/tensor_parallel_slices.h"

/* buf's first t->size floats, shaped as t */
static Tensor shaped(const Tensor *t, const Tensor *buf, const char *what) {
    CHECK(buf->raw && buf->dtype == DTYPE_F32 && buf->size >= t->size,
          "float32 scratch for %s of %lld elements: %lld given", what, (long long)t->size,
          (long long)buf->size);
    Tensor v = tensor_range(buf, 0, t->size);
    v.ndim = t->ndim;
    memcpy(v.shape, t->shape, sizeof v.shape);
    return v;
}

Tensor tp_as_f32(const Tensor *t, const Tensor *buf) {
    if (t->dtype == DTYPE_F32) return *t;
    Tensor v = shaped(t, buf, "a 16-bit operand");
    tensor_convert(&v, t); /* exact */
    return v;
}

Tensor tp_f32_for(const Tensor *t, const Tensor *buf) {
    return t->dtype == DTYPE_F32 ? *t : shaped(t, buf, "a 16-bit result");
}

void tp_store(Tensor *t, const Tensor *v) {
    if (t->dtype != DTYPE_F32) tensor_convert(t, v); /* rounded once */
}

void tp_row_linear(TensorParallel *tp, const LayerOps *o, Tensor *out, const Tensor *in,
                   const Tensor *w, const Tensor *bias, const TpF32 *s) {
    Tensor in32 = tp_as_f32(in, &s->x), w32 = tp_as_f32(w, &s->w), b32 = tp_as_f32(bias, &s->b);
    Tensor out32 = tp_f32_for(out, &s->part); /* this rank's partial, then the group's sum */
    tp->ops.row_linear_forward(tp, o, &out32, &in32, &w32, &b32);
    tp_store(out, &out32);
}

void tp_column_backward(TensorParallel *tp, const LayerOps *o, Tensor *into, Tensor *dweight,
                        Tensor *dbias, const Tensor *dout, const Tensor *in, const Tensor *w,
                        const TpF32 *s) {
    Tensor dout32 = tp_as_f32(dout, &s->g), in32 = tp_as_f32(in, &s->x), w32 = tp_as_f32(w, &s->w);
    Tensor part = shaped(in, &s->part, "a partial input gradient"); /* float32 in every run */
    tensor_fill(&part, 0.0f);
    o->linear_backward(&part, dweight, dbias, &dout32, &in32, &w32);
    tp->ops.f(tp, &part, BLOCK_BACKWARD); /* every rank's share of dL/din, in float32 */
    if (!into) return;
    Tensor old = tp_as_f32(into, &s->x); /* in32 is done with */
    o->add_backward(&old, NULL, &part);
    tp_store(into, &old); /* old + the sum, rounded once */
}
