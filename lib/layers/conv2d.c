#include "conv2d.h"

#include <omp.h>
#include <string.h>

#include "core/check.h"
#include "ops/conv_direct.h"
#include "ops/gemm.h"
#include "ops/im2col.h"
#include "ops/plane_sum.h"
#include "rounded.h"

/* About 512 columns per chunk keeps a chunk's column matrix (K x 512 floats, 2.5 MB
 * for the CNN's second convolution) within L2 + L3 reach and the GEMM wide enough.
 * The chunk count is rounded up to a multiple of 4 and images are spread evenly, so
 * 1, 2 or 4 threads get equal shares. */
enum { CHUNK_COLUMNS = 512, CHUNK_MULTIPLE = 4, MAX_THREADS = 256 };

static float *g_workspace[MAX_THREADS];
static size_t g_workspace_floats[MAX_THREADS];

static float *workspace(size_t floats) {
    int t = omp_get_thread_num();
    CHECK(t < MAX_THREADS, "more than %d OpenMP threads", MAX_THREADS);
    if (g_workspace_floats[t] < floats) {
        xfree(g_workspace[t]);
        g_workspace[t] = xmalloc(floats * sizeof(float));
        g_workspace_floats[t] = floats;
    }
    return g_workspace[t];
}

void conv2d_release_workspace(void) {
    for (int t = 0; t < MAX_THREADS; t++) {
        xfree(g_workspace[t]);
        g_workspace[t] = NULL;
        g_workspace_floats[t] = 0;
    }
}

ConvGeometry conv2d_check_shapes(const Tensor *out, const Tensor *in, const Tensor *weight,
                                 int stride, int pad) {
    CHECK_SHAPE(in, -1, -1, -1, -1);
    CHECK_SHAPE(weight, -1, in->shape[1], -1, -1);
    ConvGeometry g = conv_geometry(in->shape[1], in->shape[2], in->shape[3], weight->shape[2],
                                   weight->shape[3], stride, pad);
    CHECK_SHAPE(out, in->shape[0], weight->shape[0], g.OH, g.OW);
    return g;
}

void conv2d_check_grad_shapes(const Tensor *din, const Tensor *dweight, const Tensor *dbias,
                              const Tensor *in, const Tensor *weight) {
    CHECK_SAME_SHAPE(dweight, weight);
    CHECK_SHAPE(dbias, weight->shape[0]);
    if (din) CHECK_SAME_SHAPE(din, in);
}

/* Every tensor of a CPU convolution must be in host memory. */
static void check_on_cpu(const Tensor *a, const Tensor *b, const Tensor *c, const Tensor *d,
                         const Tensor *e) {
    CHECK_DEVICE(a, DEVICE_CPU);
    CHECK_DEVICE(b, DEVICE_CPU);
    CHECK_DEVICE(c, DEVICE_CPU);
    CHECK_DEVICE(d, DEVICE_CPU);
    CHECK_DEVICE(e, DEVICE_CPU);
}

static int chunk_count(int N, const ConvGeometry *g) {
    int64_t columns = (int64_t)N * g->OH * g->OW;
    int64_t chunks = (columns + CHUNK_COLUMNS - 1) / CHUNK_COLUMNS;
    chunks = (chunks + CHUNK_MULTIPLE - 1) / CHUNK_MULTIPLE * CHUNK_MULTIPLE;
    return chunks < N ? (int)chunks : N;
}

/* Images [*n0, *n0 + *nimg) of chunk c out of nchunks. */
static void chunk_images(int c, int nchunks, int N, int *n0, int *nimg) {
    *n0 = (int)((int64_t)c * N / nchunks);
    *nimg = (int)((int64_t)(c + 1) * N / nchunks) - *n0;
}

void conv2d_forward(Tensor *out, const Tensor *in, const Tensor *weight, const Tensor *bias,
                    int stride, int pad) {
    ROUNDED_REFUSE("the 16-bit path covers the transformer's layers; the CNN runs in float32", out, in, weight, bias);
    check_on_cpu(out, in, weight, bias, NULL);
    ConvGeometry g = conv2d_check_shapes(out, in, weight, stride, pad);
    const int N = in->shape[0], Cout = weight->shape[0];
    CHECK_SHAPE(bias, Cout);
    if (conv_direct_fits(&g)) {
        conv_direct_forward(out->data, in->data, weight->data, bias->data, N, Cout, &g);
        return;
    }
    const int K = g.C * g.KH * g.KW, OHW = g.OH * g.OW;
    const int nchunks = chunk_count(N, &g);
    const size_t in_img = (size_t)g.C * g.H * g.W, out_img = (size_t)Cout * OHW;

#pragma omp parallel for schedule(dynamic, 1)
    for (int chunk = 0; chunk < nchunks; chunk++) {
        int n0, nimg;
        chunk_images(chunk, nchunks, N, &n0, &nimg);
        const int ncols = nimg * OHW;
        float *cols = workspace((size_t)K * ncols + (size_t)Cout * ncols); /* [K, ncols] */
        float *prod = cols + (size_t)K * ncols;                            /* [Cout, ncols] */
        im2col(cols, in->data + n0 * in_img, nimg, &g);
        if (nimg == 1) { /* one image: the product is already in the output's layout */
            float *dst = out->data + n0 * out_img; /* [Cout, OHW] */
            for (int co = 0; co < Cout; co++)
                for (int p = 0; p < OHW; p++) dst[(size_t)co * OHW + p] = bias->data[co];
            gemm(false, false, Cout, OHW, K, 1.0f, weight->data, K, cols, OHW, 1.0f, dst, OHW);
            continue;
        }
        gemm(false, false, Cout, ncols, K, 1.0f, weight->data, K, cols, ncols, 0.0f, prod, ncols);
        for (int i = 0; i < nimg; i++) /* [Cout, nimg, OHW] -> [nimg, Cout, OHW] + bias */
            for (int co = 0; co < Cout; co++) {
                float *dst = out->data + (n0 + i) * out_img + (size_t)co * OHW;
                const float *src = prod + (size_t)co * ncols + (size_t)i * OHW;
                float b = bias->data[co];
                for (int p = 0; p < OHW; p++) dst[p] = src[p] + b;
            }
    }
}

