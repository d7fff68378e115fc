/* TODO 9.5: what a layout costs a rank: parameters and tensor-parallel bytes.
 *
 * Choosing data x pipeline x tensor for a model and a cluster starts from two numbers
 * per rank, both from the shapes alone:
 *
 *   parameters: a model cut t ways holds, per encoder layer, 1/t of the in-projection
 *     (3D x D weights and 3D biases), of the out-projection's D x D weights (its D
 *     biases whole), of linear1 (F x D and F biases), of linear2 (D x F; its D biases
 *     whole), and both layer norms whole (2 x 2D); the embedding is Vp/t x D, the decoder
 *     Vp/t x D weights and Vp/t biases, Vp = the vocabulary rounded up to a multiple of
 *     t. Block 0 is the embedding, blocks 1 .. L the layers, block L + 1 the decoder.
 *   bytes sent per step in the tensor group's all-reduces, for `rows` tokens: a layer
 *     all-reduces [rows, D] four times (2 forward, 2 backward), the embedding once
 *     (forward), the decoder once (backward), and the loss [rows] and [2 rows] floats;
 *     an all-reduce of B bytes sends 2 (t - 1) / t x B (dist.h). t = 1: nothing.
 *
 * The program prints both against what it allocated and counted, and with --plan N
 * puts them in a table of every layout of N ranks. */
#include "lesson.h"

int64_t lesson_param_count(const TransformerConfig *c, int t, int first, int last) {
#ifdef SOLUTION
    const int64_t D = c->d_model, F = c->d_ff, Vp = (c->vocab + t - 1) / t * t;
    const int64_t layer = (3 * D * D + 3 * D + D * D + F * D + F + D * F) / t + 2 * D + 4 * D;
    int64_t n = 0;
    for (int k = first; k < last; k++)
        n += k == 0 ? Vp / t * D : k <= c->layers ? layer : Vp / t * D + Vp / t;
    return n;
#else
    /* TODO 9.5: sum over blocks k in [first, last) as above. */
    (void)c, (void)t, (void)first, (void)last;
    TODO_STOP("9.5");
#endif
}

double lesson_tensor_bytes(const TransformerConfig *c, int64_t rows, int t, int first, int last) {
#ifdef SOLUTION
    if (t == 1) return 0.0;
    double floats = 0.0;
    for (int k = first; k < last; k++)
        floats += k == 0 ? (double)rows * c->d_model
                  : k <= c->layers ? 4.0 * rows * c->d_model
                  : (double)rows * c->d_model + 3.0 * rows;
    return 2.0 * (t - 1) / t * 4.0 * floats;
#else
    /* TODO 9.5, part 2: the floats all-reduced for blocks [first, last), times 4 bytes,
     * times 2 (t - 1) / t. */
    (void)c, (void)rows, (void)t, (void)first, (void)last;
    TODO_STOP("9.5");
#endif
}
