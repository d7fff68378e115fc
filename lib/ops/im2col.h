/* im2col and col2im: turn a convolution into one matrix multiplication.
 *
 * For nimg images [nimg, C, H, W] and a KH x KW kernel with stride and padding, the
 * column matrix is [C*KH*KW, nimg*OH*OW]: row (c, kh, kw), column (image, oh, ow)
 * holds the input pixel that kernel tap meets at that output position (0 in the
 * padding). Then conv = weight [Cout, C*KH*KW] x columns. col2im is the adjoint:
 * it adds each column entry back onto the pixel it came from (for the backward). */
#ifndef OPS_IM2COL_H
#define OPS_IM2COL_H

typedef struct {
    int C, H, W;      /* input channels and size */
    int KH, KW;       /* kernel size */
    int stride, pad;
    int OH, OW;       /* output size, from conv_geometry() */
} ConvGeometry;

/* Fills OH and OW; stops with a message when the kernel does not fit. */
ConvGeometry conv_geometry(int C, int H, int W, int KH, int KW, int stride, int pad);

/* cols [C*KH*KW, nimg*OH*OW] from images [nimg, C, H, W] */
void im2col(float *cols, const float *images, int nimg, const ConvGeometry *g);

/* images [nimg, C, H, W] += the adjoint of im2col applied to cols */
void col2im(float *images, const float *cols, int nimg, const ConvGeometry *g);

/* The CUDA twins (lib/cuda/im2col.cu), in builds with CUDA: device pointers, the
 * same layout and the same sums (col2im adds in the CPU's order: bit-identical). */
void cuda_im2col(float *cols, const float *images, int nimg, const ConvGeometry *g);
void cuda_col2im(float *images, const float *cols, int nimg, const ConvGeometry *g);

#endif
