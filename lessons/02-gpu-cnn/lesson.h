/* Lesson 02: the CNN of lesson 01 on a GPU. Everything the lesson declares.
 *
 * The network, the data and Adam are lesson 01's. The CPU run uses the library's
 * CPU layers; the GPU run uses the library's CUDA layers (lib/cuda/) with your
 * kernels plugged in: ReLU (TODO 2.2), im2col (2.3) and the GEMM (2.4). */
#ifndef LESSON02_H
#define LESSON02_H

#include "core/check.h"
#include "data/dataset.h"
#include "lesson_gpu.h"
#include "models/cnn.h"
#include "train/optim.h"
#include "train/sampler.h"

/* A batch in host memory, reused across steps. */
typedef struct {
    int size;
    int *indices;      /* [size] which examples */
    Tensor images;     /* [size, C, H, W] */
    int *labels;       /* [size] */
} Batch;

void batch_init(Batch *b, int size, const Dataset *d);
void batch_free(Batch *b);

typedef struct {
    double loss, accuracy;
    int examples;
} EpochResult;

/* Given (train_cpu.c): lesson 01's loop and evaluation on the CPU. */
EpochResult train_epoch_cpu(Cnn *model, Adam *opt, const Dataset *train, Sampler *sampler, Batch *b);
EpochResult evaluate_cpu(Cnn *model, const Dataset *test, Batch *b);

#ifdef HAVE_CUDA
#include "cuda/cnn_cuda.h"

/* The library's CUDA layers with your kernels in place. */
CudaKernels lesson_kernels(void);

/* TODO 2.5 (train_gpu.c): one epoch on the GPU: model and Adam state already on the
 * device (cnn_to_device, then adam_init), batches gathered on the host in b and
 * uploaded into d. Waits for the GPU before returning, so the caller's clock is right. */
EpochResult train_epoch_gpu(Cnn *model, Adam *opt, const Dataset *train, Sampler *sampler,
                            Batch *b, DeviceBatch *d);
/* Given (train_gpu.c): loss and accuracy of the model on the GPU. */
EpochResult evaluate_gpu(Cnn *model, const Dataset *test, Batch *b, DeviceBatch *d);
#endif

#endif
