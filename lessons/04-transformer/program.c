/* Lesson 04: the program (given; worth reading: TODOs 4.1-4.8 are called from here).
 *
 *   train                                         # the tutorial's model, 3 epochs, the best text found
 *   train --dataset wikitext2 --epochs 3          # WikiText-2 (make datasets DATASETS=wikitext-2)
 *   train --model seed --device cuda --compare    # the seed's 77.9M model on a GPU and on the CPU
 *   train --device cuda --precision bf16          # bfloat16 compute, float32 master weights
 *
 * Prints the data and the model, the memory the activations take, the tutorial's line
 * at the end of each epoch (time, valid loss, valid perplexity) with tokens/s (and the
 * MFU on a GPU), the test loss and perplexity at the end; with --metrics FILE one JSON
 * object per epoch. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/args.h"
#include "core/gpu_peak.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"
#include "core/trace.h"
#include "cuda/device.h"
#include "lesson.h"
#include "train/lm_options.h"
#include "train/precision_gpu.h"
#include "train/run_trace.h"

/* ---------------------------------------------------------------- options */

typedef struct {
    LmOptions lm; /* --tokenizer, --d-model, --heads, --d-hid, --layers, --dropout, --bptt */
    const char *dataset, *data, *model, *optimizer, *device, *ops, *metrics, *precision, *trace;
    DType dtype;        /* --precision, parsed */
    int batch_size, eval_batch_size, epochs, max_steps, seed, threads, compare, cuda_graph;
    float lr, gamma, clip, weight_decay, peak_tflops;
} Config;

