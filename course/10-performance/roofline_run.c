/* Given: the program's --roofline mode.
 *
 *   train --roofline [--threads 2] [--metrics roofline.jsonl] [--device cuda]
 *   make plot METRICS=roofline.jsonl                  (kind=roofline, log-log)
 *
 * Measures the machine's two roofs on the run's threads (core/machine.h: the FMA peak
 * and a STREAM triad; on --device cuda the GPU's float32 peak and its device-to-device
 * copy bandwidth), then times each layer kind of lesson 04's model alone, forward only,
 * at the model's shapes (best of --repeats), and places each on the roofline with your
 * TODOs 10.4 (linear, layer norm) and 10.5. The layers are timed alone, not taken from a
 * trace: a trace's ranges are whole blocks (an encoder layer is several of these).
 *
 * On the CPU the peak is measured before the layers and again after each one, and the
 * highest counts: other work on the machine slows a measurement down, never up, so the
 * best is nearest the truth (a layer timed at its best against a peak measured at its
 * worst would beat the roof). A compute-bound layer still above its roof is said to
 * mean just that, a busy machine; a memory-bound one above it, a cache. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/args.h"
#include "core/check.h"
#include "core/gpu_peak.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "core/timer.h"
#include "cuda/device.h"
#include "layers/layer_ops.h"
#include "layers/layernorm.h"
#include "lesson.h"
#include "train/lm_options.h"

typedef struct {
    LmOptions lm;
    const char *model, *device, *metrics;
    int roofline, batch_size, vocab, threads, repeats;
} RooflineOptions;

/* The buffers of one layer's call, on the device; the layer's call itself. */
typedef struct {
    const LayerOps *ops;
    Device device;
    Tensor in, out, weight, bias, extra; /* by kind: see make_inputs */
    int *tokens;                         /* [N] in the device's memory */
    Rng rng;
} Call;

typedef struct {
    const char *name;
    LayerShape shape;
} Layer;

static void run_call(const Layer *l, Call *c) {
    const LayerOps *o = c->ops;
    switch (l->shape.kind) {
    case LAYER_LINEAR: o->linear_forward(&c->out, &c->in, &c->weight, &c->bias); break;
    case LAYER_LAYERNORM: /* weight, bias: gamma, beta; extra: mean and rstd, [2, N] */
    {
        Tensor mean = tensor_range(&c->extra, 0, l->shape.rows),
               rstd = tensor_range(&c->extra, l->shape.rows, l->shape.rows);
        o->layernorm_forward(&c->out, &mean, &rstd, &c->in, &c->weight, &c->bias, LAYERNORM_EPS);
        break;
    }
    case LAYER_ATTENTION: /* in: qkv [N, 3D]; extra: probs [B, H, T, T] */
        o->attention_forward(&c->out, &c->extra, NULL, &c->in, 0.0f, false, &c->rng);
        break;
    case LAYER_SOFTMAX_XENT: /* in: logits [N, V]; out: dlogits [N, V]; tokens: labels */
        o->softmax_cross_entropy_fast(&c->out, &c->in, c->tokens, 1.0f);
        break;
    case LAYER_EMBEDDING: /* weight: the table [V, D] */
        o->embedding_forward(&c->out, c->tokens, &c->weight, sqrtf((float)l->shape.in));
        break;
    }
}

/* Uniform values in [-1, 1) made on the host, then moved: [rows, cols], or [cols] when
 * rows is 0. */
static Tensor random_on(Device device, Rng *rng, int64_t rows, int64_t cols) {
    Tensor h = rows > 0 ? tensor_zeros(2, (int)rows, (int)cols) : tensor_zeros(1, (int)cols);
    for (int64_t i = 0; i < h.size; i++) h.data[i] = rng_uniform_range(rng, -1.0f, 1.0f);
    if (device == DEVICE_CPU) return h;
    Tensor d = tensor_to(&h, device);
    tensor_free(&h);
    return d;
}

