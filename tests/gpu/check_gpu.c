/* make check-gpu: every CUDA operation forward and backward against its CPU twin on
 * random shapes, then training steps of the CNN on both devices.
 *
 * Without a GPU every check reports SKIP (never PASS), with the reason.
 *
 * Tolerances, and why. Some results are exact: copies, im2col, ReLU, max-pool
 * with windows that do not overlap, and col2im (each pixel adds the same values in
 * the same order as the CPU: kh, then kw). Everything that sums L terms (GEMM,
 * conv2d, linear, the bias gradients) differs in rounding only, because cuBLAS and
 * the CPU add in different orders (blocked, split-K, trees, FMA). Each addition
 * rounds by up to 2^-24 of the partial sum, and the partial sums of L terms of size
 * s grow like sqrt(L) s, so the difference grows like 2^-24 L s (a random walk of
 * sqrt(L) roundings of size sqrt(L) s); it does not shrink with the result, which
 * may cancel to near 0. Simulated for the CNN's sizes with terms in [-1, 1]: at
 * L = 1,250 the largest difference in 76,800 outputs is 8e-5; at L = 9,216 (conv1's
 * weight and bias gradients over a batch of 16) 3e-4 to 7e-4. A fixed 1e-5 would
 * fail there. So the absolute part is 1e-6 per term (sum_atol: 1.25e-3 and 9.2e-3
 * there, more than ten times the largest seen), plus 1e-4
 * relative. A wrong index, transpose, missing term or a = where += belongs gives
 * errors of the size of a term or of the values themselves (0.1 to 10 here), far
 * above it. The loss adds per-row values in double on both; only exp/log differ in
 * the last bit: 1e-5. Adam/SGD are the same formula per element; nvcc may fuse
 * a*b+c into an FMA where gcc did not: 1e-5 relative. Training multiplies these
 * differences; see check_cnn_training.
 *
 * The transformer's layers. Exact where both devices do the same float operations in
 * the same order: positions, add, the embedding's forward, dropout's mask and output
 * (the same key and counter-based hash), the attention's zeros above the diagonal.
 * Where one product is added to a value (dropout backward: din + dout * mask; the
 * embedding backward, which adds a token's rows in the CPU's order), nvcc and gcc may
 * fuse a*b+c into one FMA or not: one rounding per addition, so 1e-6 per term (terms up
 * to the scale: sqrt(D) for the embedding). GELU: CUDA's erfcf and expf are within a
 * few ulp, glibc's within 1 or 2 (relative: gelu.h computes Phi with erfc, which does
 * not cancel at x < 0 as 1 + erf does), hence 1e-6 absolute + 1e-5 relative. Everything that
 * sums (layer norm's statistics and gradients, the attention's products and softmax,
 * the cross-entropy's exponentials) follows the rule above, 1e-6 per term of size up to
 * 1, whatever order either device adds in, because the CPU twins are being optimised
 * and may change theirs: layer norm's mean and rstd are sums over D divided by D (so
 * 1e-6 relative), its output and input gradient a few such terms times rstd (<= 2 for
 * these inputs): 2e-5; the attention's weights come from scores of dh terms and a
 * softmax of up to T terms, the context and gradients add T more of weights up to
 * 1 / (1 - p) = 1.25: 1.25 * 1e-6 * (dh + 2T) (the backward is given the CPU's probs,
 * so it is checked alone). The fast cross-entropy: expf against softmax_exp and sums in
 * another order change each probability by about 5e-7 of itself, a gradient entry is
 * that over N: 2e-6 / N absolute + 1e-5 relative; the loss (log of a sum of K terms near
 * 1e-5 relative) 1e-5 relative. Clipping: the norm is a double sum on both (1e-6
 * relative), the scaled gradients the same product by a coefficient that agrees to 1
 * ulp: 1e-6 relative. The whole transformer: see check_transformer, and in bf16 and fp16
 * check_transformer16. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/check.h"
#include "core/rng.h"
#include "core/trace.h"
#include "data/dataset.h"
#include "dist/dist.h"
#include "gpu/check_gpu16.h"
#include "gpu/check_graph.h"
#include "gpu/gpu_check.h"
#include "layers/add.h"
#include "layers/attention.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/embedding.h"
#include "layers/flash_attention.h"
#include "layers/gelu.h"
#include "layers/layernorm.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/positional.h"
#include "layers/relu.h"
#include "layers/softmax_xent.h"
#include "models/cnn.h"
#include "models/transformer.h"
#include "parallel/pipeline.h"
#include "parallel/tensor_parallel.h"
#include "parallel/zero.h"
#include "ops/gemm.h"
#include "ops/im2col.h"
#include "train/checkpoint.h"
#include "train/clip.h"
#include "train/loss_scale.h"
#include "train/mixed_precision.h"
#include "train/optim.h"

#ifdef HAVE_CUDA
#include "cuda/device.h"
#include "cuda/kernels.h"

enum { EXACT = 0 };
static const float RTOL = 1e-4f;

/* The absolute tolerance for a sum of `terms` terms of size up to 1 (see the top). */
static float sum_atol(int64_t terms) { return 1e-6f * (float)terms; }

static Tensor random_tensor(uint64_t seed, int n, int c, int h, int w) {
    Tensor t = w ? tensor_zeros(4, n, c, h, w) : h ? tensor_zeros(3, n, c, h)
             : c ? tensor_zeros(2, n, c) : tensor_zeros(1, n);
    fill_uniform(t.data, t.size, seed, -1.0f, 1.0f);
    return t;
}

static Tensor on_gpu(const Tensor *t) { return tensor_to(t, DEVICE_CUDA); }

/* d's values, copied back into a new host tensor */
static Tensor back(const Tensor *d) { return tensor_to(d, DEVICE_CPU); }

static bool same(const char *what, const Tensor *gpu, const Tensor *cpu, float atol, float rtol) {
    Tensor h = back(gpu);
    bool ok = expect_close(what, h.data, cpu->data, cpu->size, atol, rtol);
    tensor_free(&h);
    return ok;
}

static float *floats_on_gpu(const float *h, int64_t n) {
    float *d = cuda_malloc((size_t)n * sizeof(float));
    cuda_copy_to_device(d, h, (size_t)n * sizeof(float));
    return d;
}

int *ints_on_gpu(const int *h, int64_t n) {
    int *d = cuda_malloc((size_t)n * sizeof(int));
    cuda_copy_to_device(d, h, (size_t)n * sizeof(int));
    return d;
}

/* ---------------------------------------------------------------- tensors */

