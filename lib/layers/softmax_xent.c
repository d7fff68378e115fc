#include "softmax_xent.h"

#include <math.h>

#include "core/check.h"

float softmax_cross_entropy(Tensor *dlogits, const Tensor *logits, const int *labels) {
    CHECK_SHAPE(logits, -1, -1);
    CHECK_DEVICE(logits, DEVICE_CPU);
    CHECK_DEVICE(dlogits, DEVICE_CPU);
    const int N = logits->shape[0], K = logits->shape[1];
    if (dlogits) CHECK_SAME_SHAPE(dlogits, logits);
    double total = 0.0;
    for (int n = 0; n < N; n++) {
        const float *z = logits->data + (size_t)n * K;
        CHECK(labels[n] >= 0 && labels[n] < K, "label %d of row %d outside 0..%d", labels[n], n,
              K - 1);
        float zmax = z[0];
        for (int j = 1; j < K; j++) zmax = z[j] > zmax ? z[j] : zmax;
        double sum = 0.0;
        for (int j = 0; j < K; j++) sum += exp((double)(z[j] - zmax));
        total += log(sum) + zmax - z[labels[n]];
        if (dlogits) {
            float *dz = dlogits->data + (size_t)n * K;
            for (int j = 0; j < K; j++) {
                float p = (float)(exp((double)(z[j] - zmax)) / sum);
                dz[j] += (p - (j == labels[n] ? 1.0f : 0.0f)) / (float)N;
            }
        }
    }
    return (float)(total / N);
}

int count_correct(const Tensor *logits, const int *labels) {
    CHECK_SHAPE(logits, -1, -1);
    CHECK_DEVICE(logits, DEVICE_CPU);
    const int N = logits->shape[0], K = logits->shape[1];
    int correct = 0;
    for (int n = 0; n < N; n++) {
        const float *z = logits->data + (size_t)n * K;
        int best = 0;
        for (int j = 1; j < K; j++)
            if (z[j] > z[best]) best = j;
        correct += best == labels[n];
    }
    return correct;
}
