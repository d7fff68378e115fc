/* Grader of lesson 02. TODO 2.4's mapping is host code and is checked everywhere,
 * through a host model of cublasSgemm (lib/cuda/gemm_map.h). Every other check
 * runs your kernels and calls on a GPU, against the CPU library, and SKIPs without
 * one (never PASS). Tolerances as in tests/gpu/check_gpu.c, which explains them.
 * Run with `make check-lesson 2` (your code) or `make check-lesson 2 SOLUTION=1`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "framework/check.h"
#include "gpu/gpu_check.h"
#include "layers/relu.h"
#include "layers/softmax_xent.h"
#include "lesson.h"
#include "ops/gemm.h"

/* ---------------------------------------------------------------- TODO 2.4 (host) */

static bool mapping_case(bool ta, bool tb, int M, int N, int K, int pad, uint64_t seed) {
    int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    int64_t na = (int64_t)(ta ? K : M) * lda, nb = (int64_t)(tb ? N : K) * ldb, nc = (int64_t)M * ldc;
    float *A = malloc(na * 4), *B = malloc(nb * 4), *C = malloc(nc * 4), *R = malloc(nc * 4);
    fill_uniform(A, na, seed, -1, 1);
    fill_uniform(B, nb, seed + 1, -1, 1);
    fill_uniform(C, nc, seed + 2, -1, 1);
    memcpy(R, C, (size_t)nc * 4);
    gemm(ta, tb, M, N, K, 0.75f, A, lda, B, ldb, 0.5f, R, ldc);
    CublasGemm g = lesson_gemm_to_cublas(ta, tb, M, N, K, lda, ldb, ldc);
    char why[300];
    bool ok = expect_true(gemm_through_model(&g, 0.75f, A, B, 0.5f, C, why, sizeof why), "%s", why) &&
              expect_close("C (row-major)", C, R, nc, 1e-5f, 1e-5f);
    if (!ok)
        printf("row-major M=%d N=%d K=%d trans_a=%d trans_b=%d lda=%d ldb=%d ldc=%d; you gave "
               "cuBLAS swap=%d transa=%d transb=%d m=%d n=%d k=%d lda=%d ldb=%d ldc=%d\n"
               "hint: C^T = op(B)^T op(A)^T: B first, m = N, n = M, leading dimensions unchanged\n",
               M, N, K, ta, tb, lda, ldb, ldc, g.swap, g.trans_first, g.trans_second, g.m, g.n,
               g.k, g.ld_first, g.ld_second, g.ldc);
    free(A), free(B), free(C), free(R);
    return ok;
}

static int check_mapping_transposes(void) {
    for (int t = 0; t < 4; t++)
        if (!mapping_case(t & 1, t & 2, 5, 7, 3, 0, 10 + (uint64_t)t)) return CHECK_FAIL;
    return CHECK_PASS;
}

static int check_mapping_strides(void) {
    Rng rng;
    rng_seed(&rng, 21, 0);
    for (int t = 0; t < 16; t++) {
        int M = 1 + (int)rng_below(&rng, 12), N = 1 + (int)rng_below(&rng, 12),
            K = 1 + (int)rng_below(&rng, 12);
        if (!mapping_case(t & 1, t & 2, M, N, K, 1 + t % 3, 100 + 3 * (uint64_t)t)) return CHECK_FAIL;
    }
    return CHECK_PASS;
}

#ifdef HAVE_CUDA
#include "cuda/device.h"

static float *to_gpu(const float *h, int64_t n) {
    float *d = cuda_malloc((size_t)n * 4);
    cuda_copy_to_device(d, h, (size_t)n * 4);
    return d;
}

static bool same_as(const char *what, const float *dev, const float *want, int64_t n, float atol,
                    float rtol) {
    float *h = malloc((size_t)n * 4);
    cuda_copy_to_host(h, dev, (size_t)n * 4);
    bool ok = expect_close(what, h, want, n, atol, rtol);
    free(h);
    return ok;
}

/* ---------------------------------------------------------------- TODO 2.1 */

