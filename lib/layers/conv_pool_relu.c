#include "conv_pool_relu.h"

#include <string.h>

#include "core/check.h"
#include "layers/maxpool2d.h"
#include "ops/conv_wide.h"
#include "ops/vec8.h"

/* The backward's images a group: about 1 MB of output gradient, which the weight
 * gradient sweeps once per block of weights while it stays in cache. */
enum { GROUP_BYTES = 1 << 20 };

/* The convolution's geometry from its input and weight, on the CPU. */
static ConvGeometry geometry(const Tensor *in, const Tensor *weight) {
    CHECK_SHAPE(in, -1, -1, -1, -1);
    CHECK_SHAPE(weight, -1, in->shape[1], -1, -1);
    CHECK_DEVICE(in, DEVICE_CPU);
    CHECK_DEVICE(weight, DEVICE_CPU);
    ConvGeometry g = conv_geometry(in->shape[1], in->shape[2], in->shape[3], weight->shape[2],
                                   weight->shape[3], 1, 0);
    CHECK(g.OH >= 2 && g.OW >= 2, "a %dx%d convolution output is too small for a 2x2 max-pool",
          g.OH, g.OW);
    return g;
}

void conv_pool_relu_forward(Tensor *pool, int *argmax, Tensor *relu, const Tensor *in,
                            const Tensor *weight, const Tensor *bias) {
    CHECK_FLOAT32(pool, relu, in, weight, bias);
    const ConvGeometry g = geometry(in, weight);
    const int N = in->shape[0], Cout = weight->shape[0];
    CHECK_SHAPE(pool, N, Cout, g.OH / 2, g.OW / 2);
    CHECK_SAME_SHAPE(relu, pool);
    CHECK_SHAPE(bias, Cout);
    CHECK_DEVICE(pool, DEVICE_CPU);
    CHECK_DEVICE(relu, DEVICE_CPU);
    CHECK_DEVICE(bias, DEVICE_CPU);
    const int PH = pool->shape[2], PW = pool->shape[3], PHW = PH * PW;
    const size_t in_img = (size_t)g.C * g.H * g.W;
    ConvWide p = conv_wide_plan(&g, Cout);
    conv_wide_weights(&p, weight->data);

    /* Each thread takes whole images: one image's convolution output (141 KB for
     * MNIST) stays in its cache while it is pooled. */
#pragma omp parallel
    {
        float *x = xmalloc((size_t)p.image * sizeof(float));
        float *y = xmalloc((size_t)Cout * p.plane * sizeof(float));
#pragma omp for schedule(static)
        for (int n = 0; n < N; n++) {
            conv_wide_pad(x, in->data + n * in_img, &g, &p);
            conv_wide_forward(y, x, bias->data, &p);
            for (int c = 0; c < Cout; c++) {
                const size_t at = ((size_t)n * Cout + c) * PHW;
                float *pc = pool->data + at, *rc = relu->data + at;
                /* rows W long in y, OW in the plane the argmax indexes */
                maxpool2d_plane(pc, argmax + at, y + (size_t)c * p.plane, g.W, g.OW, PH, PW, 2, 2);
                for (int i = 0; i < PHW; i++) rc[i] = pc[i] > 0.0f ? pc[i] : 0.0f;
            }
        }
        xfree(x);
        xfree(y);
    }
    conv_wide_free(&p);
}

/* The output gradient of one plane in the wide layout: each pooled gradient that
 * passed the ReLU at the pixel of its 2x2 window that the argmax names, zero
 * elsewhere (and in the garbage columns). Returns the sum of those gradients, the
 * plane's share of the bias gradient. */