/* The call's buffers (c's tensors all empty before), uniform values where read. */
static void make_inputs(const Layer *l, Call *c, int64_t vocab) {
    const LayerShape *s = &l->shape;
    const int64_t N = s->rows, D = s->in;
    const Device dev = c->device;
    Rng *r = &c->rng;
    switch (s->kind) {
    case LAYER_LINEAR:
        c->in = random_on(dev, r, N, D);
        c->weight = random_on(dev, r, s->out, D);
        c->bias = random_on(dev, r, 0, s->out);
        c->out = tensor_zeros_on(dev, 2, (int)N, (int)s->out);
        break;
    case LAYER_LAYERNORM:
        c->in = random_on(dev, r, N, D);
        c->weight = random_on(dev, r, 0, D); /* gamma */
        c->bias = random_on(dev, r, 0, D);   /* beta */
        c->out = tensor_zeros_on(dev, 2, (int)N, (int)D);
        c->extra = tensor_zeros_on(dev, 1, (int)(2 * N));
        break;
    case LAYER_ATTENTION:
        c->in = random_on(dev, r, N, 3 * D);
        c->out = tensor_zeros_on(dev, 2, (int)N, (int)D);
        c->extra = tensor_zeros_on(dev, 4, (int)(N / s->seq), (int)s->heads, (int)s->seq, (int)s->seq);
        break;
    case LAYER_SOFTMAX_XENT:
    case LAYER_EMBEDDING: {
        if (s->kind == LAYER_SOFTMAX_XENT) {
            c->in = random_on(dev, r, N, D);
            c->out = tensor_zeros_on(dev, 2, (int)N, (int)D);
        } else {
            c->weight = random_on(dev, r, vocab, D);
            c->out = tensor_zeros_on(dev, 2, (int)N, (int)D);
        }
        const int64_t words = s->kind == LAYER_SOFTMAX_XENT ? D : vocab;
        int *host = xcalloc((size_t)N, sizeof(int)); /* [N] token ids below `words` */
        for (int64_t i = 0; i < N; i++) host[i] = (int)rng_below(r, (uint32_t)words);
        c->tokens = device_alloc(dev, (size_t)N * sizeof(int));
        device_copy(c->tokens, dev, host, DEVICE_CPU, (size_t)N * sizeof(int));
        xfree(host);
        break;
    }
    }
}

static void free_inputs(Call *c) {
    Tensor *ts[] = {&c->in, &c->out, &c->weight, &c->bias, &c->extra};
    for (int i = 0; i < 5; i++)
        if (ts[i]->raw) tensor_free(ts[i]);
    if (c->tokens) device_free(c->device, c->tokens);
}

static void wait_for(Device device) {
    if (device != DEVICE_CPU) cuda_sync(); /* before reading a clock: the GPU runs behind */
}

/* Seconds of one call: a warm-up call, then `repeats` rounds of as many calls as take
 * about 5 ms (one at least), the best round's mean. */
static double time_layer(const Layer *l, Call *c, int repeats) {
    wait_for(c->device);
    double t0 = now_seconds();
    run_call(l, c);
    wait_for(c->device);
    const double once = now_seconds() - t0;
    int calls = once > 0 ? (int)(5e-3 / once) : 1;
    if (calls < 1) calls = 1;
    if (calls > 1000) calls = 1000;
    double best = 1e30;
    for (int r = 0; r < repeats; r++) {
        t0 = now_seconds();
        for (int k = 0; k < calls; k++) run_call(l, c);
        wait_for(c->device);
        const double dt = (now_seconds() - t0) / calls;
        if (dt < best) best = dt;
    }
    return best;
}

/* Device-to-device copies of 256 MiB, best of 5: each byte read once and written once. */
static double gpu_copy_gbs(void) {
    const size_t bytes = (size_t)256 << 20;
    void *a = cuda_malloc(bytes), *b = cuda_malloc(bytes);
    cuda_copy_on_device(b, a, bytes); /* warm-up */
    cuda_sync();
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        const double t0 = now_seconds();
        cuda_copy_on_device(b, a, bytes);
        cuda_sync();
        const double dt = now_seconds() - t0;
        if (dt < best) best = dt;
    }
    cuda_free(a);
    cuda_free(b);
    return 2.0 * (double)bytes / best / 1e9;
}

/* The roofs; on the CPU the FMA peak's first measurement (the second follows the layers). */
static MachineRoof measure(Device device, int threads) {
    if (device == DEVICE_CPU) return machine_measure(threads);
    CudaDeviceInfo g;
    cuda_device_info(cuda_current_device(), &g);
    const double peak = gpu_fp32_peak_flops(g.major, g.minor, g.multiprocessors, g.clock_khz) / 1e9;
    MachineRoof m = {.threads = threads, .peak_gflops = peak, .bandwidth_gbs = gpu_copy_gbs()};
    snprintf(m.device, sizeof m.device, "cuda");
    if (m.peak_gflops <= 0)
        fatal("the float32 peak of %s (compute capability %d.%d) is not known to this program: "
              "run the roofline on the CPU, or add the architecture to gpu_fp32_peak_flops "
              "(core/gpu_peak.c)",
              g.name, g.major, g.minor);
    print0("machine: %s (%d.%d, %d SMs at %d MHz): float32 peak %.0f GFLOP/s (FMA lanes x 2 x SMs x "
           "clock), device-to-device copy %.0f GB/s (read + write, 256 MiB), ridge %.1f FLOP/B\n",
           g.name, g.major, g.minor, g.multiprocessors, g.clock_khz / 1000, m.peak_gflops,
           m.bandwidth_gbs, machine_ridge(&m));
    return m;
}

