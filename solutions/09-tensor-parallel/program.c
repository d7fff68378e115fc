/* Lesson 09: the program (given; worth reading: TODOs 9.1-9.5 are called from here).
 *
 *   make run-lesson 9 RANKS=2 ARGS="--tp 2 --max-steps 20"     # 2 CPU ranks, one model cut in 2
 *   mpirun -n 8 train --dp 2 --pp 2 --tp 2 --max-steps 20      # the three axes together
 *   mpirun -n 2 train --tp 2 --precision bf16                  # bfloat16 compute, float32 master weights
 *   srun train --device cuda --model seed --tp 4 --dp 2        # in a Slurm job, GPUs
 *   train --plan 16 --gpus-per-node 4 --model seed             # every layout of 16 ranks
 *
 * The ranks form a grid (lib/parallel/grid.h): data x pipeline x tensor, tensor fastest,
 * so a tensor group is consecutive ranks on one node. Each pipeline stage holds a slice
 * of lesson 04's transformer (or the seed's) balanced as lesson 07 cuts it, each tensor
 * rank 1/t of every weight of its stage (your TODOs 9.1-9.4; --impl library: the
 * library's), and each data replica trains on its share of each batch's sequences,
 * split into micro-batches for the pipeline. SGD and clipping as the tutorial (lr 5,
 * clip 0.5 over the whole model's norm). Rank 0 prints the grid, what each rank holds
 * against your count from the shapes (9.5), a line per epoch and the communication of a
 * step against your formula; every rank writes a JSON line per step with --metrics
 * FILE (rank 0 into FILE, rank r into FILE with .rank<r> before its extension) and ends
 * with the digest of the whole model, gathered: the same on every rank. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/args.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/trace.h"
#include "core/timer.h"
#include "data/text.h"
#include "dist/dist_options.h"
#include "dist/dist_trace.h"
#include "lesson.h"
#include "models/block_trace.h"
#include "models/transformer.h"
#include "parallel/grid.h"
#include "parallel/pipeline.h"
#include "train/checkpoint.h"
#include "train/clip.h"
#include "train/lm_options.h"
#include "train/loop.h"
#include "train/loss_watch.h"
#include "train/mixed_precision.h"
#include "train/optim.h"
#include "train/precision_gpu.h"

const TensorParallelOps LESSON_OPS = {lesson_shard, lesson_qkv_rows, lesson_f, lesson_g,
                                      lesson_row_linear_forward, lesson_vocab_cross_entropy};

/* ---------------------------------------------------------------- options */

typedef struct {
    LmOptions lm; /* --d-model, --heads, --d-hid, --layers, --dropout, --bptt, --tokenizer */
    const char *dataset, *data, *model, *impl, *device, *dist, *metrics, *schedule, *trace;
    const char *precision; /* fp32 or bf16 (fp16 refused: parse_args) */
    DType dtype;           /* --precision, parsed */
    int tp, dp, pp, micro, batch_size, epochs, max_steps, valid_batches, seed, threads, ranks;
    int plan, gpus_per_node;
    float lr, clip, timeout_s;
} Config;

static const char *const per_rank_options[] = {"metrics", "threads", "timeout", NULL};
enum { OWN = 26, MAX_SPECS = OWN + LM_OPTION_SPECS };

