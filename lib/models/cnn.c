#include "cnn.h"

#include <math.h>

#include "core/check.h"
#include "layers/conv_pool_relu.h"

enum { C1 = 50, C2 = 75, KSIZE = 5, POOL = 2, HIDDEN = 50 };

/* PyTorch's default for Conv2d and Linear: kaiming_uniform(a = sqrt(5)) for the
 * weight, which is uniform in +-1/sqrt(fan_in), and the same bound for the bias. */
static void init_uniform(Param *w, Param *b, int fan_in, Rng *rng) {
    float bound = 1.0f / sqrtf((float)fan_in);
    for (int64_t i = 0; i < w->value.size; i++) w->value.data[i] = rng_uniform_range(rng, -bound, bound);
    for (int64_t i = 0; i < b->value.size; i++) b->value.data[i] = rng_uniform_range(rng, -bound, bound);
}

/* Every activation, then its gradient twin in the same order. */
enum { ACTIVATIONS = 9 };
static Tensor *const *all_buffers(Cnn *m, Tensor *out[2 * ACTIVATIONS]) {
    Tensor *list[2 * ACTIVATIONS] = {
        &m->conv1,   &m->pool1,   &m->relu1,   &m->conv2,   &m->pool2,   &m->relu2,
        &m->fc1,     &m->relu3,   &m->logits,  &m->d_conv1, &m->d_pool1, &m->d_relu1,
        &m->d_conv2, &m->d_pool2, &m->d_relu2, &m->d_fc1,   &m->d_relu3, &m->d_logits};
    for (int i = 0; i < 2 * ACTIVATIONS; i++) out[i] = list[i];
    return out;
}

void cnn_init(Cnn *m, int channels, int height, int width, int classes, int max_batch, Rng *rng) {
    *m = (Cnn){0};
    const int h1 = (height - KSIZE + 1) / POOL, w1 = (width - KSIZE + 1) / POOL;
    const int h2 = (h1 - KSIZE + 1) / POOL, w2 = (w1 - KSIZE + 1) / POOL;
    CHECK(h2 >= 1 && w2 >= 1, "images of %dx%d are too small for the CNN (at least 16x16)",
          height, width);
    const int B = max_batch, flat = C2 * h2 * w2;
    m->max_batch = B;
    m->channels = channels;
    m->height = height;
    m->width = width;
    m->classes = classes;
    m->device = DEVICE_CPU;
    m->layers = *layer_ops(DEVICE_CPU);

    m->conv1_w = params_add(&m->params, "conv1.weight", 4, (int[]){C1, channels, KSIZE, KSIZE});
    m->conv1_b = params_add(&m->params, "conv1.bias", 1, (int[]){C1});
    m->conv2_w = params_add(&m->params, "conv2.weight", 4, (int[]){C2, C1, KSIZE, KSIZE});
    m->conv2_b = params_add(&m->params, "conv2.bias", 1, (int[]){C2});
    m->fc1_w = params_add(&m->params, "fc1.weight", 2, (int[]){HIDDEN, flat});
    m->fc1_b = params_add(&m->params, "fc1.bias", 1, (int[]){HIDDEN});
    m->fc2_w = params_add(&m->params, "fc2.weight", 2, (int[]){classes, HIDDEN});
    m->fc2_b = params_add(&m->params, "fc2.bias", 1, (int[]){classes});
    params_allocate(&m->params);
    init_uniform(m->conv1_w, m->conv1_b, channels * KSIZE * KSIZE, rng);
    init_uniform(m->conv2_w, m->conv2_b, C1 * KSIZE * KSIZE, rng);
    init_uniform(m->fc1_w, m->fc1_b, flat, rng);
    init_uniform(m->fc2_w, m->fc2_b, HIDDEN, rng);

    m->conv1 = tensor_zeros(4, B, C1, height - KSIZE + 1, width - KSIZE + 1);
    m->pool1 = tensor_zeros(4, B, C1, h1, w1);
    m->relu1 = tensor_zeros_like(&m->pool1);
    m->conv2 = tensor_zeros(4, B, C2, h1 - KSIZE + 1, w1 - KSIZE + 1);
    m->pool2 = tensor_zeros(4, B, C2, h2, w2);
    m->relu2 = tensor_zeros_like(&m->pool2);
    m->fc1 = tensor_zeros(2, B, HIDDEN);
    m->relu3 = tensor_zeros_like(&m->fc1);
    m->logits = tensor_zeros(2, B, classes);
    Tensor *buf[2 * ACTIVATIONS];
    all_buffers(m, buf);
    for (int i = 0; i < ACTIVATIONS; i++) *buf[ACTIVATIONS + i] = tensor_zeros_like(buf[i]);
    m->pool1_arg = device_alloc(DEVICE_CPU, (size_t)m->pool1.size * sizeof(int));
    m->pool2_arg = device_alloc(DEVICE_CPU, (size_t)m->pool2.size * sizeof(int));
}

