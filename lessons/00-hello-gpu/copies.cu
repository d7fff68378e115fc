// Given: timing host<->device copies with CUDA events (timestamps recorded by the
// GPU itself, in its stream, so they measure the copy and not the host's waiting).
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_check.h"
#include "lesson.h"

static double best_seconds(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                           int repeats) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    double best = 1e30;
    for (int r = 0; r < repeats; r++) {
        CUDA_CHECK(cudaEventRecord(start));
        CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind));
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop)); // wait until the copy is done
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (ms / 1e3 < best) best = ms / 1e3;
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return best;
}

extern "C" CopyTimes time_copies(size_t bytes, int repeats, int pinned) {
    void *host, *dev, *dev2;
    if (pinned) CUDA_CHECK(cudaMallocHost(&host, bytes)); // page-locked: DMA straight from it
    else if (!(host = malloc(bytes))) {
        fprintf(stderr, "error: out of host memory for %zu bytes: use a smaller --size-mb\n", bytes);
        exit(1);
    }
    memset(host, 1, bytes);
    CUDA_CHECK(cudaMalloc(&dev, bytes));
    CUDA_CHECK(cudaMalloc(&dev2, bytes));
    CopyTimes t;
    t.h2d = best_seconds(dev, host, bytes, cudaMemcpyHostToDevice, repeats);
    t.d2h = best_seconds(host, dev, bytes, cudaMemcpyDeviceToHost, repeats);
    t.d2d = best_seconds(dev2, dev, bytes, cudaMemcpyDeviceToDevice, repeats);
    CUDA_CHECK(cudaFree(dev));
    CUDA_CHECK(cudaFree(dev2));
    if (pinned) CUDA_CHECK(cudaFreeHost(host));
    else free(host);
    return t;
}
