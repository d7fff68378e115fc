/* TODOs 7.3 and 7.4: the order of the forwards and backwards on one stage.
 *
 * pipeline_forward(p, i) receives micro-batch i's activations (not on stage 0), runs
 * this stage's blocks and sends the output on (not on the last stage);
 * pipeline_backward(p, i) gets the gradient of the output (the last stage: from the
 * loss, TODO 7.5), runs the backward and sends the input's gradient back. Each keeps
 * micro-batch i's activations from its forward until its backward. Every stage runs
 * the same kind of loop; p->stage, p->stages and p->micro are all you need. */
#include "lesson.h"

void lesson_run_gpipe(Pipeline *p) {
#ifdef SOLUTION
    for (int i = 0; i < p->micro; i++) pipeline_forward(p, i);
    for (int i = 0; i < p->micro; i++) pipeline_backward(p, i);
#else
    /* TODO 7.3: GPipe (Huang et al., 2019; PyTorch's ScheduleGPipe): all m forwards,
     * micro-batch 0 first, then all m backwards in the same order. Every micro-batch's
     * activations are kept until the backwards start: memory grows with m. */
    TODO_STOP("7.3");
#endif
}

void lesson_run_1f1b(Pipeline *p) {
#ifdef SOLUTION
    const int left = p->stages - 1 - p->stage;
    const int warmup = left < p->micro ? left : p->micro;
    for (int i = 0; i < warmup; i++) pipeline_forward(p, i);
    for (int i = 0; i < p->micro - warmup; i++) {
        pipeline_forward(p, i + warmup);
        pipeline_backward(p, i);
    }
    for (int i = p->micro - warmup; i < p->micro; i++) pipeline_backward(p, i);
#else
    /* TODO 7.4: 1F1B (PipeDream-Flush, Narayanan et al., 2021; Megatron-LM's default):
     *   warm-up:   w = min(p - 1 - stage, m) forwards: micro-batches 0 .. w - 1
     *   steady:    for i = 0 .. m - w - 1: forward of i + w, then backward of i
     *   cool-down: backwards of m - w .. m - 1
     * The last stage has no warm-up: it goes back as soon as a micro-batch arrives.
     * Stage s never holds more than p - s micro-batches, whatever m is: the same
     * bubble as GPipe with far less activation memory. */
    TODO_STOP("7.4");
#endif
}
