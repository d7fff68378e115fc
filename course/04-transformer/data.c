/* TODO 4.1: batchify and get_batch, PyTorch's way of feeding a language model.
 *
 * The text is one long stream of token ids. batchify cuts it into B equal pieces and
 * puts them side by side as the columns of a [rows, B] matrix: column b is the b-th
 * piece, read from top to bottom. get_batch then takes bptt consecutive rows as the
 * input and the same rows shifted down by one as the target: the target of each token
 * is the token that follows it in its piece.
 *
 *   stream  a b c d e f g h i j k l m n o p q r s t u v w x y z      (26 tokens, B = 4)
 *
 *   batchify: rows = 26 / 4 = 6, y z dropped     get_batch(i = 0, bptt = 2):
 *     a g m s                                      input  a g m s    target  b h n t
 *     b h n t                                             b h n t            c i o u
 *     c i o u
 *     d j p v                                    get_batch(i = 4, bptt = 2): seq_len 1
 *     e k q w                                      input  e k q w    target  f l r x
 *     f l r x
 */
#include <string.h>

#include "lesson.h"

void lesson_batchify(const TokenStream *s, int batch_size, const char *what, TextBatches *out) {
    CHECK(batch_size > 0, "batch size %d: it must be positive", batch_size);
    if (s->count / batch_size < 2) /* given: the library's message, naming this lesson's option */
        fatal("the %s split has %lld tokens, too few for a batch size of %d: batchify needs at "
              "least two rows (%d tokens) for one input and its target. Use a smaller %s or a "
              "longer text", what, (long long)s->count, batch_size, 2 * batch_size,
              strcmp(what, "train") == 0 ? "--batch-size" : "--eval-batch-size (the valid and test columns)");
#ifdef SOLUTION
    const int64_t rows = s->count / batch_size; /* the tail that does not fill a row goes */
    out->rows = rows;
    out->cols = batch_size;
    out->data = xmalloc((size_t)rows * (size_t)batch_size * sizeof *out->data);
    for (int b = 0; b < batch_size; b++)
        for (int64_t i = 0; i < rows; i++) /* column b is the b-th piece of the stream */
            out->data[i * batch_size + b] = s->ids[(int64_t)b * rows + i];
#else
    /* TODO 4.1 (first half): rows = s->count / batch_size (integer division: the tail
     * that does not fill a row is dropped). Allocate out->data with xmalloc for rows *
     * batch_size ints, set out->rows and out->cols, and fill it so that column b holds
     * the b-th piece of the stream, top to bottom:
     *     out->data[i * batch_size + b] = s->ids[b * rows + i]
     * Use int64_t for i and for b * rows: a stream can have more than 2^31 tokens. */
    TODO_STOP("4.1");
#endif
}

TextBatch lesson_get_batch(const TextBatches *b, int64_t i, int bptt) {
    CHECK(bptt > 0, "bptt %d: it must be positive", bptt);
    CHECK(i >= 0 && i < b->rows - 1, "get_batch at row %lld of %lld: the last input row is %lld",
          (long long)i, (long long)b->rows, (long long)(b->rows - 2));
    TextBatch batch = {0};
#ifdef SOLUTION
    const int64_t left = b->rows - 1 - i; /* rows after row i: each input needs its target */
    batch.seq_len = left < bptt ? (int)left : bptt;
    batch.cols = b->cols;
    batch.input = b->data + i * b->cols;        /* row i */
    batch.target = b->data + (i + 1) * b->cols; /* row i + 1: the next token of each column */
#else
    /* TODO 4.1 (second half): no copy, only pointers into b->data (row r starts at
     * b->data + r * b->cols):
     *   seq_len = min(bptt, rows - 1 - i)   (the last batch of a pass is shorter: the
     *                                        last row has no row after it for its target)
     *   input   = row i,  target = row i + 1,  cols = b->cols. */
    TODO_STOP("4.1");
#endif
    return batch;
}