static int parse_args(int argc, char **argv, Config *c, ArgSpec *specs) {
    *c = (Config){.lm = lm_options_defaults(), .dataset = "auto", .model = "tutorial",
                  .impl = "mine", .device = "cpu", .dist = "auto", .schedule = "1f1b", .tp = 1,
                  .dp = 0, .pp = 1, .micro = 0, .batch_size = 20, .epochs = 1, .seed = 42,
                  .threads = 1, .gpus_per_node = 4, .lr = 5.0f, .clip = 0.5f, .timeout_s = 300,
                  .precision = "fp32"};
    const ArgSpec own[OWN] = {
        {"tp", ARG_INT, &c->tp, "tensor-parallel ranks: each holds 1/tp of every weight (divides the heads and --d-hid)", "1..65536"},
        {"dp", ARG_INT, &c->dp, "data-parallel replicas (0: the ranks left over, ranks / (pp x tp))", "0..1048576"},
        {"pp", ARG_INT, &c->pp, "pipeline stages (lesson 07)", "1..65536"},
        {"micro", ARG_INT, &c->micro, "micro-batches per step through the pipeline (0: one per stage)", "0..65536"},
        {"schedule", ARG_CHOICE, &c->schedule, "the pipeline's schedule (lesson 07)", "gpipe|1f1b"},
        {"model", ARG_CHOICE, &c->model, "tutorial: lesson 04's (200 wide, 2 heads, 2 layers); seed: the seed exercise's (1024 wide, 4 heads, 3 layers)", "tutorial|seed"},
        {"dataset", ARG_CHOICE, &c->dataset, "the text: auto = WikiText-2 where found, else Debian's fortunes text", "auto|wikitext2|fortunes|text"},
        {"data", ARG_STRING, &c->data, "a directory with WikiText-2, or a text file / directory for --dataset text", NULL},
        {"lr", ARG_FLOAT, &c->lr, "SGD's learning rate (the tutorial's 5)", NULL},
        {"clip", ARG_FLOAT, &c->clip, "largest global gradient norm, over the whole model (0: no clipping)", NULL},
        {"batch-size", ARG_INT, &c->batch_size, "sequences per step, all replicas together (each takes batch-size / dp)", "1..1048576"},
        {"epochs", ARG_INT, &c->epochs, "passes over the training text", "1..1048576"},
        {"max-steps", ARG_INT, &c->max_steps, "stop after this many steps in all (0: every epoch whole)", "0..1073741824"},
        {"valid-batches", ARG_INT, &c->valid_batches, "evaluate on the first this many batches of the valid text (0: all)", "0..1073741824"},
        {"seed", ARG_INT, &c->seed, "seed of the weights and the dropout masks", NULL},
        {"impl", ARG_CHOICE, &c->impl, "mine: your TODOs 9.1-9.4 cut and join; library: lib/parallel/tensor_parallel.c's", "mine|library"},
        {"threads", ARG_INT, &c->threads, "OpenMP threads per rank", "1..1024"},
        {"device", ARG_CHOICE, &c->device, "where each rank trains (cuda: one GPU per rank)", "cpu|cuda"},
        {"dist", ARG_CHOICE, &c->dist, "communication backend (auto: nccl for GPUs, mpi for CPU ranks)", "auto|mpi|nccl|single"},
        {"ranks", ARG_INT, &c->ranks, "stop unless the job has this many ranks (0: any)", "0..1048576"},
        {"timeout", ARG_FLOAT, &c->timeout_s, "seconds a rank waits for another before the job ends", NULL},
        {"precision", ARG_CHOICE, &c->precision, "compute in float32, or in bfloat16 with float32 master weights (the sums over the tensor group stay float32); fp16 is refused", "fp32|bf16|fp16"},
        {"metrics", ARG_STRING, &c->metrics, "JSON lines, one per step and rank: loss, tokens_per_s, bytes_sent, all_reduces, step_seconds, param_bytes, activation_bytes, precision", NULL},
        {"trace", ARG_STRING, &c->trace, "where the time goes: each rank writes FILE.rank<r>.json (Chrome's trace format; make trace)", NULL},
        {"plan", ARG_INT, &c->plan, "print every layout of this many ranks (memory and bytes per rank) and stop; no ranks needed", "0..1048576"},
        {"gpus-per-node", ARG_INT, &c->gpus_per_node, "--plan: ranks per node (a tensor group should fit in one)", "1..1024"},
    };
    memcpy(specs, own, sizeof own);
    const int n = OWN + lm_options_specs(&c->lm, specs + OWN);
    dist_help_once(argc, argv);
    args_parse(argc, argv, specs, n,
               "Lesson 09: lesson 04's transformer cut over tensor-parallel ranks, with data and "
               "pipeline parallelism on one grid, mpirun or srun.");
    lm_options_check(&c->lm);
    if (!(c->lr > 0) || !isfinite(c->lr)) fatal("--lr must be positive, got %g", (double)c->lr);
    if (!(c->clip >= 0) || !isfinite(c->clip)) fatal("--clip must be 0 or more, got %g", (double)c->clip);
    if (!(c->timeout_s > 0) || !isfinite(c->timeout_s)) fatal("--timeout must be positive, got %g", (double)c->timeout_s);
    if (!dtype_parse(c->precision, &c->dtype)) fatal("--precision %s: fp32, bf16 or fp16", c->precision);
    /* said here, where every rank parses the same options, so that every rank stops
     * alike before any text is read */
    if (c->dtype == DTYPE_F16)
        fatal("--precision fp16: lesson 09 takes float32 or bfloat16: float16's loss scaling "
              "unscales the whole gradient buffer, and here each rank's buffer holds other "
              "slices of the model: a step must then be skipped on every rank of the grid "
              "together when any slice overflows, which this program's step does not do; use "
              "--precision bf16 (the range of float32, no loss scaling) or fp32");
    return n;
}

