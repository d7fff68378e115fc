/* Unit tests of the layers' slices for tensor parallelism: a dropout window, the
 * attention on a window of heads and an embedding of a slice of the words, each rank's
 * slice against the same columns, heads or rows of the unsplit layer, bit for bit (the
 * slices compute the same sums in the same order; only where they sit differs). */
#include <stdio.h>
#include <string.h>

#include "core/rng.h"
#include "core/tensor.h"
#include "framework/check.h"
#include "framework/tensors.h"
#include "layers/attention.h"
#include "layers/dropout.h"
#include "layers/embedding.h"

/* The columns [c0, c0 + w) of a [rows, cols] tensor, as a [rows, w] one. */
static Tensor columns(const Tensor *t, int c0, int w) {
    const int rows = t->shape[0], cols = (int)(t->size / rows);
    Tensor out = tensor_zeros(2, rows, w);
    for (int r = 0; r < rows; r++)
        memcpy(out.data + (size_t)r * w, t->data + (size_t)r * cols + c0, sizeof(float) * (size_t)w);
    return out;
}

/* t = 1 to 4 slices of a 7 x 24 activation (p = 0.3): each mask is its columns of the
 * whole mask, and the Rng ends where the whole layer leaves it. */
static int check_dropout_window(void) {
    enum { R = 7, C = 24 };
    Tensor x = random2(1, R, C), y = tensor_zeros(2, R, C), m = tensor_zeros(2, R, C);
    Rng whole;
    rng_seed(&whole, 5, 0);
    dropout_forward(&y, &m, &x, 0.3f, true, &whole);
    for (int t = 1; t <= 4; t++)
        for (int r = 0; r < t; r++) {
            const int w = C / t;
            Tensor xs = columns(&x, r * w, w), ys = tensor_zeros(2, R, w), ms = tensor_zeros(2, R, w);
            Tensor want = columns(&m, r * w, w);
            Rng rng;
            rng_seed(&rng, 5, 0);
            dropout_forward_window(&ys, &ms, &xs, 0.3f, true, &rng, (DropoutWindow){w, C, r * w});
            Rng after = whole;
            const bool ok = bits_equal("a window's mask = its columns of the whole mask", &ms, &want) &&
                            expect_true(rng_u32(&rng) == rng_u32(&after), "the Rng moved differently");
            tensor_free(&xs), tensor_free(&ys), tensor_free(&ms), tensor_free(&want);
            if (!ok) {
                printf("slice %d of %d\n", r, t);
                return CHECK_FAIL;
            }
        }
    tensor_free(&x), tensor_free(&y), tensor_free(&m);
    return CHECK_PASS;
}

/* 6 heads in t = 2 and 3 windows: a rank's q|k|v (its heads' columns of each) gives the
 * whole layer's probabilities, dropped weights and context of those heads. */
static int check_attention_window(void) {
    enum { B = 2, T = 7, H = 6, DH = 4, D = H * DH, N = B * T };
    Tensor qkv = random2(2, N, 3 * D), ctx = tensor_zeros(2, N, D);
    Tensor probs = tensor_zeros(4, B, H, T, T), dropped = tensor_zeros(4, B, H, T, T);
    Rng whole;
    rng_seed(&whole, 9, 0);
    attention_forward(&ctx, &probs, &dropped, &qkv, 0.25f, true, &whole);
    for (int t = 2; t <= 3; t++)
        for (int r = 0; r < t; r++) {
            const int hl = H / t, dl = hl * DH;
            Tensor q = columns(&qkv, r * dl, dl), k = columns(&qkv, D + r * dl, dl);
            Tensor v = columns(&qkv, 2 * D + r * dl, dl), mine = tensor_zeros(2, N, 3 * dl);
            for (int n = 0; n < N; n++) {
                float *row = mine.data + (size_t)n * 3 * dl;
                memcpy(row, q.data + (size_t)n * dl, sizeof(float) * (size_t)dl);
                memcpy(row + dl, k.data + (size_t)n * dl, sizeof(float) * (size_t)dl);
                memcpy(row + 2 * dl, v.data + (size_t)n * dl, sizeof(float) * (size_t)dl);
            }
            Tensor c = tensor_zeros(2, N, dl), p = tensor_zeros(4, B, hl, T, T), w = tensor_zeros(4, B, hl, T, T);
            Rng rng;
            rng_seed(&rng, 9, 0);
            const int64_t head = T * T;
            attention_forward_window(&c, &p, &w, &mine, 0.25f, true, &rng,
                                     (DropoutWindow){hl * head, H * head, r * hl * head});
            Tensor want_c = columns(&ctx, r * dl, dl);
            Tensor pv = tensor_view(&probs, 2, B, H * head), dv = tensor_view(&dropped, 2, B, H * head);
            Tensor want_p = columns(&pv, (int)(r * hl * head), (int)(hl * head));
            Tensor want_w = columns(&dv, (int)(r * hl * head), (int)(hl * head));
            Tensor got_p = tensor_view(&p, 2, B, hl * head), got_w = tensor_view(&w, 2, B, hl * head);
            const bool ok = bits_equal("its heads' probabilities", &got_p, &want_p) &&
                            bits_equal("its heads' dropped weights (the whole layer's mask)", &got_w, &want_w) &&
                            bits_equal("its heads' context", &c, &want_c);
            Tensor *all[] = {&q, &k, &v, &mine, &c, &p, &w, &want_c, &want_p, &want_w};
            for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
            if (!ok) {
                printf("heads of rank %d of %d\n", r, t);
                return CHECK_FAIL;
            }
        }
    Tensor *all[] = {&qkv, &ctx, &probs, &dropped};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
    return CHECK_PASS;
}

