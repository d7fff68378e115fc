/* TODO 2.5: the training loop on the GPU (built only where nvcc is: HAVE_CUDA).
 *
 * The loop is lesson 01's. What changes is where the data lives: the model, its
 * gradients and Adam's state stay on the GPU for the whole run; each batch is
 * gathered on the host and copied over (TODO 2.1); only the loss comes back. */
#ifdef HAVE_CUDA
#include "core/log.h"
#include "cuda/gpu.h"
#include "layers/softmax_xent.h"
#include "lesson.h"

CudaKernels lesson_kernels(void) {
    CudaKernels k = {lesson_relu_forward, lesson_relu_backward, lesson_im2col, lesson_gemm};
    return k;
}

/* The first n images of d as a GPU tensor [n, C, H, W] (no copy). */
static Tensor device_images(const DeviceBatch *d, int n, const Dataset *ds) {
    Tensor t = {0};
    t.data = d->images;
    t.ndim = 4;
    t.shape[0] = n, t.shape[1] = ds->channels, t.shape[2] = ds->height, t.shape[3] = ds->width;
    t.size = (int64_t)n * d->image_floats;
    t.device = DEVICE_CUDA;
    return t;
}

EpochResult train_epoch_gpu(Cnn *model, Adam *opt, const Dataset *train, Sampler *sampler,
                            Batch *b, DeviceBatch *d) {
    EpochResult r = {0};
    const CudaKernels k = lesson_kernels();
    double loss_sum = 0.0;
    int n;
    while ((n = sampler_next(sampler, b->indices, b->size)) > 0) {
        Tensor host = tensor_rows(&b->images, n);
        dataset_gather(train, b->indices, n, &host, b->labels);
        lesson_upload_batch(d, host.data, b->labels, n); /* host -> GPU */
        Tensor images = device_images(d, n, train);

        Tensor logits = cnn_forward_cuda(model, &images, &k);
        Tensor dlogits = tensor_rows(&model->d_logits, n);
        tensor_fill(&dlogits, 0.0f); /* a kernel: the tensor is on the GPU */
        float loss = cuda_softmax_cross_entropy(&dlogits, &logits, d->labels);
        params_zero_grad(&model->params);
        cnn_backward_cuda(model, &images, &k);
        cuda_adam_step(opt, &model->params);

        loss_sum += (double)loss * n;
        r.examples += n;
        progress("  gpu: %d/%d images", r.examples, train->count);
    }
    progress_clear();
    gpu_sync(); /* kernels run asynchronously: the epoch ends when the GPU is done */
    r.loss = r.examples ? loss_sum / r.examples : 0.0;
    return r;
}

EpochResult evaluate_gpu(Cnn *model, const Dataset *test, Batch *b, DeviceBatch *d) {
    EpochResult r = {0};
    const CudaKernels k = lesson_kernels();
    double loss_sum = 0.0;
    int correct = 0;
    Tensor host_logits = tensor_zeros(2, b->size, model->classes);
    for (int start = 0; start < test->count; start += b->size) {
        int n = test->count - start < b->size ? test->count - start : b->size;
        for (int i = 0; i < n; i++) b->indices[i] = start + i;
        Tensor host = tensor_rows(&b->images, n);
        dataset_gather(test, b->indices, n, &host, b->labels);
        lesson_upload_batch(d, host.data, b->labels, n);
        Tensor images = device_images(d, n, test);
        Tensor logits = cnn_forward_cuda(model, &images, &k);
        loss_sum += (double)cuda_softmax_cross_entropy(NULL, &logits, d->labels) * n;
        Tensor h = tensor_rows(&host_logits, n);
        tensor_copy(&h, &logits); /* GPU -> host: count_correct runs on the CPU */
        correct += count_correct(&h, b->labels);
        r.examples += n;
    }
    tensor_free(&host_logits);
    r.loss = r.examples ? loss_sum / r.examples : 0.0;
    r.accuracy = r.examples ? (double)correct / r.examples : 0.0;
    return r;
}
#endif