/* ---------------------------------------------------------------- the run */

typedef struct {
    Config cfg;
    Dist *dist;
    Grid grid;
    TextCorpus corpus;
    TextBatches train, valid;        /* batchify: batch_size columns */
    TransformerConfig model_cfg;
    int blocks, first[257];          /* the stages' first blocks (lesson 07's partition; at
                                      * most 256 blocks) */
    TensorParallel tp;
    Transformer stage;               /* this rank's slice: its stage's blocks, cut t ways */
    Pipeline pipe;
    Sgd opt;
    MixedPrecision mp;               /* bf16: the working copy rounded after each step */
    int Bl, Bm, T, micro;            /* this replica's sequences a step, a micro-batch's, tokens;
                                      * micro-batches a step */
    LossWatch watch;                 /* a diverging loss stops the run (train/loss_watch.h) */
    int *host_tokens, *host_targets; /* [Bl * T] batch-major */
    int *dev_tokens, *dev_targets;
    const int *tok[64], *tgt[64];    /* the micro-batches, in the device's memory */
    MetricsFile *metrics;
    int64_t steps;
    double bytes_sent, tensor_bytes, all_reduces; /* this rank's, summed over its steps */
} Run;

static bool library(const Run *run) { return strcmp(run->cfg.impl, "library") == 0; }

/* Micro-batches a step with pp stages: --micro, else one per stage. */
static int micro_of(const Config *c, int pp) { return c->micro ? c->micro : pp; }

/* The model's sizes before the text is read (its vocabulary does not matter for them). */
static TransformerConfig model_sizes(const Config *c, int vocab) {
    return lm_model_config(&c->lm, strcmp(c->model, "seed") == 0 ? "seed" : "tutorial", vocab);
}
static int stage_of(const Run *run) { return run->grid.coord[GRID_PIPE]; }

/* The layout: the grid, the model fits the tensor size, the batch the replicas. */
static void join(Run *run, const ArgSpec *specs, int nspecs) {
    const Config *c = &run->cfg;
    const Device device = strcmp(c->device, "cuda") == 0 ? DEVICE_CUDA : DEVICE_CPU;
    run->dist = dist_init(&(DistOptions){.backend = c->dist, .device = device,
                                         .timeout_s = c->timeout_s, .expect_world = c->ranks});
    dist_check_options(run->dist, specs, nspecs, per_rank_options); /* the layout too */
    char line[256];
    dist_describe(run->dist, line, sizeof line);
    print0("%s\n", line);
    GridShape shape = {.dp = c->dp, .pp = c->pp, .tp = c->tp};
    if (grid_check_shape(&shape, run->dist->world_size, line, sizeof line) != 0)
        fatal("%s (--dp %d --pp %d --tp %d)", line, c->dp, c->pp, c->tp);
    const TransformerConfig sizes = model_sizes(c, 2);
    if (tensor_parallel_check(&sizes, c->tp, line, sizeof line)) fatal("%s", line);
    if (c->pp > transformer_block_count(&sizes))
        fatal("--pp %d: the model has %d blocks (the embedding, %d layers, the decoder), at most "
              "one stage each", c->pp, transformer_block_count(&sizes), sizes.layers);
    const int micro = micro_of(c, c->pp);
    if (micro > 64) fatal("--micro %d: at most 64 micro-batches", micro);
    if (c->batch_size % (shape.dp * micro) != 0)
        fatal("--batch-size %d does not split into %d replica%s x %d micro-batch%s: make it a "
              "multiple of %d", c->batch_size, shape.dp, shape.dp == 1 ? "" : "s", micro,
              micro == 1 ? "" : "es", shape.dp * micro);
    grid_init(&run->grid, run->dist, shape);
    grid_describe(&run->grid, line, sizeof line);
    print0("%s\n", line);
    /* fp16 is refused for its loss scaling (parse_args): fp32 is the way out */
    if (device == DEVICE_CUDA) precision_require_gpu(run->dist, c->dtype, c->precision, "fp32");
}

