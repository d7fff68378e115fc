/* Token embedding, PyTorch's nn.Embedding followed by a scale: the transformer
 * tutorial multiplies the looked-up rows by sqrt(d_model), and folding the scale
 * in here saves a pass over the activations.
 *
 * Tokens are a plain int array (in the tensor's device memory, like the labels of
 * softmax_xent.h); a token outside 0..V-1 is a bug of the caller and stops with the
 * row and the value (the data loader is where a user's bad input is caught).
 * 16-bit runs (layers/rounded.h): table, out and dout of one dtype, out rounded once;
 * dtable float32 always. */
#ifndef LAYERS_EMBEDDING_H
#define LAYERS_EMBEDDING_H

#include "core/tensor.h"

/* out [N, D] = scale * table [V, D] row tokens[n], for n < N. */
void embedding_forward(Tensor *out, const int *tokens, const Tensor *table, float scale);

/* dtable [V, D] += scale * dout [N, D] row n into row tokens[n]: a token that occurs
 * several times receives the sum (in the order of n, the same bits on any number of
 * threads: threads split the columns, not the rows). There is no input gradient. */
void embedding_backward(Tensor *dtable, const Tensor *dout, const int *tokens, float scale);

/* The same for a slice of a wider table (a vocabulary-parallel rank's rows): table
 * [Vr, D] holds rows [first, first + Vr) of a vocabulary of `vocab` words (rows past it
 * are padding, never looked up). A token of the vocabulary outside the slice gives a row
 * of zeros forward and adds nothing backward; one outside 0..vocab-1 stops as above. */
void embedding_forward_rows(Tensor *out, const int *tokens, const Tensor *table, float scale,
                            int first, int vocab);
void embedding_backward_rows(Tensor *dtable, const Tensor *dout, const int *tokens, float scale,
                             int first, int vocab);

/* The shape checks of both devices. */
void embedding_check_forward(const Tensor *out, const Tensor *table);
void embedding_check_backward(const Tensor *dtable, const Tensor *dout);

/* Stops with the first token outside 0..V-1 (host memory: the CUDA twin checks its
 * tokens on the host before copying them). */
void embedding_check_tokens(const int *tokens, int n, int V);

/* CUDA twins (lib/cuda/embedding.cu), in builds with CUDA: tensors on the GPU, tokens
 * in device memory (a bad token stops with the same message); the backward adds in the
 * same order, without atomics. */
void cuda_embedding_forward(Tensor *out, const int *tokens, const Tensor *table, float scale);
void cuda_embedding_backward(Tensor *dtable, const Tensor *dout, const int *tokens, float scale);
void cuda_embedding_forward_rows(Tensor *out, const int *tokens, const Tensor *table, float scale,
                                 int first, int vocab);
void cuda_embedding_backward_rows(Tensor *dtable, const Tensor *dout, const int *tokens,
                                  float scale, int first, int vocab);

#endif
