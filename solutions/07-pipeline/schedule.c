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
    for (int i = 0; i < p->micro; i++) pipeline_forward(p, i);
    for (int i = 0; i < p->micro; i++) pipeline_backward(p, i);
}

void lesson_run_1f1b(Pipeline *p) {
    const int left = p->stages - 1 - p->stage;
    const int warmup = left < p->micro ? left : p->micro;
    for (int i = 0; i < warmup; i++) pipeline_forward(p, i);
    for (int i = 0; i < p->micro - warmup; i++) {
        pipeline_forward(p, i + warmup);
        pipeline_backward(p, i);
    }
    for (int i = p->micro - warmup; i < p->micro; i++) pipeline_backward(p, i);
}
