#include "train/schedule.h"

#include <math.h>

#include "core/check.h"

float step_lr(float lr, float gamma, int step_size, int64_t epoch) {
    CHECK(step_size > 0 && epoch >= 0, "step_lr: step_size %d, epoch %lld", step_size,
          (long long)epoch);
    /* PyTorch's closed form, in double (Python floats), then stored as a float */
    return (float)((double)lr * pow((double)gamma, (double)(epoch / step_size)));
}

float linear_lr(float lr, int64_t update, int64_t total) {
    CHECK(total > 0 && update >= 0 && update <= total, "linear_lr: update %lld of %lld",
          (long long)update, (long long)total);
    return (float)((1.0 - (double)update / (double)total) * (double)lr);
}
