/* TODO 9.4: the vocabulary-parallel cross-entropy.
 *
 * The decoder is column-parallel over the words: rank r holds the logits of words
 * [tp->words.start, + tp->words.count) of every row, [N, Vp/t], and no rank sees a whole
 * row. Gathering them would move N x V floats (a 50,257-word vocabulary: 200 kB a
 * token); the loss needs only three numbers per row, each one all-reduce of [N]:
 *
 *   loss_n = log(sum_j exp(z_nj - m_n)) + m_n - z_n,target
 *
 *   1. m_n: the row's largest logit over all words: the largest of this rank's, then
 *      all-reduced with DIST_MAX (subtracting it keeps exp from overflowing; each rank
 *      must subtract the same m_n, or the sums do not add up);
 *   2. S_n = sum over this rank's words of exp(z_nj - m_n), all-reduced with DIST_SUM;
 *   3. the target's z_n,target - m_n: only the rank that holds the target adds it (the
 *      others add 0), all-reduced with DIST_SUM. (2 and 3 can share one all-reduce of
 *      [2N].)
 *
 * The loss is the mean of log(S_n) - (z_target - m_n) over the N rows. Its gradient on
 * this rank's words: dL/dz_nj = (exp(z_nj - m_n) / S_n - [j is the target]) / N.
 *
 * Padding: when t does not divide the vocabulary, the last ranks' words run past
 * tp->vocab. Those columns are no words: leave them out of the max and the sum, and
 * give them gradient 0 (their weights then stay 0). The tensors are in host memory; use
 * tp_all_reduce_host(tp, &tensor, op), which also works when the ranks are GPUs. */
#include <math.h>

#include "lesson.h"

float lesson_vocab_cross_entropy(TensorParallel *tp, Tensor *dlogits, const Tensor *logits,
                                 const int *targets) {
    const int N = logits->shape[0], V = logits->shape[1], first = tp->words.start;
    int valid = tp->vocab - first < V ? tp->vocab - first : V; /* the rest: padding */
    if (valid < 0) valid = 0;                                    /* a rank of padding only */
    Tensor max = tensor_zeros(1, N), sums = tensor_zeros(2, 2, N);  /* [S; target - m] */
    for (int n = 0; n < N; n++) {
        const float *z = logits->data + (size_t)n * V;
        float m = -INFINITY;
        for (int j = 0; j < valid; j++) m = fmaxf(m, z[j]);
        max.data[n] = m;
    }
    tp_all_reduce_host(tp, &max, DIST_MAX);
    for (int n = 0; n < N; n++) {
        const float *z = logits->data + (size_t)n * V;
        for (int j = 0; j < valid; j++) sums.data[n] += expf(z[j] - max.data[n]);
        const int mine = targets[n] - first;
        if (mine >= 0 && mine < valid) sums.data[N + n] = z[mine] - max.data[n];
    }
    tp_all_reduce_host(tp, &sums, DIST_SUM);
    double loss = 0.0;
    for (int n = 0; n < N; n++) loss += logf(sums.data[n]) - sums.data[N + n];
    for (int n = 0; dlogits && n < N; n++) {
        const float *z = logits->data + (size_t)n * V;
        float *d = dlogits->data + (size_t)n * V;
        for (int j = 0; j < V; j++)
            d[j] = j < valid ? expf(z[j] - max.data[n]) / sums.data[n] / (float)N : 0.0f;
        const int mine = targets[n] - first;
        if (mine >= 0 && mine < valid) d[mine] -= 1.0f / (float)N;
    }
    tensor_free(&max);
    tensor_free(&sums);
    return (float)(loss / N);
}