static LayerCost layer_cost(const LayerShape *s) {
    if (s->kind == LAYER_LINEAR || s->kind == LAYER_LAYERNORM) return lesson_layer_cost(s); /* TODO 10.4 */
    return roofline_layer_cost(s);
}

int roofline_main(int argc, char **argv) {
    RooflineOptions o = {.lm = lm_options_defaults(), .model = "tutorial", .device = "cpu",
                         .batch_size = 20, .vocab = 28782, .threads = omp_get_max_threads(), .repeats = 5};
    ArgSpec specs[LM_OPTION_SPECS + 9];
    int n = lm_options_specs(&o.lm, specs);
    const ArgSpec mine[] = {
        {"roofline", ARG_FLAG, &o.roofline, "measure the machine and place each layer of lesson 04's model on its roofline (this mode)", NULL},
        {"model", ARG_CHOICE, &o.model, "lesson 04's preset: tutorial (200 wide, 2 heads, 2 layers) or seed (1024, 4 heads, 3 layers)", "tutorial|seed"},
        {"batch-size", ARG_INT, &o.batch_size, "sequences of --bptt tokens a call works on", NULL},
        {"vocab", ARG_INT, &o.vocab, "words of the vocabulary (the decoder and the loss; 28782: WikiText-2's)", NULL},
        {"threads", ARG_INT, &o.threads, "OpenMP threads (the roofs are measured on as many)", NULL},
        {"device", ARG_CHOICE, &o.device, "where the layers run (cuda: the GPU's roofs)", "cpu|cuda"},
        {"repeats", ARG_INT, &o.repeats, "timed rounds of each layer: the best one counts", NULL},
        {"metrics", ARG_STRING, &o.metrics, "write a JSON line per layer (make plot METRICS=FILE draws the roofline)", NULL},
    };
    for (int i = 0; i < ARRAY_LEN(mine); i++) specs[n++] = mine[i];
    args_parse(argc, argv, specs, n,
               "Lesson 10, --roofline: the machine's FMA peak and memory bandwidth, and each layer of "
               "lesson 04's model timed alone and placed on the roofline");
    lm_options_check(&o.lm);
    if (o.batch_size < 1 || o.batch_size > 4096) fatal("--batch-size %d: give 1 to 4096", o.batch_size);
    if (o.vocab < 2 || o.vocab > 1000000) fatal("--vocab %d: give 2 to 1000000", o.vocab);
    if (o.threads < 1 || o.threads > 1024) fatal("--threads %d: give 1 to 1024", o.threads);
    if (o.repeats < 1 || o.repeats > 100) fatal("--repeats %d: give 1 to 100", o.repeats);
    omp_set_num_threads(o.threads);
    const Device device = strcmp(o.device, "cuda") == 0 ? DEVICE_CUDA : DEVICE_CPU;
    if (device == DEVICE_CUDA) cuda_require(); /* fails here, clearly, before any work */

    const TransformerConfig cfg = lm_model_config(&o.lm, o.model, o.vocab);
    const int64_t B = o.batch_size, T = o.lm.bptt, N = B * T, D = cfg.d_model, F = cfg.d_ff, V = cfg.vocab;
    const DType f32 = DTYPE_F32;
    const Layer layers[] = {
        {"embedding", {LAYER_EMBEDDING, .rows = N, .in = D, .out = V, .dtype = f32}},
        {"linear: in-projection (q, k, v)", {LAYER_LINEAR, .rows = N, .in = D, .out = 3 * D, .dtype = f32}},
        {"attention (causal)", {LAYER_ATTENTION, .rows = N, .in = D, .seq = T, .heads = cfg.heads, .dtype = f32}},
        {"linear: out-projection", {LAYER_LINEAR, .rows = N, .in = D, .out = D, .dtype = f32}},
        {"layer norm", {LAYER_LAYERNORM, .rows = N, .in = D, .dtype = f32}},
        {"linear: feed-forward 1", {LAYER_LINEAR, .rows = N, .in = D, .out = F, .dtype = f32}},
        {"linear: feed-forward 2", {LAYER_LINEAR, .rows = N, .in = F, .out = D, .dtype = f32}},
        {"linear: decoder", {LAYER_LINEAR, .rows = N, .in = D, .out = V, .dtype = f32}},
        {"softmax + cross-entropy", {LAYER_SOFTMAX_XENT, .rows = N, .in = V, .dtype = f32}},
    };

    print0("roofline of lesson 04's %s model (%d wide, %d heads, feed-forward %d, %d words) at "
           "batch %lld x %lld tokens, float32, forward calls timed alone (best of %d)\n",
           o.model, cfg.d_model, cfg.heads, cfg.d_ff, cfg.vocab, (long long)B, (long long)T, o.repeats);
    MachineRoof m = measure(device, o.threads);
    double seconds[ARRAY_LEN(layers)], lowest = m.peak_gflops;
    for (int i = 0; i < ARRAY_LEN(layers); i++) {
        Call c = {.ops = layer_ops(device), .device = device};
        rng_seed(&c.rng, 10, (uint64_t)i);
        make_inputs(&layers[i], &c, V);
        seconds[i] = time_layer(&layers[i], &c, o.repeats);
        free_inputs(&c);
        if (device != DEVICE_CPU) continue;
        const double again = machine_fma_peak_gflops(o.threads); /* beside each layer's timing */
        if (again > m.peak_gflops) m.peak_gflops = again;
        if (again < lowest) lowest = again;
    }
    if (device == DEVICE_CPU)
        print0("machine: cpu, %d thread%s: FMA peak %.1f GFLOP/s (the highest of %d measurements, one "
               "before the layers and one after each: the lowest was %.1f), STREAM triad %.1f GB/s (3 "
               "arrays of %lld MiB; a write-allocate cache moves 4/3 of that), ridge %.1f FLOP/B\n",
               o.threads, o.threads == 1 ? "" : "s", m.peak_gflops, 1 + ARRAY_LEN(layers), lowest,
               m.bandwidth_gbs, (long long)(machine_triad_array_bytes() >> 20), machine_ridge(&m));
    MetricsFile *mf = metrics_open(o.metrics);
    print0("%-32s %9s %9s %7s %8s %8s %8s %-8s %6s\n", "layer", "MFLOP", "MB", "FLOP/B", "ms",
           "GFLOP/s", "roof", "bound", "% roof");
    bool above_memory = false, above_compute = false;
    for (int i = 0; i < ARRAY_LEN(layers); i++) {
        const Layer *l = &layers[i];
        const LayerCost cost = layer_cost(&l->shape);
        const RooflinePoint p = lesson_roofline_point(cost, seconds[i], &m); /* TODO 10.5 */
        if (p.pct_of_roof > 100.0) {
            if (p.bound == ROOF_COMPUTE) above_compute = true;
            else above_memory = true;
        }
        print0("%-32s %9.2f %9.2f %7.2f %8.3f %8.1f %8.1f %-8s %5.0f%%\n", l->name, cost.flop / 1e6,
               cost.bytes / 1e6, p.intensity, seconds[i] * 1e3, p.gflops, p.roof_gflops,
               roofline_bound_name(p.bound), p.pct_of_roof);
        metrics_begin(mf);
        metrics_str(mf, "layer", l->name);
        metrics_str(mf, "kind", roofline_kind_name(l->shape.kind));
        metrics_num(mf, "flop", cost.flop);
        metrics_num(mf, "bytes", cost.bytes);
        metrics_num(mf, "intensity", p.intensity);
        metrics_num(mf, "ms", seconds[i] * 1e3);
        metrics_num(mf, "gflops", p.gflops);
        metrics_num(mf, "roof_gflops", p.roof_gflops);
        metrics_str(mf, "bound", roofline_bound_name(p.bound));
        metrics_num(mf, "pct_of_roof", p.pct_of_roof);
        metrics_num(mf, "peak_gflops", m.peak_gflops);
        metrics_num(mf, "bandwidth_gbs", m.bandwidth_gbs);
        metrics_str(mf, "device", m.device);
        metrics_int(mf, "threads", o.threads);
        metrics_end(mf);
    }
    metrics_close(mf);
    if (above_memory)
        print0("a memory-bound layer over 100%% of the roof: its bytes came from a cache, not from "
               "memory (its tensors fit there, and each timed call finds them left by the last)\n");
    if (above_compute) {
        double load = -1;
        FILE *f = fopen("/proc/loadavg", "r");
        if (f) {
            if (fscanf(f, "%lf", &load) != 1) load = -1;
            fclose(f);
        }
        print0("a compute-bound layer over 100%% of the roof: no layer beats the FMA peak, so the peak "
               "was measured low: the machine was busy while it was measured (load average %.1f on %ld "
               "cores); run again when it is quieter\n", load, sysconf(_SC_NPROCESSORS_ONLN));
    }
    if (o.metrics) print0("wrote %s: make plot METRICS=%s draws the roofline\n", o.metrics, o.metrics);
    return 0;
}
