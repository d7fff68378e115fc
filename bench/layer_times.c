#include "layer_times.h"

#include <stdio.h>
#include <string.h>

#include "core/timer.h"

enum { MAX_SLOTS = 32 };

typedef struct {
    const char *op; /* the layer table's entry */
    int nth;        /* its n-th call in a step */
    double seconds; /* summed over the counted steps */
} Slot;

static LayerOps g_real;
static Slot g_slots[MAX_SLOTS];
static int g_nslots, g_counted, g_steps, g_wrapped; /* steps count once wrapped */
/* calls of each op so far in this step */
static const char *g_ops[MAX_SLOTS];
static int g_op_calls[MAX_SLOTS], g_nops;

static int next_call(const char *op) {
    for (int i = 0; i < g_nops; i++)
        if (strcmp(g_ops[i], op) == 0) return ++g_op_calls[i];
    if (g_nops == MAX_SLOTS) return 0;
    g_ops[g_nops] = op;
    return g_op_calls[g_nops++] = 1;
}

static void record(const char *op, double seconds) {
    if (!g_counted) return;
    const int nth = next_call(op);
    for (int i = 0; i < g_nslots; i++)
        if (g_slots[i].nth == nth && strcmp(g_slots[i].op, op) == 0) {
            g_slots[i].seconds += seconds;
            return;
        }
    if (g_nslots < MAX_SLOTS) g_slots[g_nslots++] = (Slot){op, nth, seconds};
}

#define TIMED(op, call)                        \
    do {                                       \
        double t0_ = now_seconds();            \
        call;                                  \
        record(#op, now_seconds() - t0_);      \
    } while (0)

static void conv2d_forward_t(Tensor *out, const Tensor *in, const Tensor *w, const Tensor *b,
                             int stride, int pad) {
    TIMED(conv2d_forward, g_real.conv2d_forward(out, in, w, b, stride, pad));
}
static void conv2d_backward_t(Tensor *din, Tensor *dw, Tensor *db, const Tensor *dout,
                              const Tensor *in, const Tensor *w, int stride, int pad) {
    TIMED(conv2d_backward, g_real.conv2d_backward(din, dw, db, dout, in, w, stride, pad));
}
static void maxpool2d_forward_t(Tensor *out, int *arg, const Tensor *in, int kernel, int stride) {
    TIMED(maxpool2d_forward, g_real.maxpool2d_forward(out, arg, in, kernel, stride));
}
static void maxpool2d_backward_t(Tensor *din, const Tensor *dout, const int *arg) {
    TIMED(maxpool2d_backward, g_real.maxpool2d_backward(din, dout, arg));
}
static void relu_forward_t(Tensor *out, const Tensor *in) {
    TIMED(relu_forward, g_real.relu_forward(out, in));
}
static void relu_backward_t(Tensor *din, const Tensor *dout, const Tensor *out) {
    TIMED(relu_backward, g_real.relu_backward(din, dout, out));
}
static void linear_forward_t(Tensor *out, const Tensor *in, const Tensor *w, const Tensor *b) {
    TIMED(linear_forward, g_real.linear_forward(out, in, w, b));
}
static void linear_backward_t(Tensor *din, Tensor *dw, Tensor *db, const Tensor *dout,
                              const Tensor *in, const Tensor *w) {
    TIMED(linear_backward, g_real.linear_backward(din, dw, db, dout, in, w));
}

void layer_times_wrap(LayerOps *ops) {
    g_real = *ops;
    g_wrapped = 1;
    ops->conv2d_forward = conv2d_forward_t;
    ops->conv2d_backward = conv2d_backward_t;
    ops->maxpool2d_forward = maxpool2d_forward_t;
    ops->maxpool2d_backward = maxpool2d_backward_t;
    ops->relu_forward = relu_forward_t;
    ops->relu_backward = relu_backward_t;
    ops->linear_forward = linear_forward_t;
    ops->linear_backward = linear_backward_t;
}

void layer_times_step(int counted) {
    memset(g_op_calls, 0, sizeof g_op_calls);
    g_counted = counted && g_wrapped;
    g_steps += g_counted;
}

void layer_times_print(double step_ms) {
    double sum = 0;
    printf("  where a step goes (mean of %d steps; calls in the order the model makes them):\n",
           g_steps);
    for (int i = 0; i < g_nslots; i++) {
        double ms = 1e3 * g_slots[i].seconds / (g_steps ? g_steps : 1);
        sum += ms;
        printf("    %-20s #%d %8.3f ms %5.1f%%\n", g_slots[i].op, g_slots[i].nth, ms,
               100.0 * ms / step_ms);
    }
    printf("    %-23s %8.3f ms %5.1f%%  (loss, clearing gradients, Adam)\n", "the rest",
           step_ms - sum, 100.0 * (step_ms - sum) / step_ms);
}