static Config parse_args(int argc, char **argv) {
    Config c = {.lm = lm_options_defaults(), .dataset = "auto", .model = "tutorial",
                .optimizer = "sgd", .device = "cpu", .ops = "mine", .precision = "fp32", .batch_size = 20,
                .eval_batch_size = 10, .epochs = 3, .seed = 42, .threads = omp_get_max_threads(),
                .gamma = 0.95f, .clip = 0.5f, .weight_decay = 0.01f};
    enum { OWN = 22 }; /* the lesson's own options below, then the shared ones */
    ArgSpec specs[OWN + LM_OPTION_SPECS] = {
        {"dataset", ARG_CHOICE, &c.dataset, "the text: auto = WikiText-2 where found, else Debian's fortunes text", "auto|wikitext2|fortunes|text"},
        {"data", ARG_STRING, &c.data, "a directory with WikiText-2, or a text file / directory for --dataset text", NULL},
        {"model", ARG_CHOICE, &c.model, "preset: tutorial (200 wide, 2 heads, 2 layers, dropout 0.2) or seed (1024, 4 heads, 3 layers)", "tutorial|seed"},
        {"batch-size", ARG_INT, &c.batch_size, "sequences per training step (batchify's columns)", "1..65536"},
        {"eval-batch-size", ARG_INT, &c.eval_batch_size, "columns of the valid and test data", "1..65536"},
        {"optimizer", ARG_CHOICE, &c.optimizer, "sgd: the tutorial's (lr 5, StepLR 0.95 per epoch); adamw", "sgd|adamw"},
        {"lr", ARG_FLOAT, &c.lr, "learning rate of epoch 1 (0: 5 for sgd, 0.0005 for adamw)", NULL},
        {"gamma", ARG_FLOAT, &c.gamma, "StepLR: each epoch's learning rate is gamma times the last", NULL},
        {"clip", ARG_FLOAT, &c.clip, "largest global gradient norm (0: no clipping)", NULL},
        {"weight-decay", ARG_FLOAT, &c.weight_decay, "AdamW's decoupled weight decay", NULL},
        {"epochs", ARG_INT, &c.epochs, "passes over the training text", "1..100000"},
        {"max-steps", ARG_INT, &c.max_steps, "stop each epoch after this many steps (0: all of it)", "0..1073741824"},
        {"seed", ARG_INT, &c.seed, "seed of the weights and the dropout masks", NULL},
        {"threads", ARG_INT, &c.threads, "OpenMP threads", "1..1024"},
        {"device", ARG_CHOICE, &c.device, "where to train", "cpu|cuda"},
        {"compare", ARG_FLAG, &c.compare, "with --device cuda: train on the CPU too, side by side", NULL},
        {"ops", ARG_CHOICE, &c.ops, "attention and layer norm on the CPU: yours (TODO 4.3-4.6) or the library's", "mine|library"},
        {"metrics", ARG_STRING, &c.metrics, "write one JSON object per epoch to this file", NULL},
        {"trace", ARG_STRING, &c.trace, "where the time goes: each block's forward and backward, data loading, the optimiser, in Chrome's trace format (make trace)", NULL},
        {"peak-tflops", ARG_FLOAT, &c.peak_tflops, "the GPU's peak for the MFU, when the runtime does not tell its clock", NULL},
        {"precision", ARG_CHOICE, &c.precision, "compute in float32, or in bfloat16 / float16 with float32 master weights; fp16 with loss scaling", "fp32|bf16|fp16"},
        {"cuda-graph", ARG_FLAG, &c.cuda_graph, "with --device cuda: each training step's forward and backward replayed from a CUDA graph, two launches instead of some hundred (small batches, where launching costs more than computing)", NULL},
    };
    CHECK(specs[OWN - 1].name && !specs[OWN].name, "OWN must count the lesson's own options");
    const int n = OWN + lm_options_specs(&c.lm, specs + OWN); /* shared with lesson 06 */
    args_parse(argc, argv, specs, n,
               "Lesson 04: train the tutorial's transformer language model on a text (WikiText-2 "
               "or Debian's fortunes), on the CPU or a GPU.");
    lm_options_check(&c.lm);
    /* the integers' ranges are in their specs (args_parse refuses a value outside one) */
    if (!(c.lr >= 0.0f) || !isfinite(c.lr)) fatal("--lr must be positive (0: the default), got %g", (double)c.lr);
    if (!(c.gamma > 0.0f && c.gamma <= 1.0f)) fatal("--gamma must be in (0, 1], got %g", (double)c.gamma);
    if (!(c.clip >= 0.0f) || !isfinite(c.clip)) fatal("--clip must be 0 or more, got %g", (double)c.clip);
    if (!(c.weight_decay >= 0.0f) || !isfinite(c.weight_decay))
        fatal("--weight-decay must be 0 or more, got %g", (double)c.weight_decay);
    if (!(c.peak_tflops >= 0.0f) || !isfinite(c.peak_tflops))
        fatal("--peak-tflops must be 0 or more, got %g", (double)c.peak_tflops);
    if (c.lr == 0.0f) c.lr = strcmp(c.optimizer, "adamw") == 0 ? 5e-4f : 5.0f;
    if (!dtype_parse(c.precision, &c.dtype)) fatal("--precision %s: fp32, bf16 or fp16", c.precision);
    /* a replay runs no host code: not what needs some between the blocks */
    if (c.cuda_graph && strcmp(c.device, "cuda") != 0) fatal("--cuda-graph needs --device cuda");
    if (c.cuda_graph && c.dtype == DTYPE_F16)
        fatal("--cuda-graph with --precision fp16: the loss scaling looks at the gradients on the "
              "host after the backward, which a replayed graph skips; use bf16 (no scaling)");
    if (c.cuda_graph && c.trace)
        fatal("--cuda-graph with --trace: the trace times each block from the host, which a "
              "replayed graph skips; trace without --cuda-graph");
    return c;
}

/* ---------------------------------------------------------------- one device */

typedef struct {
    const char *device;
    double seconds, tokens_per_s; /* per epoch, averaged */
    double valid_ppl, test_loss, test_ppl, mfu;
} Summary;

typedef struct {
    const Config *opt;
    TransformerConfig cfg;
    TextBatches train, valid, test;
    MetricsFile *metrics;
    double peak;                  /* the GPU's peak of the precision in FLOP/s (0: unknown) */
    bool memory_shown;
} Job;

/* The activations the model keeps for its backward, per token: as allocated, and as
 * counted from the shapes (lib/models/transformer.h). */
static void print_memory(Job *job, Transformer *m) {
    if (job->memory_shown) return;
    job->memory_shown = true;
    const double tokens = (double)m->B * m->T_max;
    const double allocated = (double)transformer_activation_bytes(m) / tokens;
    const int blocks = transformer_block_count(&job->cfg);
    const double counted = transformer_activation_bytes_per_token(&job->cfg, m->T_max, 0, blocks,
                                                                  transformer_precision(m));
    const double logits = (double)dtype_size(transformer_precision(m)) * job->cfg.vocab;
    print0("memory: activations kept for the backward: %.0f bytes per token as allocated, %.0f "
           "counted from the shapes (%.1f MB for a batch of %d x %d); the logits are %.0f of "
           "them (%.0f%%)\n", allocated, counted, allocated * tokens / 1e6, m->B, m->T_max,
           logits, 100.0 * logits / counted);
}

