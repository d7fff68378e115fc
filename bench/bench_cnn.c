/* Training speed of the simple CNN on the CPU: images/s, GFLOP/s and the share of
 * the machine's measured FMA peak, with a per-layer breakdown of one step.
 * Random data of the chosen shape: the speed does not depend on the pixels. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/args.h"
#include "core/check.h"
#include "core/machine.h"
#include "core/rng.h"
#include "core/timer.h"
#include "layers/conv2d.h"
#include "layers/softmax_xent.h"
#include "models/cnn.h"
#include "ops/gemm.h"
#include "layer_times.h"
#include "train/optim.h"

/* Mean times of one step's parts, in seconds. */
typedef struct {
    double forward, backward, other, step;
} StepTimes;

/* warmup untimed steps, then steps timed ones of forward, loss, backward and Adam. */
static StepTimes run_steps(Cnn *model, Adam *adam, const Tensor *images, const int *labels,
                           int warmup, int steps) {
    StepTimes t = {0};
    double start = 0;
    for (int step = 0; step < warmup + steps; step++) {
        if (step == warmup) start = now_seconds();
        layer_times_step(step >= warmup);
        double t0 = now_seconds();
        Tensor logits = cnn_forward(model, images);
        double t1 = now_seconds();
        tensor_fill(&model->d_logits, 0.0f);
        softmax_cross_entropy(&model->d_logits, &logits, labels);
        params_zero_grad(&model->params);
        double t2 = now_seconds();
        cnn_backward(model, images);
        double t3 = now_seconds();
        adam_step(adam, &model->params);
        double t4 = now_seconds();
        if (step >= warmup) {
            t.forward += t1 - t0;
            t.backward += t3 - t2;
            t.other += (t2 - t1) + (t4 - t3);
        }
    }
    t.step = (now_seconds() - start) / steps;
    t.forward /= steps;
    t.backward /= steps;
    t.other /= steps;
    return t;
}

int main(int argc, char **argv) {
    int threads = omp_get_max_threads(), batch = 100, steps = 40, warmup = 5, channels = 1,
        size = 28, json = 0, layers = 0;
    ArgSpec specs[] = {
        {"threads", ARG_INT, &threads, "OpenMP threads", NULL},
        {"batch-size", ARG_INT, &batch, "images per step", NULL},
        {"steps", ARG_INT, &steps, "timed training steps", NULL},
        {"warmup", ARG_INT, &warmup, "untimed steps first", NULL},
        {"channels", ARG_INT, &channels, "image channels (1: MNIST, 3: CIFAR-10)", NULL},
        {"size", ARG_INT, &size, "image height and width", NULL},
        {"json", ARG_FLAG, &json, "print one JSON object instead of a table", NULL},
        {"layers", ARG_FLAG, &layers, "then time every layer call in as many steps more, layer by layer", NULL},
    };
    args_parse(argc, argv, specs, ARRAY_LEN(specs),
               "Benchmark: training steps of the simple CNN (forward, loss, backward, Adam).");
    if (threads < 1 || batch < 1 || steps < 1 || warmup < 0)
        fatal("--threads, --batch-size and --steps must be positive");
    if (layers && json) fatal("--layers prints a table: leave out --json");
    omp_set_num_threads(threads);

    Rng rng;
    rng_seed(&rng, 1, 0);
    Cnn model;
    cnn_init(&model, channels, size, size, 10, batch, &rng);
    Adam adam;
    adam_init(&adam, &model.params, 1e-3f);
    Tensor images = tensor_zeros(4, batch, channels, size, size);
    int *labels = xcalloc((size_t)batch, sizeof(int));
    for (int64_t i = 0; i < images.size; i++) images.data[i] = rng_uniform(&rng);
    for (int i = 0; i < batch; i++) labels[i] = (int)rng_below(&rng, 10);

    const double peak_before = machine_fma_peak_gflops(threads); /* and after: machine_settle_peak_gflops */
    const StepTimes t = run_steps(&model, &adam, &images, labels, warmup, steps);
    double images_per_s = batch / t.step;
    double gflops = images_per_s * cnn_train_flops(&model) / 1e9;
    double core_peak;
    const double peak = machine_settle_peak_gflops(threads, peak_before, &core_peak);

    if (json) {
        printf("{\"impl\": \"c\", \"threads\": %d, \"batch\": %d, \"shape\": [%d, %d, %d], "
               "\"params\": %lld, \"images_per_s\": %.1f, \"gflops\": %.2f, \"peak_gflops\": %.1f, "
               "\"peak_one_core_gflops\": %.1f, "
               "\"forward_ms\": %.3f, \"backward_ms\": %.3f, \"other_ms\": %.3f, \"gemm\": \"%s\"}\n",
               threads, batch, channels, size, size, (long long)params_count(&model.params),
               images_per_s, gflops, peak, core_peak, 1e3 * t.forward, 1e3 * t.backward, 1e3 * t.other,
               gemm_backend_name());
    } else {
        printf("simple CNN, %dx%dx%d, %lld parameters, batch %d, %d threads, GEMM: %s\n", channels,
               size, size, (long long)params_count(&model.params), batch, threads,
               gemm_backend_name());
        printf("  training       %9.1f images/s  %7.2f GFLOP/s  %5.1f%% of the measured FMA peak "
               "(%.1f GFLOP/s)\n", images_per_s, gflops, 100.0 * gflops / peak, peak);
        printf("  per step       forward %.2f ms, backward %.2f ms, loss + Adam %.2f ms\n",
               1e3 * t.forward, 1e3 * t.backward, 1e3 * t.other);
        if (layers) {
            /* Timing wrappers in the table make it a lesson's table to the model: it
             * runs the first block as three layers (models/cnn.h), so these steps are
             * timed apart from the ones above. */
            layer_times_wrap(&model.layers);
            const StepTimes u = run_steps(&model, &adam, &images, labels, warmup, steps);
            printf("  layer by layer, as a table with a lesson's layers runs it (the first\n"
                   "  convolution, max-pool and ReLU not fused): %.2f ms a step\n", 1e3 * u.step);
            layer_times_print(1e3 * u.step);
        }
    }
    tensor_free(&images);
    xfree(labels);
    adam_free(&adam);
    cnn_free(&model);
    conv2d_release_workspace();
    return 0;
}
