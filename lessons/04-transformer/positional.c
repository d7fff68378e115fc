/* TODO 4.2: the sinusoidal positional encoding (Vaswani et al., 2017; the tutorial's
 * PositionalEncoding).
 *
 * Attention by itself does not know where a token stands: it compares every query with
 * every key, and shuffling the keys only shuffles the weights. So each position t gets a
 * fixed vector, added to the token's embedding: pairs of columns (2i, 2i + 1) hold a
 * sine and a cosine of t at the frequency w_i = 10000^(-2i / D), from one turn per
 * 2 pi positions (i = 0) down to one per 10000 * 2 pi (the last pair). */
#include <math.h>

#include "lesson.h"

void lesson_positional_table(Tensor *table) {
    CHECK_SHAPE(table, -1, -1);
    const int max_len = table->shape[0], D = table->shape[1];
    CHECK(D % 2 == 0, "the positional table needs an even width, got %d", D);
    /* TODO 4.2: for every position t < max_len and every pair i (2i < D):
     *     w = exp(-(2i) * ln(10000) / D)            (= 10000^(-2i/D); double is exact,
     *                                                 float passes too: see the sheet)
     *     table[t][2i]     = sin(t * w)
     *     table[t][2i + 1] = cos(t * w)
     * Row t starts at table->data + t * D. Both columns of a pair share one frequency:
     * the exponent uses the pair's first column 2i, not the column itself. */
    TODO_STOP("4.2");
}