/* A model on `device` with the lesson's pieces in place: your positional table (TODO
 * 4.2) always, your attention and layer norm (4.3-4.6) on the CPU with --ops mine. */
static void build_model(Transformer *m, const Job *job, int B, Device device) {
    transformer_init(m, &job->cfg, B, job->opt->lm.bptt, (uint64_t)job->opt->seed);
    lesson_positional_table(transformer_positions(m)); /* on the host, before the model moves */
    transformer_set_precision(m, job->opt->dtype);     /* float32: as it was */
    if (device == DEVICE_CPU) {
        if (strcmp(job->opt->ops, "mine") == 0) lesson_use_my_layers(m);
    } else {
        transformer_to_device(m, device); /* the library's CUDA layers */
    }
}

/* The evaluation model takes the trained one's weights: the float32 values, and the
 * working copy rounded from them in a 16-bit run. */
static void copy_weights(Transformer *eval, const Transformer *model) {
    tensor_copy(&eval->params.values, &model->params.values);
    if (transformer_precision(eval) != DTYPE_F32) params_refresh_working(&eval->params);
}

static void wait_for(Device device) {
    if (device != DEVICE_CPU) cuda_sync(); /* before reading a clock: the GPU runs behind */
}

static Summary run_on(Job *job, Device device) {
    const Config *o = job->opt;
    const char *name = device_name(device);
    Summary sum = {.device = name};
    Transformer model, eval;
    build_model(&model, job, o->batch_size, device);
    print_memory(job, &model);
    build_model(&eval, job, o->eval_batch_size, device); /* the valid and test columns */
    Optimizer opt;
    optimizer_init(&opt, &model.params, strcmp(o->optimizer, "adamw") == 0, o->lr, o->weight_decay);
    MixedPrecision mp; /* the working copy after each step; fp16's loss scale */
    mixed_precision_init(&mp, o->dtype, &model.blocks, &model.params);
    mixed_precision_unscale_after_backward(&mp); /* your loop (TODO 4.7) needs no change */
    opt.mp = &mp;
    if (o->cuda_graph && device != DEVICE_CPU) transformer_use_cuda_graphs(&model, true);
    TokenBatch tb, eb;
    token_batch_init(&tb, o->batch_size, o->lm.bptt, device);
    token_batch_init(&eb, o->eval_batch_size, o->lm.bptt, device);
    LossWatch watch; /* NaN, far above its start or rising: the run stops (your loop calls it) */
    loss_watch_init(&watch, job->cfg.vocab);
    const TrainSettings s = {.bptt = o->lm.bptt, .clip = o->clip, .gamma = o->gamma,
                             .max_steps = o->max_steps, .watch = &watch};
    const double flops = transformer_train_flops_per_token(&job->cfg, o->lm.bptt);
    EvalResult valid = {0};
    /* --trace: your loop (TODO 4.7) has no step ranges; the blocks, data loading and the
     * optimiser have theirs, inside an epoch's */
    BlockTrace *traced[2] = {block_trace_attach(&model.blocks), block_trace_attach(&eval.blocks)};
    for (int epoch = 1; epoch <= o->epochs; epoch++) {
        wait_for(device);
        const double t0 = now_seconds();
        trace_begin("train epoch", TRACE_OTHER);
        TrainStats tr = lesson_train_epoch(&model, &opt, &job->train, &s, epoch, &tb); /* TODO 4.7 */
        wait_for(device);
        trace_end("train epoch");
        trace_sample_counters();
        const double train_s = now_seconds() - t0;
        copy_weights(&eval, &model); /* the weights just trained */
        trace_begin("evaluate", TRACE_OTHER);
        valid = lesson_evaluate(&eval, &job->valid, o->lm.bptt, &eb);                     /* TODO 4.8 */
        wait_for(device);
        trace_end("evaluate");
        const double seconds = now_seconds() - t0, rate = (double)tr.tokens / train_s;
        const double mfu = job->peak > 0 ? flops * rate / job->peak : 0.0;
        char extra[160] = "";
        int at = 0;
        if (device != DEVICE_CPU && job->peak > 0)
            at = snprintf(extra, sizeof extra, " %.2f TFLOP/s, MFU %4.1f%% |", flops * rate / 1e12, 100 * mfu);
        if (o->dtype == DTYPE_F16) /* a float16 step whose gradients overflowed is skipped */
            snprintf(extra + at, sizeof extra - (size_t)at, " skipped %lld steps, loss scale %g |",
                     (long long)mixed_precision_skipped(&mp), (double)mixed_precision_scale(&mp));
        print0("%s| end of epoch %3d | time: %5.2fs | valid loss %5.2f | valid ppl %8.2f | "
               "%7.0f tokens/s |%s\n", o->compare ? (device == DEVICE_CPU ? "cpu  " : "cuda ") : "",
               epoch, seconds, valid.loss, valid.ppl, rate, extra);
        metrics_begin(job->metrics);
        if (o->compare) metrics_str(job->metrics, "device", name);
        metrics_int(job->metrics, "epoch", epoch);
        metrics_num(job->metrics, "train_loss", tr.loss);
        metrics_num(job->metrics, "valid_loss", valid.loss);
        metrics_num(job->metrics, "valid_ppl", valid.ppl);
        metrics_num(job->metrics, "seconds", seconds);
        metrics_num(job->metrics, "tokens_per_s", rate);
        if (device != DEVICE_CPU) metrics_num(job->metrics, "mfu", mfu);
        metrics_str(job->metrics, "precision", o->precision);
        metrics_int(job->metrics, "skipped_steps", mixed_precision_skipped(&mp));
        metrics_end(job->metrics);
        sum.seconds += seconds / o->epochs, sum.tokens_per_s += rate / o->epochs;
        sum.mfu += mfu / o->epochs;
    }
    copy_weights(&eval, &model);
    EvalResult test = lesson_evaluate(&eval, &job->test, o->lm.bptt, &eb);
    print0("%s| End of training | test loss %5.2f | test ppl %8.2f\n",
           o->compare ? (device == DEVICE_CPU ? "cpu  " : "cuda ") : "", test.loss, test.ppl);
    sum.valid_ppl = valid.ppl, sum.test_loss = test.loss, sum.test_ppl = test.ppl;
    if (model.cuda_graphs)
        print0("CUDA graphs: %lld steps replayed, %lld recorded, %lld launched kernel by kernel "
               "(the first step, each epoch's shorter last batch)\n",
               (long long)model.graphs.replayed, (long long)model.graphs.recorded,
               (long long)model.graphs.eager);
    block_trace_detach(traced[0]);
    block_trace_detach(traced[1]);
    token_batch_free(&tb);
    token_batch_free(&eb);
    optimizer_free(&opt);
    mixed_precision_free(&mp);
    transformer_free(&eval);
    transformer_free(&model);
    return sum;
}