/* The direct kernels (lib/ops/conv_direct.h), the bias gradient with the weights'. */
static void direct_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                            const Tensor *in, const Tensor *weight, const ConvGeometry *g) {
    const int N = in->shape[0], Cout = weight->shape[0];
    conv_direct_weight_grad(dweight->data, dbias->data, dout->data, in->data, N, Cout, g);
    if (din) conv_direct_input_grad(din->data, dout->data, weight->data, N, Cout, g);
}

void conv2d_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                     const Tensor *in, const Tensor *weight, int stride, int pad) {
    ROUNDED_REFUSE("the 16-bit path covers the transformer's layers; the CNN runs in float32", din, dweight, dbias, dout, in, weight);
    check_on_cpu(dout, in, weight, dweight, dbias);
    CHECK_DEVICE(din, DEVICE_CPU);
    ConvGeometry g = conv2d_check_shapes(dout, in, weight, stride, pad);
    conv2d_check_grad_shapes(din, dweight, dbias, in, weight);
    const int N = in->shape[0], Cout = weight->shape[0];
    if (conv_direct_fits(&g)) {
        direct_backward(din, dweight, dbias, dout, in, weight, &g);
        return;
    }
    const int K = g.C * g.KH * g.KW, OHW = g.OH * g.OW;
    const int nchunks = chunk_count(N, &g);
    const size_t in_img = (size_t)g.C * g.H * g.W, out_img = (size_t)Cout * OHW;
    const size_t wsize = (size_t)Cout * K;
    /* one partial weight + bias gradient per chunk, summed in order below */
    float *partial = xmalloc((size_t)nchunks * (wsize + (size_t)Cout) * sizeof(float));

#pragma omp parallel for schedule(dynamic, 1)
    for (int chunk = 0; chunk < nchunks; chunk++) {
        int n0, nimg;
        chunk_images(chunk, nchunks, N, &n0, &nimg);
        const int ncols = nimg * OHW;
        float *cols = workspace((size_t)(2 * K + Cout) * ncols); /* [K, ncols] */
        float *dy = cols + (size_t)K * ncols;                    /* [Cout, ncols] */
        float *dcols = dy + (size_t)Cout * ncols;                /* [K, ncols] */
        float *dw = partial + (size_t)chunk * (wsize + (size_t)Cout); /* [Cout, K] */
        float *db = dw + wsize;                                       /* [Cout] */
        if (nimg == 1) dy = dout->data + n0 * out_img; /* already [Cout, OHW]: no copy */
        for (int co = 0; co < Cout; co++) { /* [nimg, Cout, OHW] -> [Cout, nimg, OHW] */
            float sum = 0.0f;
            for (int i = 0; i < nimg; i++) {
                const float *src = dout->data + (n0 + i) * out_img + (size_t)co * OHW;
                if (nimg > 1) memcpy(dy + (size_t)co * ncols + (size_t)i * OHW, src,
                                     (size_t)OHW * sizeof(float));
                sum += plane_sum(src, OHW);
            }
            db[co] = sum;
        }
        im2col(cols, in->data + n0 * in_img, nimg, &g);
        gemm(false, true, Cout, K, ncols, 1.0f, dy, ncols, cols, ncols, 0.0f, dw, K);
        if (din) {
            gemm(true, false, K, ncols, Cout, 1.0f, weight->data, K, dy, ncols, 0.0f, dcols, ncols);
            col2im(din->data + n0 * in_img, dcols, nimg, &g);
        }
    }

    /* Sum the partials in chunk order (the same order for every element, whatever
     * the thread count), in blocks that stay in cache and vectorise. */
    const size_t per_chunk = wsize + (size_t)Cout;
    const int64_t nblocks = (int64_t)((per_chunk + 1023) / 1024);
#pragma omp parallel for schedule(static)
    for (int64_t blk = 0; blk < nblocks; blk++) {
        size_t j0 = (size_t)blk * 1024, j1 = j0 + 1024 < per_chunk ? j0 + 1024 : per_chunk;
        float acc[1024];
        for (size_t j = j0; j < j1; j++) acc[j - j0] = partial[j];
        for (int chunk = 1; chunk < nchunks; chunk++) {
            const float *part = partial + (size_t)chunk * per_chunk;
            for (size_t j = j0; j < j1; j++) acc[j - j0] += part[j];
        }
        for (size_t j = j0; j < j1; j++) {
            if (j < wsize) dweight->data[j] += acc[j - j0];
            else dbias->data[j - wsize] += acc[j - j0];
        }
    }
    xfree(partial);
}
