// Softmax cross-entropy on the GPU, as lib/layers/softmax_xent.c.
//
// cuda_softmax_cross_entropy: one thread per row (a row is one example's few class
// scores), the same float/double steps as the CPU's exact version.
//
// cuda_softmax_cross_entropy_fast (a language model's vocabulary: ~30,000 columns):
// one block per row. The block finds the row's maximum, sums exp(z - max) (each thread
// its columns in order in float, the threads' sums in double in a fixed tree), and the
// gradient's pass recomputes each exponential. Row losses go to the host and are added
// in row order, as on the CPU: the same bits every run. expf (within 2 ulp) stands for
// the CPU's softmax_exp (within 1.1e-7 relative): agreement to rounding.
//
// The fast version also takes bfloat16 / float16 logits and dlogits (elem.cuh): the loss
// from the exact logits, each dlogits entry old + S x gradient rounded once (S, the loss
// scale, inside the float32 formula as on the CPU: the 1/N becomes s_n = S x (1/N)); the
// other one (the CNN's) and the accuracy count take float32 only.
#include <math.h>

#include "cuda_check.h"
#include "elem.cuh"
#include "launch.h"
#include "reduce.cuh"
extern "C" {
#include "core/check.h"
#include "cuda/device.h"
#include "kernels.h"
#include "layers/softmax_xent.h"
}

static __global__ void softmax_xent_kernel(double *row_loss, int *bad_row, float *dlogits,
                                           const float *logits, const int *labels, int N, int K) {
    for (int n = blockIdx.x * blockDim.x + threadIdx.x; n < N; n += gridDim.x * blockDim.x) {
        const float *z = logits + (int64_t)n * K;
        const int y = labels[n];
        if (y < 0 || y >= K) {
            row_loss[n] = __longlong_as_double(0x7ff8000000000000LL); // NaN
            atomicMin(bad_row, n);
            continue;
        }
        float zmax = z[0];
        for (int j = 1; j < K; j++) zmax = z[j] > zmax ? z[j] : zmax;
        double sum = 0.0;
        for (int j = 0; j < K; j++) sum += exp((double)(z[j] - zmax));
        row_loss[n] = log(sum) + zmax - z[y];
        if (dlogits) {
            float *dz = dlogits + (int64_t)n * K;
            for (int j = 0; j < K; j++) {
                float p = (float)(exp((double)(z[j] - zmax)) / sum);
                dz[j] += (p - (j == y ? 1.0f : 0.0f)) / (float)N;
            }
        }
    }
}

static void softmax_xent(double *row_loss, int *bad_row, float *dlogits, const float *logits,
                         const int *labels, int N, int K) {
    softmax_xent_kernel<<<cuda_blocks_for(N, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
        row_loss, bad_row, dlogits, logits, labels, N, K);
    CUDA_CHECK_LAUNCH();
}

// Per-row losses and the bad-row flag on the device, kept between calls: a
// cudaMalloc/cudaFree pair every step would synchronise the GPU twice more.
static double *g_row_loss;
static int *g_bad_row;
static double *g_host_loss;
static int g_rows;

static void loss_buffers(int N) {
    if (N <= g_rows) return;
    cuda_free(g_row_loss);
    cuda_free(g_bad_row);
    xfree(g_host_loss);
    g_row_loss = (double *)cuda_malloc((size_t)N * sizeof(double));
    g_bad_row = (int *)cuda_malloc(sizeof(int));
    g_host_loss = (double *)xmalloc((size_t)N * sizeof(double));
    g_rows = N;
}

enum { XENT_THREADS = 256 }; // threads per row of the fast version

template <class T>
static __global__ void softmax_xent_fast_kernel(double *row_loss, int *bad_row, T *dlogits,
                                                const T *logits, const int *labels, int K,
                                                float s_n) {
    const int n = blockIdx.x;
    const T *z = logits + (int64_t)n * K;
    const int y = labels[n];
    if (y < 0 || y >= K) { // the whole block leaves: no reduction is waiting for it
        if (threadIdx.x == 0) {
            row_loss[n] = __longlong_as_double(0x7ff8000000000000LL); // NaN
            atomicMin(bad_row, n);
        }
        return;
    }
    float m = -INFINITY;
    for (int j = threadIdx.x; j < K; j += blockDim.x) m = fmaxf(m, elem_load(z, j));
    const float zmax = block_allreduce(m, Max());
    float part = 0.0f;
    for (int j = threadIdx.x; j < K; j += blockDim.x) part += expf(elem_load(z, j) - zmax);
    const double sum = block_allreduce((double)part, Sum());
    if (threadIdx.x == 0) row_loss[n] = log(sum) + (double)zmax - (double)elem_load(z, y);
    if (!dlogits) return;
    T *dz = dlogits + (int64_t)n * K;
    const float a = (float)(s_n / sum); // s_n = S x (1/N): the loss scale before the rounding
    for (int j = threadIdx.x; j < K; j += blockDim.x) {
        float g = elem_load(dz, j) + expf(elem_load(z, j) - zmax) * a;
        if (j == y) g -= s_n; // after the +=, as the CPU does
        elem_store(dz, j, g);   // rounded once
    }
}

