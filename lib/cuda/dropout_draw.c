#include "cuda/dropout_draw.h"

#include "cuda/graph.h"
#include "layers/dropout.h"

DropoutDraw dropout_draw(float p, bool training, Rng *rng) {
    DropoutDraw d;
    d.active = dropout_active(p, training);
    d.key = 0;
    d.key_at = d.active ? cuda_graph_key(rng, &d.key) : NULL; /* draws the key */
    d.threshold = dropout_threshold(p);
    d.keep_scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
    return d;
}
