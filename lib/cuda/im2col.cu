// im2col and col2im on the GPU, with the layout of lib/ops/im2col.c:
// cols [C*KH*KW, nimg*OH*OW], row (c, kh, kw), column (image, oh, ow).
#include "cuda_check.h"
#include "launch.h"
extern "C" {
#include "ops/im2col.h"
}

// One thread per entry of cols; neighbouring threads write neighbouring columns
// (coalesced stores) and read neighbouring pixels of one input row.
static __global__ void im2col_kernel(float *cols, const float *images, int nimg, ConvGeometry g) {
    const int OHW = g.OH * g.OW;
    const int64_t ncols = (int64_t)nimg * OHW, total = (int64_t)g.C * g.KH * g.KW * ncols;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t col = i % ncols, row = i / ncols;
        const int kw = (int)(row % g.KW), kh = (int)(row / g.KW % g.KH), c = (int)(row / (g.KW * g.KH));
        const int n = (int)(col / OHW), p = (int)(col % OHW), oh = p / g.OW, ow = p % g.OW;
        const int ih = oh * g.stride - g.pad + kh, iw = ow * g.stride - g.pad + kw;
        const bool inside = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W; // else: padding, 0
        cols[i] = inside ? images[(((int64_t)n * g.C + c) * g.H + ih) * g.W + iw] : 0.0f;
    }
}

extern "C" void cuda_im2col(float *cols, const float *images, int nimg, const ConvGeometry *g) {
    int64_t total = (int64_t)g->C * g->KH * g->KW * nimg * g->OH * g->OW;
    if (total == 0) return;
    im2col_kernel<<<cuda_blocks_for(total, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(cols, images, nimg, *g);
    CUDA_CHECK_LAUNCH();
}

// One thread per image pixel: it gathers the column entries that came from it, so
// no two threads write the same pixel (no atomics), in the CPU's order (kh, then kw),
// which makes the sums bit-identical to col2im on the CPU.
static __global__ void col2im_kernel(float *images, const float *cols, int nimg, ConvGeometry g) {
    const int OHW = g.OH * g.OW;
    const int64_t ncols = (int64_t)nimg * OHW, total = (int64_t)nimg * g.C * g.H * g.W;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int iw = (int)(i % g.W), ih = (int)(i / g.W % g.H), c = (int)(i / ((int64_t)g.W * g.H) % g.C);
        const int n = (int)(i / ((int64_t)g.W * g.H * g.C));
        float acc = images[i];
        for (int kh = 0; kh < g.KH; kh++) {
            const int y = ih + g.pad - kh; // = oh * stride
            if (y < 0 || y % g.stride != 0 || y / g.stride >= g.OH) continue;
            const int oh = y / g.stride;
            for (int kw = 0; kw < g.KW; kw++) {
                const int x = iw + g.pad - kw; // = ow * stride
                if (x < 0 || x % g.stride != 0 || x / g.stride >= g.OW) continue;
                const int64_t row = ((int64_t)c * g.KH + kh) * g.KW + kw;
                acc += cols[row * ncols + (int64_t)n * OHW + oh * g.OW + x / g.stride];
            }
        }
        images[i] = acc;
    }
}

extern "C" void cuda_col2im(float *images, const float *cols, int nimg, const ConvGeometry *g) {
    int64_t total = (int64_t)nimg * g->C * g->H * g->W;
    if (total == 0) return;
    col2im_kernel<<<cuda_blocks_for(total, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(images, cols, nimg, *g);
    CUDA_CHECK_LAUNCH();
}
