/* The GPU backend's host-side parts, which need no GPU: the row-major to cuBLAS
 * argument mapping (through a host model of cublasSgemm), launch arithmetic, the
 * choice of device by local rank, the message without a GPU, and the device
 * tensors' plumbing (through a stand-in backend in host memory). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/check.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "cuda/gemm_map.h"
#include "dist/launcher.h"
#include "cuda/device.h"
#include "cuda/launch.h"
#include "framework/check.h"
#include "ops/gemm.h"

static int check_gemm_mapping(void) {
    Rng rng;
    rng_seed(&rng, 3, 0);
    for (int t = 0; t < 16; t++) {
        bool ta = t & 1, tb = t & 2;
        int M = 1 + (int)rng_below(&rng, 9), N = 1 + (int)rng_below(&rng, 9),
            K = 1 + (int)rng_below(&rng, 9), pad = t / 4;
        int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
        float A[20 * 20], B[20 * 20], C[20 * 20], R[20 * 20];
        fill_uniform(A, 400, 1 + t, -1, 1);
        fill_uniform(B, 400, 2 + t, -1, 1);
        fill_uniform(C, 400, 3 + t, -1, 1);
        memcpy(R, C, sizeof C);
        CublasGemm g = gemm_to_cublas(ta, tb, M, N, K, lda, ldb, ldc);
        char why[256];
        gemm(ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 1.0f, R, ldc);
        if (!expect_true(gemm_through_model(&g, 0.5f, A, B, 1.0f, C, why, sizeof why), "%s", why) ||
            !expect_close("C", C, R, (int64_t)M * ldc, 1e-5f, 1e-5f)) {
            printf("M=%d N=%d K=%d trans_a=%d trans_b=%d lda=%d ldb=%d ldc=%d\n", M, N, K, ta, tb,
                   lda, ldb, ldc);
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* The model must refuse what cuBLAS refuses, or a wrong mapping could pass it. */
static int check_model_refuses(void) {
    float x[16] = {0};
    char why[256];
    bool ok = expect_true(!cublas_sgemm_model(false, false, 4, 2, 3, 1, x, 3, x, 3, 0, x, 4, why,
                                              sizeof why), "lda 3 < m 4 was accepted") &&
              expect_true(strstr(why, "lda=3") != NULL, "the reason does not name lda: %s", why) &&
              expect_true(!cublas_sgemm_model(false, true, 2, 4, 3, 1, x, 2, x, 3, 0, x, 2, why,
                                              sizeof why), "ldb 3 < n 4 (B transposed) was accepted") &&
              expect_true(cublas_sgemm_model(true, true, 2, 4, 3, 1, x, 3, x, 4, 0, x, 2, why,
                                             sizeof why), "a valid call was refused: %s", why);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_blocks(void) {
    bool ok = expect_true(cuda_blocks_for(0, 256) == 1, "0 elements: %d blocks", cuda_blocks_for(0, 256)) &&
              expect_true(cuda_blocks_for(256, 256) == 1, "256 elements: %d", cuda_blocks_for(256, 256)) &&
              expect_true(cuda_blocks_for(257, 256) == 2, "257 elements: %d", cuda_blocks_for(257, 256)) &&
              expect_true(cuda_blocks_for(1000, 32) == 32, "1000 / 32: %d", cuda_blocks_for(1000, 32)) &&
              expect_true(cuda_blocks_for((int64_t)1 << 40, 256) == 65535, "2^40 elements: %d",
                          cuda_blocks_for((int64_t)1 << 40, 256));
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_local_rank(void) {
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    unsetenv("SLURM_LOCALID");
    unsetenv("LOCAL_RANK");
    unsetenv("MPI_LOCALRANKID");
    bool ok = expect_true(launcher_local_rank() == 0, "no variable set: rank %d", launcher_local_rank());
    setenv("MPI_LOCALRANKID", "7", 1);
    ok = ok && expect_true(launcher_local_rank() == 7, "MPICH's MPI_LOCALRANKID=7: rank %d", launcher_local_rank());
    setenv("LOCAL_RANK", "5", 1);
    ok = ok && expect_true(launcher_local_rank() == 5, "LOCAL_RANK=5 before MPICH's: rank %d", launcher_local_rank());
    setenv("SLURM_LOCALID", "2", 1);
    ok = ok && expect_true(launcher_local_rank() == 2, "SLURM_LOCALID=2 before LOCAL_RANK: %d", launcher_local_rank());
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
    ok = ok && expect_true(launcher_local_rank() == 3, "Open MPI's first: %d", launcher_local_rank());
    ok = ok && expect_true(cuda_pick_device(5, 4) == 1 && cuda_pick_device(3, 1) == 0 &&
                               cuda_pick_device(0, 8) == 0,
                           "rank modulo count: 5 of 4 -> %d, 3 of 1 -> %d", cuda_pick_device(5, 4),
                           cuda_pick_device(3, 1));
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void bad_rank_body(void *arg) {
    (void)arg;
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    setenv("SLURM_LOCALID", "two", 1);
    launcher_local_rank();
}

static int check_bad_rank(void) {
    ChildResult r;
    run_child(bad_rank_body, NULL, &r);
    return expect_exit("SLURM_LOCALID=two", &r, 1, "SLURM_LOCALID", "is not a number",
                       (const char *)NULL) ? CHECK_PASS : CHECK_FAIL;
}

static void require_body(void *arg) {
    (void)arg;
    cuda_require();
    puts("cuda_require returned");
}

/* Here without a GPU: --device cuda must fail with one clear line, not crash. */
static int check_no_gpu_message(void) {
    char why[512];
    ChildResult probe;
    run_child(require_body, NULL, &probe);
    if (WIFEXITED(probe.status) && WEXITSTATUS(probe.status) == 0) {
        printf("a GPU is usable here: the no-GPU message cannot be tested\n");
        return CHECK_SKIP;
    }
    bool ok = expect_exit("cuda_require without a usable GPU", &probe, 1, "error: --device cuda: ",
                          "--device cpu", (const char *)NULL);
    ok = ok && expect_true(cuda_device_count(why, sizeof why) < 0 || cuda_built(),
                           "cuda_device_count gave no reason");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A stand-in backend in host memory: tests that tensors route allocation, fill,
 * copies and free to their device's backend, without a GPU. */
static int g_allocs, g_frees, g_fills, g_copies;
static void *fake_alloc(size_t bytes) { g_allocs++; return calloc(1, bytes); }
static void fake_free(void *p) { g_frees++; free(p); }
static void fake_fill(float *p, int64_t n, float v) { g_fills++; for (int64_t i = 0; i < n; i++) p[i] = v; }
static void fake_copy(void *dst, Device dd, const void *src, Device sd, size_t bytes) {
    (void)dd, (void)sd;
    g_copies++;
    memcpy(dst, src, bytes);
}
static const TensorDeviceOps FAKE = {"fake", fake_alloc, fake_free, fake_fill, fake_copy};

static int check_device_tensors(void) {
    tensor_register_device(DEVICE_CUDA, &FAKE);
    Tensor h = tensor_zeros(2, 3, 4);
    fill_uniform(h.data, h.size, 9, -1, 1);
    Tensor d = tensor_to(&h, DEVICE_CUDA), d2 = tensor_zeros_like(&d);
    tensor_copy(&d2, &d);
    Tensor back = tensor_to(&d2, DEVICE_CPU);
    tensor_fill(&d, 1.0f);
    bool ok = expect_true(d.device == DEVICE_CUDA && d2.device == DEVICE_CUDA &&
                              back.device == DEVICE_CPU, "devices: %d %d %d", d.device, d2.device,
                          back.device) &&
              expect_close("round trip", back.data, h.data, h.size, 0, 0) &&
              expect_true(d.data[0] == 1.0f && g_fills == 1, "fill did not go to the backend");
    tensor_free(&d);
    tensor_free(&d2);
    ok = ok && expect_true(g_allocs == 2 && g_frees == 2 && g_copies == 3,
                           "backend calls: %d allocs, %d frees, %d copies (expected 2, 2, 3)",
                           g_allocs, g_frees, g_copies);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void unstarted_body(void *arg) {
    (void)arg;
    tensor_zeros_on(DEVICE_CUDA, 1, 4);
}

static int check_unstarted_backend(void) {
    ChildResult r;
    run_child(unstarted_body, NULL, &r);
    return expect_exit("a CUDA tensor before cuda_init", &r, 2, "cuda_init", (const char *)NULL)
               ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("GPU backend, host side (no GPU needed)");
    check_run(NULL, "row-major GEMM -> cuBLAS arguments, through a host model of cublasSgemm", check_gemm_mapping, 20);
    check_run(NULL, "the cublasSgemm model refuses leading dimensions cuBLAS refuses", check_model_refuses, 20);
    check_run(NULL, "launch arithmetic: blocks for n elements", check_blocks, 20);
    check_run(NULL, "local rank from Open MPI, Slurm, torchrun, MPICH variables; rank modulo devices", check_local_rank, 20);
    check_run(NULL, "a malformed local rank is a user error", check_bad_rank, 20);
    check_run(NULL, "--device cuda without a usable GPU: one clear message, exit 1", check_no_gpu_message, 60);
    check_run(NULL, "device tensors go through their backend (a stand-in in host memory)", check_device_tensors, 20);
    check_run(NULL, "a CUDA tensor before cuda_init stops with a message", check_unstarted_backend, 20);
    return check_end();
}
