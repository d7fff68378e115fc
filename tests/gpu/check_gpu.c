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
 * differences; see check_cnn_training. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/check.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "gpu/gpu_check.h"
#include "layers/conv2d.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
#include "layers/softmax_xent.h"
#include "models/cnn.h"
#include "ops/gemm.h"
#include "ops/im2col.h"
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

static int *ints_on_gpu(const int *h, int64_t n) {
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
    Tensor z = tensor_zeros_on(DEVICE_CUDA, 2, 300, 301), hz = tensor_zeros(2, 300, 301);
    ok = ok && same("tensor_zeros_on(DEVICE_CUDA)", &z, &hz, EXACT, EXACT);
    return ok ? CHECK_PASS : CHECK_FAIL;
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
    (void)arg;
    child_gpu_init();
    Tensor z = tensor_zeros_on(DEVICE_CUDA, 2, 4, 3);
    int labels[4] = {0, 1, 3, 2}; /* 3 is not a class of 3 */
    int *g = ints_on_gpu(labels, 4);
    cuda_softmax_cross_entropy(NULL, &z, g);
}

static int check_bad_label(void) {
    ChildResult r;
    run_child(bad_label_body, NULL, &r);
    if (skipped_child(&r)) return CHECK_SKIP;
    return expect_exit("a label outside the classes", &r, 2, "label 3 of row 2", (const char *)NULL)
               ? CHECK_PASS : CHECK_FAIL;
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
    check_run(NULL, "GEMM (cuBLAS, row-major): 4 transposes, padded strides, alpha, beta", GPU_CHECK(check_gemm), 60);
    check_run(NULL, "im2col and col2im: 20 random geometries, exact", GPU_CHECK(check_im2col), 60);
    check_run(NULL, "ReLU forward and backward, exact", GPU_CHECK(check_relu), 60);
    check_run(NULL, "max-pool forward (values, argmax, ties) and backward", GPU_CHECK(check_maxpool), 60);
    check_run(NULL, "conv2d forward and backward: 16 random shapes and the CNN's two", GPU_CHECK(check_conv2d), 60);
    check_run(NULL, "linear forward and backward", GPU_CHECK(check_linear), 60);
    check_run(NULL, "softmax cross-entropy: loss and gradient", GPU_CHECK(check_softmax_xent), 60);
    check_run(NULL, "softmax cross-entropy: a bad label stops with its row", GPU_CHECK(check_bad_label), 60);
    check_run(NULL, "a host pointer where GPU memory belongs stops with a message", GPU_CHECK(check_host_pointer), 60);
    check_run(NULL, "Adam, Adam with weight decay, AdamW, SGD with momentum: 3 steps", GPU_CHECK(check_adam_sgd), 60);
    check_run(NULL, "CNN: 5 training steps give the same losses on both devices", GPU_CHECK(check_cnn_training), 120);
    check_run(NULL, "the local rank picks the device", GPU_CHECK(check_local_rank), 60);
    return check_end();
}
