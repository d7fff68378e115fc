#include "cuda/dropout_draw.h"

#include "layers/dropout.h"

DropoutDraw dropout_draw(float p, bool training, Rng *rng) {
    DropoutDraw d;
    d.active = dropout_active(p, training);
    d.key = d.active ? dropout_draw_key(rng) : 0;
    d.threshold = dropout_threshold(p);
    d.keep_scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
    return d;
}
