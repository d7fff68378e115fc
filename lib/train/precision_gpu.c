#include "precision_gpu.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/check.h"
#include "core/gpu_peak.h"
#include "cuda/device.h"

void precision_require_gpu(Dist *d, DType dtype, const char *precision, const char *instead) {
    if (dtype == DTYPE_F32) return; /* the same on every rank: the options agree */
    const int dev = cuda_current_device();
    bool ok = true;
    CudaDeviceInfo g = {0};
    if (dev >= 0) {
        cuda_device_info(dev, &g);
        ok = gpu_supports_precision(g.major, g.minor, dtype);
    }
    /* every rank alike: a stop on one rank only would leave the others waiting */
    if (d && dist_sum_double(d, ok ? 0.0 : 1.0) == 0.0) return;
    if (ok) {
        if (d) exit(EXIT_USER_ERROR); /* the rank whose GPU it is says why */
        return;
    }
    if (!instead)
        instead = dtype == DTYPE_BF16 && gpu_supports_precision(g.major, g.minor, DTYPE_F16)
                      ? "fp16 or fp32" : "fp32";
    char rank[32] = "";
    if (d && d->world_size > 1) snprintf(rank, sizeof rank, " of rank %d", d->rank);
    fatal("--precision %s: GPU %d%s (%s, compute capability %d.%d) has no %s tensor cores (%s "
          "needs %s or later); use --precision %s", precision, dev, rank, g.name, g.major,
          g.minor, dtype_name(dtype), precision, dtype == DTYPE_BF16 ? "8.0 (Ampere)" : "7.0 (Volta)",
          instead);
}
