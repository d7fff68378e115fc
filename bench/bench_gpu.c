/* GPU benchmark: training steps of the simple CNN on the GPU (images/s, GFLOP/s),
 * and the rate of the CNN's GEMM shapes through the library's row-major cuda_gemm
 * against cublasSgemm called directly and against a large square cuBLAS GEMM (the
 * most cuBLAS gets out of this GPU in FP32). Prints one JSON object per line.
 * Built only where nvcc is; needs a GPU to run. */
#include <stdio.h>

#include "core/args.h"
#include "core/check.h"
#include "core/rng.h"
#include "core/timer.h"
#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "models/cnn.h"
#include "ops/gemm.h"
#include "train/optim.h"

typedef struct {
    const char *name;
    bool ta, tb;
    int M, N, K;
} Shape;

/* Seconds per call, after a warm-up, with the GPU idle before and after. */
static double time_gemm(const Shape *s, const float *A, const float *B, float *C, bool direct,
                        int repeats) {
    int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N, ldc = s->N;
    const float one = 1.0f, zero = 0.0f;
    double t0 = 0;
    for (int r = -3; r < repeats; r++) {
        if (r == 0) cuda_sync(), t0 = now_seconds();
        if (direct) /* column-major C^T = op(B)^T op(A)^T, written out by hand */
            CUBLAS_CHECK(cublasSgemm(cuda_cublas(), s->tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                     s->ta ? CUBLAS_OP_T : CUBLAS_OP_N, s->N, s->M, s->K, &one, B,
                                     ldb, A, lda, &zero, C, ldc));
        else
            cuda_gemm(s->ta, s->tb, s->M, s->N, s->K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
    }
    cuda_sync();
    return (now_seconds() - t0) / repeats;
}

static void bench_gemms(int batch) {
    const int n1 = batch * 24 * 24, n2 = batch * 8 * 8; /* columns of conv1, conv2 (28x28) */
    Shape shapes[] = {
        {"conv1 forward", false, false, 50, n1, 25},
        {"conv2 forward", false, false, 75, n2, 1250},
        {"conv2 dweight", false, true, 75, 1250, n2},
        {"conv2 dinput", true, false, 1250, n2, 75},
        {"fc1 forward", false, true, batch, 50, 1200},
        {"square 8192", false, false, 8192, 8192, 8192},
    };
    /* one buffer each for A, B and C, as large as the largest of them over the shapes
     * (the CNN's columns grow with the batch and outgrow the square for large ones) */
    size_t most = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const Shape *s = &shapes[i];
        size_t a = (size_t)s->M * s->K, b = (size_t)s->K * s->N, c = (size_t)s->M * s->N;
        size_t m = a > b ? a : b;
        most = m > c ? (m > most ? m : most) : (c > most ? c : most);
    }
    float *A = cuda_malloc(most * 4), *B = cuda_malloc(most * 4), *C = cuda_malloc(most * 4);
    cuda_fill(A, (int64_t)most, 0.5f);
    cuda_fill(B, (int64_t)most, 0.25f);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const Shape *s = &shapes[i];
        int repeats = s->M == 8192 ? 5 : 50;
        double flop = 2.0 * s->M * s->N * s->K;
        double lib = time_gemm(s, A, B, C, false, repeats), raw = time_gemm(s, A, B, C, true, repeats);
        printf("{\"gemm\": \"%s\", \"M\": %d, \"N\": %d, \"K\": %d, \"library_gflops\": %.1f, "
               "\"cublas_gflops\": %.1f}\n", s->name, s->M, s->N, s->K, flop / lib / 1e9,
               flop / raw / 1e9);
    }
    cuda_free(A), cuda_free(B), cuda_free(C);
}

static void bench_training(int batch, int steps, int warmup) {
    Rng rng;
    rng_seed(&rng, 1, 0);
    Cnn m;
    cnn_init(&m, 1, 28, 28, 10, batch, &rng);
    cnn_to_device(&m, DEVICE_CUDA);
    Adam adam;
    adam_init(&adam, &m.params, 1e-3f);
    Tensor host = tensor_zeros(4, batch, 1, 28, 28);
    int *labels = xcalloc((size_t)batch, sizeof(int));
    for (int64_t i = 0; i < host.size; i++) host.data[i] = rng_uniform(&rng);
    for (int i = 0; i < batch; i++) labels[i] = (int)rng_below(&rng, 10);
    Tensor images = tensor_to(&host, DEVICE_CUDA);
    int *dlabels = cuda_malloc((size_t)batch * sizeof(int));
    cuda_copy_to_device(dlabels, labels, (size_t)batch * sizeof(int));
    double start = 0;
    for (int step = 0; step < warmup + steps; step++) {
        if (step == warmup) cuda_sync(), start = now_seconds();
        Tensor logits = cnn_forward(&m, &images);
        tensor_fill(&m.d_logits, 0.0f);
        m.layers.softmax_cross_entropy(&m.d_logits, &logits, dlabels); /* waits for the loss, as training does */
        params_zero_grad(&m.params);
        cnn_backward(&m, &images);
        adam_step(&adam, &m.params);
    }
    cuda_sync();
    double seconds = now_seconds() - start, rate = (double)steps * batch / seconds;
    CudaDeviceInfo g;
    cuda_device_info(cuda_current_device(), &g);
    printf("{\"impl\": \"c-cuda\", \"device\": \"%s\", \"batch\": %d, \"images_per_s\": %.1f, "
           "\"gflops\": %.1f}\n", g.name, batch, rate, rate * cnn_train_flops(&m) / 1e9);
    tensor_free(&images), tensor_free(&host), xfree(labels), cuda_free(dlabels);
    adam_free(&adam);
    cnn_free(&m);
}

int main(int argc, char **argv) {
    int batch = 100, steps = 200, warmup = 20, gemms = 1;
    ArgSpec specs[] = {
        {"batch-size", ARG_INT, &batch, "images per step", NULL},
        {"steps", ARG_INT, &steps, "timed training steps", NULL},
        {"warmup", ARG_INT, &warmup, "untimed steps first", NULL},
        {"gemms", ARG_INT, &gemms, "1: also time the GEMM shapes", NULL},
    };
    args_parse(argc, argv, specs, ARRAY_LEN(specs),
               "GPU benchmark: CNN training steps and GEMM rates, one JSON object per line.");
    if (batch < 1 || steps < 1 || warmup < 0) fatal("--batch-size and --steps must be positive");
    cuda_require();
    bench_training(batch, steps, warmup);
    if (gemms) bench_gemms(batch);
    return 0;
}