/* ---------------------------------------------------------------- the program */

int lesson_main(int argc, char **argv) {
    Config o = parse_args(argc, argv);
    omp_set_num_threads(o.threads);
    const bool on_gpu = strcmp(o.device, "cuda") == 0;
    if (on_gpu) cuda_require(); /* fails here, clearly, before any work */
    if (o.compare && !on_gpu) { /* a job script's --compare on a site without GPUs */
        print0("note: --compare needs --device cuda: training on the CPU only\n");
        o.compare = 0;
    }
    if (o.dtype != DTYPE_F32 && (!on_gpu || o.compare) && strcmp(o.ops, "mine") == 0)
        fatal("--precision %s on the CPU: your attention and layer norm (TODOs 4.3-4.6, --ops "
              "mine, the default) are float32 code; add --ops library (its layers take %s)",
              o.precision, dtype_name(o.dtype));

    const TextOptions topt = lm_text_options(&o.lm);
    TextCorpus corpus;
    text_load(o.dataset, o.data, &topt, &corpus);
    Job job = {.opt = &o};
    lesson_batchify(&corpus.train, o.batch_size, "train", &job.train); /* TODO 4.1 */
    lesson_batchify(&corpus.valid, o.eval_batch_size, "valid", &job.valid);
    lesson_batchify(&corpus.test, o.eval_batch_size, "test", &job.test);
    job.cfg = lm_model_config(&o.lm, o.model, corpus.vocab.count);
    job.metrics = metrics_open(o.metrics);
    RunTrace trace; /* --trace FILE (core/trace.h): both devices' runs with --compare */
    run_trace_start(&trace, o.trace);

    print0("data: %s, %s", corpus.name, corpus.source);
    if (corpus.note[0]) print0(" (%s)", corpus.note);
    print0("\n      %d words (%s tokenizer); %lld / %lld / %lld train / valid / test tokens\n",
           corpus.vocab.count, o.lm.tokenizer, (long long)corpus.train.count,
           (long long)corpus.valid.count, (long long)corpus.test.count);
    const TransformerConfig *c = &job.cfg;
    print0("model: %s, %lld parameters (width %d, %d heads, feed-forward %d, %d layers, dropout %g)\n",
           o.model, (long long)transformer_param_count(c), c->d_model, c->heads, c->d_ff, c->layers,
           (double)c->dropout);
    print0("training: %s lr %g (x %g each epoch), clip %g, batch %d x %d tokens, %lld steps an "
           "epoch, %d thread%s, %s attention and layer norm, precision %s%s\n", o.optimizer, (double)o.lr,
           (double)o.gamma, (double)o.clip, o.batch_size, o.lm.bptt,
           (long long)text_batch_count(&job.train, o.lm.bptt), o.threads, o.threads == 1 ? "" : "s",
           strcmp(o.ops, "mine") == 0 ? "your" : "the library's", o.precision,
           o.dtype == DTYPE_F32 ? "" : o.dtype == DTYPE_BF16 ? " (bfloat16 compute, float32 master weights)"
                                                             : " (float16 compute, float32 master weights, loss scaling)");
    const double flops = transformer_train_flops_per_token(c, o.lm.bptt);
    print0("arithmetic: %.1f MFLOP per token trained (%.0f%% of it in the decoder to %d words)\n",
           flops / 1e6, 100.0 * 6.0 * c->d_model * c->vocab / flops, c->vocab);
    if (on_gpu) {
        CudaDeviceInfo g;
        cuda_device_info(cuda_current_device(), &g);
        precision_require_gpu(NULL, o.dtype, o.precision, NULL); /* bf16: 8.0 on, fp16: 7.0 */
        const bool tensor = o.dtype != DTYPE_F32; /* the peak of the precision used */
        const double formula = tensor ? gpu_tensor_peak_flops(g.major, g.minor, g.multiprocessors,
                                                              g.clock_khz, o.dtype)
                                      : gpu_fp32_peak_flops(g.major, g.minor, g.multiprocessors, g.clock_khz);
        job.peak = o.peak_tflops > 0 ? o.peak_tflops * 1e12 : formula;
        print0("GPU %d: %s, compute capability %d.%d, %d multiprocessors\n", cuda_current_device(),
               g.name, g.major, g.minor, g.multiprocessors);
        char how[96];
        if (tensor)
            snprintf(how, sizeof how, "dense tensor cores: %d FLOP/clock/SM x %d SMs x clock",
                     gpu_tensor_flop_per_clock_sm(g.major, g.minor, o.dtype), g.multiprocessors);
        else
            snprintf(how, sizeof how, "lanes x 2 x clock");
        const char *peak_name = tensor ? (o.dtype == DTYPE_BF16 ? "BF16" : "FP16") : "FP32";
        if (job.peak > 0)
            print0("      %s peak %.1f TFLOP/s (%s): the MFU is the model's FLOP/s against it\n",
                   peak_name, job.peak / 1e12, o.peak_tflops > 0 ? "--peak-tflops" : how);
        else
            print0("      %s peak unknown (no clock, or an architecture the table lacks): "
                   "--peak-tflops X for the MFU\n", peak_name);
        if (strcmp(o.ops, "mine") == 0)
            print0("note: on the GPU the library's CUDA layers run; your TODOs 4.3-4.6 are CPU code\n");
    }

    Summary rows[2];
    int nrows = 0;
    if (!on_gpu || o.compare) rows[nrows++] = run_on(&job, DEVICE_CPU);
    if (on_gpu) rows[nrows++] = run_on(&job, DEVICE_CUDA);
    if (nrows == 2) {
        print0("\n%-6s  %16s  %9s  %9s  %8s  %8s\n", "device", "seconds / epoch", "tokens/s",
               "valid ppl", "test ppl", "speed-up");
        for (int i = 0; i < 2; i++)
            print0("%-6s  %16.2f  %9.0f  %9.2f  %8.2f  %7.1fx\n", rows[i].device, rows[i].seconds,
                   rows[i].tokens_per_s, rows[i].valid_ppl, rows[i].test_ppl,
                   rows[0].seconds / rows[i].seconds);
    }
    run_trace_finish(&trace);
    metrics_close(job.metrics);
    text_batches_free(&job.train);
    text_batches_free(&job.valid);
    text_batches_free(&job.test);
    text_free(&corpus);
    return 0;
}