static void load_text(Run *run) {
    const Config *c = &run->cfg;
    lm_load_text(&c->lm, c->dataset, c->data, c->batch_size, &run->corpus, &run->train, &run->valid);
}

/* Lesson 07's balanced cut of the blocks into the stages. */
static void partition(Run *run, const TransformerConfig *mc, int pp) {
    run->blocks = transformer_block_count(mc);
    if (pp > run->blocks)
        fatal("--pp %d: the model has %d blocks, at most one stage each", pp, run->blocks);
    double costs[256];
    if (run->blocks > 256) fatal("the model has %d blocks: at most 256 here", run->blocks);
    transformer_block_costs(mc, run->cfg.lm.bptt, costs);
    pipeline_partition(costs, run->blocks, pp, run->first);
}

static void build(Run *run) {
    const Config *c = &run->cfg;
    run->model_cfg = model_sizes(c, run->corpus.vocab.count);
    dist_check_same(run->dist, run->model_cfg.vocab, "the text's vocabulary (every rank reads the same text)");
    partition(run, &run->model_cfg, run->grid.shape.pp);
    run->T = c->lm.bptt;
    run->Bl = c->batch_size / run->grid.shape.dp;
    run->micro = micro_of(c, c->pp);
    run->Bm = run->Bl / run->micro;
    if (!run->grid.inside_node[GRID_TENSOR]) /* grid_init warned; what it costs a step: */
        print0("  rank 0 sends %.1f MB a step in its tensor group's all-reduces, over the network "
               "this way (your 9.5), where a node's links would carry it %s\n",
               lesson_tensor_bytes(&run->model_cfg, (int64_t)run->Bl * run->T, c->tp,
                                   run->first[0], run->first[1]) / 1e6,
               "several times faster (NVLink: hundreds of GB/s against InfiniBand's tens)");
    tensor_parallel_init(&run->tp, run->grid.tensor, &run->model_cfg);
    run->tp.ops = library(run) ? TP_LIBRARY : LESSON_OPS;
    const TransformerBlockMakers make = tensor_parallel_makers(&run->tp);
    const int s = stage_of(run);
    transformer_init_made(&run->stage, &run->model_cfg, run->Bm, run->T, (uint64_t)c->seed,
                          run->first[s], run->first[s + 1], &make);
    const Device device = run->dist->device;
    if (device != DEVICE_CPU) transformer_to_device(&run->stage, device);
    /* before the pipeline holds its buffers; float32: as it was. bf16: activations and
     * their gradients in bfloat16, each rank's slices read from their bf16 working copy;
     * the partial sums of the group, the parameters' gradients and the loss float32 */
    transformer_set_precision(&run->stage, c->dtype);
    mixed_precision_init(&run->mp, c->dtype, &run->stage.blocks, &run->stage.params);
    pipeline_init(&run->pipe, run->grid.pipe, &run->stage.blocks, run->micro,
                  strcmp(c->schedule, "gpipe") == 0 ? PIPE_GPIPE : PIPE_1F1B);
    sgd_init(&run->opt, &run->stage.params, c->lr, 0.0f, 0.0f);
    const size_t bytes = (size_t)run->Bl * run->T * sizeof(int);
    run->host_tokens = xmalloc(bytes), run->host_targets = xmalloc(bytes);
    run->dev_tokens = run->host_tokens, run->dev_targets = run->host_targets;
    if (device != DEVICE_CPU) {
        run->dev_tokens = device_alloc(device, bytes);
        run->dev_targets = device_alloc(device, bytes);
    }
    for (int i = 0; i < run->micro; i++) {
        run->tok[i] = run->dev_tokens + (size_t)i * run->Bm * run->T;
        run->tgt[i] = run->dev_targets + (size_t)i * run->Bm * run->T;
    }
}