void cnn_to_device(Cnn *m, Device device) {
    if (m->device == device) return;
    params_to_device(&m->params, device);
    Tensor *buf[2 * ACTIVATIONS];
    all_buffers(m, buf);
    for (int i = 0; i < 2 * ACTIVATIONS; i++) {
        Tensor t = tensor_to(buf[i], device);
        tensor_free(buf[i]);
        *buf[i] = t;
    }
    device_free(m->device, m->pool1_arg);
    device_free(m->device, m->pool2_arg);
    m->pool1_arg = device_alloc(device, (size_t)m->pool1.size * sizeof(int));
    m->pool2_arg = device_alloc(device, (size_t)m->pool2.size * sizeof(int));
    m->device = device;
    m->layers = *layer_ops(device);
}

void cnn_free(Cnn *m) {
    params_free(&m->params);
    Tensor *buf[2 * ACTIVATIONS];
    all_buffers(m, buf);
    for (int i = 0; i < 2 * ACTIVATIONS; i++) tensor_free(buf[i]);
    device_free(m->device, m->pool1_arg);
    device_free(m->device, m->pool2_arg);
    m->pool1_arg = m->pool2_arg = NULL;
}

/* The first n rows of every activation, as 2-D where the linear layers need it. */
typedef struct {
    Tensor conv1, pool1, relu1, conv2, pool2, relu2, flat, fc1, relu3, logits;
} Rows;

/* t: the nine activations (or their gradients) in all_buffers' order */
static Rows rows_of(Tensor *const *t, int n) {
    Rows r = {tensor_rows(t[0], n), tensor_rows(t[1], n), tensor_rows(t[2], n),
              tensor_rows(t[3], n), tensor_rows(t[4], n), tensor_rows(t[5], n),
              {0},                  tensor_rows(t[6], n), tensor_rows(t[7], n),
              tensor_rows(t[8], n)};
    r.flat = tensor_view(&r.relu2, 2, n, (int)(r.relu2.size / n));
    return r;
}

static Rows activations(Cnn *m, int n) {
    Tensor *buf[2 * ACTIVATIONS];
    return rows_of(all_buffers(m, buf), n);
}

static Rows gradients(Cnn *m, int n) {
    Tensor *buf[2 * ACTIVATIONS];
    return rows_of(all_buffers(m, buf) + ACTIVATIONS, n);
}

/* Whether the first block's forward (or backward) runs fused (layers/conv_pool_relu.h):
 * on the CPU, with the library's own layers in all three of its table entries. Any
 * other function there (a lesson's, a timing wrapper) runs as written. */
static bool first_block_fused(const Cnn *m, bool backward) {
    const LayerOps *l = &m->layers, *cpu = layer_ops(DEVICE_CPU);
    if (m->device != DEVICE_CPU) return false;
    if (backward)
        return l->conv2d_backward == cpu->conv2d_backward &&
               l->maxpool2d_backward == cpu->maxpool2d_backward &&
               l->relu_backward == cpu->relu_backward;
    return l->conv2d_forward == cpu->conv2d_forward &&
           l->maxpool2d_forward == cpu->maxpool2d_forward && l->relu_forward == cpu->relu_forward;
}

