/* TODO 2.5: the training loop on the GPU (built only where nvcc is: HAVE_CUDA).
 *
 * The loop is lesson 01's. What changes is where the data lives: the model, its
 * gradients and Adam's state stay on the GPU for the whole run; each batch is
 * gathered on the host and copied over (TODO 2.1); only the loss comes back. */
#ifdef HAVE_CUDA
#include "core/log.h"
#include "cuda/device.h"
#include "cuda/kernels.h"
#include "lesson.h"

/* Your kernels, in the places of the library's (given). */
static const CudaKernels LESSON_KERNELS = {lesson_relu_forward, lesson_relu_backward,
                                           lesson_im2col, lesson_gemm};

static void relu_forward(Tensor *out, const Tensor *in) {
    cuda_relu_forward_with(&LESSON_KERNELS, out, in);
}
static void relu_backward(Tensor *din, const Tensor *dout, const Tensor *out) {
    cuda_relu_backward_with(&LESSON_KERNELS, din, dout, out);
}
static void conv2d_forward(Tensor *out, const Tensor *in, const Tensor *weight, const Tensor *bias,
                           int stride, int pad) {
    cuda_conv2d_forward_with(&LESSON_KERNELS, out, in, weight, bias, stride, pad);
}
static void conv2d_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                            const Tensor *in, const Tensor *weight, int stride, int pad) {
    cuda_conv2d_backward_with(&LESSON_KERNELS, din, dweight, dbias, dout, in, weight, stride, pad);
}
static void linear_forward(Tensor *out, const Tensor *in, const Tensor *weight,
                           const Tensor *bias) {
    cuda_linear_forward_with(&LESSON_KERNELS, out, in, weight, bias);
}
static void linear_backward(Tensor *din, Tensor *dweight, Tensor *dbias, const Tensor *dout,
                            const Tensor *in, const Tensor *weight) {
    cuda_linear_backward_with(&LESSON_KERNELS, din, dweight, dbias, dout, in, weight);
}

LayerOps lesson_layers(void) {
    LayerOps l = *layer_ops(DEVICE_CUDA);
    l.relu_forward = relu_forward;
    l.relu_backward = relu_backward;
    l.conv2d_forward = conv2d_forward;
    l.conv2d_backward = conv2d_backward;
    l.linear_forward = linear_forward;
    l.linear_backward = linear_backward;
    return l;
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
#ifdef SOLUTION
    double loss_sum = 0.0;
    int n;
    while ((n = sampler_next(sampler, b->indices, b->size)) > 0) {
        Tensor host = tensor_rows(&b->images, n);
        dataset_gather(train, b->indices, n, &host, b->labels);
        lesson_upload_batch(d, host.data, b->labels, n); /* host -> GPU */
        Tensor images = device_images(d, n, train);

        Tensor logits = cnn_forward(model, &images); /* the model is on the GPU */
        Tensor dlogits = tensor_rows(&model->d_logits, n);
        tensor_fill(&dlogits, 0.0f); /* a kernel: the tensor is on the GPU */
        float loss = model->layers.softmax_cross_entropy(&dlogits, &logits, d->labels);
        params_zero_grad(&model->params);
        cnn_backward(model, &images);
        adam_step(opt, &model->params); /* on the GPU: one kernel over all parameters */

        loss_sum += (double)loss * n;
        r.examples += n;
        progress("  gpu: %d/%d images", r.examples, train->count);
    }
    progress_clear();
    cuda_sync(); /* kernels run asynchronously: the epoch ends when the GPU is done */
    r.loss = r.examples ? loss_sum / r.examples : 0.0;
#else
    /* TODO 2.5: lesson 01's loop (TODO 1.6), with each batch uploaded to the GPU:
     *   1. n = sampler_next(...); gather into host = tensor_rows(&b->images, n) and
     *      b->labels; lesson_upload_batch(d, host.data, b->labels, n);
     *      images = device_images(d, n, train);
     *   2. logits = cnn_forward(model, &images): the same function as on the CPU,
     *      which calls the layers of model->layers (lesson_layers(): yours);
     *   3. clear the first n rows of model->d_logits (tensor_fill works on the GPU),
     *      loss = model->layers.softmax_cross_entropy(&those rows, &logits, d->labels);
     *   4. params_zero_grad, cnn_backward(model, &images);
     *   5. adam_step(opt, &model->params) (it runs on the parameters' device).
     * After the loop, cuda_sync(): kernels run asynchronously, and the caller stops
     * its clock when this returns. Return the mean loss per example and the count. */
    (void)device_images;
    TODO_STOP("2.5");
#endif
    return r;
}

#endif
