/* TODO 1.4: softmax cross-entropy, the loss of a classifier, and its gradient.
 *
 * The network's last layer gives one score (logit) z_j per class. Softmax turns
 * them into probabilities p_j = exp(z_j) / sum_k exp(z_k); the loss of one example
 * with label y is -log p_y, small when the right class gets a high probability.
 * Its gradient is remarkably simple: dL/dz_j = p_j - [j == y]. */
#include <math.h>

#include "lesson.h"

float lesson_softmax_cross_entropy(Tensor *dlogits, const Tensor *logits, const int *labels) {
    const int N = logits->shape[0], K = logits->shape[1];
    if (dlogits) CHECK_SAME_SHAPE(dlogits, logits);
    for (int n = 0; n < N; n++)
        CHECK(labels[n] >= 0 && labels[n] < K, "label %d of row %d outside 0..%d", labels[n], n, K - 1);
    double total = 0.0;
    for (int n = 0; n < N; n++) {
        const float *z = logits->data + (size_t)n * K;
        /* exp(1000) overflows a float; exp(z - max) <= 1 cannot, and the shift
         * cancels in p_j. */
        float zmax = z[0];
        for (int j = 1; j < K; j++) zmax = fmaxf(zmax, z[j]);
        double sum = 0.0;
        for (int j = 0; j < K; j++) sum += exp((double)(z[j] - zmax));
        /* -log p_y = log(sum_k exp(z_k)) - z_y = log(sum) + zmax - z_y */
        total += log(sum) + zmax - z[labels[n]];
        if (dlogits)
            for (int j = 0; j < K; j++) {
                double p = exp((double)(z[j] - zmax)) / sum;
                /* the loss is a mean over N examples, so each gradient is divided by N */
                dlogits->data[(size_t)n * K + j] += (float)((p - (j == labels[n])) / N);
            }
    }
    return (float)(total / N);
}
