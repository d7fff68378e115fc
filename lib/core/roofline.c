#include "core/roofline.h"

#include "core/check.h"

LayerCost roofline_layer_cost(const LayerShape *s) {
    const double N = (double)s->rows, s_b = (double)dtype_size(s->dtype);
    CHECK(s->rows > 0 && s->in > 0, "a layer of %lld rows, %lld wide", (long long)s->rows,
          (long long)s->in);
    switch (s->kind) {
    case LAYER_LINEAR: {
        const double K = (double)s->in, M = (double)s->out;
        CHECK(s->out > 0, "a linear layer with %lld outputs", (long long)s->out);
        return (LayerCost){2 * N * K * M, s_b * (N * K + M * K + M + N * M)};
    }
    case LAYER_LAYERNORM: {
        const double D = (double)s->in;
        return (LayerCost){8 * N * D, s_b * (2 * N * D + 2 * D) + 4.0 * 2 * N};
    }
    case LAYER_ATTENTION: {
        const double D = (double)s->in, T = (double)s->seq, H = (double)s->heads;
        CHECK(s->seq > 0 && s->heads > 0 && s->rows % s->seq == 0 && s->in % s->heads == 0,
              "attention of %lld rows, %lld wide, sequences of %lld, %lld heads", (long long)s->rows,
              (long long)s->in, (long long)s->seq, (long long)s->heads);
        const double B = N / T;
        return (LayerCost){2 * N * D * (T + 1), s_b * (3 * N * D + N * D) + 4.0 * B * H * T * T};
    }
    case LAYER_SOFTMAX_XENT: {
        const double V = (double)s->in;
        return (LayerCost){5 * N * V, s_b * 2 * N * V + 4.0 * N};
    }
    case LAYER_EMBEDDING: {
        const double D = (double)s->in;
        return (LayerCost){N * D, 4.0 * N + s_b * 2 * N * D};
    }
    }
    die_at(__FILE__, __LINE__, "unknown layer kind %d", (int)s->kind);
}

RooflinePoint roofline_point(LayerCost c, double seconds, const MachineRoof *m) {
    CHECK(seconds > 0 && c.bytes > 0 && m->peak_gflops > 0 && m->bandwidth_gbs > 0,
          "a roofline point of %g FLOP, %g bytes in %g s on %g GFLOP/s, %g GB/s", c.flop, c.bytes,
          seconds, m->peak_gflops, m->bandwidth_gbs);
    RooflinePoint p;
    p.intensity = c.flop / c.bytes;
    p.gflops = c.flop / seconds / 1e9;
    const double slope = m->bandwidth_gbs * p.intensity; /* GB/s x FLOP/B = GFLOP/s */
    p.roof_gflops = slope < m->peak_gflops ? slope : m->peak_gflops;
    p.pct_of_roof = 100.0 * p.gflops / p.roof_gflops;
    p.bound = p.intensity < machine_ridge(m) ? ROOF_MEMORY : ROOF_COMPUTE;
    return p;
}

double roofline_mfu(double forward_flop_per_token, double tokens, double step_seconds,
                    double peak_gflops) {
    CHECK(step_seconds > 0 && peak_gflops > 0, "MFU of a step of %g s on a peak of %g GFLOP/s",
          step_seconds, peak_gflops);
    return 3.0 * forward_flop_per_token * tokens / step_seconds / (peak_gflops * 1e9);
}

const char *roofline_kind_name(LayerKind kind) {
    switch (kind) {
    case LAYER_LINEAR: return "linear";
    case LAYER_LAYERNORM: return "layer norm";
    case LAYER_ATTENTION: return "attention";
    case LAYER_SOFTMAX_XENT: return "softmax + cross-entropy";
    case LAYER_EMBEDDING: return "embedding";
    }
    return "?";
}

const char *roofline_bound_name(RooflineBound bound) {
    return bound == ROOF_MEMORY ? "memory" : "compute";
}