static int check_copies(void) {
    REQUIRE_GPU();
    Tensor h = random_tensor(1, 3, 5, 7, 11), d = on_gpu(&h);
    Tensor d2 = tensor_zeros_like(&d); /* on the GPU too */
    tensor_copy(&d2, &d);              /* device to device */
    bool ok = expect_true(d.device == DEVICE_CUDA && d2.device == DEVICE_CUDA,
                          "tensor_to / tensor_zeros_like did not give GPU tensors") &&
              same("host -> device -> device -> host", &d2, &h, EXACT, EXACT);
    tensor_fill(&d2, 2.5f);
    tensor_fill(&h, 2.5f);
    ok = ok && same("tensor_fill on the GPU", &d2, &h, EXACT, EXACT);
    Tensor hs = random_tensor(2, 77, 1000, 0, 0), ds = on_gpu(&hs); /* one rounding per element */
    tensor_scale(&hs, 0.3f), tensor_scale(&ds, 0.3f);
    ok = ok && same("tensor_scale on the GPU", &ds, &hs, EXACT, EXACT);
    Tensor z = tensor_zeros_on(DEVICE_CUDA, 2, 300, 301), hz = tensor_zeros(2, 300, 301);
    ok = ok && same("tensor_zeros_on(DEVICE_CUDA)", &z, &hz, EXACT, EXACT);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* dtype conversions on the GPU give the CPU's bits (core/dtype.h is compiled into
 * both), for every pair of dtypes: float32 from every bit class (zeros, subnormals,
 * ties, float16's overflow and underflow, infinities, NaNs with payloads) and at
 * random, every 16-bit pattern; through views at an odd offset, so element sizes
 * count. 16-bit fill and copies too, and the single backend's copy of 16-bit tensors. */
static int check_convert(void) {
    REQUIRE_GPU();
    enum { N = 65536 * 3 };
    static const uint32_t SPECIAL[] = {
        0x00000000, 0x80000000, 0x00000001, 0x007fffff, 0x00008000, 0x00018000, 0x00800000,
        0x7f7fffff, 0x3f808000, 0x3f818000, 0x3f801000, 0x3f803000, 0x477fe000, 0x477fefff,
        0x477ff000, 0x7f7f8000, 0x387fffff, 0x33000000, 0x33000001, 0x33c00000, 0x7f800000,
        0xff800000, 0x7fc00000, 0x7f800001, 0x7fa00000, 0xff812345, 0x7fffffff};
    const int nspecial = (int)(sizeof SPECIAL / sizeof SPECIAL[0]);
    Rng rng;
    rng_seed(&rng, 77, 0);
    bool ok = true;
    for (int from = 0; from < DTYPE_COUNT && ok; from++) {
        Tensor h = tensor_zeros_typed(DEVICE_CPU, (DType)from, 1, N);
        for (int i = 0; i < N; i++) {
            if (from != DTYPE_F32) h.bits16[i] = (uint16_t)i;
            else {
                const uint32_t u = i < nspecial ? SPECIAL[i] : rng_u32(&rng);
                memcpy(&h.data[i], &u, 4);
            }
        }
        Tensor d = tensor_to(&h, DEVICE_CUDA);
        ok = expect_true(d.dtype == h.dtype && d.device == DEVICE_CUDA, "tensor_to lost the dtype");
        for (int to = 0; to < DTYPE_COUNT && ok; to++) {
            Tensor hc = tensor_zeros_typed(DEVICE_CPU, (DType)to, 1, N + 1);
            Tensor dc = tensor_zeros_typed(DEVICE_CUDA, (DType)to, 1, N + 1);
            Tensor hv = tensor_range(&hc, 1, N), dv = tensor_range(&dc, 1, N);
            tensor_convert(&hv, &h);
            tensor_convert(&dv, &d);
            Tensor back = tensor_to(&dc, DEVICE_CPU);
            const size_t esize = dtype_size((DType)to);
            for (int64_t i = 0; i < N + 1 && ok; i++) {
                uint32_t g = 0, c = 0;
                memcpy(&g, (char *)back.raw + i * esize, esize);
                memcpy(&c, (char *)hc.raw + i * esize, esize);
                ok = expect_true(g == c, "%s -> %s: element %lld is 0x%x on the GPU, 0x%x on the "
                                 "CPU (from 0x%x)", dtype_name((DType)from), dtype_name((DType)to),
                                 (long long)i - 1, g, c, i ? (unsigned)(from == DTYPE_F32
                                 ? ((uint32_t *)h.raw)[i - 1] : h.bits16[i - 1]) : 0u);
            }
            tensor_free(&hc), tensor_free(&dc), tensor_free(&back);
        }
        tensor_free(&h), tensor_free(&d);
    }
    /* fill: the value converted once, the same bits on both */
    for (int k = DTYPE_BF16; k <= DTYPE_F16 && ok; k++) {
        Tensor h = tensor_zeros_typed(DEVICE_CPU, (DType)k, 2, 300, 7);
        Tensor d = tensor_zeros_typed(DEVICE_CUDA, (DType)k, 2, 300, 7);
        tensor_fill(&h, -1.0f / 3.0f), tensor_fill(&d, -1.0f / 3.0f);
        Tensor back = tensor_to(&d, DEVICE_CPU);
        ok = expect_true(memcmp(back.raw, h.raw, tensor_bytes(&h)) == 0, "%s fill on the GPU",
                         dtype_name((DType)k));
        /* the single backend gathers a 16-bit GPU tensor with its element size */
        Dist *dist = dist_init(&(DistOptions){.backend = "single", .device = DEVICE_CUDA});
        Tensor g = tensor_zeros_like(&d);
        dist_all_gather(dist, &g, &d);
        Tensor gb = tensor_to(&g, DEVICE_CPU);
        ok = ok && expect_true(memcmp(gb.raw, h.raw, tensor_bytes(&h)) == 0,
                               "%s all-gather of the single backend on the GPU",
                               dtype_name((DType)k));
        dist_finalize(dist);
        tensor_free(&h), tensor_free(&d), tensor_free(&back), tensor_free(&g), tensor_free(&gb);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The NCCL backend on one rank (this GPU): 16-bit tensors go as ncclBfloat16 and
 * ncclFloat16 through every collective and come back unchanged (every finite pattern);
 * calls are counted, no bytes. */
static int check_nccl_16_bit(void) {
    REQUIRE_GPU();
#ifndef HAVE_NCCL
    printf("needs NCCL: this build has none (make config)\n");
    return CHECK_SKIP;
#else
    Dist *d = dist_init(&(DistOptions){.backend = "nccl", .device = DEVICE_CUDA});
    bool ok = true;
    for (int k = DTYPE_BF16; k <= DTYPE_F16 && ok; k++) {
        const uint16_t inf = k == DTYPE_BF16 ? 0x7f80 : 0x7c00;
        Tensor h = tensor_zeros_typed(DEVICE_CPU, (DType)k, 1, 2 * inf);
        for (int i = 0; i < 2 * inf; i++) h.bits16[i] = (uint16_t)(i < inf ? i : 0x8000 | (i - inf));
        Tensor a = tensor_to(&h, DEVICE_CUDA), g = tensor_zeros_like(&a);
        dist_broadcast(d, &a, 0);
        dist_all_reduce(d, &a, DIST_SUM);
        dist_all_reduce(d, &a, DIST_AVG);
        dist_all_reduce(d, &a, DIST_MAX);
        dist_all_gather(d, &g, &a);
        dist_reduce_scatter(d, &a, &g, DIST_SUM);
        Tensor ba = tensor_to(&a, DEVICE_CPU), bg = tensor_to(&g, DEVICE_CPU);
        for (int i = 0; i < 2 * inf && ok; i++)
            ok = expect_true(ba.bits16[i] == h.bits16[i] && bg.bits16[i] == h.bits16[i],
                             "%s 0x%04x: 0x%04x after the collectives, 0x%04x gathered",
                             dtype_name((DType)k), h.bits16[i], ba.bits16[i], bg.bits16[i]);
        tensor_free(&h), tensor_free(&a), tensor_free(&g), tensor_free(&ba), tensor_free(&bg);
    }
    const DistCounts c = dist_counts(d, DIST_KIND_ALL_REDUCE);
    ok = ok && expect_true(c.calls == 6 && c.bytes_sent == 0 && c.bytes_received == 0,
                           "one rank's all-reduces: %lld calls, %lld bytes; expected 6, 0",
                           (long long)c.calls, (long long)c.bytes_sent);
    dist_finalize(d);
    return ok ? CHECK_PASS : CHECK_FAIL;
#endif
}

/* ---------------------------------------------------------------- GEMM */

static int check_gemm(void) {
    REQUIRE_GPU();
    Rng rng;
    rng_seed(&rng, 7, 0);
    for (int t = 0; t < 24; t++) {
        bool ta = t & 1, tb = t & 2;
        int M = 1 + (int)rng_below(&rng, 70), N = 1 + (int)rng_below(&rng, 70),
            K = 1 + (int)rng_below(&rng, 300);
        int pad = (int)rng_below(&rng, 3); /* leading dimensions larger than the rows */
        int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
        int64_t na = (int64_t)(ta ? K : M) * lda, nb = (int64_t)(tb ? N : K) * ldb,
                nc = (int64_t)M * ldc;
        float *A = malloc(na * 4), *B = malloc(nb * 4), *C = malloc(nc * 4), *G = malloc(nc * 4);
        fill_uniform(A, na, 10 + t, -1, 1);
        fill_uniform(B, nb, 40 + t, -1, 1);
        fill_uniform(C, nc, 70 + t, -1, 1);
        float alpha = t % 3 ? 1.0f : 0.5f, beta = t % 4 == 0 ? 0.0f : 1.0f;
        float *dA = floats_on_gpu(A, na), *dB = floats_on_gpu(B, nb), *dC = floats_on_gpu(C, nc);
        gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        cuda_gemm(ta, tb, M, N, K, alpha, dA, lda, dB, ldb, beta, dC, ldc);
        cuda_copy_to_host(G, dC, (size_t)nc * 4);
        if (!expect_close("C", G, C, nc, sum_atol(K + 1), RTOL)) {
            printf("M=%d N=%d K=%d trans_a=%d trans_b=%d lda=%d ldb=%d ldc=%d alpha=%g beta=%g\n",
                   M, N, K, ta, tb, lda, ldb, ldc, (double)alpha, (double)beta);
            return CHECK_FAIL;
        }
        cuda_free(dA), cuda_free(dB), cuda_free(dC);
        free(A), free(B), free(C), free(G);
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- im2col, col2im */

static ConvGeometry random_geometry(Rng *rng) {
    int C = 1 + (int)rng_below(rng, 4), H = 3 + (int)rng_below(rng, 12), W = 3 + (int)rng_below(rng, 12);
    int K = 1 + (int)rng_below(rng, 5), stride = 1 + (int)rng_below(rng, 3), pad = (int)rng_below(rng, 3);
    if (K > H + 2 * pad) K = H + 2 * pad;
    if (K > W + 2 * pad) K = W + 2 * pad;
    return conv_geometry(C, H, W, K, K, stride, pad);
}

static void describe_geometry(const ConvGeometry *g, int nimg) {
    printf("images [%d, %d, %d, %d], kernel %dx%d, stride %d, padding %d\n", nimg, g->C, g->H,
           g->W, g->KH, g->KW, g->stride, g->pad);
}

static int check_im2col(void) {
    REQUIRE_GPU();
    Rng rng;
    rng_seed(&rng, 8, 0);
    for (int t = 0; t < 20; t++) {
        ConvGeometry g = random_geometry(&rng);
        int nimg = 1 + (int)rng_below(&rng, 3);
        int64_t K = (int64_t)g.C * g.KH * g.KW, ncols = (int64_t)nimg * g.OH * g.OW;
        int64_t nin = (int64_t)nimg * g.C * g.H * g.W;
        Tensor img = random_tensor(100 + t, (int)nin, 0, 0, 0);
        Tensor cols = tensor_zeros(2, (int)K, (int)ncols), dimg = on_gpu(&img);
        Tensor dcols = tensor_zeros_on(DEVICE_CUDA, 2, (int)K, (int)ncols);
        im2col(cols.data, img.data, nimg, &g);
        cuda_im2col(dcols.data, dimg.data, nimg, &g);
        if (!same("im2col columns", &dcols, &cols, EXACT, EXACT)) {
            describe_geometry(&g, nimg);
            return CHECK_FAIL;
        }
        /* col2im adds into images that already hold values */
        Tensor r = random_tensor(200 + t, (int)K, (int)ncols, 0, 0), dr = on_gpu(&r);
        col2im(img.data, r.data, nimg, &g);
        cuda_col2im(dimg.data, dr.data, nimg, &g);
        if (!same("col2im images (added to)", &dimg, &img, EXACT, EXACT)) {
            describe_geometry(&g, nimg);
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- ReLU */

static int check_relu(void) {
    REQUIRE_GPU();
    Tensor x = random_tensor(3, 1000003, 0, 0, 0), y = tensor_zeros_like(&x);
    Tensor dx = random_tensor(4, 1000003, 0, 0, 0), dy = random_tensor(5, 1000003, 0, 0, 0);
    Tensor gx = on_gpu(&x), gy = on_gpu(&y), gdx = on_gpu(&dx), gdy = on_gpu(&dy);
    relu_forward(&y, &x);
    cuda_relu_forward(&gy, &gx);
    relu_backward(&dx, &dy, &y);
    cuda_relu_backward(&gdx, &gdy, &gy);
    bool ok = same("relu forward", &gy, &y, EXACT, EXACT) &&
              same("relu backward (added to din)", &gdx, &dx, EXACT, EXACT);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- max-pool */

static int check_maxpool(void) {
    REQUIRE_GPU();
    static const int cases[][2] = {{2, 2}, {3, 2}, {3, 3}, {2, 1}, {1, 1}}; /* kernel, stride */
    for (int t = 0; t < 5; t++) {
        int k = cases[t][0], s = cases[t][1], N = 3, C = 4, H = 9 + t, W = 8 + 2 * t;
        int OH = (H - k) / s + 1, OW = (W - k) / s + 1;
        Tensor x = random_tensor(20 + t, N, C, H, W), y = tensor_zeros(4, N, C, OH, OW);
        if (t == 0) for (int64_t i = 0; i < x.size; i++) x.data[i] = (float)(i / 7 % 3); /* ties */
        int *arg = xcalloc((size_t)y.size, sizeof(int)), *garg_h = xcalloc((size_t)y.size, sizeof(int));
        int *garg = cuda_malloc((size_t)y.size * sizeof(int));
        Tensor gx = on_gpu(&x), gy = tensor_zeros_on(DEVICE_CUDA, 4, N, C, OH, OW);
        maxpool2d_forward(&y, arg, &x, k, s);
        cuda_maxpool2d_forward(&gy, garg, &gx, k, s);
        cuda_copy_to_host(garg_h, garg, (size_t)y.size * sizeof(int));
        bool ok = same("max-pool values", &gy, &y, EXACT, EXACT);
        for (int64_t i = 0; ok && i < y.size; i++)
            ok = expect_true(garg_h[i] == arg[i], "argmax[%lld] is %d on the GPU, %d on the CPU",
                             (long long)i, garg_h[i], arg[i]);
        Tensor dy = random_tensor(30 + t, N, C, OH, OW), dx = random_tensor(40 + t, N, C, H, W);
        Tensor gdy = on_gpu(&dy), gdx = on_gpu(&dx);
        maxpool2d_backward(&dx, &dy, arg);
        cuda_maxpool2d_backward(&gdx, &gdy, garg);
        /* overlapping windows (stride < kernel) add in another order (atomics): a pixel
         * takes its start value and up to ceil(k/s)^2 gradients, each ordering rounds */
        const int64_t most = (int64_t)((k + s - 1) / s) * ((k + s - 1) / s) + 1;
        ok = ok && same("max-pool backward", &gdx, &dx, s < k ? sum_atol(most) : EXACT,
                        s < k ? 1e-6f : EXACT);
        if (!ok) {
            printf("kernel %d, stride %d, input [%d, %d, %d, %d]\n", k, s, N, C, H, W);
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- conv2d */

static int compare_conv(int N, int C, int H, int W, int Cout, int K, int stride, int pad,
                        uint64_t seed, bool with_din) {
    ConvGeometry g = conv_geometry(C, H, W, K, K, stride, pad);
    Tensor x = random_tensor(seed, N, C, H, W), w = random_tensor(seed + 1, Cout, C, K, K);
    Tensor b = random_tensor(seed + 2, Cout, 0, 0, 0), y = tensor_zeros(4, N, Cout, g.OH, g.OW);
    Tensor gx = on_gpu(&x), gw = on_gpu(&w), gb = on_gpu(&b), gy = on_gpu(&y);
    conv2d_forward(&y, &x, &w, &b, stride, pad);
    cuda_conv2d_forward(&gy, &gx, &gw, &gb, stride, pad);
    const int64_t taps = (int64_t)C * K * K, positions = (int64_t)N * g.OH * g.OW;
    bool ok = same("conv2d forward", &gy, &y, sum_atol(taps + 1), RTOL); /* + the bias */
    /* gradients start non-zero: the backward must add */
    Tensor dy = random_tensor(seed + 3, N, Cout, g.OH, g.OW), dx = random_tensor(seed + 4, N, C, H, W);
    Tensor dw = random_tensor(seed + 5, Cout, C, K, K), db = random_tensor(seed + 6, Cout, 0, 0, 0);
    Tensor gdy = on_gpu(&dy), gdx = on_gpu(&dx), gdw = on_gpu(&dw), gdb = on_gpu(&db);
    conv2d_backward(with_din ? &dx : NULL, &dw, &db, &dy, &x, &w, stride, pad);
    cuda_conv2d_backward(with_din ? &gdx : NULL, &gdw, &gdb, &gdy, &gx, &gw, stride, pad);
    /* each adds onto its start value: one term more */
    ok = ok && same("conv2d dbias", &gdb, &db, sum_atol(positions + 1), RTOL) &&
         same("conv2d dweight", &gdw, &dw, sum_atol(positions + 1), RTOL) &&
         same("conv2d din", &gdx, &dx, sum_atol((int64_t)Cout * K * K + 1), RTOL);
    if (!ok)
        printf("in [%d, %d, %d, %d], weight [%d, %d, %d, %d], stride %d, padding %d%s\n", N, C, H,
               W, Cout, C, K, K, stride, pad, with_din ? "" : ", din NULL");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_conv2d(void) {
    REQUIRE_GPU();
    Rng rng;
    rng_seed(&rng, 9, 0);
    for (int t = 0; t < 16; t++) {
        ConvGeometry g = random_geometry(&rng);
        int N = 1 + (int)rng_below(&rng, 4), Cout = 1 + (int)rng_below(&rng, 6);
        if (compare_conv(N, g.C, g.H, g.W, Cout, g.KH, g.stride, g.pad, 300 + 10 * (uint64_t)t,
                         t % 4 != 3) != CHECK_PASS)
            return CHECK_FAIL;
    }
    /* the CNN's own layers, batch 16 */
    if (compare_conv(16, 1, 28, 28, 50, 5, 1, 0, 500, false) != CHECK_PASS) return CHECK_FAIL;
    return compare_conv(16, 50, 12, 12, 75, 5, 1, 0, 600, true);
}

/* ---------------------------------------------------------------- linear */

static int check_linear(void) {
    REQUIRE_GPU();
    static const int cases[][3] = {{1, 1, 1}, {7, 13, 5}, {100, 1200, 50}, {33, 50, 10}};
    for (int t = 0; t < 4; t++) {
        int N = cases[t][0], IN = cases[t][1], OUT = cases[t][2];
        Tensor x = random_tensor(50 + t, N, IN, 0, 0), w = random_tensor(60 + t, OUT, IN, 0, 0);
        Tensor b = random_tensor(70 + t, OUT, 0, 0, 0), y = tensor_zeros(2, N, OUT);
        Tensor dy = random_tensor(80 + t, N, OUT, 0, 0), dx = random_tensor(90 + t, N, IN, 0, 0);
        Tensor dw = random_tensor(91 + t, OUT, IN, 0, 0), db = random_tensor(92 + t, OUT, 0, 0, 0);
        Tensor gx = on_gpu(&x), gw = on_gpu(&w), gb = on_gpu(&b), gy = on_gpu(&y);
        Tensor gdy = on_gpu(&dy), gdx = on_gpu(&dx), gdw = on_gpu(&dw), gdb = on_gpu(&db);
        linear_forward(&y, &x, &w, &b);
        cuda_linear_forward(&gy, &gx, &gw, &gb);
        linear_backward(&dx, &dw, &db, &dy, &x, &w);
        cuda_linear_backward(&gdx, &gdw, &gdb, &gdy, &gx, &gw);
        bool ok = same("linear forward", &gy, &y, sum_atol(IN + 1), RTOL) &&
                  same("linear dbias", &gdb, &db, sum_atol(N + 1), RTOL) &&
                  same("linear dweight", &gdw, &dw, sum_atol(N + 1), RTOL) &&
                  same("linear din", &gdx, &dx, sum_atol(OUT + 1), RTOL);
        if (!ok) {
            printf("in [%d, %d], weight [%d, %d]\n", N, IN, OUT, IN);
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- loss */

static int check_softmax_xent(void) {
    REQUIRE_GPU();
    const int N = 37, K = 10;
    Tensor z = random_tensor(11, N, K, 0, 0), dz = random_tensor(12, N, K, 0, 0);
    for (int64_t i = 0; i < z.size; i++) z.data[i] *= i % 5 ? 4.0f : 400.0f; /* large ones too */
    int labels[37];
    for (int n = 0; n < N; n++) labels[n] = (n * 7) % K;
    Tensor gz = on_gpu(&z), gdz = on_gpu(&dz);
    int *glabels = ints_on_gpu(labels, N);
    float want = softmax_cross_entropy(&dz, &z, labels);
    float got = cuda_softmax_cross_entropy(&gdz, &gz, glabels);
    float again = cuda_softmax_cross_entropy(NULL, &gz, glabels);
    bool ok = expect_close("loss", &got, &want, 1, 1e-6f, 1e-5f) &&
              expect_close("loss with dlogits NULL", &again, &want, 1, 1e-6f, 1e-5f) &&
              same("dlogits (added to)", &gdz, &dz, 1e-6f, 1e-5f);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static bool child_gpu_init(void);
static int skipped_child(const ChildResult *r);

static void bad_label_body(void *arg) {
    const bool fast = *(const bool *)arg;
    child_gpu_init();
    Tensor z = tensor_zeros_on(DEVICE_CUDA, 2, 4, 3);
    int labels[4] = {0, 1, 3, 2}; /* 3 is not a class of 3 */
    int *g = ints_on_gpu(labels, 4);
    if (fast) cuda_softmax_cross_entropy_fast(NULL, &z, g, 1.0f);
    else cuda_softmax_cross_entropy(NULL, &z, g);
}

/* body(&variant) in a child for variants false and true: each must stop (exit status
 * 2) with `message` */
static int both_stop(void (*body)(void *), const char *what[2], const char *message) {
    for (int v = 0; v < 2; v++) {
        ChildResult r;
        const bool variant = v;
        run_child(body, (void *)&variant, &r);
        if (skipped_child(&r)) return CHECK_SKIP;
        if (!expect_exit(what[v], &r, 2, message, (const char *)NULL)) return CHECK_FAIL;
    }
    return CHECK_PASS;
}

static int check_bad_label(void) {
    const char *what[2] = {"a label outside the classes", "a label outside the classes (fast version)"};
    return both_stop(bad_label_body, what, "label 3 of row 2");
}

static void host_labels_body(void *arg) {
    (void)arg;
    child_gpu_init();
    Tensor z = tensor_zeros_on(DEVICE_CUDA, 2, 4, 3);
    int labels[4] = {0, 1, 2, 1}; /* host memory, where the GPU loss wants device memory */
    cuda_softmax_cross_entropy(NULL, &z, labels);
}

static int check_host_pointer(void) {
    ChildResult r;
    run_child(host_labels_body, NULL, &r);
    if (skipped_child(&r)) return CHECK_SKIP;
    return expect_exit("host labels passed to the GPU loss", &r, 2, "labels", "not GPU memory",
                       (const char *)NULL) ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- optimisers */

static void make_params(ParamList *p, uint64_t seed) {
    *p = (ParamList){0};
    params_add(p, "a", 2, (int[]){31, 17});
    params_add(p, "b", 1, (int[]){1000});
    params_allocate(p);
    fill_uniform(p->values.data, p->total, seed, -1, 1);
}

static void set_grads(ParamList *cpu, ParamList *gpu, uint64_t seed) {
    fill_uniform(cpu->grads.data, cpu->total, seed, -2, 2);
    tensor_copy(&gpu->grads, &cpu->grads);
}

static bool same_params(const ParamList *gpu, const ParamList *cpu, float atol, float rtol) {
    for (int i = 0; i < cpu->count; i++)
        if (!same(cpu->items[i]->name, &gpu->items[i]->value, &cpu->items[i]->value, atol, rtol))
            return false;
    return true;
}

static int check_adam_sgd(void) {
    REQUIRE_GPU();
    for (int variant = 0; variant < 3; variant++) { /* Adam, Adam + weight decay, AdamW */
        ParamList c, g;
        make_params(&c, 1), make_params(&g, 1);
        params_to_device(&g, DEVICE_CUDA);
        Adam a, b;
        adam_init(&a, &c, 1e-2f);
        adam_init(&b, &g, 1e-2f); /* state on the GPU, like the parameters */
        a.weight_decay = b.weight_decay = variant ? 0.1f : 0.0f;
        a.decoupled = b.decoupled = variant == 2;
        for (int step = 1; step <= 3; step++) {
            set_grads(&c, &g, 10 * (uint64_t)step);
            adam_step(&a, &c);
            adam_step(&b, &g); /* parameters on the GPU: the CUDA twin, one launch */
            if (!same_params(&g, &c, 1e-6f, 1e-5f)) {
                printf("Adam%s, step %d\n", variant == 1 ? " with weight decay" : variant ? "W" : "", step);
                return CHECK_FAIL;
            }
        }
    }
    ParamList c, g;
    make_params(&c, 2), make_params(&g, 2);
    params_to_device(&g, DEVICE_CUDA);
    Sgd a, b;
    sgd_init(&a, &c, 0.1f, 0.9f, 0.01f);
    sgd_init(&b, &g, 0.1f, 0.9f, 0.01f);
    for (int step = 1; step <= 3; step++) {
        set_grads(&c, &g, 20 * (uint64_t)step);
        sgd_step(&a, &c);
        sgd_step(&b, &g);
        if (!same_params(&g, &c, 1e-6f, 1e-5f)) {
            printf("SGD with momentum, step %d\n", step);
            return CHECK_FAIL;
        }
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- the CNN */

/* Five Adam steps of the CNN on both devices from the same weights and batches.
 * Step 1 runs on identical weights: its loss differs by forward rounding only
 * (1e-5 relative allowed). Later steps also carry Adam's amplification: a gradient
 * near 0 becomes a step of up to lr either way, so losses may drift apart by a few
 * 1e-4; 2e-3 relative is allowed. Parameters may differ by at most 5 steps x lr. */
static int check_cnn_training(void) {
    REQUIRE_GPU();
    const int B = 32, steps = 5;
    const float lr = 1e-3f;
    Dataset data;
    dataset_make_synthetic(B * steps, 1, 28, 4, &data);
    Rng r1, r2;
    rng_seed(&r1, 5, 0), rng_seed(&r2, 5, 0);
    Cnn cpu, gpu;
    cnn_init(&cpu, 1, 28, 28, 10, B, &r1);
    cnn_init(&gpu, 1, 28, 28, 10, B, &r2);
    cnn_to_device(&gpu, DEVICE_CUDA);
    Adam ca, ga;
    adam_init(&ca, &cpu.params, lr);
    adam_init(&ga, &gpu.params, lr);
    Tensor images = tensor_zeros(4, B, 1, 28, 28), gimages = tensor_zeros_on(DEVICE_CUDA, 4, B, 1, 28, 28);
    int labels[32], idx[32], *glabels = cuda_malloc(sizeof labels);
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < B; i++) idx[i] = s * B + i;
        dataset_gather(&data, idx, B, &images, labels);
        tensor_copy(&gimages, &images);
        cuda_copy_to_device(glabels, labels, sizeof labels);

        Tensor logits = cnn_forward(&cpu, &images);
        tensor_fill(&cpu.d_logits, 0.0f);
        float lc = softmax_cross_entropy(&cpu.d_logits, &logits, labels);
        params_zero_grad(&cpu.params);
        cnn_backward(&cpu, &images);
        adam_step(&ca, &cpu.params);

        Tensor glogits = cnn_forward(&gpu, &gimages); /* the same code, the CUDA layers */
        tensor_fill(&gpu.d_logits, 0.0f);
        float lg = gpu.layers.softmax_cross_entropy(&gpu.d_logits, &glogits, glabels);
        params_zero_grad(&gpu.params);
        cnn_backward(&gpu, &gimages);
        adam_step(&ga, &gpu.params);

        char what[64];
        snprintf(what, sizeof what, "loss at step %d", s + 1);
        if (!expect_close(what, &lg, &lc, 1, 0.0f, s == 0 ? 1e-5f : 2e-3f)) return CHECK_FAIL;
        printf("step %d: loss %.6f on the CPU, %.6f on the GPU\n", s + 1, (double)lc, (double)lg);
    }
    for (int i = 0; i < cpu.params.count; i++)
        if (!same(cpu.params.items[i]->name, &gpu.params.items[i]->value, &cpu.params.items[i]->value,
                  steps * lr, 0.0f))
            return CHECK_FAIL;
    cnn_free(&cpu);
    cnn_free(&gpu);
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- the transformer's layers */

int *random_tokens(int n, int V, uint64_t seed) {
    Rng r;
    rng_seed(&r, seed, 0);
    int *tokens = xmalloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) tokens[i] = (int)rng_below(&r, (uint32_t)V);
    if (n > 2) tokens[n - 1] = tokens[0];
    return tokens;
}

static int check_embedding(void) {
    REQUIRE_GPU();
    static const int cases[][3] = {{1, 1, 1}, {7, 3, 5}, {37, 11, 33}, {700, 50, 200}, {300, 1000, 64}};
    for (int t = 0; t < 5; t++) {
        const int N = cases[t][0], V = cases[t][1], D = cases[t][2];
        const float scale = sqrtf((float)D);
        int *tokens = random_tokens(N, V, 60 + (uint64_t)t), *gtokens = ints_on_gpu(tokens, N);
        Tensor table = random_tensor(61 + t, V, D, 0, 0), out = random_tensor(62 + t, N, D, 0, 0);
        Tensor dout = random_tensor(63 + t, N, D, 0, 0), dtable = random_tensor(64 + t, V, D, 0, 0);
        Tensor gtable = on_gpu(&table), gout = on_gpu(&out), gdout = on_gpu(&dout), gdtable = on_gpu(&dtable);
        embedding_forward(&out, tokens, &table, scale);
        cuda_embedding_forward(&gout, gtokens, &gtable, scale);
        embedding_backward(&dtable, &dout, tokens, scale);
        cuda_embedding_backward(&gdtable, &gdout, gtokens, scale);
        int most = 0; /* the most rows one token receives */
        for (int v = 0; v < V; v++) {
            int count = 0;
            for (int n = 0; n < N; n++) count += tokens[n] == v;
            most = count > most ? count : most;
        }
        bool ok = same("embedding forward", &gout, &out, EXACT, EXACT) &&
                  same("embedding backward (added to; repeated tokens)", &gdtable, &dtable,
                       sum_atol(most + 1) * scale, 1e-6f);
        if (!ok) printf("%d tokens (a token up to %d times), vocabulary %d, width %d\n", N, most, V, D);
        Tensor *all[] = {&table, &out, &dout, &dtable, &gtable, &gout, &gdout, &gdtable};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
        cuda_free(gtokens);
        xfree(tokens);
        if (!ok) return CHECK_FAIL;
    }
    return CHECK_PASS;
}

static void bad_token_body(void *arg) {
    const bool backward = *(const bool *)arg;
    child_gpu_init();
    Tensor table = tensor_zeros_on(DEVICE_CUDA, 2, 5, 3), x = tensor_zeros_on(DEVICE_CUDA, 2, 4, 3);
    int tokens[4] = {0, 4, 5, 1}; /* 5 is not a word of 5 */
    int *g = ints_on_gpu(tokens, 4);
    if (backward) cuda_embedding_backward(&table, &x, g, 1.0f);
    else cuda_embedding_forward(&x, g, &table, 1.0f);
}

static int check_bad_token(void) {
    const char *what[2] = {"a bad token, forward", "a bad token, backward"};
    return both_stop(bad_token_body, what, "token 5 at position 2 is outside the vocabulary 0..4");
}

static int check_positional(void) {
    REQUIRE_GPU();
    static const int cases[][3] = {{1, 1, 2}, {3, 7, 6}, {2, 35, 200}, {5, 13, 34}}; /* B, T, D */
    for (int t = 0; t < 4; t++) {
        const int B = cases[t][0], T = cases[t][1], D = cases[t][2];
        Tensor table = tensor_zeros(2, 40, D);
        positional_table_fill(&table);
        Tensor x = random_tensor(70 + t, B * T, D, 0, 0), y = tensor_zeros(2, B * T, D);
        Tensor gtable = on_gpu(&table), gx = on_gpu(&x), gy = on_gpu(&y);
        positional_forward(&y, &x, &table, T);
        cuda_positional_forward(&gy, &gx, &gtable, T);
        bool ok = same("positions added", &gy, &y, EXACT, EXACT);
        positional_forward(&x, &x, &table, T); /* in place, as the model calls it */
        cuda_positional_forward(&gx, &gx, &gtable, T);
        ok = ok && same("positions added in place", &gx, &x, EXACT, EXACT);
        if (!ok) printf("B=%d T=%d D=%d\n", B, T, D);
        Tensor *all[] = {&table, &x, &y, &gtable, &gx, &gy};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
        if (!ok) return CHECK_FAIL;
    }
    return CHECK_PASS;
}

static int check_layernorm(void) {
    REQUIRE_GPU();
    /* N, D: D not a multiple of the 32 lanes, N across several 64-row chunks */
    static const int cases[][2] = {{1, 2}, {7, 37}, {35, 200}, {69, 1024}, {300, 33}};
    for (int t = 0; t < 5; t++) {
        const int N = cases[t][0], D = cases[t][1];
        Tensor x = random_tensor(80 + t, N, D, 0, 0), g = random_tensor(81 + t, D, 0, 0, 0);
        Tensor b = random_tensor(82 + t, D, 0, 0, 0), y = tensor_zeros(2, N, D);
        for (int64_t i = 0; i < x.size; i++) x.data[i] = 3.0f * x.data[i] + 2.0f; /* mean 2 */
        Tensor mean = tensor_zeros(1, N), rstd = tensor_zeros(1, N);
        Tensor gx = on_gpu(&x), gg = on_gpu(&g), gb = on_gpu(&b), gy = on_gpu(&y);
        Tensor gmean = on_gpu(&mean), grstd = on_gpu(&rstd);
        layernorm_forward(&y, &mean, &rstd, &x, &g, &b, LAYERNORM_EPS);
        cuda_layernorm_forward(&gy, &gmean, &grstd, &gx, &gg, &gb, LAYERNORM_EPS);
        bool ok = same("layer norm mean", &gmean, &mean, 1e-6f * 5.0f, 1e-6f) &&
                  same("layer norm rstd", &grstd, &rstd, 0.0f, 1e-5f) &&
                  same("layer norm forward", &gy, &y, 2e-5f, RTOL);
        /* the backward from the CPU's mean and rstd: checked alone */
        tensor_copy(&gmean, &mean), tensor_copy(&grstd, &rstd);
        Tensor dy = random_tensor(83 + t, N, D, 0, 0), dx = random_tensor(84 + t, N, D, 0, 0);
        Tensor dg = random_tensor(85 + t, D, 0, 0, 0), db = random_tensor(86 + t, D, 0, 0, 0);
        Tensor gdy = on_gpu(&dy), gdx = on_gpu(&dx), gdg = on_gpu(&dg), gdb = on_gpu(&db);
        const bool with_din = t != 2;
        layernorm_backward(with_din ? &dx : NULL, &dg, &db, &dy, &x, &mean, &rstd, &g);
        cuda_layernorm_backward(with_din ? &gdx : NULL, &gdg, &gdb, &gdy, &gx, &gmean, &grstd, &gg);
        ok = ok && same("layer norm dgamma (added to)", &gdg, &dg, sum_atol(N + 1) * 2.0f, RTOL) &&
             same("layer norm dbeta (added to)", &gdb, &db, sum_atol(N + 1), RTOL) &&
             same(with_din ? "layer norm din (added to)" : "din NULL: untouched", &gdx, &dx, 2e-5f, RTOL);
        if (!ok) printf("in [%d, %d]%s\n", N, D, with_din ? "" : ", din NULL");
        Tensor *all[] = {&x, &g, &b, &y, &mean, &rstd, &gx, &gg, &gb, &gy, &gmean, &grstd,
                         &dy, &dx, &dg, &db, &gdy, &gdx, &gdg, &gdb};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
        if (!ok) return CHECK_FAIL;
    }
    return CHECK_PASS;
}

static int check_dropout(void) {
    REQUIRE_GPU();
    static const float ps[] = {0.25f, 0.0f, 1.0f, 0.5f};
    for (int t = 0; t < 8; t++) {
        const float p = ps[t % 4];
        const bool training = t != 3, in_place = t % 2, with_mask = !(t == 5 || t == 7); /* no mask when inactive */
        const int n = t == 0 ? 1000003 : 1 + 97 * t;
        Rng r1, r2;
        rng_seed(&r1, 11, (uint64_t)t), rng_seed(&r2, 11, (uint64_t)t);
        Tensor x = random_tensor(90 + t, n, 0, 0, 0), y = tensor_zeros(1, n), m = tensor_zeros(1, n);
        Tensor gx = on_gpu(&x), gy = on_gpu(&y), gm = on_gpu(&m);
        const bool mask = with_mask || dropout_active(p, training);
        dropout_forward(in_place ? &x : &y, mask ? &m : NULL, &x, p, training, &r1);
        cuda_dropout_forward(in_place ? &gx : &gy, mask ? &gm : NULL, &gx, p, training, &r2);
        bool ok = same("dropout mask", &gm, &m, EXACT, EXACT) &&
                  same("dropout output", in_place ? &gx : &gy, in_place ? &x : &y, EXACT, EXACT) &&
                  expect_true(rng_u32(&r1) == rng_u32(&r2), "the Rng is not where the CPU's is");
        Tensor dy = random_tensor(91 + t, n, 0, 0, 0), dx = random_tensor(92 + t, n, 0, 0, 0);
        Tensor gdy = on_gpu(&dy), gdx = on_gpu(&dx);
        dropout_backward(&dx, &dy, mask ? &m : NULL);
        cuda_dropout_backward(&gdx, &gdy, mask ? &gm : NULL);
        ok = ok && same("dropout backward (added to)", &gdx, &dx, 1e-6f, 0.0f);
        if (!ok)
            printf("%d entries, p %g, training %d, in place %d, mask %d\n", n, (double)p, training,
                   in_place, mask);
        Tensor *all[] = {&x, &y, &m, &gx, &gy, &gm, &dy, &dx, &gdy, &gdx};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
        if (!ok) return CHECK_FAIL;
    }
    return CHECK_PASS;
}

/* Entries of [B, H, T, T] above the diagonal (j > i) that are not exactly 0. */
static int64_t nonzero_above_diagonal(const Tensor *gpu) {
    Tensor h = back(gpu);
    const int T = h.shape[2];
    int64_t bad = 0;
    for (int64_t r = 0; r < h.size / T; r++)
        for (int j = (int)(r % T) + 1; j < T; j++) bad += h.data[r * T + j] != 0.0f;
    tensor_free(&h);
    return bad;
}

/* Where the CPU's dropped weights are 0 (masked or dropped), the GPU's must be too. */
static bool same_zeros(const Tensor *gpu, const Tensor *cpu) {
    Tensor h = back(gpu);
    int64_t bad = 0;
    for (int64_t i = 0; i < h.size; i++) bad += (h.data[i] == 0.0f) != (cpu->data[i] == 0.0f);
    tensor_free(&h);
    return expect_true(bad == 0, "%lld dropped weights are zero on one device only: not the same mask",
                       (long long)bad);
}

static int compare_attention(int B, int T, int H, int dh, float p, bool training, bool keep,
                             uint64_t seed) {
    const int D = H * dh, N = B * T;
    const bool active = dropout_active(p, training), with_dropped = active || keep;
    Tensor qkv = random_tensor(seed, N, 3 * D, 0, 0), ctx = tensor_zeros(2, N, D);
    Tensor probs = tensor_zeros(4, B, H, T, T), dropped = tensor_zeros(4, B, H, T, T);
    Tensor gqkv = on_gpu(&qkv), gctx = on_gpu(&ctx), gprobs = on_gpu(&probs), gdropped = on_gpu(&dropped);
    tensor_fill(&gprobs, 7.0f), tensor_fill(&gdropped, 7.0f); /* what they held must not matter */
    Rng r1, r2;
    rng_seed(&r1, seed, 1), rng_seed(&r2, seed, 1);
    attention_forward(&ctx, &probs, with_dropped ? &dropped : NULL, &qkv, p, training, &r1);
    cuda_attention_forward(&gctx, &gprobs, with_dropped ? &gdropped : NULL, &gqkv, p, training, &r2);
    const float w = p < 1.0f ? 1.0f / (1.0f - p) : 1.0f; /* the largest weight */
    bool ok = same("attention probs", &gprobs, &probs, sum_atol(dh + T), RTOL) &&
              expect_true(nonzero_above_diagonal(&gprobs) == 0, "probs above the diagonal are not 0") &&
              (!with_dropped || (same("attention dropped", &gdropped, &dropped, w * sum_atol(dh + T), RTOL) &&
                                 same_zeros(&gdropped, &dropped))) &&
              same("attention ctx", &gctx, &ctx, w * sum_atol(dh + 2 * T), RTOL) &&
              expect_true(rng_u32(&r1) == rng_u32(&r2), "the Rng is not where the CPU's is");
    /* the backward, given the CPU's saved weights */
    tensor_copy(&gprobs, &probs), tensor_copy(&gdropped, &dropped);
    Tensor dctx = random_tensor(seed + 1, N, D, 0, 0), dqkv = random_tensor(seed + 2, N, 3 * D, 0, 0);
    Tensor ds = tensor_zeros(4, B, H, T, T);
    Tensor gdctx = on_gpu(&dctx), gdqkv = on_gpu(&dqkv), gds = on_gpu(&ds);
    tensor_fill(&gds, 7.0f);
    attention_backward(&dqkv, &ds, &dctx, &qkv, &probs, with_dropped ? &dropped : NULL);
    cuda_attention_backward(&gdqkv, &gds, &gdctx, &gqkv, &gprobs, with_dropped ? &gdropped : NULL);
    ok = ok && same("attention dscores", &gds, &ds, w * sum_atol(dh + T), RTOL) &&
         expect_true(nonzero_above_diagonal(&gds) == 0, "dscores above the diagonal are not 0") &&
         same("attention dqkv (added to)", &gdqkv, &dqkv, w * sum_atol(dh + 2 * T + 1), RTOL);
    if (!ok)
        printf("B=%d T=%d H=%d dh=%d, dropout %g, training %d, dropped %s\n", B, T, H, dh,
               (double)p, training, with_dropped ? "given" : "NULL");
    Tensor *all[] = {&qkv, &ctx, &probs, &dropped, &gqkv, &gctx, &gprobs, &gdropped,
                     &dctx, &dqkv, &ds, &gdctx, &gdqkv, &gds};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_attention(void) {
    REQUIRE_GPU();
    /* B, T, H, dh: T of 1, below, above and well above the 32 lanes; the tutorial's
     * 2 heads of 100 at T = 35 */
    static const int cases[][4] = {{1, 1, 1, 1}, {2, 7, 3, 5}, {4, 35, 2, 100}, {2, 33, 4, 16}, {1, 130, 2, 32}};
    for (int t = 0; t < 5; t++)
        for (int mode = 0; mode < 4; mode++) { /* dropout 0.2; off (NULL); off (a copy); eval */
            const float p = mode == 1 || mode == 2 ? 0.0f : 0.2f;
            if (compare_attention(cases[t][0], cases[t][1], cases[t][2], cases[t][3], p, mode != 3,
                                  mode == 2, 100 + 10 * (uint64_t)t) != CHECK_PASS)
                return CHECK_FAIL;
        }
    return CHECK_PASS;
}

/* The fused attention (flash_attention.cu) against its CPU twin. Forward: ctx and lse
 * from the same Rng state, the same FlashDropout (key, window) and Rng state after; the
 * backward given the CPU's ctx and lse. float32: the attention's rule above (scores of
 * dh terms, sums of up to T weights up to 1 / (1 - p), expf against softmax_exp).
 * bfloat16 and float16: both devices compute in float32 and round once where they
 * store, so a value differs by the float32 difference plus at most one unit in the last
 * place of the 16-bit format (bfloat16: 2^-7 of its binade, float16: 2^-10, and 2^-24
 * among its subnormals below 2^-14), where the two float32 values fall on either side of
 * a rounding boundary: with float32 differences near 1e-6 of a value against steps of
 * 4e-3 to 8e-3 (bfloat16) or 5e-4 to 1e-3 (float16) of it, that is rare (on the
 * emulator 1 entry in 10,000 in bfloat16, 8 times as many in float16), and all but 1%
 * (and 2) of the entries must hold the same bits: a CPU run predicts the GPU's. */
static float ulp16(DType dt, float x) {
    int e;
    frexpf(fabsf(x), &e); /* |x| in [2^(e-1), 2^e): the step there is 2^(e-8) or 2^(e-11) */
    if (x == 0.0f) return dt == DTYPE_F16 ? 0x1p-24f : 0.0f;
    if (dt == DTYPE_BF16) return ldexpf(1.0f, e - 8);
    return fmaxf(ldexpf(1.0f, e - 11), 0x1p-24f); /* float16's subnormals */
}

static float value16(DType dt, uint16_t bits) {
    return dt == DTYPE_BF16 ? dtype_f32_from_bf16(bits) : dtype_f32_from_f16(bits);
}

/* 16-bit entries with the CPU's bits, of all: bfloat16 [0], float16 [1] */
static int64_t flash_equal16[2], flash_total16[2];

static bool same_flash(const char *what, const Tensor *gpu, const Tensor *cpu, float atol) {
    Tensor h = back(gpu);
    if (cpu->dtype == DTYPE_F32) {
        const bool ok = expect_close(what, h.data, cpu->data, cpu->size, atol, RTOL);
        tensor_free(&h);
        return ok;
    }
    const DType dt = cpu->dtype;
    int64_t equal = 0;
    bool ok = true;
    for (int64_t i = 0; ok && i < cpu->size; i++) {
        const float g = value16(dt, h.bits16[i]), c = value16(dt, cpu->bits16[i]);
        const float big = fabsf(g) > fabsf(c) ? g : c;
        equal += h.bits16[i] == cpu->bits16[i];
        ok = expect_true(fabsf(g - c) <= ulp16(dt, big) + atol + RTOL * fabsf(c),
                         "%s[%lld]: %.6g on the GPU, %.6g on the CPU (%s 0x%04x, 0x%04x): "
                         "more than one step apart", what, (long long)i, g, c, dtype_name(dt),
                         h.bits16[i], cpu->bits16[i]);
    }
    flash_equal16[dt == DTYPE_F16] += equal, flash_total16[dt == DTYPE_F16] += cpu->size;
    ok = ok && expect_true(equal >= cpu->size - cpu->size / 100 - 2, "%s: only %lld of %lld %s "
                           "entries hold the CPU's bits", what, (long long)equal,
                           (long long)cpu->size, dtype_name(dt));
    tensor_free(&h);
    return ok;
}

static Tensor typed(const Tensor *t, DType dtype) {
    Tensor r = tensor_zeros_typed(DEVICE_CPU, dtype, t->ndim, t->shape[0], t->shape[1], t->shape[2], t->shape[3]);
    tensor_convert(&r, t);
    return r;
}

static int compare_flash(int B, int T, int H, int dh, DType dt, float p, DropoutWindow window,
                         uint64_t seed) {
    const int D = H * dh, N = B * T;
    Tensor q32 = random_tensor(seed, N, 3 * D, 0, 0), g32 = random_tensor(seed + 1, N, D, 0, 0);
    Tensor d32 = random_tensor(seed + 2, N, 3 * D, 0, 0);
    Tensor qkv = typed(&q32, dt), dctx = typed(&g32, dt), dqkv = typed(&d32, dt);
    Tensor ctx = tensor_zeros_typed(DEVICE_CPU, dt, 2, N, D), lse = tensor_zeros(3, B, H, T);
    Tensor gqkv = on_gpu(&qkv), gdctx = on_gpu(&dctx), gdqkv = on_gpu(&dqkv);
    Tensor gctx = on_gpu(&ctx), glse = on_gpu(&lse);
    tensor_fill(&gctx, 7.0f), tensor_fill(&glse, 7.0f); /* what they held must not matter */
    FlashDropout d1, d2;
    Rng r1, r2;
    rng_seed(&r1, seed, 1), rng_seed(&r2, seed, 1);
    flash_attention_forward(&ctx, &lse, &d1, &qkv, p, true, &r1, window);
    cuda_flash_attention_forward(&gctx, &glse, &d2, &gqkv, p, true, &r2, window);
    const float w = p < 1.0f ? 1.0f / (1.0f - p) : 1.0f; /* the largest weight */
    bool ok = same_flash("flash ctx", &gctx, &ctx, w * sum_atol(dh + 2 * T)) &&
              same_flash("flash lse", &glse, &lse, sum_atol(dh + T)) &&
              expect_true(d1.active == d2.active && d1.key == d2.key && d1.threshold == d2.threshold &&
                              d1.keep_scale == d2.keep_scale && d1.window.cols == d2.window.cols &&
                              d1.window.full_cols == d2.window.full_cols && d1.window.col0 == d2.window.col0,
                          "the FlashDropout differs from the CPU's") &&
              expect_true(rng_u32(&r1) == rng_u32(&r2), "the Rng is not where the CPU's is");
    /* the backward, given the CPU's ctx and lse */
    tensor_copy(&gctx, &ctx), tensor_copy(&glse, &lse);
    flash_attention_backward(&dqkv, &dctx, &qkv, &ctx, &lse, &d1);
    cuda_flash_attention_backward(&gdqkv, &gdctx, &gqkv, &gctx, &glse, &d2);
    ok = ok && same_flash("flash dqkv (added to)", &gdqkv, &dqkv, w * sum_atol(dh + 2 * T + 1));
    if (!ok)
        printf("B=%d T=%d H=%d dh=%d, %s, dropout %g, window %lld of %lld from %lld\n", B, T, H, dh,
               dtype_name(dt), (double)p, (long long)window.cols, (long long)window.full_cols,
               (long long)window.col0);
    Tensor *all[] = {&q32, &g32, &d32, &qkv, &dctx, &dqkv, &ctx, &lse, &gqkv, &gdctx, &gdqkv, &gctx, &glse};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_flash_attention(void) {
    REQUIRE_GPU();
    /* B, T, H, dh: T of 1, below, at and above a tile of 32 (and a block's rows), the
     * tutorial's 2 heads of 100 at T = 35, 257 and 1,024 (4 s on the emulator); each
     * register tile (32, 64, 128, 256 columns) and heads that fill none (5, 100) */
    static const int cases[][4] = {{1, 1, 1, 16}, {2, 7, 3, 5},   {2, 33, 4, 16}, {2, 35, 2, 100},
                                   {1, 64, 2, 32}, {1, 130, 2, 64}, {1, 257, 1, 128}, {1, 45, 1, 256},
                                   {1, 1024, 1, 64}};
    const int ncases = (int)(sizeof cases / sizeof cases[0]);
    static const DType dtypes[3] = {DTYPE_F32, DTYPE_BF16, DTYPE_F16};
    for (int dt = 0; dt < 3; dt++)
        for (int t = 0; t < ncases; t++)
            for (int drop = 0; drop < 2; drop++)
                if (compare_flash(cases[t][0], cases[t][1], cases[t][2], cases[t][3], dtypes[dt],
                                  drop ? 0.2f : 0.0f, DROPOUT_WHOLE, 200 + 10 * (uint64_t)t) != CHECK_PASS)
                    return CHECK_FAIL;
    /* a tensor-parallel rank's heads 2 and 3 of 6, dropout placed in the whole's mask */
    const int T = 40;
    const DropoutWindow heads = {2 * T * T, 6 * T * T, 2 * T * T};
    for (int dt = 0; dt < 3; dt++)
        if (compare_flash(2, T, 2, 24, dtypes[dt], 0.3f, heads, 290) != CHECK_PASS)
            return CHECK_FAIL;
    check_show("bfloat16: %lld of %lld entries hold the CPU's bits; float16: %lld of %lld",
               (long long)flash_equal16[0], (long long)flash_total16[0],
               (long long)flash_equal16[1], (long long)flash_total16[1]);
    return CHECK_PASS;
}

static int check_gelu(void) {
    REQUIRE_GPU();
    const int n = 100003;
    Tensor x = random_tensor(110, n, 0, 0, 0), y = tensor_zeros(1, n);
    for (int64_t i = 0; i < n; i++) x.data[i] *= 5.0f;
    Tensor dy = random_tensor(111, n, 0, 0, 0), dx = random_tensor(112, n, 0, 0, 0);
    Tensor gx = on_gpu(&x), gy = on_gpu(&y), gdy = on_gpu(&dy), gdx = on_gpu(&dx);
    gelu_forward(&y, &x);
    cuda_gelu_forward(&gy, &gx);
    gelu_backward(&dx, &dy, &x);
    cuda_gelu_backward(&gdx, &gdy, &gx);
    bool ok = same("gelu forward", &gy, &y, 1e-6f, 1e-5f) &&
              same("gelu backward (added to)", &gdx, &dx, 1e-6f, 1e-5f);
    Tensor *all[] = {&x, &y, &dy, &dx, &gx, &gy, &gdy, &gdx};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_add(void) {
    REQUIRE_GPU();
    const int n = 70001;
    Tensor a = random_tensor(120, n, 0, 0, 0), b = random_tensor(121, n, 0, 0, 0), c = tensor_zeros(1, n);
    Tensor ga = on_gpu(&a), gb = on_gpu(&b), gc = on_gpu(&c);
    add_forward(&c, &a, &b);
    cuda_add_forward(&gc, &ga, &gb);
    bool ok = same("add", &gc, &c, EXACT, EXACT);
    add_forward(&a, &a, &b); /* out = a */
    cuda_add_forward(&ga, &ga, &gb);
    ok = ok && same("add in place", &ga, &a, EXACT, EXACT);
    Tensor g = random_tensor(122, n, 0, 0, 0), gg = on_gpu(&g);
    add_backward(&a, &b, &g);
    cuda_add_backward(&ga, &gb, &gg);
    add_backward(NULL, &c, &g); /* one summand needs no gradient */
    cuda_add_backward(NULL, &gc, &gg);
    ok = ok && same("add backward da", &ga, &a, EXACT, EXACT) &&
         same("add backward db", &gb, &b, EXACT, EXACT) &&
         same("add backward, da NULL", &gc, &c, EXACT, EXACT);
    Tensor *all[] = {&a, &b, &c, &ga, &gb, &gc, &g, &gg};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_softmax_xent_fast(void) {
    REQUIRE_GPU();
    /* rows, classes: a classifier's, the tutorial's vocabulary, more than a block's
     * threads can take in one sweep */
    static const int cases[][2] = {{1, 1}, {37, 10}, {70, 28782}, {5, 33000}, {3, 257}};
    for (int t = 0; t < 5; t++) {
        const int N = cases[t][0], K = cases[t][1];
        Tensor z = random_tensor(130 + t, N, K, 0, 0), dz = random_tensor(131 + t, N, K, 0, 0);
        for (int64_t i = 0; i < z.size; i++) z.data[i] *= i % 97 ? 4.0f : 60.0f; /* large ones too */
        for (int64_t i = 0; i < dz.size; i++) dz.data[i] /= (float)N;       /* the gradient's size */
        int *labels = random_tokens(N, K, 132 + (uint64_t)t), *glabels = ints_on_gpu(labels, N);
        Tensor gz = on_gpu(&z), gdz = on_gpu(&dz);
        const float want = softmax_cross_entropy_fast(&dz, &z, labels, 1.0f);
        const float got = cuda_softmax_cross_entropy_fast(&gdz, &gz, glabels, 1.0f);
        const float again = cuda_softmax_cross_entropy_fast(NULL, &gz, glabels, 1.0f);
        bool ok = expect_close("loss", &got, &want, 1, 1e-6f, 1e-5f) &&
                  expect_close("loss with dlogits NULL", &again, &want, 1, 1e-6f, 1e-5f) &&
                  same("dlogits (added to)", &gdz, &dz, 2e-6f / (float)N, 1e-5f);
        if (!ok) printf("%d rows of %d classes\n", N, K);
        tensor_free(&z), tensor_free(&dz), tensor_free(&gz), tensor_free(&gdz);
        cuda_free(glabels);
        xfree(labels);
        if (!ok) return CHECK_FAIL;
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- clipping */

static int check_clip(void) {
    REQUIRE_GPU();
    ParamList c = {0}, g = {0};
    for (int k = 0; k < 2; k++) { /* 3 of clip's 16,384-element blocks and a bit */
        ParamList *p = k ? &g : &c;
        params_add(p, "w", 2, (int[]){200, 201});
        params_add(p, "b", 1, (int[]){7});
        params_allocate(p);
    }
    params_to_device(&g, DEVICE_CUDA);
    bool ok = true;
    for (int t = 0; ok && t < 3; t++) {
        fill_uniform(c.grads.data, c.total, 140 + (uint64_t)t, -2, 2);
        tensor_copy(&g.grads, &c.grads);
        const float want = grad_norm(&c), got = grad_norm(&g); /* the device picks the twin */
        ok = expect_close("gradient norm", &got, &want, 1, 0.0f, 1e-6f);
        /* below the norm: the gradients are scaled; above: untouched */
        const float max_norm = t == 2 ? 2.0f * want : want / (float)(t + 2);
        const float nc = clip_grad_norm(&c, max_norm), ng = clip_grad_norm(&g, max_norm);
        ok = ok && expect_close("norm returned by clip_grad_norm", &ng, &nc, 1, 0.0f, 1e-6f) &&
             same(t == 2 ? "gradients under the limit (untouched)" : "clipped gradients", &g.grads,
                  &c.grads, 0.0f, t == 2 ? 0.0f : 1e-6f);
        if (!ok) printf("max_norm %g, norm %g\n", (double)max_norm, (double)want);
    }
    params_free(&c);
    params_free(&g);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- the transformer */

/* Each gradient against the CPU's: 1e-4 of the tensor's largest entry plus 1e-3 of the
 * entry. The forward and backward chain a dozen layers, each off by about 1e-6 of its
 * terms (the rules above), so gradients agree to about 1e-5 of their size; a gradient
 * that cancels to near 0 keeps the absolute error of its terms, hence a part relative
 * to the largest entry. A wrong layer (index, mask, missing term) is off by the size of
 * the gradient itself. Dropout masks are equal by construction (the same seeds draw the
 * same keys). A ReLU input within rounding of 0 can take the other side on one device
 * and change that row's path: rare (about 1e-6 per entry) and not seen at these sizes. */
static bool same_grads(const Transformer *gpu, const Transformer *cpu) {
    for (int i = 0; i < cpu->params.count; i++) {
        const Tensor *want = &cpu->params.items[i]->grad;
        float most = 0.0f;
        for (int64_t k = 0; k < want->size; k++) most = fmaxf(most, fabsf(want->data[k]));
        char what[160];
        snprintf(what, sizeof what, "gradient of %s", cpu->params.items[i]->name);
        if (!same(what, &gpu->params.items[i]->grad, want, 1e-4f * most + 1e-9f, 1e-3f)) return false;
    }
    return true;
}

static int compare_transformer(TransformerConfig c, int B, int T, float lr, uint64_t seed) {
    const int N = B * T;
    const float dropout = c.dropout;
    int *tokens = random_tokens(N, c.vocab, seed), *targets = random_tokens(N, c.vocab, seed + 1);
    int *gtokens = ints_on_gpu(tokens, N), *gtargets = ints_on_gpu(targets, N);
    Transformer cpu, gpu;
    transformer_init(&cpu, &c, B, T, seed);
    transformer_init(&gpu, &c, B, T, seed);
    transformer_to_device(&gpu, DEVICE_CUDA);
    bool ok = true;
    /* the whole batch, then a shorter one (get_batch's last), on the same models */
    for (int pass = 0; ok && pass < 2; pass++) {
        const int len = pass ? T - 4 : T;
        transformer_set_seq_len(&cpu, len), transformer_set_seq_len(&gpu, len);
        params_zero_grad(&cpu.params), params_zero_grad(&gpu.params);
        const float lc = transformer_forward_backward(&cpu, tokens, targets);
        const float lg = transformer_forward_backward(&gpu, gtokens, gtargets);
        printf("dropout %g, sequences of %d: loss %.6f on the CPU, %.6f on the GPU\n",
               (double)dropout, len, (double)lc, (double)lg);
        ok = expect_close("loss", &lg, &lc, 1, 0.0f, 1e-5f) && same_grads(&gpu, &cpu);
    }
    /* training: SGD with the tutorial's clipping; the steps are smooth in the gradients,
     * so losses stay within 1e-4 and parameters within 1e-4 of each other */
    transformer_set_seq_len(&cpu, T), transformer_set_seq_len(&gpu, T);
    Sgd oc, og;
    sgd_init(&oc, &cpu.params, lr, 0.0f, 0.0f);
    sgd_init(&og, &gpu.params, lr, 0.0f, 0.0f);
    for (int step = 1; ok && step <= 4; step++) {
        params_zero_grad(&cpu.params), params_zero_grad(&gpu.params);
        const float lc = transformer_forward_backward(&cpu, tokens, targets);
        const float lg = transformer_forward_backward(&gpu, gtokens, gtargets);
        const float nc = clip_grad_norm(&cpu.params, 0.5f), ng = clip_grad_norm(&gpu.params, 0.5f);
        sgd_step(&oc, &cpu.params), sgd_step(&og, &gpu.params);
        printf("step %d: loss %.6f on the CPU, %.6f on the GPU (gradient norm %.4f, %.4f)\n", step,
               (double)lc, (double)lg, (double)nc, (double)ng);
        char what[64];
        snprintf(what, sizeof what, "loss at step %d", step);
        ok = expect_close(what, &lg, &lc, 1, 0.0f, 1e-4f) &&
             expect_close("gradient norm", &ng, &nc, 1, 0.0f, 1e-4f);
    }
    for (int i = 0; ok && i < cpu.params.count; i++)
        ok = same(cpu.params.items[i]->name, &gpu.params.items[i]->value,
                  &cpu.params.items[i]->value, 1e-4f, 0.0f);
    /* evaluation: dropout off */
    transformer_eval(&cpu), transformer_eval(&gpu);
    const int blocks = transformer_block_count(&c);
    transformer_forward(&cpu, 0, blocks, tokens, NULL);
    transformer_forward(&gpu, 0, blocks, gtokens, NULL);
    const float ec = transformer_loss(&cpu, targets), eg = transformer_loss(&gpu, gtargets);
    ok = ok && expect_close("evaluation loss after training", &eg, &ec, 1, 0.0f, 1e-4f);
    sgd_free(&oc), sgd_free(&og);
    transformer_free(&cpu), transformer_free(&gpu);
    cuda_free(gtokens), cuda_free(gtargets);
    xfree(tokens), xfree(targets);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_transformer(void) {
    REQUIRE_GPU();
    TransformerConfig c = {.vocab = 41, .d_model = 24, .heads = 3, .d_ff = 40, .layers = 2,
                           .max_len = 64, .dropout = 0.0f};
    if (compare_transformer(c, 3, 13, 0.5f, 21) != CHECK_PASS) return CHECK_FAIL;
    c.dropout = 0.2f;
    return compare_transformer(c, 3, 13, 0.5f, 22);
}

/* Lesson 04's run at its real size: the tutorial's model with the fortunes text's
 * vocabulary of 55,327 words, 20 sequences of 35 tokens, SGD at the lesson's lr 5 with
 * clipping at 0.5. Long sums (700 rows, 55,327 logits a row) and large tensors (11M
 * embedding entries) that the small model above does not reach. */
static int check_transformer_full_size(void) {
    REQUIRE_GPU();
#ifdef CUDA_EMULATOR /* tests/gpu/emulator: a fiber per thread would take hours here */
    printf("skipped on the CPU emulator: the kernels' logic is the small model's above\n");
    return CHECK_SKIP;
#endif
    const TransformerConfig c = {.vocab = 55327, .d_model = 200, .heads = 2, .d_ff = 200,
                                 .layers = 2, .max_len = 64, .dropout = 0.2f};
    return compare_transformer(c, 20, 35, 5.0f, 23);
}

/* ---------------------------------------------------------------- the transformer in 16 bits */

/* Issue 28's promise, end to end: a CPU run predicts the GPU's. The tiny transformer of
 * check_transformer in bfloat16 and in float16 (transformer_set_precision: 16-bit
 * activations, their gradients, the logits and the weights read; float32 master weights,
 * parameter gradients, statistics, lse and loss), the same model on both devices, dropout
 * off and on (the same keys), then one step of lesson 04's (mixed_precision: float16's
 * loss scale, the unscale, clipping at 0.5, SGD, the working copy refreshed).
 *
 * Why the two differ at all. Every layer rounds at the same points on both devices
 * (docs/mixed-precision.md), so from the same 16-bit inputs both compute the same
 * float32 formula, summed in another order (GEMMs, layer norm, the loss), and round it
 * once: the same 16-bit value, or a neighbour where the two float32 values straddle a
 * rounding boundary (a float32 difference of ~1e-6 of a value against a 16-bit step of
 * 2u of it, u = 2^-8 bfloat16, 2^-11 float16: a share of ~1e-6 / u of the entries, then
 * carried into the layers after). The tolerances, with u the format's unit roundoff:
 * - The loss, float32 from the 16-bit logits z: a row's loss lse(z) - z_target moves by
 *   sum_k |softmax_k - [k = target]| |dz_k| <= 2 max |dz|, and so does the mean of the
 *   rows. With every logit within one 16-bit step of the CPU's (its rounding), |dz| <=
 *   step(max |z|) (2u of the largest logit's binade), so the loss is within
 *   2 step(max |z|) plus the float32 loss's own 1e-5 relative (check_transformer's).
 *   How far the logits really are apart is shown (steps, and the share with the
 *   CPU's bits).
 * - Each parameter gradient (float32): a sum over the rows of products of two 16-bit
 *   values the devices computed (an activation and an activation's gradient). A value
 *   one step apart moves the next layer's sums, so the share of 16-bit values that
 *   differ grows layer by layer (on an H100, 2026-11-26: 39% of the logits with the
 *   CPU's bits after 2 layers; 61% one or more steps apart), and a gradient deep in the
 *   backward (the embedding's) carries every rounding point between it and the loss.
 *   So the two devices are not held to each other but to the truth: the same model in
 *   float32 on the CPU. The GPU's 16-bit gradient may be at most 1.5 times as far from
 *   it (relative L2) as the CPU's 16-bit gradient is, or 2u of it (bfloat16 0.0078,
 *   float16 0.00098), whichever is more, plus the float32 part (check_transformer's
 *   1e-4 of the largest entry + 1e-3 of each, in L2 norm: 1e-4 max |g| sqrt(n) + 1e-3
 *   |g|). Both devices' 16-bit runs are rounding noise of about the same size around it
 *   (here about 1.5% of |g| in bfloat16 on the CPU, so two such runs are ~2% apart:
 *   the H100's embedding gradient was 2% from the CPU's); a wrong layer, mask or
 *   rounding point is more: a rounding to bfloat16 in a float16 run 8 times. A rounding
 *   mode is not this check's to catch (truncating the GPU's elementwise 16-bit stores,
 *   planted on the emulator, put linear2's gradient 1.66 times as far: caught, but at
 *   the margin): check_gpu16's exact checks of every layer are. Until that H100 run the check held the GPU within 2u of
 *   the CPU, which only the emulator meets (the same bits: the same float operations in
 *   the same order). The worst ratio is shown; CHECK_GPU16_DETAIL=1 shows every
 *   parameter's distances.
 * - After the step: SGD moves each master by lr g on both devices (g clipped), so the
 *   masters end lr |g_gpu - g_cpu| apart, plus a float32 rounding or two of each; the
 *   working copies are the masters rounded once, so they are within one 16-bit step of
 *   each other plus that, checked per entry, with the gradients checked above. The
 *   share with the same bits is shown (it was held to 99%, which the emulator's equal
 *   gradients give and an H100's did not: 95%). */
typedef struct {
    double worst_grad;                 /* largest relative L2 distance / its tolerance */
    double worst_ratio;                /* largest GPU / CPU distance from the float32 run */
    int64_t logits_equal, logits_total, working_equal, working_total;
    float logits_steps;                /* the largest logit difference in steps */
    float working_steps;               /* the same for the working copies after the step */
} Report16;

/* The 16-bit tensor g (on the GPU) against c (on the CPU): the largest difference in
 * steps of the larger value's binade; entries with the same bits counted. */
static float steps_apart(const Tensor *g, const Tensor *c, int64_t *equal) {
    Tensor h = back(g);
    float most = 0.0f;
    for (int64_t k = 0; k < c->size; k++) {
        const float a = value16(c->dtype, h.bits16[k]), b = value16(c->dtype, c->bits16[k]);
        *equal += h.bits16[k] == c->bits16[k];
        most = fmaxf(most, fabsf(a - b) / ulp16(c->dtype, fabsf(a) > fabsf(b) ? a : b));
    }
    tensor_free(&h);
    return most;
}

static float largest_abs16(const Tensor *t) {
    float most = 0.0f;
    for (int64_t k = 0; k < t->size; k++) most = fmaxf(most, fabsf(value16(t->dtype, t->bits16[k])));
    return most;
}

/* Every parameter gradient of the GPU's 16-bit run (gpu) at most 1.5 times as far from
 * the float32 model's (ref) as the CPU's 16-bit run's (cpu), or 2u of it, + the float32
 * part. */
static double l2_apart(const Tensor *a, const Tensor *b) {
    double d = 0;
    for (int64_t k = 0; k < a->size; k++) d += ((double)a->data[k] - b->data[k]) * ((double)a->data[k] - b->data[k]);
    return sqrt(d);
}

static bool grads16_close(const Transformer *gpu, const Transformer *cpu, const Transformer *ref,
                          double u, Report16 *r) {
    for (int i = 0; i < ref->params.count; i++) {
        const Tensor *truth = &ref->params.items[i]->grad, *c = &cpu->params.items[i]->grad;
        Tensor g = back(&gpu->params.items[i]->grad);
        double norm = 0, most = 0;
        for (int64_t k = 0; k < truth->size; k++) {
            norm += (double)truth->data[k] * truth->data[k];
            most = fmax(most, fabs(truth->data[k]));
        }
        norm = sqrt(norm);
        const double off_gpu = l2_apart(&g, truth), off_cpu = l2_apart(c, truth);
        const double tol = fmax(1.5 * off_cpu, 2 * u * norm) + 1e-3 * norm +
                           1e-4 * most * sqrt((double)truth->size) + 1e-12;
        r->worst_grad = fmax(r->worst_grad, off_gpu / tol);
        if (off_cpu > 0) r->worst_ratio = fmax(r->worst_ratio, off_gpu / off_cpu);
        if (getenv("CHECK_GPU16_DETAIL"))
            check_show("%-28s |g| %.3g: 16-bit from float32: GPU %.3g, CPU %.3g of |g| (ratio %.2f); "
                   "GPU from CPU %.3g", ref->params.items[i]->name, norm, off_gpu / norm,
                   off_cpu / norm, off_gpu / fmax(off_cpu, 1e-30), l2_apart(&g, c) / norm);
        tensor_free(&g);
        if (!expect_true(off_gpu <= tol, "gradient of %s: the GPU's 16-bit run %.3g of |g| from "
                         "the float32 model's, the CPU's %.3g (tolerance %.3g of |g|: 1.5 times the "
                         "CPU's or 2u = %.3g, + the float32 part)", ref->params.items[i]->name,
                         off_gpu / norm, off_cpu / norm, tol / norm, 2 * u))
            return false;
    }
    return true;
}

/* After the step: the working copies within one 16-bit step of each other plus the
 * masters' difference, which SGD makes lr times the (clipped) gradients' difference plus
 * a float32 rounding or two of each master; the share with the same bits counted. */
static bool working16_close(const ParamList *gpu, const ParamList *cpu, float lr, Report16 *r) {
    const DType dt = cpu->working.dtype;
    Tensor w = back(&gpu->working), v = back(&gpu->values), g = back(&gpu->grads);
    const int64_t n = cpu->working.size;
    int64_t equal = 0;
    bool ok = true;
    for (int64_t k = 0; k < n && ok; k++) {
        const float a = value16(dt, w.bits16[k]), b = value16(dt, cpu->working.bits16[k]);
        const float big = fabsf(a) > fabsf(b) ? a : b;
        const double masters = lr * fabs((double)g.data[k] - cpu->grads.data[k]) +
                               0x1p-22 * (fabs(cpu->values.data[k]) + lr * fabs(cpu->grads.data[k]));
        equal += w.bits16[k] == cpu->working.bits16[k];
        r->working_steps = fmaxf(r->working_steps, fabsf(a - b) / ulp16(dt, big));
        ok = expect_true(fabs((double)a - b) <= ulp16(dt, big) + masters, "%s working copy after "
                         "a step, entry %lld: %.9g on the GPU, %.9g on the CPU (masters %.9g, %.9g; "
                         "gradients %.9g, %.9g): more than one step + lr |dg| apart", dtype_name(dt),
                         (long long)k, (double)a, (double)b, (double)v.data[k],
                         (double)cpu->values.data[k], (double)g.data[k], (double)cpu->grads.data[k]);
    }
    r->working_equal += equal, r->working_total += n;
    tensor_free(&w), tensor_free(&v), tensor_free(&g);
    return ok;
}

/* sharded: lesson 09's blocks at t = 1 (the single backend on each device), else the
 * unsplit model's. */
static int compare_transformer16(DType dt, float dropout, uint64_t seed, bool sharded, Report16 *r) {
    const TransformerConfig c = {.vocab = 41, .d_model = 24, .heads = 3, .d_ff = 40, .layers = 2,
                                 .max_len = 64, .dropout = dropout};
    const int B = 3, T = 13, N = B * T;
    const double u = dt == DTYPE_BF16 ? 0x1p-8 : 0x1p-11;
    int *tokens = random_tokens(N, c.vocab, seed), *targets = random_tokens(N, c.vocab, seed + 1);
    int *gtokens = ints_on_gpu(tokens, N), *gtargets = ints_on_gpu(targets, N);
    /* cpu and gpu in 16 bits, ref the same model in float32 on the CPU (the truth both
     * 16-bit runs are held to) */
    Transformer cpu, gpu, ref;
    Dist *dc = NULL, *dg = NULL, *dr = NULL;
    TensorParallel tc, tg, tr;
    if (sharded) {
        dc = dist_init(&(DistOptions){.backend = "single"});
        dr = dist_init(&(DistOptions){.backend = "single"});
        dg = dist_init(&(DistOptions){.backend = "single", .device = DEVICE_CUDA});
        tensor_parallel_init(&tc, dc, &c);
        tensor_parallel_init(&tr, dr, &c);
        tensor_parallel_init(&tg, dg, &c);
        const TransformerBlockMakers mc = tensor_parallel_makers(&tc), mg = tensor_parallel_makers(&tg),
                                     mr = tensor_parallel_makers(&tr);
        transformer_init_made(&cpu, &c, B, T, seed, 0, transformer_block_count(&c), &mc);
        transformer_init_made(&ref, &c, B, T, seed, 0, transformer_block_count(&c), &mr);
        transformer_init_made(&gpu, &c, B, T, seed, 0, transformer_block_count(&c), &mg);
    } else {
        transformer_init(&cpu, &c, B, T, seed);
        transformer_init(&ref, &c, B, T, seed);
        transformer_init(&gpu, &c, B, T, seed);
    }
    transformer_set_precision(&cpu, dt);
    transformer_to_device(&gpu, DEVICE_CUDA);
    transformer_set_precision(&gpu, dt); /* its working copy made on the GPU */
    /* float16: a loss scale of 2^10 keeps this model's activation gradients in float16's
     * normal range without overflow (GradScaler's 2^16 would overflow its first step) */
    MixedPrecision mc, mg;
    mixed_precision_init_scaled(&mc, dt, &cpu.blocks, &cpu.params, 1024.0f, 2000);
    mixed_precision_init_scaled(&mg, dt, &gpu.blocks, &gpu.params, 1024.0f, 2000);
    params_zero_grad(&cpu.params), params_zero_grad(&gpu.params), params_zero_grad(&ref.params);
    transformer_forward_backward(&ref, tokens, targets);
    const float lc = transformer_forward_backward(&cpu, tokens, targets);
    const float lg = transformer_forward_backward(&gpu, gtokens, gtargets);
    const bool skip_c = mixed_precision_unscale(&mc), skip_g = mixed_precision_unscale(&mg);
    /* the loss: 2 steps of the largest logit + the float32 loss's 1e-5 */
    const Tensor *zc = transformer_logits(&cpu);
    int64_t equal = 0;
    const float steps = steps_apart(transformer_logits(&gpu), zc, &equal);
    r->logits_steps = fmaxf(r->logits_steps, steps);
    r->logits_equal += equal, r->logits_total += zc->size;
    const float zmax = largest_abs16(zc), tol = 2.0f * ulp16(dt, zmax) + 1e-5f * fabsf(lc);
    printf("%s, dropout %g: loss %.7f on the CPU, %.7f on the GPU (tolerance %.2g: largest "
           "logit %.3f); logits %.1f%% the same bits, at most %.0f step(s) apart\n",
           dtype_name(dt), (double)dropout, (double)lc, (double)lg, (double)tol, (double)zmax,
           100.0 * (double)equal / (double)zc->size, (double)steps);
    bool ok = expect_true(!skip_c && !skip_g, "float16's scaled gradients overflowed (CPU %d, "
                          "GPU %d)", skip_c, skip_g) &&
              expect_true(fabsf(lg - lc) <= tol, "loss %.7f on the GPU, %.7f on the CPU: %.3g "
                          "apart, more than 2 steps of the largest logit (%.3g) + 1e-5 of the loss",
                          (double)lg, (double)lc, (double)fabsf(lg - lc), (double)tol) &&
              grads16_close(&gpu, &cpu, &ref, u, r);
    /* one step: clipping, SGD, the working copy refreshed from the masters */
    if (ok) {
        const float lr = 0.5f;
        Sgd oc, og;
        sgd_init(&oc, &cpu.params, lr, 0.0f, 0.0f);
        sgd_init(&og, &gpu.params, lr, 0.0f, 0.0f);
        clip_grad_norm(&cpu.params, 0.5f), clip_grad_norm(&gpu.params, 0.5f);
        if (mixed_precision_should_step(&mc)) sgd_step(&oc, &cpu.params);
        if (mixed_precision_should_step(&mg)) sgd_step(&og, &gpu.params);
        mixed_precision_step_done(&mc), mixed_precision_step_done(&mg);
        ok = working16_close(&gpu.params, &cpu.params, lr, r);
        sgd_free(&oc), sgd_free(&og);
    }
    mixed_precision_free(&mc), mixed_precision_free(&mg);
    transformer_free(&cpu), transformer_free(&gpu), transformer_free(&ref);
    if (sharded) {
        tensor_parallel_free(&tc), tensor_parallel_free(&tg), tensor_parallel_free(&tr);
        dist_finalize(dc), dist_finalize(dg), dist_finalize(dr);
    }
    cuda_free(gtokens), cuda_free(gtargets);
    xfree(tokens), xfree(targets);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* What compare_transformer16 saw over its runs, one line. */
static int show_report16(const Report16 *r) {
    check_show("gradients: worst %.3f of the tolerance, the GPU at most %.2f times as far from "
               "float32 as the CPU; logits %lld of %lld the same bits (at most %.0f step apart); "
               "working copies after a step %lld of %lld (at most %.0f steps apart)", r->worst_grad,
               r->worst_ratio, (long long)r->logits_equal, (long long)r->logits_total,
               (double)r->logits_steps, (long long)r->working_equal, (long long)r->working_total,
               (double)r->working_steps);
    return CHECK_PASS;
}

static int check_transformer16(void) {
    REQUIRE_GPU();
    Report16 r = {0};
    for (int d = 0; d < 2; d++)
        for (int drop = 0; drop < 2; drop++)
            if (compare_transformer16(d ? DTYPE_F16 : DTYPE_BF16, drop ? 0.2f : 0.0f,
                                      31 + 2 * (uint64_t)d + (uint64_t)drop, false, &r) != CHECK_PASS)
                return CHECK_FAIL;
    return show_report16(&r);
}

/* Lesson 09's sharded blocks in 16 bits at t = 1: the CPU predicts the GPU as for the
 * unsplit model (their float32 sums, the converted operands, the fused attention on the
 * heads' window, the loss through float32 copies of the 16-bit logits). */
static int check_tensor_parallel16(void) {
    REQUIRE_GPU();
    Report16 r = {0};
    if (compare_transformer16(DTYPE_BF16, 0.2f, 41, true, &r) != CHECK_PASS ||
        compare_transformer16(DTYPE_F16, 0.0f, 42, true, &r) != CHECK_PASS)
        return CHECK_FAIL;
    return show_report16(&r);
}

/* The single-process backend with GPU tensors (--dist single --device cuda, or one GPU
 * rank in a build without NCCL): float tensors stay in GPU memory through every
 * collective, the doubles and integers of the helpers are host scalars. */
static int check_single_backend_gpu(void) {
    REQUIRE_GPU();
    Dist *d = dist_init(&(DistOptions){.backend = "single", .device = DEVICE_CUDA});
    Tensor want = random_tensor(41, 1, 1, 10, 100);
    Tensor a = on_gpu(&want), g = tensor_zeros_like(&a);
    dist_broadcast(d, &a, 0);
    dist_all_reduce(d, &a, DIST_SUM);
    dist_all_reduce(d, &a, DIST_AVG);
    dist_all_gather(d, &g, &a);
    dist_reduce_scatter(d, &a, &g, DIST_SUM);
    double all[1] = {0.0};
    dist_all_gather_double(d, 2.5, all);
    const double sum = dist_sum_double(d, 1.5);
    dist_check_same(d, 42, "a count");
    bool ok = same("all-reduced, broadcast, reduce-scattered", &a, &want, 0.0f, 0.0f) &&
              same("all-gathered", &g, &want, 0.0f, 0.0f) &&
              expect_true(all[0] == 2.5 && sum == 1.5, "host scalars: gathered %g, summed %g; "
                          "expected 2.5 and 1.5", all[0], sum);
    tensor_free(&a), tensor_free(&g), tensor_free(&want);
    dist_finalize(d);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A tensor-parallel rank's slices (rank r of 3): a window of a dropout mask, the
 * attention on 2 of 6 heads (their dropout weights placed in the unsplit mask), the
 * embedding of rows [4r, 4r + 4) of 12: the CPU's masks and values. */
static int check_windows(void) {
    REQUIRE_GPU();
    enum { R = 5, C = 12, B = 2, T = 9, HL = 2, DH = 4, V = 12, N = B * T };
    for (int r = 0; r < 3; r++) {
        const uint64_t seed = 400 + 10 * (uint64_t)r;
        Rng r1, r2;
        rng_seed(&r1, seed, 1), rng_seed(&r2, seed, 1);
        const DropoutWindow cols = {C / 3, C, r * C / 3};
        Tensor x = random_tensor(seed, R, C / 3, 0, 0), y = tensor_zeros(2, R, C / 3);
        Tensor m = tensor_zeros(2, R, C / 3), gx = on_gpu(&x), gy = on_gpu(&y), gm = on_gpu(&m);
        dropout_forward_window(&y, &m, &x, 0.3f, true, &r1, cols);
        cuda_dropout_forward_window(&gy, &gm, &gx, 0.3f, true, &r2, cols);
        bool ok = same("dropout window's mask", &gm, &m, EXACT, EXACT);
        const DropoutWindow heads = {HL * T * T, 3 * HL * T * T, r * HL * T * T};
        Tensor qkv = random_tensor(seed + 1, N, 3 * HL * DH, 0, 0), ctx = tensor_zeros(2, N, HL * DH);
        Tensor probs = tensor_zeros(4, B, HL, T, T), dropped = tensor_zeros(4, B, HL, T, T);
        Tensor gqkv = on_gpu(&qkv), gctx = on_gpu(&ctx), gprobs = on_gpu(&probs), gdropped = on_gpu(&dropped);
        attention_forward_window(&ctx, &probs, &dropped, &qkv, 0.3f, true, &r1, heads);
        cuda_attention_forward_window(&gctx, &gprobs, &gdropped, &gqkv, 0.3f, true, &r2, heads);
        ok = ok && same_zeros(&gdropped, &dropped) &&
             same("attention on a window of heads", &gctx, &ctx, 2 * sum_atol(DH + 2 * T), RTOL);
        int *tokens = random_tokens(N, V, seed + 2), *gtokens = ints_on_gpu(tokens, N);
        Tensor table = random_tensor(seed + 3, V / 3, 8, 0, 0), out = tensor_zeros(2, N, 8);
        Tensor dout = random_tensor(seed + 4, N, 8, 0, 0), dtable = tensor_zeros(2, V / 3, 8);
        Tensor gtable = on_gpu(&table), gout = on_gpu(&out), gdout = on_gpu(&dout), gdtable = on_gpu(&dtable);
        embedding_forward_rows(&out, tokens, &table, 2.0f, r * V / 3, V);
        cuda_embedding_forward_rows(&gout, gtokens, &gtable, 2.0f, r * V / 3, V);
        embedding_backward_rows(&dtable, &dout, tokens, 2.0f, r * V / 3, V);
        cuda_embedding_backward_rows(&gdtable, &gdout, gtokens, 2.0f, r * V / 3, V);
        ok = ok && same("embedding of a slice of the words", &gout, &out, EXACT, EXACT) &&
             same("its backward", &gdtable, &dtable, sum_atol(N) * 2, 1e-6f);
        if (!ok) printf("rank %d of 3\n", r);
        Tensor *all[] = {&x, &y, &m, &gx, &gy, &gm, &qkv, &ctx, &probs, &dropped, &gqkv, &gctx,
                         &gprobs, &gdropped, &table, &out, &dout, &dtable, &gtable, &gout, &gdout, &gdtable};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tensor_free(all[i]);
        cuda_free(gtokens);
        xfree(tokens);
        if (!ok) return CHECK_FAIL;
    }
    return CHECK_PASS;
}

/* Lesson 09's sharded blocks on one rank (t = 1, the single backend on the GPU): its
 * blocks, windows and vocabulary-parallel loss (through host copies) on the GPU against
 * the same on the CPU, 3 SGD steps (the tolerances of compare_transformer), and the
 * digest the program prints, from the slices on the GPU. */
static int check_tensor_parallel_one_rank(void) {
    REQUIRE_GPU();
    const TransformerConfig c = {.vocab = 41, .d_model = 24, .heads = 3, .d_ff = 40, .layers = 2,
                                 .max_len = 64, .dropout = 0.2f};
    const int B = 3, T = 10, N = B * T;
    Dist *dc = dist_init(&(DistOptions){.backend = "single"});
    Dist *dg = dist_init(&(DistOptions){.backend = "single", .device = DEVICE_CUDA});
    TensorParallel tc, tg;
    tensor_parallel_init(&tc, dc, &c);
    tensor_parallel_init(&tg, dg, &c);
    const TransformerBlockMakers mc = tensor_parallel_makers(&tc), mg = tensor_parallel_makers(&tg);
    Transformer cpu, gpu;
    transformer_init_made(&cpu, &c, B, T, 9, 0, transformer_block_count(&c), &mc);
    transformer_init_made(&gpu, &c, B, T, 9, 0, transformer_block_count(&c), &mg);
    transformer_to_device(&gpu, DEVICE_CUDA);
    Sgd oc, og;
    sgd_init(&oc, &cpu.params, 0.5f, 0.0f, 0.0f);
    sgd_init(&og, &gpu.params, 0.5f, 0.0f, 0.0f);
    bool ok = true;
    for (int s = 0; s < 3 && ok; s++) {
        int *tokens = random_tokens(N, c.vocab, 50 + (uint64_t)s), *targets = random_tokens(N, c.vocab, 60 + (uint64_t)s);
        int *gtokens = ints_on_gpu(tokens, N), *gtargets = ints_on_gpu(targets, N);
        params_zero_grad(&cpu.params), params_zero_grad(&gpu.params);
        const float lc = transformer_forward_backward(&cpu, tokens, targets);
        const float lg = transformer_forward_backward(&gpu, gtokens, gtargets);
        ok = expect_close("loss", &lg, &lc, 1, 0.0f, 1e-5f) && same_grads(&gpu, &cpu);
        sgd_step(&oc, &cpu.params), sgd_step(&og, &gpu.params);
        cuda_free(gtokens), cuda_free(gtargets);
        xfree(tokens), xfree(targets);
    }
    /* the digest from the slices goes through the GPU's collectives (the single backend
     * there takes device memory only) and is the model's */
    ok = ok && expect_true(tensor_parallel_digest(&tg, &gpu.params, NULL) == params_digest(&gpu.params),
                           "the digest from the slices on the GPU is not the model's");
    sgd_free(&oc), sgd_free(&og);
    transformer_free(&cpu), transformer_free(&gpu);
    tensor_parallel_free(&tc), tensor_parallel_free(&tg);
    dist_finalize(dc), dist_finalize(dg);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Lesson 07's step on one stage (the single backend: no messages): 4 micro-batches in
 * flight in 4 activation slots on the GPU, each loss share scaled on the device,
 * against the same on the CPU; the tolerances of compare_transformer. */
static int check_pipeline_stage(void) {
    REQUIRE_GPU();
    const TransformerConfig c = {.vocab = 41, .d_model = 24, .heads = 3, .d_ff = 40, .layers = 2,
                                 .max_len = 64, .dropout = 0.2f};
    const int M = 4, Bm = 2, T = 11, N = M * Bm * T;
    int *tokens = random_tokens(N, c.vocab, 31), *targets = random_tokens(N, c.vocab, 32);
    int *gtokens = ints_on_gpu(tokens, N), *gtargets = ints_on_gpu(targets, N);
    const int *tc[4], *gc[4], *yc[4], *yg[4];
    for (int i = 0; i < M; i++)
        tc[i] = tokens + i * Bm * T, yc[i] = targets + i * Bm * T,
        gc[i] = gtokens + i * Bm * T, yg[i] = gtargets + i * Bm * T;
    Dist *d = dist_init(&(DistOptions){.backend = "single"});
    Transformer cpu, gpu;
    transformer_init(&cpu, &c, Bm, T, 9);
    transformer_init(&gpu, &c, Bm, T, 9);
    transformer_to_device(&gpu, DEVICE_CUDA);
    Pipeline pc, pg;
    pipeline_init(&pc, d, &cpu.blocks, M, PIPE_GPIPE);
    pipeline_init(&pg, d, &gpu.blocks, M, PIPE_GPIPE);
    const float lc = pipeline_step(&pc, tc, yc), lg = pipeline_step(&pg, gc, yg);
    printf("one stage, %d micro-batches: loss %.6f on the CPU, %.6f on the GPU; %d slots\n", M,
           (double)lc, (double)lg, pg.max_slots);
    bool ok = expect_close("loss", &lg, &lc, 1, 0.0f, 1e-5f) && same_grads(&gpu, &cpu) &&
              expect_true(pg.max_slots == M, "GPipe on one stage keeps %d micro-batches, not %d", M,
                          pg.max_slots);
    pipeline_free(&pc), pipeline_free(&pg);
    transformer_free(&cpu), transformer_free(&gpu);
    dist_finalize(d);
    cuda_free(gtokens), cuda_free(gtargets);
    xfree(tokens), xfree(targets);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Lesson 08's stage 3 on one rank (the single backend: every collective a copy, the
 * optimiser's kernels on pieces of the shard, the blocks gathered into windows): 3
 * clipped AdamW steps against plain training on the same GPU, which it must equal bit
 * for bit (the CPU's version of this is tests/dist/test_zero; on another device a
 * near-zero gradient's rounding is as large as itself, and Adam's step divides by it). */
static int check_zero_stage3(void) {
    REQUIRE_GPU();
    const TransformerConfig c = {.vocab = 41, .d_model = 24, .heads = 3, .d_ff = 40, .layers = 2,
                                 .max_len = 64, .dropout = 0.2f};
    const int B = 3, T = 9, N = B * T;
    Dist *d = dist_init(&(DistOptions){.backend = "single", .device = DEVICE_CUDA});
    Transformer plain, sharded;
    transformer_init(&plain, &c, B, T, 11);
    transformer_init(&sharded, &c, B, T, 11);
    transformer_to_device(&plain, DEVICE_CUDA);
    transformer_to_device(&sharded, DEVICE_CUDA);
    Adam opt;
    adamw_init(&opt, &plain.params, 1e-2f, 0.01f);
    Zero z;
    zero_init(&z, d, &sharded.blocks, 3, &ZERO_LIBRARY);
    zero_optimizer_adamw(&z, 1e-2f, 0.01f);
    bool ok = true;
    for (int step = 0; step < 3 && ok; step++) {
        int *tokens = random_tokens(N, c.vocab, 40 + step), *targets = random_tokens(N, c.vocab, 50 + step);
        int *gtokens = ints_on_gpu(tokens, N), *gtargets = ints_on_gpu(targets, N);
        params_zero_grad(&plain.params);
        const float lp = transformer_forward_backward(&plain, gtokens, gtargets);
        const float np = clip_grad_norm(&plain.params, 0.5f);
        adam_step(&opt, &plain.params);
        zero_begin_step(&z);
        const float lz = transformer_forward_backward(&sharded, gtokens, gtargets);
        zero_finish_gradients(&z);
        const float nz = zero_clip(&z, 0.5f);
        zero_step(&z);
        printf("step %d: loss %.6f / %.6f, gradient norm %.6f / %.6f (plain / stage 3)\n", step + 1,
               (double)lp, (double)lz, (double)np, (double)nz);
        ok = expect_close("loss", &lz, &lp, 1, 0.0f, 0.0f) && expect_close("norm", &nz, &np, 1, 0.0f, 0.0f);
        cuda_free(gtokens), cuda_free(gtargets);
        xfree(tokens), xfree(targets);
    }
    const int64_t psi = z.psi;
    float *want = xmalloc((size_t)psi * 4), *got = xmalloc((size_t)psi * 4);
    static const char *const what[3] = {"parameters", "Adam's m", "Adam's v"};
    const Tensor *full[3] = {&plain.params.values, &opt.m, &opt.v};
    for (int k = 0; k < 3 && ok; k++) {
        device_copy(want, DEVICE_CPU, full[k]->data, DEVICE_CUDA, (size_t)psi * 4);
        if (k == 0) zero_full_params(&z, got);
        else zero_full_state(&z, k - 1, got);
        ok = expect_close(what[k], got, want, psi, 0.0f, 0.0f);
    }
    ok = ok && expect_true(z.param_windows[0].unit < 0 && z.param_windows[1].unit < 0,
                           "a block still gathered on the GPU after the step");
    xfree(want), xfree(got);
    zero_free(&z);
    adam_free(&opt);
    transformer_free(&plain), transformer_free(&sharded);
    dist_finalize(d);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- trace */

/* ts and dur of the event "fill" on track tid of a trace (false: not there). */
static bool fill_event(const char *text, int tid, double *ts, double *dur) {
    char key[160];
    snprintf(key, sizeof key, "\"name\": \"fill\", \"cat\": \"compute\", \"ph\": \"X\", "
             "\"pid\": 0, \"tid\": %d, \"ts\": ", tid);
    const char *p = strstr(text, key);
    return p && sscanf(p + strlen(key), "%lf, \"dur\": %lf", ts, dur) == 2;
}

/* core/trace.h with lib/cuda/trace_gpu.cu: a compute range's GPU time on the stream's
 * track, from CUDA events placed on the host clock: it cannot start before the host
 * asked for it. */
static int check_trace_gpu(void) {
    REQUIRE_GPU();
    char path[] = "/tmp/check_gpu_trace_XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return CHECK_FAIL;
    close(fd);
    trace_open(path, &(TraceOptions){.world_size = 1});
    Tensor x = tensor_zeros_on(DEVICE_CUDA, 1, 1 << 22);
    trace_begin("step", TRACE_STEP);
    trace_begin("fill", TRACE_COMPUTE);
    tensor_fill(&x, 1.0f);
    trace_end("fill");
    trace_end("step"); /* the step's end hands the GPU's times to the trace */
    trace_close();
    tensor_free(&x);
    static char text[1 << 16];
    FILE *f = fopen(path, "r");
    const size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    unlink(path);
    double host_ts, host_dur, gpu_ts, gpu_dur;
    bool ok = expect_true(fill_event(text, 0, &host_ts, &host_dur), "no host range 'fill' in:\n%s", text);
    ok = ok && expect_true(fill_event(text, 1, &gpu_ts, &gpu_dur), "no GPU range 'fill' (tid 1) in:\n%s", text);
    ok = ok && expect_true(strstr(text, "\"name\": \"GPU: CUDA stream 0 (compute)\"") != NULL,
                           "the stream's track has no thread_name");
    ok = ok && expect_true(gpu_ts >= host_ts && gpu_dur >= 0 && gpu_ts <= host_ts + host_dur + 1e7,
                           "the GPU's fill at %.3f us for %.3f us; the host asked at %.3f us for "
                           "%.3f us", gpu_ts, gpu_dur, host_ts, host_dur);
    if (ok) printf("host %.1f us, GPU %.1f us, starting %.1f us after the host's\n", host_dur, gpu_dur,
                   gpu_ts - host_ts);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- mixed precision */

/* Loss scaling's unscale on the GPU against the CPU loop: the same verdict (clean, an
 * inf, -inf or NaN first, last or in the middle, several at once; then clean again, so
 * a flag left set by the step before shows) and the same bits (one multiplication by
 * 1/S each; a NaN stays a NaN, its payload may differ), the same scale after the update. */
static int check_loss_scale(void) {
    REQUIRE_GPU();
    enum { N = 300007, CASES = 6 };
    const int64_t at[CASES] = {-1, 0, N - 1, N / 2 + 3, 77, -1};
    const float bad[CASES] = {0.0f, INFINITY, NAN, -INFINITY, NAN, 0.0f};
    Tensor h = tensor_zeros(1, N), d = tensor_zeros_on(DEVICE_CUDA, 1, N);
    LossScaler lc, lg;
    loss_scale_init(&lc), loss_scale_init(&lg);
    bool ok = true;
    for (int c = 0; c < CASES && ok; c++) {
        fill_uniform(h.data, N, 500 + (uint64_t)c, -2000.0f, 2000.0f);
        if (at[c] >= 0) h.data[at[c]] = bad[c];
        if (c == 4) h.data[N - 2] = INFINITY, h.data[N / 3] = -INFINITY; /* several at once */
        tensor_copy(&d, &h);
        const bool fc = loss_scale_unscale(&lc, &h), fg = loss_scale_unscale(&lg, &d);
        ok = expect_true(fc == (at[c] >= 0) && fg == fc, "case %d (%s, at %lld of %d): found "
                         "%d on the CPU, %d on the GPU", c, at[c] < 0 ? "clean" : isnan(bad[c]) ?
                         "NaN" : "inf", (long long)at[c], N, fc, fg);
        Tensor b = back(&d);
        for (int64_t k = 0; k < N && ok; k++) {
            const bool both_nan = isnan(b.data[k]) && isnan(h.data[k]);
            ok = expect_true(both_nan || memcmp(&b.data[k], &h.data[k], 4) == 0, "case %d: "
                             "element %lld unscaled to %a on the GPU, %a on the CPU", c,
                             (long long)k, (double)b.data[k], (double)h.data[k]);
        }
        tensor_free(&b);
        loss_scale_update(&lc), loss_scale_update(&lg);
        ok = ok && expect_true(lc.scale == lg.scale && lc.steps_skipped == lg.steps_skipped,
                               "scales %g and %g after case %d", (double)lc.scale, (double)lg.scale, c);
    }
    printf("scale after 4 skipped and 2 clean steps: %g (CPU) and %g (GPU)\n", (double)lc.scale,
           (double)lg.scale);
    ok = ok && expect_true(lg.steps_skipped == 4 && lg.scale == 65536.0f / 16.0f, "%lld skipped, scale "
                           "%g; expected 4 and 4096", (long long)lg.steps_skipped, (double)lg.scale);
    tensor_free(&h), tensor_free(&d);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The bits of a GPU working copy against dtype.h's conversion of the GPU master copied
 * to the host; the views on the GPU at their offsets. */
static bool same_working(const ParamList *g, const char *when) {
    Tensor v = back(&g->values), w = back(&g->working);
    Tensor want = tensor_zeros_typed(DEVICE_CPU, w.dtype, 1, (int)w.size);
    tensor_convert(&want, &v);
    bool ok = expect_true(g->working.device == DEVICE_CUDA, "%s: the working copy is on the %s", when,
                          device_name(g->working.device));
    for (int64_t k = 0; k < w.size && ok; k++)
        ok = expect_true(w.bits16[k] == want.bits16[k], "%s: %s element %lld is 0x%04x on the GPU, "
                         "the CPU converts %a to 0x%04x", when, dtype_name(w.dtype), (long long)k,
                         w.bits16[k], (double)v.data[k], want.bits16[k]);
    for (int i = 0; i < g->count && ok; i++) {
        const Param *p = g->items[i];
        ok = expect_true(p->work.device == DEVICE_CUDA && p->work.dtype == w.dtype &&
                         p->work.bits16 == g->working.bits16 + p->offset, "%s: %s's work view", when,
                         p->name);
    }
    tensor_free(&v), tensor_free(&w), tensor_free(&want);
    return ok;
}

/* Master weights on the GPU: a working copy made on the CPU and moved, one made on the
 * GPU, and one refreshed after an SGD step on the GPU, for bfloat16 and float16, equal
 * the CPU's conversion bit for bit (values across float16's range, its overflow too). */
static int check_working_copy(void) {
    REQUIRE_GPU();
    bool ok = true;
    for (int d = DTYPE_BF16; d <= DTYPE_F16 && ok; d++) {
        ParamList c, g;
        make_params(&c, 1), make_params(&g, 1);
        for (int64_t k = 0; k < c.total; k += 5) c.values.data[k] *= 0x1p17f; /* float16: inf */
        for (int64_t k = 2; k < c.total; k += 5) c.values.data[k] *= 0x1p-20f; /* subnormals */
        tensor_copy(&g.values, &c.values);
        params_set_working(&c, (DType)d);
        params_to_device(&c, DEVICE_CUDA);        /* made on the CPU, moved */
        params_to_device(&g, DEVICE_CUDA);
        params_set_working(&g, (DType)d);         /* made on the GPU */
        Tensor a = back(&c.working), b = back(&g.working);
        ok = same_working(&c, "moved to the GPU") && same_working(&g, "made on the GPU") &&
             expect_true(memcmp(a.raw, b.raw, tensor_bytes(&a)) == 0, "%s: the moved working copy "
                         "differs from the one made on the GPU", dtype_name((DType)d));
        tensor_free(&a), tensor_free(&b);
        Sgd opt;
        sgd_init(&opt, &g, 0.1f, 0.0f, 0.0f);
        Tensor hg = tensor_zeros(1, (int)g.total);
        fill_uniform(hg.data, hg.size, 600 + (uint64_t)d, -1.0f, 1.0f);
        tensor_copy(&g.grads, &hg);
        sgd_step(&opt, &g);
        params_refresh_working(&g);
        ok = ok && same_working(&g, "after an SGD step on the GPU and a refresh");
        tensor_free(&hg);
        sgd_free(&opt);
        params_free(&c), params_free(&g);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- device choice */

/* CUDA does not survive fork: checks that start children must not start CUDA
 * themselves. The child starts it; without a GPU it says why and exits CHECK_SKIP. */
static bool child_gpu_init(void) {
    char why[512];
    if (cuda_init(why, sizeof why)) return true;
    printf(GPU_SKIP_PREFIX "%s\n", why);
    exit(CHECK_SKIP);
}

static int skipped_child(const ChildResult *r) {
    if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != CHECK_SKIP) return 0;
    fputs(r->out, stdout);
    return 1;
}

static void local_rank_body(void *arg) {
    char v[16];
    snprintf(v, sizeof v, "%d", *(int *)arg);
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    unsetenv("SLURM_LOCALID");
    setenv("LOCAL_RANK", v, 1);
    child_gpu_init();
    char why[256];
    printf("device %d of %d\n", cuda_current_device(), cuda_device_count(why, sizeof why));
}

static int check_local_rank(void) {
    int count = 0;
    for (int rank = 0; rank < 3; rank++) {
        ChildResult r;
        run_child(local_rank_body, &rank, &r);
        if (skipped_child(&r)) return CHECK_SKIP;
        int dev = -1;
        const char *line = strstr(r.out, "device ");
        if (!line || sscanf(line, "device %d of %d", &dev, &count) != 2) {
            printf("LOCAL_RANK=%d: no device line in:\n%s", rank, r.out);
            return CHECK_FAIL;
        }
        if (!expect_true(dev == rank % count, "LOCAL_RANK=%d with %d visible devices picked device "
                         "%d, expected %d", rank, count, dev, rank % count))
            return CHECK_FAIL;
    }
    return CHECK_PASS;
}

#endif /* HAVE_CUDA */

int main(void) {
    check_begin("check-gpu: CUDA against CPU");
    check_run(NULL, "tensors: host -> device -> host, device -> device, fill", GPU_CHECK(check_copies), 60);
    check_run(NULL, "dtype conversions: the CPU's bits for every dtype pair and float32 bit class; 16-bit fill and copies", GPU_CHECK(check_convert), 60);
    check_run(NULL, "NCCL on one rank: bfloat16 and float16 through every collective, unchanged; counted", GPU_CHECK(check_nccl_16_bit), 60);
    check_run(NULL, "GEMM (cuBLAS, row-major): 4 transposes, padded strides, alpha, beta", GPU_CHECK(check_gemm), 60);
    check_run(NULL, "im2col and col2im: 20 random geometries, exact", GPU_CHECK(check_im2col), 60);
    check_run(NULL, "ReLU forward and backward, exact", GPU_CHECK(check_relu), 60);
    check_run(NULL, "max-pool forward (values, argmax, ties) and backward", GPU_CHECK(check_maxpool), 60);
    check_run(NULL, "conv2d forward and backward: 16 random shapes and the CNN's two", GPU_CHECK(check_conv2d), 60);
    check_run(NULL, "linear forward and backward", GPU_CHECK(check_linear), 60);
    check_run(NULL, "softmax cross-entropy: loss and gradient", GPU_CHECK(check_softmax_xent), 60);
    check_run(NULL, "softmax cross-entropy (both versions): a bad label stops with its row", GPU_CHECK(check_bad_label), 60);
    check_run(NULL, "a host pointer where GPU memory belongs stops with a message", GPU_CHECK(check_host_pointer), 60);
    check_run(NULL, "Adam, Adam with weight decay, AdamW, SGD with momentum: 3 steps", GPU_CHECK(check_adam_sgd), 60);
    check_run(NULL, "CNN: 5 training steps give the same losses on both devices", GPU_CHECK(check_cnn_training), 120);
    check_run(NULL, "embedding forward (exact) and backward with repeated tokens", GPU_CHECK(check_embedding), 60);
    check_run(NULL, "embedding: a token outside the vocabulary stops with its position", GPU_CHECK(check_bad_token), 60);
    check_run(NULL, "sinusoidal positions added, in place too, exact", GPU_CHECK(check_positional), 60);
    check_run(NULL, "layer norm forward (mean, rstd, output) and backward (din, dgamma, dbeta)", GPU_CHECK(check_layernorm), 60);
    check_run(NULL, "dropout: the CPU's mask and Rng state, on and off, in place, backward", GPU_CHECK(check_dropout), 60);
    check_run(NULL, "causal attention forward and backward: exact zeros above the diagonal, dropout on and off", GPU_CHECK(check_attention), 120);
    check_run(NULL, "fused (flash) attention forward and backward, float32, bfloat16 and float16, dropout, a window of heads", GPU_CHECK(check_flash_attention), 180);
    check_run(NULL, "GELU forward and backward", GPU_CHECK(check_gelu), 60);
    check_run(NULL, "residual add forward (in place too) and backward, exact", GPU_CHECK(check_add), 60);
    check_run(NULL, "softmax cross-entropy over a vocabulary (fast version): loss and gradient", GPU_CHECK(check_softmax_xent_fast), 60);
    check_run(NULL, "gradient clipping by global norm: the norm, clipped and untouched gradients", GPU_CHECK(check_clip), 60);
    check_run(NULL, "transformer: loss and every gradient (dropout off and on, a shorter batch), 4 SGD steps, evaluation", GPU_CHECK(check_transformer), 180);
    check_run(NULL, "transformer at lesson 04's size (55,327 words, 20 x 35 tokens, lr 5): the same checks", GPU_CHECK(check_transformer_full_size), 300);
    check_run(NULL, "transformer in bf16 and fp16 (dropout off and on): the CPU predicts the GPU's loss (2 steps of the largest logit), every gradient (as near float32 as the CPU's 16-bit run, relative L2), the working copy after an SGD step (one step + lr |dg|)", GPU_CHECK(check_transformer16), 120);
    check_run(NULL, "single-process backend with GPU tensors: every collective, host scalars", GPU_CHECK(check_single_backend_gpu), 60);
    check_run(NULL, "a one-stage pipeline: 4 micro-batches in activation slots, loss shares scaled on the GPU", GPU_CHECK(check_pipeline_stage), 120);
    check_run(NULL, "ZeRO stage 3 on one rank: 3 clipped AdamW steps = plain training on the GPU, bit for bit", GPU_CHECK(check_zero_stage3), 120);
    check_run(NULL, "tensor-parallel slices: dropout and attention windows, an embedding's rows", GPU_CHECK(check_windows), 60);
    check_run(NULL, "lesson 09's sharded transformer at t = 1 on the GPU: 3 SGD steps = the CPU's", GPU_CHECK(check_tensor_parallel_one_rank), 120);
    check_run(NULL, "lesson 09's sharded transformer at t = 1 in bf16 (dropout on) and fp16: the CPU predicts the GPU as for the unsplit model", GPU_CHECK(check_tensor_parallel16), 120);
    check_run(NULL, "trace: a compute range's GPU time on the stream's track, on the host clock", GPU_CHECK(check_trace_gpu), 60);
    check_run(NULL, "loss scaling: unscale and the inf/NaN flag on the GPU = the CPU's (verdicts, bits, scale)", GPU_CHECK(check_loss_scale), 60);
    check_run(NULL, "master weights: the bf16/fp16 working copy on the GPU (moved, made, refreshed) = the CPU's bits", GPU_CHECK(check_working_copy), 60);
    check_gpu16(); /* the layers on bfloat16 and float16 tensors */
    check_graph(); /* steps replayed from CUDA graphs */
    check_run(NULL, "the local rank picks the device", GPU_CHECK(check_local_rank), 60);
    return check_end();
}