/* What every rank holds, against your count from the shapes (TODO 9.5), rank 0 prints. */
static void print_memory(Run *run) {
    const int s = stage_of(run), t = run->grid.shape.tp, W = run->dist->world_size;
    const int64_t want = lesson_param_count(&run->model_cfg, t, run->first[s], run->first[s + 1]);
    double *got = xmalloc(2 * (size_t)W * sizeof *got);
    dist_all_gather_double(run->dist, (double)run->stage.params.total, got);
    dist_all_gather_double(run->dist, (double)want, got + W);
    print0("model: %s transformer, %lld parameters, %d words (padded to %d for %d tensor rank%s); "
           "%d sequences of %d tokens per replica a step, %d micro-batch%s (%s parts)\n",
           run->cfg.model, (long long)transformer_param_count(&run->model_cfg), run->tp.vocab,
           run->tp.vocab_padded, t, t == 1 ? "" : "s", run->Bl, run->T, run->micro,
           run->micro == 1 ? "" : "es", library(run) ? "the library's" : "your");
    print0("%6s %9s %8s %14s %14s\n", "rank", "(d,p,t)", "blocks", "parameters", "your 9.5");
    for (int r = 0; r < W; r++) {
        int co[GRID_AXES];
        grid_coords(run->grid.shape, r, co);
        char where[24], blocks[24];
        snprintf(where, sizeof where, "(%d,%d,%d)", co[0], co[1], co[2]);
        snprintf(blocks, sizeof blocks, "%d-%d", run->first[co[1]], run->first[co[1] + 1] - 1);
        print0("%6d %9s %8s %14.0f %14.0f%s\n", r, where, blocks, got[r], got[W + r],
               got[r] == got[W + r] ? "" : "  <- not what the shapes give");
    }
    xfree(got);
}

/* Batch i of a split: this replica's columns, batch-major. */
static void load_batch(Run *run, const TextBatches *split, int64_t i) {
    trace_begin("load batch", TRACE_DATA); /* with --trace (core/trace.h) */
    const TextBatch b = text_get_batch(split, i, run->T);
    const int Bl = run->Bl, T = run->T, col0 = run->grid.coord[GRID_DATA] * Bl;
    for (int s = 0; s < Bl; s++)
        for (int t = 0; t < T; t++) {
            run->host_tokens[s * T + t] = b.input[t * b.cols + col0 + s];
            run->host_targets[s * T + t] = b.target[t * b.cols + col0 + s];
        }
    if (run->dev_tokens != run->host_tokens) {
        const size_t bytes = (size_t)Bl * T * sizeof(int);
        device_copy(run->dev_tokens, run->stage.device, run->host_tokens, DEVICE_CPU, bytes);
        device_copy(run->dev_targets, run->stage.device, run->host_targets, DEVICE_CPU, bytes);
    }
    trace_end("load batch");
}

/* The communicators a step talks on: the tensor group, the data group, the pipeline's. */
static void counters(Run *run, bool reset, double *sent) {
    Dist *all[] = {run->grid.tensor, run->grid.data, run->pipe.dist, run->pipe.activations,
                   run->pipe.gradients};
    *sent = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (reset) dist_counts_reset(all[i]);
        for (int k = 0; k < DIST_KINDS; k++) *sent += (double)dist_counts(all[i], (DistKind)k).bytes_sent;
    }
}

/* torch.nn.utils.clip_grad_norm_ over the whole model: each parameter's squares once
 * (a replicated one on tensor rank 0 only), summed over the tensor group and the stages. */
