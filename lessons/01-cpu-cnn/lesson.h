/* Lesson 01: the simple CNN on the CPU. The functions you write in this lesson.
 *
 * Each has a twin in the library (lib/), which the grader uses as the reference:
 * your function must give the same numbers. Sizes are in the comments as
 * [N, C, H, W]: batch, channels, height, width. */
#ifndef LESSON01_H
#define LESSON01_H

#include "core/tensor.h"
#include "core/check.h"
#include "core/todo.h"
#include "data/dataset.h"
#include "models/cnn.h"
#include "train/loop.h"
#include "train/optim.h"
#include "train/sampler.h"

#define LESSON_DIR "lessons/01-cpu-cnn"
#define TODO_STOP(id) todo_stop(id, LESSON_DIR, __func__)

/* TODO 1.1 (conv_loops.c): out [N, Cout, OH, OW] = in [N, C, H, W] (*) weight
 * [Cout, C, KH, KW] + bias [Cout], with stride and zero padding, as plain loops. */
void lesson_conv2d_forward(Tensor *out, const Tensor *in, const Tensor *weight,
                           const Tensor *bias, int stride, int pad);

/* TODO 1.2 (conv_loops.c): din += dL/din (din may be NULL), dweight += dL/dweight,
 * dbias += dL/dbias, given dout = dL/dout [N, Cout, OH, OW]. */
void lesson_conv2d_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                            const Tensor *in, const Tensor *weight, int stride, int pad);

/* TODO 1.3 (maxpool.c): out [N, C, OH, OW] and argmax (index of the winner in its
 * H x W input plane) from in [N, C, H, W]; and the backward din += routed dout. */
void lesson_maxpool2d_forward(Tensor *out, int *argmax, const Tensor *in, int kernel, int stride);
void lesson_maxpool2d_backward(Tensor *din, const Tensor *dout, const int *argmax);

/* TODO 1.4 (loss.c): mean softmax cross-entropy of logits [N, classes] against
 * labels [N]; adds the gradient dL/dlogits into dlogits when it is not NULL. */
float lesson_softmax_cross_entropy(Tensor *dlogits, const Tensor *logits, const int *labels);

/* TODO 1.5 (adam.c): one Adam update of every parameter, PyTorch's rule. */
void lesson_adam_step(Adam *opt, ParamList *params);

/* Batch (the buffers of one step) and EpochResult come from lib/train/loop.h. */

/* TODO 1.6 (train_loop.c): one pass over the training set in the sampler's order. */
EpochResult train_epoch(Cnn *model, Adam *opt, const Dataset *train, Sampler *sampler, Batch *b);

/* TODO 1.7 (train_loop.c): loss and accuracy on a data set, without training. */
EpochResult evaluate(Cnn *model, const Dataset *test, Batch *b);

#endif
