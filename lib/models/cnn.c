#include "cnn.h"

#include "core/check.h"
#include "models/conv_block.h"
#include "models/dense_block.h"

enum { C1 = 50, C2 = 75, KSIZE = 5, POOL = 2, HIDDEN = 50, BLOCKS = 4 };

void cnn_init(Cnn *m, int channels, int height, int width, int classes, int max_batch, Rng *rng) {
    *m = (Cnn){0};
    const int h1 = (height - KSIZE + 1) / POOL, w1 = (width - KSIZE + 1) / POOL;
    const int h2 = (h1 - KSIZE + 1) / POOL, w2 = (w1 - KSIZE + 1) / POOL;
    CHECK(h2 >= 1 && w2 >= 1, "images of %dx%d are too small for the CNN (at least 16x16)",
          height, width);
    m->max_batch = max_batch;
    m->channels = channels;
    m->height = height;
    m->width = width;
    m->classes = classes;
    m->device = DEVICE_CPU;
    m->layers = *layer_ops(DEVICE_CPU);
    BlockList *l = &m->blocks;
    blocks_init(l, &m->params, &m->layers, 0, BLOCKS, max_batch, 1);
    conv_block_add(l, "conv1", channels, height, width, C1, KSIZE, true);
    conv_block_add(l, "conv2", C1, h1, w1, C2, KSIZE, false);
    dense_block_add(l, "fc1", block_shape(3, C2, h2, w2), HIDDEN, true);
    dense_block_add(l, "fc2", block_shape(1, HIDDEN), classes, false);
    params_allocate(&m->params);
    for (int i = 0; i < l->count; i++) l->items[i].type->init(&l->items[i], rng); /* in order */
    blocks_allocate(l);
    m->d_logits = tensor_zeros(2, max_batch, classes);
}

void cnn_to_device(Cnn *m, Device device) {
    if (m->device == device) return;
    params_to_device(&m->params, device);
    blocks_to_device(&m->blocks, device);
    Tensor d = tensor_to(&m->d_logits, device);
    tensor_free(&m->d_logits);
    m->d_logits = d;
    m->device = device;
    m->layers = *layer_ops(device);
}

void cnn_free(Cnn *m) {
    blocks_free(&m->blocks);
    params_free(&m->params);
    tensor_free(&m->d_logits);
}

Tensor cnn_forward(Cnn *m, const Tensor *images) {
    CHECK_SHAPE(images, -1, m->channels, m->height, m->width);
    CHECK(images->device == m->device, "images on the %s, the model on the %s: copy the batch "
          "with tensor_copy (or move the model with cnn_to_device)", device_name(images->device),
          device_name(m->device));
    const int n = images->shape[0];
    CHECK(n <= m->max_batch, "batch of %d images, the model was built for %d", n, m->max_batch);
    blocks_set_batch(&m->blocks, n, 1);
    return *blocks_forward(&m->blocks, &m->blocks.acts, 0, BLOCKS, NULL, images);
}

void cnn_backward(Cnn *m, const Tensor *images) {
    const Tensor dlogits = tensor_rows(&m->d_logits, images->shape[0]);
    /* the images need no gradient: din NULL */
    blocks_backward(&m->blocks, &m->blocks.acts, 0, BLOCKS, &dlogits, images, NULL);
}

double cnn_forward_flops(const Cnn *m) {
    double costs[BLOCKS], total = 0;
    blocks_costs(&m->blocks, 1, costs);
    for (int k = 0; k < BLOCKS; k++) total += costs[k];
    return total;
}

double cnn_train_flops(const Cnn *m) {
    /* backward: weight gradients cost one forward each; input gradients one more
     * forward for every block but the first (whose input is the image). */
    double costs[BLOCKS];
    blocks_costs(&m->blocks, 1, costs);
    return 3.0 * cnn_forward_flops(m) - costs[0];
}