static void clip_global(Run *run) {
    double sq = tensor_parallel_grad_squares(&run->tp, &run->stage.params);
    sq = dist_sum_double(run->grid.tensor, sq);
    const double norm = sqrt(dist_sum_double(run->grid.pipe, sq));
    const double coef = run->cfg.clip / (norm + 1e-6);
    if (coef < 1) tensor_scale(&run->stage.params.grads, (float)coef);
}

/* One step: the loss, the mean over the replicas. */
static double train_step(Run *run) {
    trace_begin("step", TRACE_STEP);
    const float loss = pipeline_step(&run->pipe, run->tok, run->tgt);
    dist_all_reduce(run->grid.data, &run->stage.params.grads, DIST_AVG);
    if (run->cfg.clip > 0) clip_global(run);
    sgd_step(&run->opt, &run->stage.params);
    mixed_precision_step_done(&run->mp); /* bf16: this rank's working copy from its new slices */
    trace_end("step");
    return dist_sum_double(run->grid.data, loss) / run->grid.shape.dp;
}

static void write_step(Run *run, int epoch, double loss, double seconds, double sent, double reduces) {
    if (!run->metrics) return;
    metrics_begin(run->metrics);
    metrics_int(run->metrics, "step", run->steps);
    metrics_int(run->metrics, "epoch", epoch);
    metrics_int(run->metrics, "rank", run->dist->rank);
    metrics_num(run->metrics, "loss", loss);
    metrics_num(run->metrics, "tokens_per_s", (double)run->cfg.batch_size * run->T / seconds);
    metrics_num(run->metrics, "bytes_sent", sent);
    metrics_num(run->metrics, "all_reduces", reduces);
    metrics_num(run->metrics, "step_seconds", seconds);
    metrics_int(run->metrics, "param_bytes", 4 * run->stage.params.total);
    metrics_int(run->metrics, "activation_bytes", pipeline_activation_bytes(&run->pipe));
    metrics_str(run->metrics, "precision", run->cfg.precision);
    metrics_end(run->metrics);
}

static double evaluate(Run *run, const TextBatches *split) {
    transformer_eval(&run->stage);
    int64_t n = lm_full_batches(split, run->T);
    if (run->cfg.valid_batches && run->cfg.valid_batches < n) n = run->cfg.valid_batches;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        load_batch(run, split, i * run->T);
        sum += pipeline_evaluate(&run->pipe, run->tok, run->tgt);
    }
    transformer_train(&run->stage);
    const double loss = n ? sum / (double)n : NAN;
    return dist_sum_double(run->grid.data, loss) / run->grid.shape.dp;
}

/* "m.jsonl" -> "m.rank3.jsonl" for rank 3 (rank 0 keeps the name) */
static void rank_path(const char *path, int rank, char *out, size_t cap) {
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (rank == 0) snprintf(out, cap, "%s", path);
    else if (dot && (!slash || dot > slash))
        snprintf(out, cap, "%.*s.rank%d%s", (int)(dot - path), path, rank, dot);
    else snprintf(out, cap, "%s.rank%d", path, rank);
}

