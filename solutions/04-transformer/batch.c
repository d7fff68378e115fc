/* Given: the tokens of a batch in the model's layout and memory, and the optimiser.
 *
 * get_batch gives [seq_len, B]: row t holds position t of all B sequences (PyTorch's
 * [T, B] layout). The library's model wants each sequence's tokens together, row
 * b*T + t (batch-major), in the memory of its device: token_batch_load transposes on
 * the host and copies once per step (2 x B x T ints: 5.6 kB for the tutorial's). */
#include <string.h>

#include "core/trace.h"
#include "lesson.h"

void token_batch_init(TokenBatch *tb, int batch_size, int bptt, Device device) {
    memset(tb, 0, sizeof *tb);
    tb->device = device;
    tb->capacity = batch_size * bptt;
    const size_t bytes = (size_t)tb->capacity * sizeof(int);
    tb->host_tokens = xmalloc(bytes);
    tb->host_targets = xmalloc(bytes);
    if (device == DEVICE_CPU) {
        tb->tokens = tb->host_tokens, tb->targets = tb->host_targets;
    } else {
        tb->tokens = device_alloc(device, bytes);
        tb->targets = device_alloc(device, bytes);
    }
}

void token_batch_free(TokenBatch *tb) {
    if (tb->device != DEVICE_CPU) {
        device_free(tb->device, tb->tokens);
        device_free(tb->device, tb->targets);
    }
    xfree(tb->host_tokens);
    xfree(tb->host_targets);
    memset(tb, 0, sizeof *tb);
}

void token_batch_load(TokenBatch *tb, const TextBatch *b) {
    const int T = b->seq_len, B = b->cols;
    CHECK(T * B <= tb->capacity, "a batch of %d x %d tokens does not fit the %d of the buffers",
          T, B, tb->capacity);
    trace_begin("load batch", TRACE_DATA); /* with --trace (core/trace.h) */
    for (int t = 0; t < T; t++)
        for (int s = 0; s < B; s++) { /* [T, B] -> row s*T + t */
            tb->host_tokens[s * T + t] = b->input[t * B + s];
            tb->host_targets[s * T + t] = b->target[t * B + s];
        }
    if (tb->device != DEVICE_CPU) {
        const size_t bytes = (size_t)T * B * sizeof(int);
        device_copy(tb->tokens, tb->device, tb->host_tokens, DEVICE_CPU, bytes);
        device_copy(tb->targets, tb->device, tb->host_targets, DEVICE_CPU, bytes);
    }
    trace_end("load batch");
}

void optimizer_init(Optimizer *o, const ParamList *params, bool adamw, float lr, float weight_decay) {
    memset(o, 0, sizeof *o);
    o->adamw = adamw;
    o->base_lr = lr;
    if (adamw)
        adamw_init(&o->adam, params, lr, weight_decay);
    else
        sgd_init(&o->sgd, params, lr, 0.0f, 0.0f); /* the tutorial's plain SGD */
}

void optimizer_set_lr(Optimizer *o, float lr) {
    if (o->adamw) o->adam.lr = lr;
    else o->sgd.lr = lr;
}

float optimizer_lr(const Optimizer *o) { return o->adamw ? o->adam.lr : o->sgd.lr; }

void optimizer_step(Optimizer *o, ParamList *params) {
    if (!o->mp || mixed_precision_should_step(o->mp)) { /* fp16: not when a gradient overflowed */
        if (o->adamw) adam_step(&o->adam, params);
        else sgd_step(&o->sgd, params);
    }
    if (o->mp) mixed_precision_step_done(o->mp); /* the working copy from the master; the scale */
}

void optimizer_free(Optimizer *o) {
    if (o->adamw) adam_free(&o->adam);
    else sgd_free(&o->sgd);
}
