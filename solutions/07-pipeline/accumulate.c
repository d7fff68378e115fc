/* TODO 7.5: gradients accumulated over micro-batches.
 *
 * The unsplit model takes the mean cross-entropy over the whole batch's B x T tokens.
 * The pipeline sees the batch as m micro-batches of B/m sequences; each micro-batch's
 * loss is the mean over its own tokens. Equal sizes: the batch's mean is the mean of
 * the m micro-batch means, so each micro-batch's loss, and the gradient that flows
 * back from it, counts 1/m. The backward adds (+=) into the parameters' gradients,
 * which the library zeroes once per step: after the m backwards they hold the
 * gradient of the whole batch, and one optimiser step follows. p->dloss is float32
 * whatever --precision: a bf16 or fp16 run rounds it to 16 bits once, after this. */
#include "lesson.h"

float lesson_micro_loss_grad(Pipeline *p, int micro) {
    const float loss = pipeline_loss_grad(p, micro);
    tensor_scale(&p->dloss, 1.0f / (float)p->micro);
    return loss / (float)p->micro;
}