// The host's side of both versions: labels checked, the row losses in row order.
static float mean_loss(const int *labels, int N, int K) {
    int bad_row = N;
    cuda_copy_to_host(g_host_loss, g_row_loss, (size_t)N * sizeof(double)); // waits for the kernel
    cuda_copy_to_host(&bad_row, g_bad_row, sizeof(int));
    if (bad_row < N) {
        int label = -1;
        cuda_copy_to_host(&label, labels + bad_row, sizeof(int));
        CHECK(false, "label %d of row %d outside 0..%d", label, bad_row, K - 1);
    }
    double total = 0.0;
    for (int n = 0; n < N; n++) total += g_host_loss[n]; // in row order, as on the CPU
    return (float)(total / N);
}

// The checks of both versions; for N > 0 rows also the labels' memory, the buffers and
// the bad-row flag reset. False for no rows (no buffers of 0 rows to launch on).
static bool loss_begin(const Tensor *dlogits, const Tensor *logits, const int *labels) {
    CHECK_SHAPE(logits, -1, -1);
    CHECK_ON_GPU(logits);
    CHECK_ON_GPU(dlogits);
    if (dlogits) CHECK_SAME_SHAPE(dlogits, logits);
    int N = logits->shape[0];
    if (N == 0) return false;
    CHECK_DEVICE_POINTER(labels);
    loss_buffers(N);
    cuda_copy_to_device(g_bad_row, &N, sizeof(int)); // no bad row yet
    return true;
}

extern "C" float cuda_softmax_cross_entropy(Tensor *dlogits, const Tensor *logits,
                                            const int *labels) {
    CHECK_FLOAT32(dlogits, logits);
    if (!loss_begin(dlogits, logits, labels)) return NAN; // as the CPU's 0 / 0
    const int N = logits->shape[0], K = logits->shape[1];
    softmax_xent(g_row_loss, g_bad_row, dlogits ? dlogits->data : NULL, logits->data, labels, N, K);
    return mean_loss(labels, N, K);
}

extern "C" float cuda_softmax_cross_entropy_fast(Tensor *dlogits, const Tensor *logits,
                                                 const int *labels, float scale) {
    const DType dt = ONE_DTYPE(logits, dlogits);
    CHECK(isfinite(scale) && scale > 0.0f,
          "softmax cross-entropy with a loss scale of %g: it must be finite and positive (1: "
          "the plain gradient)", (double)scale);
    if (!loss_begin(dlogits, logits, labels)) return 0.0f; // as the CPU's fast version
    const int N = logits->shape[0], K = logits->shape[1];
    CHECK(K > 0, "softmax cross-entropy over 0 classes");
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        softmax_xent_fast_kernel<T><<<N, XENT_THREADS, 0, cuda_stream()>>>(g_row_loss, g_bad_row, elems<T>(dlogits),
                                                        elems<T>(logits), labels, K,
                                                        scale * (1.0f / (float)N));
        CUDA_CHECK_LAUNCH();
    });
    return mean_loss(labels, N, K);
}

// Evaluation only, a few rows at a time: the logits and labels come to the host and
// the CPU counts (the same ties rule, no kernel to keep in step with it).
extern "C" int cuda_count_correct(const Tensor *logits, const int *labels) {
    CHECK_FLOAT32(logits);
    CHECK_SHAPE(logits, -1, -1);
    CHECK_ON_GPU(logits);
    const int N = logits->shape[0];
    if (N == 0) return 0;
    CHECK_DEVICE_POINTER(labels);
    Tensor host = tensor_to(logits, DEVICE_CPU);
    int *host_labels = (int *)xmalloc((size_t)N * sizeof(int));
    cuda_copy_to_host(host_labels, labels, (size_t)N * sizeof(int));
    int correct = count_correct(&host, host_labels);
    xfree(host_labels);
    tensor_free(&host);
    return correct;
}