static int check_upload(void) {
    REQUIRE_GPU();
    const int size = 10, floats = 3 * 32 * 32;
    float *images = malloc((size_t)size * floats * 4);
    int labels[10], back[10];
    fill_uniform(images, (int64_t)size * floats, 5, 0, 1);
    for (int i = 0; i < size; i++) labels[i] = (i * 3) % 10;
    DeviceBatch d;
    lesson_device_batch_init(&d, size, floats);
    lesson_upload_batch(&d, images, labels, 7); /* a short batch: 7 of 10 */
    cuda_copy_to_host(back, d.labels, 7 * sizeof(int));
    bool ok = same_as("images on the GPU", d.images, images, 7LL * floats, 0, 0);
    for (int i = 0; ok && i < 7; i++)
        ok = expect_true(back[i] == labels[i], "label %d on the GPU is %d, expected %d", i, back[i], labels[i]);
    if (!ok) printf("hint: sizes are in bytes: n * image_floats * sizeof(float)\n");
    lesson_device_batch_free(&d);
    free(images);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- TODO 2.2 */

static int check_relu(void) {
    REQUIRE_GPU();
    static const int64_t sizes[] = {1, 255, 257, 1000003};
    for (int t = 0; t < 4; t++) {
        int64_t n = sizes[t];
        Tensor x = tensor_zeros(1, (int)n), y = tensor_zeros(1, (int)n), dy = tensor_zeros(1, (int)n),
               dx = tensor_zeros(1, (int)n);
        fill_uniform(x.data, n, 1 + t, -1, 1);
        fill_uniform(dy.data, n, 2 + t, -1, 1);
        fill_uniform(dx.data, n, 3 + t, -1, 1); /* din starts non-zero: add */
        float *gx = to_gpu(x.data, n), *gy = to_gpu(x.data, n), *gdy = to_gpu(dy.data, n),
              *gdx = to_gpu(dx.data, n);
        relu_forward(&y, &x);
        relu_backward(&dx, &dy, &y);
        lesson_relu_forward(gy, gx, n);
        bool ok = same_as("relu forward", gy, y.data, n, 0, 0);
        lesson_relu_backward(gdx, gdy, gy, n);
        ok = ok && same_as("relu backward (din += ...)", gdx, dx.data, n, 0, 0);
        if (!ok) {
            printf("n = %lld: enough blocks for every element? a bounds test i < n?\n", (long long)n);
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 2.3 */

static int check_im2col(void) {
    REQUIRE_GPU();
    Rng rng;
    rng_seed(&rng, 31, 0);
    for (int t = 0; t < 12; t++) {
        int C = 1 + (int)rng_below(&rng, 4), H = 4 + (int)rng_below(&rng, 10), W = 4 + (int)rng_below(&rng, 10);
        int K = 1 + (int)rng_below(&rng, 4), stride = 1 + (int)rng_below(&rng, 2), pad = (int)rng_below(&rng, 3);
        int nimg = 1 + (int)rng_below(&rng, 3);
        ConvGeometry g = conv_geometry(C, H, W, K, K, stride, pad);
        int64_t nin = (int64_t)nimg * C * H * W, ncols = (int64_t)C * K * K * nimg * g.OH * g.OW;
        float *img = malloc((size_t)nin * 4), *cols = malloc((size_t)ncols * 4);
        fill_uniform(img, nin, 40 + t, -1, 1);
        im2col(cols, img, nimg, &g);
        float *gimg = to_gpu(img, nin), *gcols = cuda_malloc((size_t)ncols * 4);
        lesson_im2col(gcols, gimg, nimg, &g);
        if (!same_as("columns", gcols, cols, ncols, 0, 0)) {
            printf("images [%d, %d, %d, %d], kernel %d, stride %d, padding %d: row (c, kh, kw), "
                   "column (n, oh, ow); 0 in the padding\n", nimg, C, H, W, K, stride, pad);
            return CHECK_FAIL;
        }
        cuda_free(gimg), cuda_free(gcols), free(img), free(cols);
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 2.4 (GPU) */

static int check_gemm_call(void) {
    REQUIRE_GPU();
    for (int t = 0; t < 8; t++) {
        bool ta = t & 1, tb = t & 2;
        int M = 37 + t, N = 50 + 3 * t, K = 300 + t, pad = t / 4;
        int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
        int64_t na = (int64_t)(ta ? K : M) * lda, nb = (int64_t)(tb ? N : K) * ldb, nc = (int64_t)M * ldc;
        float *A = malloc(na * 4), *B = malloc(nb * 4), *C = malloc(nc * 4);
        fill_uniform(A, na, 60 + t, -1, 1), fill_uniform(B, nb, 70 + t, -1, 1), fill_uniform(C, nc, 80 + t, -1, 1);
        float *dA = to_gpu(A, na), *dB = to_gpu(B, nb), *dC = to_gpu(C, nc);
        gemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 1.0f, C, ldc);
        lesson_gemm(ta, tb, M, N, K, 1.0f, dA, lda, dB, ldb, 1.0f, dC, ldc);
        if (!same_as("C", dC, C, nc, 1e-5f * K, 1e-4f)) {
            printf("M=%d N=%d K=%d trans_a=%d trans_b=%d\n", M, N, K, ta, tb);
            return CHECK_FAIL;
        }
        cuda_free(dA), cuda_free(dB), cuda_free(dC), free(A), free(B), free(C);
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 2.5 */

static int check_train_epoch_gpu(void) {
    REQUIRE_GPU();
    Dataset train;
    dataset_make_synthetic(330, 1, 28, 1, &train); /* 10 batches of 32 and one of 10 */
    Cnn cpu, gpu;
    Rng r1, r2;
    rng_seed(&r1, 3, 0), rng_seed(&r2, 3, 0);
    cnn_init(&cpu, 1, 28, 28, 10, 32, &r1);
    cnn_init(&gpu, 1, 28, 28, 10, 32, &r2);
    cnn_to_device(&gpu, DEVICE_CUDA);
    gpu.layers = lesson_layers(); /* your kernels */
    Adam ca, ga;
    adam_init(&ca, &cpu.params, 1e-3f);
    adam_init(&ga, &gpu.params, 1e-3f);
    Sampler s1, s2;
    sampler_init(&s1, train.count, true, 5), sampler_init(&s2, train.count, true, 5);
    sampler_set_epoch(&s1, 1), sampler_set_epoch(&s2, 1);
    Batch b1, b2;
    batch_init(&b1, 32, &train), batch_init(&b2, 32, &train);
    DeviceBatch d;
    lesson_device_batch_init(&d, 32, 28 * 28);
    EpochResult want = cnn_train_epoch(&cpu, &ca, &train, &s1, &b1); /* lesson 01's loop */
    EpochResult got = train_epoch_gpu(&gpu, &ga, &train, &s2, &b2, &d);
    if (!expect_true(got.examples == 330, "train_epoch_gpu saw %d examples, expected 330 (the "
                     "short last batch too)", got.examples))
        return CHECK_FAIL;
    /* 11 Adam steps: the losses drift apart by rounding only (check_gpu.c) */
    float g = (float)got.loss, w = (float)want.loss;
    if (!expect_close("mean training loss, GPU vs CPU", &g, &w, 1, 0, 2e-3f)) {
        printf("hint: weight each batch's loss by n; clear d_logits and the gradients every step\n");
        return CHECK_FAIL;
    }
    for (int i = 0; i < cpu.params.count; i++) {
        Tensor h = tensor_to(&gpu.params.items[i]->value, DEVICE_CPU);
        bool ok = expect_close(cpu.params.items[i]->name, h.data, cpu.params.items[i]->value.data,
                               h.size, 11 * 1e-3f, 0);
        tensor_free(&h);
        if (!ok) return CHECK_FAIL;
    }
    return CHECK_PASS;
}
#endif /* HAVE_CUDA */

int main(void) {
    check_begin("lesson 02: gpu-cnn");
    check_run("TODO 2.1", "device batch: allocate, upload images and labels (a short batch)", GPU_CHECK(check_upload), 60);
    check_run("TODO 2.2", "ReLU kernels, forward and backward, match the CPU exactly", GPU_CHECK(check_relu), 60);
    check_run("TODO 2.3", "im2col kernel matches the CPU on 12 random geometries", GPU_CHECK(check_im2col), 60);
    check_run("TODO 2.4", "row-major GEMM -> cuBLAS arguments: the four transposes (host)", check_mapping_transposes, 20);
    check_run("TODO 2.4", "row-major GEMM -> cuBLAS arguments: padded strides, 16 shapes (host)", check_mapping_strides, 20);
    check_run("TODO 2.4", "your cuBLAS call matches the CPU GEMM", GPU_CHECK(check_gemm_call), 60);
    check_run("TODO 2.5", "train_epoch_gpu: the CPU's loss and parameters after one epoch", GPU_CHECK(check_train_epoch_gpu), 120);
    return check_end();
}