Tensor cnn_forward(Cnn *m, const Tensor *images) {
    CHECK_SHAPE(images, -1, m->channels, m->height, m->width);
    CHECK(images->device == m->device, "images on the %s, the model on the %s: copy the batch "
          "with tensor_copy (or move the model with cnn_to_device)", device_name(images->device),
          device_name(m->device));
    const int n = images->shape[0];
    CHECK(n <= m->max_batch, "batch of %d images, the model was built for %d", n, m->max_batch);
    const LayerOps *l = &m->layers;
    Rows a = activations(m, n);
    if (first_block_fused(m, false)) {
        conv_pool_relu_forward(&a.pool1, m->pool1_arg, &a.relu1, images, &m->conv1_w->value,
                               &m->conv1_b->value);
    } else {
        l->conv2d_forward(&a.conv1, images, &m->conv1_w->value, &m->conv1_b->value, 1, 0);
        l->maxpool2d_forward(&a.pool1, m->pool1_arg, &a.conv1, POOL, POOL);
        l->relu_forward(&a.relu1, &a.pool1);
    }
    l->conv2d_forward(&a.conv2, &a.relu1, &m->conv2_w->value, &m->conv2_b->value, 1, 0);
    l->maxpool2d_forward(&a.pool2, m->pool2_arg, &a.conv2, POOL, POOL);
    l->relu_forward(&a.relu2, &a.pool2);
    l->linear_forward(&a.fc1, &a.flat, &m->fc1_w->value, &m->fc1_b->value);
    l->relu_forward(&a.relu3, &a.fc1);
    l->linear_forward(&a.logits, &a.relu3, &m->fc2_w->value, &m->fc2_b->value);
    return a.logits;
}

void cnn_backward(Cnn *m, const Tensor *images) {
    const int n = images->shape[0];
    const LayerOps *l = &m->layers;
    Rows a = activations(m, n), d = gradients(m, n);
    const bool fused = first_block_fused(m, true);
    /* Backward passes add into their gradient buffers: clear all but d_logits,
     * which the loss has just written (and the fused first block's, never used). */
    Tensor *clear[] = {&d.relu1, &d.conv2, &d.pool2, &d.relu2, &d.fc1, &d.relu3, &d.conv1, &d.pool1};
    const size_t nclear = sizeof clear / sizeof clear[0] - (fused ? 2 : 0);
    for (size_t i = 0; i < nclear; i++) tensor_fill(clear[i], 0.0f);

    const ParamList *p = &m->params; /* each layer done: its gradients are final */
    l->linear_backward(&d.relu3, &m->fc2_w->grad, &m->fc2_b->grad, &d.logits, &a.relu3, &m->fc2_w->value);
    params_grad_ready(p, m->fc2_w), params_grad_ready(p, m->fc2_b);
    l->relu_backward(&d.fc1, &d.relu3, &a.relu3);
    l->linear_backward(&d.flat, &m->fc1_w->grad, &m->fc1_b->grad, &d.fc1, &a.flat, &m->fc1_w->value);
    params_grad_ready(p, m->fc1_w), params_grad_ready(p, m->fc1_b);
    l->relu_backward(&d.pool2, &d.relu2, &a.relu2);
    l->maxpool2d_backward(&d.conv2, &d.pool2, m->pool2_arg);
    l->conv2d_backward(&d.relu1, &m->conv2_w->grad, &m->conv2_b->grad, &d.conv2, &a.relu1,
                       &m->conv2_w->value, 1, 0);
    params_grad_ready(p, m->conv2_w), params_grad_ready(p, m->conv2_b);
    if (fused) {
        conv_pool_relu_backward(&m->conv1_w->grad, &m->conv1_b->grad, &d.relu1, &a.relu1,
                                m->pool1_arg, images, &m->conv1_w->value);
    } else {
        l->relu_backward(&d.pool1, &d.relu1, &a.relu1);
        l->maxpool2d_backward(&d.conv1, &d.pool1, m->pool1_arg);
        /* the images need no gradient: NULL skips the first layer's input gradient */
        l->conv2d_backward(NULL, &m->conv1_w->grad, &m->conv1_b->grad, &d.conv1, images,
                           &m->conv1_w->value, 1, 0);
    }
    params_grad_ready(p, m->conv1_w), params_grad_ready(p, m->conv1_b);
}

static double conv_macs(const Param *w, const Tensor *out) {
    /* per image: every output value is a dot product of length C*KH*KW */
    return (double)(out->size / out->shape[0]) * (double)(w->value.size / w->value.shape[0]);
}

double cnn_forward_flops(const Cnn *m) {
    double macs = conv_macs(m->conv1_w, &m->conv1) + conv_macs(m->conv2_w, &m->conv2) +
                  (double)m->fc1_w->value.size + (double)m->fc2_w->value.size;
    return 2.0 * macs;
}

double cnn_train_flops(const Cnn *m) {
    /* backward: weight gradients cost one forward each; input gradients one more
     * forward for every layer but the first (whose input is the image). */
    double first = 2.0 * conv_macs(m->conv1_w, &m->conv1);
    return 3.0 * cnn_forward_flops(m) - first;
}