/* 10 words padded to 12, in 3 slices of 4 rows: the slices' outputs sum to the whole
 * embedding (one of them holds each word), each slice's gradient is its rows of the
 * whole one; a token outside the vocabulary still stops. */
static int check_embedding_rows(void) {
    enum { V = 10, VP = 12, D = 5, N = 9 };
    const int tokens[N] = {0, 9, 3, 3, 7, 4, 8, 1, 9};
    Tensor table = random2(3, VP, D), out = tensor_zeros(2, N, D), dout = random2(4, N, D);
    Tensor dtable = tensor_zeros(2, VP, D), sum = tensor_zeros(2, N, D);
    embedding_forward(&out, tokens, &table, 1.5f);
    embedding_backward(&dtable, &dout, tokens, 1.5f);
    bool ok = true;
    for (int r = 0; r < 3; r++) {
        Tensor slice = tensor_range(&table, (int64_t)r * 4 * D, 4 * D), part = tensor_zeros(2, N, D);
        slice = tensor_view(&slice, 2, 4, D);
        Tensor grad = tensor_zeros(2, 4, D), want = tensor_range(&dtable, (int64_t)r * 4 * D, 4 * D);
        want = tensor_view(&want, 2, 4, D);
        embedding_forward_rows(&part, tokens, &slice, 1.5f, 4 * r, VP);
        embedding_backward_rows(&grad, &dout, tokens, 1.5f, 4 * r, VP);
        for (int64_t i = 0; i < sum.size; i++) sum.data[i] += part.data[i];
        ok = ok && bits_equal("a slice's gradient = its rows of the whole one", &grad, &want);
        tensor_free(&part), tensor_free(&grad);
    }
    ok = ok && bits_equal("the slices' outputs, summed = the whole embedding", &sum, &out);
    tensor_free(&table), tensor_free(&out), tensor_free(&dout), tensor_free(&dtable), tensor_free(&sum);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void bad_token(void *arg) {
    (void)arg;
    const int tokens[2] = {3, 12};
    Tensor slice = tensor_zeros(2, 4, 2), out = tensor_zeros(2, 2, 2);
    embedding_forward_rows(&out, tokens, &slice, 1.0f, 8, 12);
}

static int check_embedding_rows_bad_token(void) {
    ChildResult r;
    run_child(bad_token, NULL, &r);
    return expect_exit("a token of 12 for a vocabulary of 12", &r, 2, "token 12 at position 1",
                       "outside the vocabulary 0..11", (const char *)NULL)
               ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("tensor-parallel slices of the layers");
    check_run(NULL, "dropout window: each slice's mask = its columns of the whole mask", check_dropout_window, 10);
    check_run(NULL, "attention on a window of heads = those heads of the whole layer, mask too", check_attention_window, 10);
    check_run(NULL, "embedding rows: slices sum to the whole lookup; gradients are its rows", check_embedding_rows, 10);
    check_run(NULL, "embedding rows: a token outside the vocabulary stops", check_embedding_rows_bad_token, 10);
    return check_end();
}
