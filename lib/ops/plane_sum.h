/* The sum of n floats in eight running sums, added at the end: one vector add per 8
 * floats instead of a chain of scalar adds (which the compiler may not reorder). The
 * bias gradient of a convolution sums its output gradient's planes with it. */
#ifndef OPS_PLANE_SUM_H
#define OPS_PLANE_SUM_H

static inline float plane_sum(const float *x, int n) {
    float lanes[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) lanes[j] += x[i + j];
    float sum = 0.0f;
    for (; i < n; i++) sum += x[i];
    for (int j = 0; j < 8; j++) sum += lanes[j];
    return sum;
}

#endif
