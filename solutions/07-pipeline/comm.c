/* TODO 7.2: activations forward, gradients back.
 *
 * Stage s receives each micro-batch's activations from stage s - 1 and sends its
 * output to stage s + 1; in the backward, the gradient of its output comes from
 * stage s + 1 and the gradient of its input goes to stage s - 1. The ranks are the
 * stages: p->stage is this rank. Each direction has a communicator of its own (the same
 * ranks): p->activations for activations, p->gradients for gradients. On GPUs each is
 * a CUDA stream, and an NCCL send holds its stream until the peer receives: with one
 * stream, a receive from one neighbour could queue behind a send to the other that
 * waits for it. Both sides know the shapes without being told: every boundary between
 * stages carries [micro-batch rows, d_model] floats, and the library allocated both
 * ends with that shape.
 *
 * Why the sends do not wait: in 1F1B's steady state stage s sends an activation to
 * s + 1 while s + 1 sends a gradient to s. Two blocking sends facing each other wait
 * for each other forever (MPI does not promise to buffer a large message). A
 * non-blocking send returns at once; the library waits for it before the buffer is
 * used again, and a receive waits: that wait is the bubble you will measure. */
#include "lesson.h"

DistRequest *lesson_send_activation(Pipeline *p, const Tensor *x) {
    return dist_send_start(p->activations, x, p->stage + 1);
}

void lesson_recv_activation(Pipeline *p, Tensor *x) {
    dist_recv(p->activations, x, p->stage - 1);
}

DistRequest *lesson_send_gradient(Pipeline *p, const Tensor *dx) {
    return dist_send_start(p->gradients, dx, p->stage - 1);
}

void lesson_recv_gradient(Pipeline *p, Tensor *dy) {
    dist_recv(p->gradients, dy, p->stage + 1);
}
