/* Linear layers for narrow networks on the CPU: PPO's MLP policy (64 wide, batches of
 * 4 to 512), where layers/linear.h's general GEMM (OpenBLAS or the blocked kernel) is
 * built for matrices a hundred times larger and spends more on its set-up and threads
 * than on these products.
 *
 *   y [B, out] = x [B, in] W^T + b,   W [out, in], b [out]   (PyTorch's Linear and layout)
 *
 * Rows are samples, as in layers/linear.h. The products are written out with 8-float
 * vectors (GCC's vector extension: AVX2 where the build has it) and register blocks of
 * 4 samples x 16 outputs, so that each loaded weight serves 4 samples and each loaded
 * input 16 outputs. Every output is summed in a fixed order that depends only on the
 * sizes, never on threads: the same inputs give the same bits.
 *
 * One thread each: the caller decides what runs in parallel (lib/rl/ppo.c runs the
 * actor and the critic side by side). Nothing here allocates. */
#ifndef LAYERS_LINEAR_SMALL_H
#define LAYERS_LINEAR_SMALL_H

/* y [batch, out] = x [batch, in] W^T + b.
 * wt: scratch of in * out floats: for batches of 16 or more W is transposed into it
 * once, so that the products run along contiguous outputs; smaller batches take dot
 * products along W's rows instead and do not touch it. */
void linear_small_forward(float *y, const float *x, const float *w, const float *b, float *wt, int batch,
                          int in, int out);

/* The same with W^T already at hand: wt [in, out] made by linear_small_transpose (for a
 * network whose weights stay put over many small batches: a rollout's steps). Layers
 * with fewer than 8 outputs use w instead. */
void linear_small_forward_t(float *y, const float *x, const float *w, const float *wt, const float *b, int batch,
                            int in, int out);
/* wt [in, out] = W^T of w [out, in] */
void linear_small_transpose(float *wt, const float *w, int in, int out);

/* dx [batch, in] += dy W (skipped when dx is NULL: the observations need no gradient),
 * dw [out, in] += dy^T x, db [out] += the column sums of dy; dy is [batch, out]. */
void linear_small_backward(float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                           int batch, int in, int out);

#endif
