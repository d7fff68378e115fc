/* PyTorch's batchify and get_batch (the word_language_model example and the transformer
 * tutorial) on a token stream:
 *
 *   batchify: data = stream[:rows * B].view(B, rows).t()   ->  [rows, B]
 *   get_batch(i): data[i : i + seq_len], data[i + 1 : i + 1 + seq_len]
 *
 * so each column is one contiguous piece of the text, read top to bottom, and the
 * model sees the B pieces side by side. */
#include <string.h>

#include "core/check.h"
#include "data/text.h"

void text_batchify(const TokenStream *s, int batch_size, const char *what, TextBatches *out) {
    CHECK(batch_size > 0, "batch size %d: it must be positive", batch_size);
    const int64_t rows = s->count / batch_size;
    if (rows < 2)
        fatal("the %s split has %lld tokens, too few for a batch size of %d: batchify needs at "
              "least two rows (%d tokens) for one input and its target. Use a smaller "
              "--batch-size or a longer text", what, (long long)s->count, batch_size,
              2 * batch_size);
    out->rows = rows;
    out->cols = batch_size;
    out->data = xmalloc((size_t)rows * (size_t)batch_size * sizeof *out->data);
    for (int b = 0; b < batch_size; b++) {
        const int *piece = s->ids + (int64_t)b * rows; /* column b: the b-th piece */
        for (int64_t i = 0; i < rows; i++) out->data[i * batch_size + b] = piece[i];
    }
}

void text_batches_free(TextBatches *b) {
    xfree(b->data);
    memset(b, 0, sizeof *b);
}

TextBatch text_get_batch(const TextBatches *b, int64_t i, int bptt) {
    CHECK(bptt > 0, "bptt %d: it must be positive", bptt);
    CHECK(i >= 0 && i < b->rows - 1, "get_batch at row %lld of %lld: the last input row is %lld",
          (long long)i, (long long)b->rows, (long long)(b->rows - 2));
    const int64_t left = b->rows - 1 - i;
    TextBatch batch = {.input = b->data + i * b->cols,
                       .target = b->data + (i + 1) * b->cols,
                       .seq_len = left < bptt ? (int)left : bptt,
                       .cols = b->cols};
    return batch;
}

int64_t text_batch_count(const TextBatches *b, int bptt) {
    CHECK(bptt > 0, "bptt %d: it must be positive", bptt);
    return (b->rows - 1 + bptt - 1) / bptt;
}
