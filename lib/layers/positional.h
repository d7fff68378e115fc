/* Sinusoidal positional encoding (Vaswani et al.; the PositionalEncoding of PyTorch's
 * transformer tutorial): position t of every sequence gets the row
 *   pe[t][2i] = sin(t w_i),  pe[t][2i + 1] = cos(t w_i),  w_i = exp(2i (-ln 10000 / D))
 * added to its activations. The table is computed once (the tutorial: max_len 5000).
 *
 * The backward is the identity (din += dout, or nothing at all when out is in): no
 * function for it. The tutorial's dropout after the addition is layers/dropout.h.
 * 16-bit runs (layers/rounded.h): in and out of one dtype, out rounded once; the table
 * stays float32. */
#ifndef LAYERS_POSITIONAL_H
#define LAYERS_POSITIONAL_H

#include "core/tensor.h"

/* Fills table [max_len, D] (D even). t w_i is rounded to float as PyTorch computes
 * it (float32 arange times float32 w_i), sin and cos are then taken in double and
 * rounded: within 1e-6 of PyTorch's table for t < 64 (the reference test). */
void positional_table_fill(Tensor *table);

/* out [B*T, D] = in [B*T, D] + table [max_len, D] row t, for row b*T + t (batch-major:
 * sequence b is rows b*T .. b*T + T-1); T <= max_len; out may be in. */
void positional_forward(Tensor *out, const Tensor *in, const Tensor *table, int T);

/* The shape checks of both devices. */
void positional_check_forward(const Tensor *out, const Tensor *in, const Tensor *table, int T);

/* CUDA twin (lib/cuda/positional.cu), in builds with CUDA: tensors on the GPU. */
void cuda_positional_forward(Tensor *out, const Tensor *in, const Tensor *table, int T);

#endif
