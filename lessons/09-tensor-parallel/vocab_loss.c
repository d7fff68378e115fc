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
    /* TODO 9.4: the three steps above, then the mean loss and (when dlogits is not NULL)
     * the gradient; valid = how many of this rank's Vp/t columns are words (at least 0). */
    (void)tp, (void)dlogits, (void)logits, (void)targets;
    TODO_STOP("9.4");
}
