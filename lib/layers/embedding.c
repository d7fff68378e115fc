#include "embedding.h"

#include "core/check.h"
#include "rounded.h"

/* Columns per thread task in the backward: one cache line of 16 floats at least,
 * so no two threads write the same line. */
enum { EMBEDDING_COLUMN_BLOCK = 64 };

void embedding_check_forward(const Tensor *out, const Tensor *table) {
    CHECK_SHAPE(table, -1, -1);
    CHECK_SHAPE(out, -1, table->shape[1]);
}

void embedding_check_backward(const Tensor *dtable, const Tensor *dout) {
    CHECK_SHAPE(dtable, -1, -1);
    CHECK_SHAPE(dout, -1, dtable->shape[1]);
}

void embedding_check_tokens(const int *tokens, int n, int V) {
    for (int i = 0; i < n; i++)
        CHECK(tokens[i] >= 0 && tokens[i] < V,
              "embedding: token %d at position %d is outside the vocabulary 0..%d", tokens[i], i,
              V - 1);
}

void embedding_forward(Tensor *out, const int *tokens, const Tensor *table, float scale) {
    embedding_forward_rows(out, tokens, table, scale, 0, table->shape[0]);
}

void embedding_backward(Tensor *dtable, const Tensor *dout, const int *tokens, float scale) {
    embedding_backward_rows(dtable, dout, tokens, scale, 0, dtable->shape[0]);
}

/* rows past the vocabulary are padding (a vocabulary split over ranks unevenly) */
static void check_slice(const Tensor *table, int first, int vocab) {
    CHECK(first >= 0 && vocab >= 1, "embedding: rows from %d of a vocabulary of %d", first, vocab);
    (void)table;
}

void embedding_forward_rows(Tensor *out, const int *tokens, const Tensor *table, float scale,
                            int first, int vocab) {
    RoundedCall rc; /* 16-bit tensors: this function on float32 views (layers/rounded.h) */
    if (ROUNDED_BEGIN(&rc, ROUNDED_OUT(out), ROUNDED_IN(table))) {
        embedding_forward_rows(rounded(&rc, out), tokens, rounded(&rc, table), scale, first,
                               vocab);
        rounded_end(&rc);
        return;
    }
    embedding_check_forward(out, table);
    CHECK_DEVICE(out, DEVICE_CPU);
    CHECK_DEVICE(table, DEVICE_CPU);
    check_slice(table, first, vocab);
    const int N = out->shape[0], V = table->shape[0], D = table->shape[1];
    embedding_check_tokens(tokens, N, vocab);
#pragma omp parallel for schedule(static) if ((int64_t)N * D > 65536)
    for (int n = 0; n < N; n++) {
        const int local = tokens[n] - first;
        float *y = out->data + (size_t)n * D;
        if (local < 0 || local >= V) { /* another rank's word */
            for (int d = 0; d < D; d++) y[d] = 0.0f;
            continue;
        }
        const float *row = table->data + (size_t)local * D;
#pragma omp simd
        for (int d = 0; d < D; d++) y[d] = row[d] * scale;
    }
}

void embedding_backward_rows(Tensor *dtable, const Tensor *dout, const int *tokens, float scale,
                             int first, int vocab) {
    RoundedCall rc;
    if (ROUNDED_BEGIN(&rc, ROUNDED_F32(dtable), ROUNDED_IN(dout))) {
        embedding_backward_rows(dtable, rounded(&rc, dout), tokens, scale, first, vocab);
        rounded_end(&rc);
        return;
    }
    embedding_check_backward(dtable, dout);
    CHECK_DEVICE(dtable, DEVICE_CPU);
    CHECK_DEVICE(dout, DEVICE_CPU);
    check_slice(dtable, first, vocab);
    const int N = dout->shape[0], V = dtable->shape[0], D = dtable->shape[1];
    embedding_check_tokens(tokens, N, vocab);
    const int blocks = (D + EMBEDDING_COLUMN_BLOCK - 1) / EMBEDDING_COLUMN_BLOCK;
#pragma omp parallel for schedule(static) if ((int64_t)N * D > 65536)
    for (int b = 0; b < blocks; b++) {
        const int d0 = b * EMBEDDING_COLUMN_BLOCK;
        const int d1 = d0 + EMBEDDING_COLUMN_BLOCK < D ? d0 + EMBEDDING_COLUMN_BLOCK : D;
        for (int n = 0; n < N; n++) {
            const int local = tokens[n] - first;
            if (local < 0 || local >= V) continue; /* another rank's word */
            float *g = dtable->data + (size_t)local * D;
            const float *dy = dout->data + (size_t)n * D;
#pragma omp simd
            for (int d = d0; d < d1; d++) g[d] += scale * dy[d];
        }
    }
}