static void train(Run *run) {
    const Config *c = &run->cfg;
    const int64_t n = lm_full_batches(&run->train, run->T);
    print0("training: SGD lr %g, clip %g, %lld steps an epoch of %d sequences, %d thread%s per "
           "rank, precision %s%s\n", (double)c->lr, (double)c->clip, (long long)n, c->batch_size,
           c->threads, c->threads == 1 ? "" : "s", c->precision,
           c->dtype == DTYPE_F32 ? "" : " (bfloat16 compute, float32 master weights and sums over the tensor group)");
    loss_watch_init(&run->watch, run->model_cfg.vocab);
    if (c->metrics) {
        char path[4096];
        rank_path(c->metrics, run->dist->rank, path, sizeof path);
        run->metrics = metrics_open(path);
    }
    for (int epoch = 1; epoch <= c->epochs; epoch++) {
        double loss_sum = 0, tokens = 0, t0 = now_seconds(), sent;
        int steps = 0;
        for (int64_t i = 0; i < n && !(c->max_steps && run->steps >= c->max_steps); i++) {
            load_batch(run, &run->train, i * run->T);
            counters(run, true, &sent);
            const double s0 = now_seconds(), loss = train_step(run), took = now_seconds() - s0;
            loss_watch_step(&run->watch, loss, run->steps + 1, c->lr); /* NaN, far above its start, rising: names --lr */
            counters(run, false, &sent);
            const DistCounts tc = dist_counts(run->grid.tensor, DIST_KIND_ALL_REDUCE);
            run->steps++, steps++;
            run->bytes_sent += sent, run->tensor_bytes += (double)tc.bytes_sent;
            run->all_reduces += (double)tc.calls;
            loss_sum += loss, tokens += (double)c->batch_size * run->T;
            write_step(run, epoch, loss, took, sent, (double)tc.calls);
            progress("  epoch %d: step %lld/%lld, loss %.3f, %.0f tokens/s", epoch, (long long)i + 1,
                     (long long)n, loss, tokens / (now_seconds() - t0));
        }
        progress_clear();
        if (steps == 0) break;
        const double seconds = now_seconds() - t0, valid = evaluate(run, &run->valid);
        print0("| end of epoch %3d | time: %6.2fs | train loss %5.2f | valid loss %5.2f | valid ppl "
               "%8.2f | %.0f tokens/s\n", epoch, seconds, loss_sum / steps, valid, exp(valid),
               tokens / seconds);
        if (c->max_steps && run->steps >= c->max_steps) break;
    }
    metrics_close(run->metrics);
}

/* The tensor group's all-reduces of a step against your formula (9.5), rank 0's. */
static void print_communication(Run *run) {
    if (run->steps == 0) return;
    const int s = stage_of(run), t = run->grid.shape.tp;
    const int64_t rows = (int64_t)run->Bl * run->T;
    const double want = lesson_tensor_bytes(&run->model_cfg, rows, t, run->first[s], run->first[s + 1]);
    print0("communication of rank 0 a step: %.0f all-reduces in its tensor group, %.3f MB sent "
           "there (your formula 9.5: %.3f MB); %.3f MB on all axes together\n",
           run->all_reduces / run->steps, run->tensor_bytes / run->steps / 1e6, want / 1e6,
           run->bytes_sent / run->steps / 1e6);
    char copy[64] = ""; /* bf16: the working copy beside the float32 master values */
    if (run->cfg.dtype != DTYPE_F32)
        snprintf(copy, sizeof copy, " and %.3f MB of their %s working copy",
                 (double)tensor_bytes(&run->stage.params.working) / 1e6, run->cfg.precision);
    print0("memory of rank 0: %.3f MB of parameters%s, %.3f MB of activations kept for the "
           "backward (%d micro-batch%s in flight at most)\n", 4e-6 * (double)run->stage.params.total,
           copy, pipeline_activation_bytes(&run->pipe) / 1e6, run->pipe.max_slots,
           run->pipe.max_slots == 1 ? "" : "es");
}

/* The digest of the whole model, from every stage's and tensor rank's slices, one
 * parameter at a time: the same on every rank. */
static void print_digest(Run *run) {
    const uint64_t digest = tensor_parallel_digest(&run->tp, &run->stage.params, run->grid.pipe);
    printf("rank %d parameter digest: %016llx\n", run->dist->rank, (unsigned long long)digest);
    fflush(stdout);
}

/* ---------------------------------------------------------------- --plan */

