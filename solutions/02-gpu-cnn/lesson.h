/* Lesson 02: the CNN of lesson 01 on a GPU. Everything the lesson declares.
 *
 * The network, the data and Adam are lesson 01's, and the model is written once for
 * both devices (lib/models/cnn.c): moved to the GPU, it calls the library's CUDA
 * layers (lib/cuda/), which run your kernels: ReLU (TODO 2.2), im2col (2.3) and the
 * GEMM (2.4). The CPU run, for comparison, is the library's loop (lib/train/loop.h). */
#ifndef LESSON02_H
#define LESSON02_H

#include "core/check.h"
#include "data/dataset.h"
#include "lesson_gpu.h"
#include "models/cnn.h"
#include "train/loop.h"
#include "train/optim.h"
#include "train/sampler.h"

/* The layers of a model on the GPU, with your kernels in place (train_gpu.c): the
 * library's CUDA table with its convolution, linear and ReLU entries running
 * lesson_relu_*, lesson_im2col and lesson_gemm. */
LayerOps lesson_layers(void);

/* TODO 2.5 (train_gpu.c): one epoch on the GPU: model and Adam state already on the
 * device (cnn_to_device, then adam_init), batches gathered on the host in b and
 * uploaded into d. Waits for the GPU before returning, so the caller's clock is right. */
EpochResult train_epoch_gpu(Cnn *model, Adam *opt, const Dataset *train, Sampler *sampler,
                            Batch *b, DeviceBatch *d);

#endif