static float plane_grad(float *d, const ConvWide *p, const ConvGeometry *g, const float *drelu,
                        const float *relu, const int *arg, int PH, int PW) {
    const int OW = g->OW, W = g->W;
    const i32x8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
    memset(d, 0, (size_t)p->plane * sizeof(float));
    f8 sum = splat8(0.0f);
    float tail = 0.0f;
    for (int oh = 0; oh < PH; oh++) {
        const int j0 = oh * PW, top = 2 * oh * OW; /* the argmax of the window's top left */
        float *dt = d + 2 * oh * W, *db = dt + W;
        /* 8 windows at a time, the last 8 overlapping the ones before (as the pool does) */
        int done = 0;
        for (int ow = 0; PW >= 8 && done < PW; ow = done + 8 <= PW ? done : PW - 8) {
            const f8 r = load8(relu + j0 + ow), gr = load8(drelu + j0 + ow);
            const f8 grad = select8(gr, r > splat8(0.0f));
            const i32x8 k = load_mask8(arg + j0 + ow) - (top + 2 * ow + 2 * lane);
            const i32x8 bottom = k >= OW;
            const i32x8 col = k - (bottom & OW); /* 0: left, 1: right */
            const i32x8 is_right = col == 1, is_left = ~is_right;
            const f8 tl = select8(grad, ~bottom & is_left), tr = select8(grad, ~bottom & is_right);
            const f8 bl = select8(grad, bottom & is_left), br = select8(grad, bottom & is_right);
            store8(dt + 2 * ow, interleave_lo8(tl, tr));
            store8(dt + 2 * ow + 8, interleave_hi8(tl, tr));
            store8(db + 2 * ow, interleave_lo8(bl, br));
            store8(db + 2 * ow + 8, interleave_hi8(bl, br));
            sum += select8(grad, ow + lane >= done); /* each window's gradient once */
            done = ow + 8;
        }
        for (int ow = done; ow < PW; ow++) {
            const int j = j0 + ow, a = arg[j];
            const int row = 2 * oh + (a >= top + OW);
            const float grad = relu[j] > 0.0f ? drelu[j] : 0.0f;
            d[a + row * (W - OW)] = grad;
            tail += grad;
        }
    }
    return lane_sum8(sum) + tail;
}

void conv_pool_relu_backward(Tensor *dweight, Tensor *dbias, const Tensor *drelu,
                             const Tensor *relu, const int *argmax, const Tensor *in,
                             const Tensor *weight) {
    CHECK_FLOAT32(dweight, dbias, drelu, relu, in, weight);
    const ConvGeometry g = geometry(in, weight);
    const int N = in->shape[0], Cout = weight->shape[0];
    CHECK_SHAPE(relu, N, Cout, g.OH / 2, g.OW / 2);
    CHECK_SAME_SHAPE(drelu, relu);
    CHECK_SAME_SHAPE(dweight, weight);
    CHECK_SHAPE(dbias, Cout);
    CHECK_DEVICE(relu, DEVICE_CPU);
    CHECK_DEVICE(drelu, DEVICE_CPU);
    CHECK_DEVICE(dweight, DEVICE_CPU);
    CHECK_DEVICE(dbias, DEVICE_CPU);
    const int PH = relu->shape[2], PW = relu->shape[3], PHW = PH * PW;
    const size_t in_img = (size_t)g.C * g.H * g.W;
    ConvWide p = conv_wide_plan(&g, Cout);
    const size_t image_bytes = (size_t)Cout * p.plane * sizeof(float);
    const int group = image_bytes < GROUP_BYTES ? (int)(GROUP_BYTES / image_bytes) : 1;
    float *dy = xmalloc((size_t)group * Cout * p.plane * sizeof(float));
    float *x = xmalloc((size_t)group * p.image * sizeof(float));
    float *sums = xmalloc((size_t)group * Cout * sizeof(float)); /* [c][i]: each plane's */

    for (int n0 = 0; n0 < N; n0 += group) {
        const int count = N - n0 < group ? N - n0 : group;
        /* planes channel by channel: the weight gradient hands threads channel blocks */
#pragma omp parallel for schedule(static)
        for (int plane = 0; plane < count * Cout; plane++) {
            const int c = plane / count, i = plane % count;
            const size_t at = ((size_t)(n0 + i) * Cout + c) * PHW;
            sums[plane] = plane_grad(dy + ((size_t)i * Cout + c) * p.plane, &p, &g,
                                     drelu->data + at, relu->data + at, argmax + at, PH, PW);
            if (c == 0) conv_wide_pad(x + (size_t)i * p.image, in->data + (n0 + i) * in_img, &g, &p);
        }
        for (int c = 0; c < Cout; c++) { /* image by image: a fixed order */
            float sum = 0.0f;
            for (int i = 0; i < count; i++) sum += sums[c * count + i];
            dbias->data[c] += sum;
        }
        conv_wide_weight_grad(dweight->data, dy, x, count, &p);
    }
    xfree(sums);
    xfree(dy);
    xfree(x);
    conv_wide_free(&p);
}