/* Every layout of N ranks for this model: what a rank holds and sends per step. */
static void plan(const Config *c) {
    const TransformerConfig mc = model_sizes(c, 28782);
    const int N = c->plan, G = c->gpus_per_node, blocks = transformer_block_count(&mc);
    printf("layouts of %d ranks, %d per node, for the %s model (%lld parameters, %d words), "
           "batches of %d x %d tokens, SGD (parameters and gradients: 8 bytes each):\n", N, G,
           c->model, (long long)transformer_param_count(&mc), mc.vocab, c->batch_size, c->lm.bptt);
    printf("%4s %4s %4s  %14s  %12s  %12s  %12s  %s\n", "dp", "pp", "tp", "MB per rank",
           "tensor MB", "data MB", "pipeline MB", "tensor groups");
    int heads = 0, batch = 0, stages = 0; /* layouts left out, and why */
    for (int tp = 1; tp <= N; tp++)
        for (int pp = 1; pp <= N / tp; pp++) {
            if (N % (tp * pp)) continue;
            char why[256];
            const int dp = N / (tp * pp);
            if (pp > blocks) { stages++; continue; }
            if (tensor_parallel_check(&mc, tp, why, sizeof why)) { heads++; continue; }
            if (c->batch_size % (dp * micro_of(c, pp))) { batch++; continue; }
            Run r = {.cfg = *c};
            partition(&r, &mc, pp);
            int64_t most = 0;
            int worst = 0;
            for (int s = 0; s < pp; s++) {
                const int64_t p = lesson_param_count(&mc, tp, r.first[s], r.first[s + 1]);
                if (p > most) most = p, worst = s;
            }
            const int64_t rows = (int64_t)c->batch_size / dp * c->lm.bptt;
            const double tensor = lesson_tensor_bytes(&mc, rows, tp, r.first[worst], r.first[worst + 1]);
            const double data = dp > 1 ? 2.0 * (dp - 1) / dp * 4.0 * (double)most : 0.0;
            const double pipe = pp > 1 ? 2.0 * 4.0 * (double)rows * mc.d_model : 0.0;
            printf("%4d %4d %4d  %14.1f  %12.2f  %12.2f  %12.2f  %s\n", dp, pp, tp, 8e-6 * (double)most,
                   tensor / 1e6, data / 1e6, pipe / 1e6,
                   tp == 1 ? "-" : G % tp == 0 ? "inside a node" : "SPAN NODES: every layer's all-reduces cross the network");
        }
    printf("(the fullest stage's rank; tensor and data bytes are sent per step in all-reduces, "
           "pipeline bytes to the neighbouring stages; a vocabulary of 28,782 words, WikiText-2's)\n");
    char left[512] = "";
    int len = 0;
    if (heads)
        len += snprintf(left + len, sizeof left - (size_t)len, "; %d whose tp does not divide the "
                        "%d heads and the feed-forward width %d", heads, mc.heads, mc.d_ff);
    if (batch)
        len += snprintf(left + len, sizeof left - (size_t)len, "; %d whose replicas x micro-batches "
                        "do not divide --batch-size %d", batch, c->batch_size);
    if (stages)
        snprintf(left + len, sizeof left - (size_t)len, "; %d with more stages than the %d blocks",
                 stages, blocks);
    if (*left) printf("left out: %s\n", left + 2); /* past the first "; " */
}

/* ---------------------------------------------------------------- main */

static void finish(Run *run) {
    if (run->dev_tokens != run->host_tokens) {
        device_free(run->stage.device, run->dev_tokens);
        device_free(run->stage.device, run->dev_targets);
    }
    xfree(run->host_tokens), xfree(run->host_targets);
    sgd_free(&run->opt);
    mixed_precision_free(&run->mp);
    pipeline_free(&run->pipe);
    transformer_free(&run->stage);
    tensor_parallel_free(&run->tp);
    grid_free(&run->grid);
    text_batches_free(&run->train), text_batches_free(&run->valid);
    text_free(&run->corpus);
}

int lesson_main(int argc, char **argv) {
    Run *run = xcalloc(1, sizeof *run);
    ArgSpec specs[MAX_SPECS];
    const int nspecs = parse_args(argc, argv, &run->cfg, specs);
    if (run->cfg.plan) {
        plan(&run->cfg);
        xfree(run);
        return 0;
    }
    omp_set_num_threads(run->cfg.threads);
    join(run, specs, nspecs);
    load_text(run);
    build(run);
    print_memory(run);
    dist_trace_start(run->dist, run->cfg.trace); /* --trace: ts 0 here on every rank */
    BlockTrace *blocks = block_trace_attach(&run->stage.blocks);
    train(run);
    block_trace_detach(blocks);
    dist_trace_finish(run->dist, run->cfg.trace);
    print_communication(run);
    print_digest(run);
    finish(run);
    dist_finalize(run->dist);
    xfree(run);
    return 0;
}
