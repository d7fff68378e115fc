/* The simple CNN on the GPU: lib/models/cnn.c's forward and backward, layer for
 * layer, with the CUDA layers. */
#ifdef HAVE_CUDA
#include "cnn_cuda.h"

#include "core/check.h"
#include "gpu.h"

enum { POOL = 2 };

static void move(Tensor *t) {
    Tensor d = tensor_to(t, DEVICE_CUDA);
    tensor_free(t);
    *t = d;
}

static int *move_ints(int *host, int64_t n) {
    int *d = gpu_malloc((size_t)n * sizeof(int));
    gpu_copy_to_device(d, host, (size_t)n * sizeof(int));
    xfree(host);
    return d;
}

/* Every activation and its gradient twin, for walking them all. */
static int activation_list(Cnn *m, Tensor **all) {
    Tensor *list[] = {&m->conv1,   &m->pool1,   &m->relu1,   &m->conv2,   &m->pool2,   &m->relu2,
                      &m->fc1,     &m->relu3,   &m->logits,  &m->d_conv1, &m->d_pool1, &m->d_relu1,
                      &m->d_conv2, &m->d_pool2, &m->d_relu2, &m->d_fc1,   &m->d_relu3, &m->d_logits};
    int n = (int)(sizeof list / sizeof list[0]);
    for (int i = 0; i < n; i++) all[i] = list[i];
    return n;
}

void cnn_to_device(Cnn *m) {
    CHECK(m->conv1.device == DEVICE_CPU, "cnn_to_device: the model is already on the GPU");
    for (int i = 0; i < m->params.count; i++) {
        move(&m->params.items[i].value);
        move(&m->params.items[i].grad);
    }
    Tensor *all[32];
    int n = activation_list(m, all);
    for (int i = 0; i < n; i++) move(all[i]);
    m->pool1_arg = move_ints(m->pool1_arg, m->pool1.size);
    m->pool2_arg = move_ints(m->pool2_arg, m->pool2.size);
}

void cnn_free_cuda(Cnn *m) {
    params_free(&m->params);
    Tensor *all[32];
    int n = activation_list(m, all);
    for (int i = 0; i < n; i++) tensor_free(all[i]);
    gpu_free(m->pool1_arg);
    gpu_free(m->pool2_arg);
    m->pool1_arg = m->pool2_arg = NULL;
}

/* The first n rows of every activation (or gradient), flat where fc1 needs it. */
typedef struct {
    Tensor conv1, pool1, relu1, conv2, pool2, relu2, flat, fc1, relu3, logits;
} Rows;

static Rows rows_of(Tensor *t[9], int n) {
    Rows r = {tensor_rows(t[0], n), tensor_rows(t[1], n), tensor_rows(t[2], n),
              tensor_rows(t[3], n), tensor_rows(t[4], n), tensor_rows(t[5], n),
              {0},                  tensor_rows(t[6], n), tensor_rows(t[7], n),
              tensor_rows(t[8], n)};
    r.flat = tensor_view(&r.relu2, 2, n, (int)(r.relu2.size / n));
    return r;
}

static Rows activations(Cnn *m, int n) {
    Tensor *all[32];
    activation_list(m, all);
    return rows_of(all, n);
}

static Rows gradients(Cnn *m, int n) {
    Tensor *all[32];
    activation_list(m, all);
    return rows_of(all + 9, n);
}

static void relu_fw(const CudaKernels *k, Tensor *out, const Tensor *in) {
    CHECK(out->size == in->size, "relu: sizes %lld, %lld", (long long)out->size, (long long)in->size);
    k->relu_forward(out->data, in->data, in->size);
}

static void relu_bw(const CudaKernels *k, Tensor *din, const Tensor *dout, const Tensor *out) {
    CHECK(din->size == dout->size && out->size == dout->size, "relu backward: sizes differ");
    k->relu_backward(din->data, dout->data, out->data, dout->size);
}

Tensor cnn_forward_cuda(Cnn *m, const Tensor *images, const CudaKernels *k) {
    CudaKernels lib = cuda_library_kernels();
    if (!k) k = &lib;
    CHECK_SHAPE(images, -1, m->channels, m->height, m->width);
    CHECK(images->device == DEVICE_CUDA && m->conv1.device == DEVICE_CUDA,
          "cnn_forward_cuda: images (%s) and model (%s) must be on the GPU (cnn_to_device)",
          device_name(images->device), device_name(m->conv1.device));
    const int n = images->shape[0];
    CHECK(n <= m->max_batch, "batch of %d images, the model was built for %d", n, m->max_batch);
    Rows a = activations(m, n);
    cuda_conv2d_forward_with(k, &a.conv1, images, &m->conv1_w->value, &m->conv1_b->value, 1, 0);
    cuda_maxpool2d_forward(&a.pool1, m->pool1_arg, &a.conv1, POOL, POOL);
    relu_fw(k, &a.relu1, &a.pool1);
    cuda_conv2d_forward_with(k, &a.conv2, &a.relu1, &m->conv2_w->value, &m->conv2_b->value, 1, 0);
    cuda_maxpool2d_forward(&a.pool2, m->pool2_arg, &a.conv2, POOL, POOL);
    relu_fw(k, &a.relu2, &a.pool2);
    cuda_linear_forward_with(k, &a.fc1, &a.flat, &m->fc1_w->value, &m->fc1_b->value);
    relu_fw(k, &a.relu3, &a.fc1);
    cuda_linear_forward_with(k, &a.logits, &a.relu3, &m->fc2_w->value, &m->fc2_b->value);
    return a.logits;
}

void cnn_backward_cuda(Cnn *m, const Tensor *images, const CudaKernels *k) {
    CudaKernels lib = cuda_library_kernels();
    if (!k) k = &lib;
    const int n = images->shape[0];
    Rows a = activations(m, n), d = gradients(m, n);
    /* backward passes add: clear every activation gradient but d_logits (the loss's) */
    Tensor *clear[] = {&d.conv1, &d.pool1, &d.relu1, &d.conv2, &d.pool2, &d.relu2, &d.fc1, &d.relu3};
    for (size_t i = 0; i < sizeof clear / sizeof clear[0]; i++) tensor_fill(clear[i], 0.0f);

    cuda_linear_backward_with(k, &d.relu3, &m->fc2_w->grad, &m->fc2_b->grad, &d.logits, &a.relu3,
                              &m->fc2_w->value);
    relu_bw(k, &d.fc1, &d.relu3, &a.relu3);
    cuda_linear_backward_with(k, &d.flat, &m->fc1_w->grad, &m->fc1_b->grad, &d.fc1, &a.flat,
                              &m->fc1_w->value);
    relu_bw(k, &d.pool2, &d.relu2, &a.relu2);
    cuda_maxpool2d_backward(&d.conv2, &d.pool2, m->pool2_arg);
    cuda_conv2d_backward_with(k, &d.relu1, &m->conv2_w->grad, &m->conv2_b->grad, &d.conv2,
                              &a.relu1, &m->conv2_w->value, 1, 0);
    relu_bw(k, &d.pool1, &d.relu1, &a.relu1);
    cuda_maxpool2d_backward(&d.conv1, &d.pool1, m->pool1_arg);
    cuda_conv2d_backward_with(k, NULL, &m->conv1_w->grad, &m->conv1_b->grad, &d.conv1, images,
                              &m->conv1_w->value, 1, 0);
}
#endif
