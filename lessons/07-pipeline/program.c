/* Lesson 07: the program (given; worth reading: TODOs 7.1-7.6 are called from here).
 *
 *   make run-lesson 7 RANKS=2                                  # 2 stages, the tutorial's model
 *   mpirun -n 3 train --schedule 1f1b --micro-batches 8        # 3 stages, 1F1B
 *   mpirun -n 4 train --dp 2                                   # 2 pipelines of 2 stages
 *   srun train --device cuda --model seed --ranks 2            # the seed's 1.44B model, 2 GPUs
 *   mpirun -n 2 train --precision bf16                         # bfloat16 compute, float32 master weights
 *
 * Every rank builds its stage of lesson 04's model (the blocks TODO 7.1 gives it), and
 * each step runs the schedule (TODOs 7.3, 7.4) over the batch's micro-batches with your
 * messages (7.2) and loss shares (7.5); each stage then takes its own SGD step. Rank 0
 * prints the partition, the memory of each stage, a line per epoch (the tutorial's: time,
 * valid loss and perplexity, with tokens/s and the bubble measured (7.6) against the
 * formula) and the test loss; --metrics FILE writes a JSON line per step and per epoch,
 * --timeline FILE the forwards, backwards, sends and waits of the first steps. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/args.h"
#include "core/log.h"
#include "core/timer.h"
#include "core/trace.h"
#include "cuda/device.h"
#include "dist/dist_options.h"
#include "dist/dist_trace.h"
#include "lesson.h"
#include "models/block_trace.h"
#include "train/clip.h"
#include "train/loop.h"
#include "train/loss_watch.h"
#include "train/mixed_precision.h"
#include "train/precision_gpu.h"

/* ---------------------------------------------------------------- options */

typedef struct {
    LmOptions lm; /* --d-model, --heads, --d-hid, --layers, --dropout, --bptt, --tokenizer */
    const char *dataset, *data, *model, *schedule, *split, *device, *dist, *metrics, *timeline, *trace;
    const char *precision; /* fp32, bf16 or fp16 (lib/train/mixed_precision.h) */
    DType dtype;           /* --precision, parsed */
    int micro, batch_size, epochs, max_steps, seed, threads, ranks, dp, timeline_steps;
    float lr, gamma, clip, timeout_s;
} Config;

/* The options every rank must share are compared across ranks once the job is joined
 * (lib/dist/dist_options.h); these may differ: the files rank 0 writes, each rank's
 * threads and patience. */
enum { OWN = 24, MAX_SPECS = OWN + LM_OPTION_SPECS };
static const char *const per_rank_options[] = {"metrics", "timeline", "threads", "timeout", NULL};

/* --batch-size against the micro-batches and the pipelines (after the rank count: with
 * --dp 3 on 2 ranks the ranks are what is wrong, not the batch) */
static void check_batch(const Config *c) {
    if (c->batch_size % (c->micro * c->dp) != 0)
        fatal("--batch-size %d does not split into %d micro-batches%s of equal size: make it a "
              "multiple of %d", c->batch_size, c->micro, c->dp > 1 ? " on each of --dp pipelines" : "",
              c->micro * c->dp);
}

/* Fills *c, and specs (MAX_SPECS) with the options pointing into it; returns how many. */
static int parse_args(int argc, char **argv, Config *c, ArgSpec *specs) {
    *c = (Config){.lm = lm_options_defaults(), .dataset = "auto", .model = "tutorial",
                  .schedule = "gpipe", .device = "cpu", .dist = "auto", .micro = 8,
                  .batch_size = 32, .epochs = 3, .seed = 42, .threads = 1, .dp = 1,
                  .timeline_steps = 3, .lr = 5.0f, .gamma = 0.95f, .clip = 0.5f, .timeout_s = 300,
                  .precision = "fp32"};
    const ArgSpec own[OWN] = {
        {"model", ARG_CHOICE, &c->model, "tutorial: lesson 04's (200 wide, 2 layers); seed: the seed exercise's 1.44B (4096 wide, 16 heads, 12 layers), for GPUs", "tutorial|seed"},
        {"dataset", ARG_CHOICE, &c->dataset, "the text: auto = WikiText-2 where found, else Debian's fortunes text", "auto|wikitext2|fortunes|text"},
        {"data", ARG_STRING, &c->data, "a directory with WikiText-2, or a text file / directory for --dataset text", NULL},
        {"schedule", ARG_CHOICE, &c->schedule, "gpipe: all forwards, then all backwards; 1f1b: one forward, one backward", "gpipe|1f1b"},
        {"micro-batches", ARG_INT, &c->micro, "micro-batches per step (the seed's chunks); divides --batch-size", "1..1048576"},
        {"split", ARG_STRING, &c->split, "the first block of stages 1 .. p-1, e.g. 2,3 (default: balanced by FLOPs, TODO 7.1)", NULL},
        {"batch-size", ARG_INT, &c->batch_size, "sequences per step, all micro-batches (and pipelines) together", "1..1048576"},
        {"epochs", ARG_INT, &c->epochs, "passes over the training text", "1..1048576"},
        {"max-steps", ARG_INT, &c->max_steps, "stop each epoch after this many steps (0: all of it)", "0..1048576"},
        {"lr", ARG_FLOAT, &c->lr, "SGD's learning rate of epoch 1 (the tutorial's 5)", NULL},
        {"gamma", ARG_FLOAT, &c->gamma, "StepLR: each epoch's learning rate is gamma times the last", NULL},
        {"clip", ARG_FLOAT, &c->clip, "largest global gradient norm, over all stages (0: no clipping)", NULL},
        {"seed", ARG_INT, &c->seed, "seed of the weights and the dropout masks", NULL},
        {"threads", ARG_INT, &c->threads, "OpenMP threads per rank", "1..1048576"},
        {"device", ARG_CHOICE, &c->device, "where each stage runs (cuda: one GPU per rank)", "cpu|cuda"},
        {"precision", ARG_CHOICE, &c->precision, "compute in float32, or in bfloat16 / float16 with float32 master weights; fp16 with loss scaling", "fp32|bf16|fp16"},
        {"dist", ARG_CHOICE, &c->dist, "communication backend (auto: nccl for GPUs, mpi for CPU ranks)", "auto|mpi|nccl|single"},
        {"ranks", ARG_INT, &c->ranks, "stop unless the job has this many ranks (0: any)", "0..1048576"},
        {"dp", ARG_INT, &c->dp, "data-parallel pipelines: ranks = dp x stages; each takes its share of the batch", "1..1048576"},
        {"timeout", ARG_FLOAT, &c->timeout_s, "seconds a rank waits for another before the job ends", NULL},
        {"metrics", ARG_STRING, &c->metrics, "JSON lines: one per step (loss, tokens_per_s, bubble_fraction) and one per epoch", NULL},
        {"timeline", ARG_STRING, &c->timeline, "JSON lines: every stage's forwards, backwards, sends and waits of the first steps (with --dp: the first pipeline's)", NULL},
        {"timeline-steps", ARG_INT, &c->timeline_steps, "how many steps --timeline records", "1..1048576"},
        {"trace", ARG_STRING, &c->trace, "where the time goes: each rank writes FILE.rank<r>.json (Chrome's trace format; make trace)", NULL},
    };
    memcpy(specs, own, sizeof own);
    const int n = OWN + lm_options_specs(&c->lm, specs + OWN);
    dist_help_once(argc, argv); /* one help, not one per rank */
    args_parse(argc, argv, specs, n,
               "Lesson 07: lesson 04's transformer split into stages over ranks (mpirun, srun), "
               "micro-batches through a GPipe or 1F1B schedule.");
    lm_options_check(&c->lm);
    if (!(c->lr > 0) || !isfinite(c->lr)) fatal("--lr must be positive, got %g", (double)c->lr);
    if (!(c->gamma > 0) || !isfinite(c->gamma)) fatal("--gamma must be positive, got %g", (double)c->gamma);
    if (!(c->clip >= 0) || !isfinite(c->clip)) fatal("--clip must be 0 or more, got %g", (double)c->clip);
    if (!(c->timeout_s > 0) || !isfinite(c->timeout_s)) fatal("--timeout must be positive, got %g", (double)c->timeout_s);
    if (!dtype_parse(c->precision, &c->dtype)) fatal("--precision %s: fp32, bf16 or fp16", c->precision);
    return n;
}

/* ---------------------------------------------------------------- the run */

typedef struct {
    Config cfg;
    Dist *world;                    /* all ranks */
    Grid grid;                      /* data x pipeline (x tensor 1): lib/parallel/grid.h */
    Dist *pipe_dist, *dp_dist;      /* this pipeline's stages; this stage's replicas (--dp > 1) */
    TextCorpus corpus;
    TextBatches train, valid, test; /* batchify: batch_size columns */
    TransformerConfig model_cfg;
    Transformer stage;              /* this rank's blocks */
    Pipeline pipe;
    Sgd opt;
    MixedPrecision mp;              /* the precision's step: working copy, fp16's loss scale */
    int Bm, T;                      /* sequences per micro-batch, tokens per sequence */
    int *host_tokens, *host_targets; /* [micro][Bm * T] batch-major */
    int *dev_tokens, *dev_targets;  /* the same in the stage's device memory */
    const int **tok, **tgt;         /* [micro] pointers into them */
    MetricsFile *metrics;
    LossWatch watch;                /* a diverging loss stops the run (lib/train/loss_watch.h) */
    long long steps;
} Run;

void lesson_install(Pipeline *p) {
    p->ops = (PipelineOps){lesson_send_activation, lesson_recv_activation, lesson_send_gradient,
                           lesson_recv_gradient,   lesson_micro_loss_grad, lesson_run_gpipe,
                           lesson_run_1f1b};
}

static void join(Run *run, const ArgSpec *specs, int nspecs) {
    const Config *c = &run->cfg;
    const Device device = strcmp(c->device, "cuda") == 0 ? DEVICE_CUDA : DEVICE_CPU;
    run->world = dist_init(&(DistOptions){.backend = c->dist, .device = device,
                                          .timeout_s = c->timeout_s, .expect_world = c->ranks});
    dist_check_options(run->world, specs, nspecs, per_rank_options);
    const int W = run->world->world_size;
    if (W % c->dp != 0)
        fatal("%d rank%s cannot form --dp %d pipelines of equal length: start a multiple of %d "
              "ranks", W, W == 1 ? "" : "s", c->dp, c->dp);
    check_batch(c);
    /* ranks 0 .. P-1 are pipeline 0, P .. 2P-1 pipeline 1, ...; rank r is stage r % P */
    grid_init(&run->grid, run->world, (GridShape){.dp = c->dp, .pp = W / c->dp, .tp = 1});
    run->pipe_dist = run->grid.pipe;
    run->dp_dist = c->dp > 1 ? run->grid.data : NULL;
    char line[256];
    dist_describe(run->world, line, sizeof line);
    print0("%s\n", line);
    if (device == DEVICE_CUDA) precision_require_gpu(run->world, c->dtype, c->precision, NULL);
}

/* Full batches only: the stages are built for sequences of --bptt tokens (the target
 * of each one token on). */
static int64_t full_batches(const TextBatches *split, int bptt) { return (split->rows - 1) / bptt; }

static void load_text(Run *run) {
    const Config *c = &run->cfg;
    const TextOptions topt = lm_text_options(&c->lm);
    text_load(c->dataset, c->data, &topt, &run->corpus); /* every rank reads it */
    text_batchify(&run->corpus.train, c->batch_size, "train", &run->train);
    text_batchify(&run->corpus.valid, c->batch_size, "valid", &run->valid);
    text_batchify(&run->corpus.test, c->batch_size, "test", &run->test);
    if (full_batches(&run->train, c->lm.bptt) < 1)
        fatal("%s's training text has %lld rows of %d columns: fewer than --bptt %d + 1; a "
              "smaller --bptt or --batch-size", run->corpus.name, (long long)run->train.rows,
              c->batch_size, c->lm.bptt);
    const TextBatches *held[2] = {&run->valid, &run->test};
    for (int i = 0; i < 2; i++) /* evaluated in full batches only: say so rather than print nan */
        if (full_batches(held[i], c->lm.bptt) < 1)
            print0("note: the %s text (%lld tokens) holds no full batch of %d x %d tokens: its loss "
                   "will read nan (a longer text, or a smaller --batch-size or --bptt)\n",
                   i ? "test" : "valid", (long long)(held[i]->rows * held[i]->cols), c->batch_size,
                   c->lm.bptt + 1);
}

static void build_stage(Run *run) {
    const Config *c = &run->cfg;
    const int P = run->pipe_dist->world_size, s = run->pipe_dist->rank;
    run->model_cfg = lm_model_config(&c->lm, strcmp(c->model, "seed") == 0 ? "pipeline-seed" : "tutorial",
                                     run->corpus.vocab.count);
    const TransformerConfig *m = &run->model_cfg;
    const int blocks = transformer_block_count(m);
    if (P > blocks)
        fatal("%d stages for a model of %d blocks (embedding, %d encoder layer%s, decoder): at most "
              "%d ranks per pipeline, or more --layers", P, blocks, m->layers,
              m->layers == 1 ? "" : "s", blocks);
    if (c->split && P == 1)
        fatal("--split %s: one rank per pipeline is one stage, which holds all %d blocks: leave "
              "--split out, or start more ranks (mpirun -n 2, make run-lesson 7 RANKS=2)",
              c->split, blocks);
    run->T = c->lm.bptt;
    run->Bm = c->batch_size / (c->micro * c->dp);
    double *costs = xcalloc((size_t)blocks, sizeof *costs);
    int *first = xcalloc((size_t)P + 1, sizeof *first);
    transformer_block_costs(m, run->T, costs);
    if (c->split) pipeline_parse_split(c->split, blocks, P, first);
    else lesson_partition(costs, blocks, P, first); /* TODO 7.1 */
    print0("model: %s, %d blocks (embedding, %d encoder layers, decoder), %lld parameters; "
           "%d stage%s x %d micro-batch%s of %d x %d tokens, schedule %s\n", c->model, blocks,
           m->layers, (long long)transformer_param_count(m), P, P == 1 ? "" : "s", c->micro,
           c->micro == 1 ? "" : "es", run->Bm, run->T,
           c->schedule);
    if (c->dp > 1) print0("data parallel: %d pipelines, each with %d of the batch's %d sequences\n",
                          c->dp, c->batch_size / c->dp, c->batch_size);
    double total = 0;
    for (int k = 0; k < blocks; k++) total += costs[k];
    for (int t = 0; t < P; t++) {
        double cost = 0;
        for (int k = first[t]; k < first[t + 1]; k++) cost += costs[k];
        char a[32], b[32], range[112];
        transformer_block_name(m, first[t], a, sizeof a), transformer_block_name(m, first[t + 1] - 1, b, sizeof b);
        if (first[t + 1] - first[t] == 1) snprintf(range, sizeof range, "block %d (%s)", first[t], a);
        else snprintf(range, sizeof range, "blocks %d-%d (%s .. %s)", first[t], first[t + 1] - 1, a, b);
        print0("  stage %d: %s, %.0f%% of the forward FLOPs\n", t, range, 100 * cost / total);
    }
    transformer_init_blocks(&run->stage, m, run->Bm, run->T, (uint64_t)c->seed, first[s], first[s + 1]);
    const Device device = strcmp(c->device, "cuda") == 0 ? DEVICE_CUDA : DEVICE_CPU;
    if (device != DEVICE_CPU) transformer_to_device(&run->stage, device);
    /* before the pipeline holds its buffers; float32: as it was. A 16-bit stage sends and
     * receives 16-bit activations and gradients; its parameters' gradients stay float32 */
    transformer_set_precision(&run->stage, c->dtype);
    mixed_precision_init(&run->mp, c->dtype, &run->stage.blocks, &run->stage.params);
    pipeline_init(&run->pipe, run->pipe_dist, &run->stage.blocks, c->micro,
                  strcmp(c->schedule, "1f1b") == 0 ? PIPE_1F1B : PIPE_GPIPE);
    lesson_install(&run->pipe);
    sgd_init(&run->opt, &run->stage.params, c->lr, 0.0f, 0.0f);
    xfree(costs), xfree(first);

    const size_t per = (size_t)run->Bm * run->T, bytes = (size_t)c->micro * per * sizeof(int);
    run->host_tokens = xmalloc(bytes), run->host_targets = xmalloc(bytes);
    run->dev_tokens = run->host_tokens, run->dev_targets = run->host_targets;
    if (device != DEVICE_CPU) {
        run->dev_tokens = device_alloc(device, bytes);
        run->dev_targets = device_alloc(device, bytes);
    }
    run->tok = xcalloc((size_t)c->micro, sizeof *run->tok);
    run->tgt = xcalloc((size_t)c->micro, sizeof *run->tgt);
    for (int i = 0; i < c->micro; i++) run->tok[i] = run->dev_tokens + i * per, run->tgt[i] = run->dev_targets + i * per;
}

/* Batch i of a split (get_batch, [T, columns]) into micro-batches of this pipeline's
 * columns, batch-major (sequence b, position t at row b*T + t), in the stage's memory. */
static void load_batch(Run *run, const TextBatches *split, int64_t i) {
    trace_begin("load batch", TRACE_DATA); /* with --trace (core/trace.h) */
    const TextBatch b = text_get_batch(split, i, run->T);
    const int M = run->cfg.micro, Bm = run->Bm, T = run->T;
    const int col0 = run->dp_dist ? run->dp_dist->rank * M * Bm : 0; /* this pipeline's columns */
    for (int k = 0; k < M; k++)
        for (int s = 0; s < Bm; s++)
            for (int t = 0; t < T; t++) {
                const int col = col0 + k * Bm + s, row = (k * Bm + s) * T + t;
                run->host_tokens[row] = b.input[t * b.cols + col];
                run->host_targets[row] = b.target[t * b.cols + col];
            }
    if (run->dev_tokens != run->host_tokens) {
        const size_t bytes = (size_t)M * Bm * T * sizeof(int);
        device_copy(run->dev_tokens, run->stage.device, run->host_tokens, DEVICE_CPU, bytes);
        device_copy(run->dev_targets, run->stage.device, run->host_targets, DEVICE_CPU, bytes);
    }
    trace_end("load batch");
}

/* fp16's loss scaling: an overflow on any stage (or pipeline) skips the step on all:
 * each stage holds other gradients, so each may overflow alone (loss_scale.h) */
static bool any_rank(void *d, bool found) { return dist_sum_double(d, found) > 0.0; }

/* torch.nn.utils.clip_grad_norm_ over the whole model: every stage's share of the
 * squared norm, summed over the stages. Returns the norm. */
static double clip_global(Run *run) {
    const double local = grad_norm(&run->stage.params);
    const double norm = sqrt(dist_sum_double(run->pipe_dist, local * local));
    const double coef = run->cfg.clip / (norm + 1e-6);
    if (coef < 1) tensor_scale(&run->stage.params.grads, (float)coef);
    return norm;
}

/* The mean loss of a split, forwards only (dropout off), over the pipelines. */
static double evaluate(Run *run, const TextBatches *split) {
    transformer_eval(&run->stage);
    double sum = 0;
    const int64_t n = full_batches(split, run->T);
    for (int64_t i = 0; i < n; i++) {
        load_batch(run, split, i * run->T);
        sum += pipeline_evaluate(&run->pipe, run->tok, run->tgt);
    }
    transformer_train(&run->stage);
    double loss = n ? sum / (double)n : NAN;
    if (run->dp_dist) loss = dist_sum_double(run->dp_dist, loss) / run->dp_dist->world_size;
    return loss;
}

typedef struct {
    double loss, tokens, seconds, bubble;
    int steps;
} EpochStats;

static EpochStats train_epoch(Run *run, int epoch, float lr) {
    const Config *c = &run->cfg;
    EpochStats e = {0};
    const int P = run->pipe_dist->world_size;
    const int64_t n = full_batches(&run->train, run->T);
    run->opt.lr = lr;
    double bubble_sum = 0;
    const double t0 = now_seconds();
    for (int64_t i = 0; i < n && !(c->max_steps && e.steps >= c->max_steps); i++) {
        const double start = now_seconds();
        trace_begin("step", TRACE_STEP);
        load_batch(run, &run->train, i * run->T);
        float loss = pipeline_step(&run->pipe, run->tok, run->tgt);
        if (run->dp_dist) { /* the pipelines' gradients: the average, as lesson 06 */
            dist_all_reduce(run->dp_dist, &run->stage.params.grads, DIST_AVG);
            loss = (float)(dist_sum_double(run->dp_dist, loss) / run->dp_dist->world_size);
        }
        mixed_precision_unscale(&run->mp); /* fp16: the gradients / S, before clipping */
        if (c->dtype == DTYPE_F16) loss_scale_agree(&run->mp.scaler, any_rank, run->world);
        loss_watch_step(&run->watch, loss, run->steps + 1, c->lr); /* NaN, far above its start, rising: names --lr */
        if (c->clip > 0) clip_global(run); /* a skipped step's gradients are 0: norm 0 */
        if (mixed_precision_should_step(&run->mp)) sgd_step(&run->opt, &run->stage.params);
        mixed_precision_step_done(&run->mp); /* the 16-bit working copy from the new weights */
        trace_end("step");
        run->steps++, e.steps++;
        const double bubble = lesson_bubble_fraction(run->pipe.rank_busy, P, run->pipe.seconds); /* TODO 7.6 */
        bubble_sum += bubble;
        const double tokens = (double)c->batch_size * run->T, took = now_seconds() - start;
        e.loss += loss, e.tokens += tokens;
        if (c->timeline && run->steps <= c->timeline_steps && (!run->dp_dist || run->dp_dist->rank == 0))
            pipeline_write_timeline(&run->pipe, c->timeline, (int)run->steps);
        if (run->metrics) {
            metrics_begin(run->metrics);
            metrics_int(run->metrics, "step", run->steps);
            metrics_int(run->metrics, "epoch", epoch);
            metrics_num(run->metrics, "loss", loss);
            metrics_num(run->metrics, "tokens_per_s", tokens / took);
            metrics_num(run->metrics, "bubble_fraction", bubble);
            metrics_num(run->metrics, "step_seconds", run->pipe.seconds);
            double most = 0, sum = 0; /* the stages' compute: how even the partition ran */
            for (int r = 0; r < P; r++) most = fmax(most, run->pipe.rank_busy[r]), sum += run->pipe.rank_busy[r];
            metrics_num(run->metrics, "busy_max_seconds", most);
            metrics_num(run->metrics, "busy_mean_seconds", sum / P);
            metrics_end(run->metrics);
        }
        progress("  epoch %d: step %d/%lld, loss %.3f, %.0f tokens/s, bubble %.2f", epoch, e.steps,
                 (long long)n, (double)loss, e.tokens / (now_seconds() - t0), bubble);
    }
    progress_clear();
    e.seconds = now_seconds() - t0;
    e.loss /= e.steps ? e.steps : 1;
    e.bubble = e.steps ? bubble_sum / e.steps : 0;
    return e;
}

/* Rank 0 prints what every stage allocated: parameters and their gradients (SGD
 * without momentum keeps no state), activations at the peak, the backward's workspaces,
 * stage 0's table of positions;
 * on GPUs also what each device has in use (cudaMemGetInfo, as nvidia-smi counts it:
 * with the CUDA context and the cuBLAS and NCCL workspaces, which nothing here counts). */
static void print_memory(Run *run) {
    const int P = run->pipe_dist->world_size;
    double *params = xcalloc((size_t)P, sizeof *params), *acts = xcalloc((size_t)P, sizeof *acts);
    double *slots = xcalloc((size_t)P, sizeof *slots), *work = xcalloc((size_t)P, sizeof *work);
    double *used = xcalloc((size_t)P, sizeof *used), *table = xcalloc((size_t)P, sizeof *table);
    double *copy = xcalloc((size_t)P, sizeof *copy);
    size_t in_use = 0, total = 0;
    if (run->stage.device == DEVICE_CUDA) cuda_memory_in_use(&in_use, &total);
    dist_all_gather_double(run->pipe_dist, (double)run->stage.params.total * 4, params);
    dist_all_gather_double(run->pipe_dist, (double)pipeline_activation_bytes(&run->pipe), acts);
    dist_all_gather_double(run->pipe_dist, run->pipe.max_slots, slots);
    dist_all_gather_double(run->pipe_dist, (double)pipeline_workspace_bytes(&run->pipe), work);
    dist_all_gather_double(run->pipe_dist, (double)in_use, used);
    /* a 16-bit run's working copy of the parameters, what the layers read */
    const Tensor *w = &run->stage.params.working;
    dist_all_gather_double(run->pipe_dist, run->cfg.dtype != DTYPE_F32 ? (double)tensor_bytes(w) : 0, copy);
    /* the embedding's sinusoidal position table, [max_len, width]: no parameters */
    const double pe = run->stage.first == 0 ? (double)tensor_bytes(transformer_positions(&run->stage)) : 0;
    dist_all_gather_double(run->pipe_dist, pe, table);
    for (int s = 0; s < P; s++) {
        print0("  stage %d memory: parameters %.1f MB (+ gradients as much), activations %.1f MB "
               "(%.0f micro-batch%s in flight at most, %s), workspaces %.1f MB", s,
               params[s] / 1e6, acts[s] / 1e6, slots[s], slots[s] == 1 ? "" : "es",
               run->cfg.schedule, work[s] / 1e6);
        if (table[s] > 0) print0(", position table %.1f MB", table[s] / 1e6);
        if (copy[s] > 0) print0(", %s working copy %.1f MB", run->cfg.precision, copy[s] / 1e6);
        print0(": %.1f MB in all", (2 * params[s] + acts[s] + work[s] + table[s] + copy[s]) / 1e6);
        if (used[s] > 0) print0("; its GPU has %.1f GB in use", used[s] / 1e9);
        print0("\n");
    }
    xfree(params), xfree(acts), xfree(slots), xfree(work), xfree(used), xfree(table), xfree(copy);
}

static void train(Run *run) {
    const Config *c = &run->cfg;
    const int P = run->pipe_dist->world_size;
    print0("training: SGD lr %g (x %g each epoch), clip %g, %lld steps an epoch, %d thread%s per "
           "rank, precision %s%s\n", (double)c->lr, (double)c->gamma, (double)c->clip,
           (long long)full_batches(&run->train, run->T), c->threads, c->threads == 1 ? "" : "s",
           c->precision, c->dtype == DTYPE_F32 ? "" : c->dtype == DTYPE_BF16
               ? " (bfloat16 compute, float32 master weights)"
               : " (float16 compute, float32 master weights, loss scaling)");
    if (run->world->rank == 0) run->metrics = metrics_open(c->metrics);
    loss_watch_init(&run->watch, run->model_cfg.vocab);
    float lr = c->lr;
    for (int epoch = 1; epoch <= c->epochs; epoch++) {
        const EpochStats e = train_epoch(run, epoch, lr);
        if (epoch == 1) print_memory(run);
        const double valid = evaluate(run, &run->valid);
        const double formula = lesson_bubble_formula(P, c->micro); /* TODO 7.6 */
        char extra[96] = ""; /* a float16 step whose gradients overflowed is skipped */
        if (c->dtype == DTYPE_F16)
            snprintf(extra, sizeof extra, " | skipped %lld steps, loss scale %g",
                     (long long)mixed_precision_skipped(&run->mp), (double)mixed_precision_scale(&run->mp));
        print0("| end of epoch %3d | time: %6.2fs | train loss %5.2f | valid loss %5.2f | valid ppl "
               "%8.2f | %.0f tokens/s | bubble %.3f (formula %.3f)%s\n", epoch, e.seconds, e.loss,
               valid, exp(valid), e.tokens / e.seconds, e.bubble, formula, extra);
        if (run->metrics) {
            metrics_begin(run->metrics);
            metrics_int(run->metrics, "epoch", epoch);
            metrics_num(run->metrics, "train_loss", e.loss);
            metrics_num(run->metrics, "valid_loss", valid);
            metrics_num(run->metrics, "valid_ppl", exp(valid));
            metrics_num(run->metrics, "tokens_per_s", e.tokens / e.seconds);
            metrics_num(run->metrics, "bubble_fraction", e.bubble);
            metrics_num(run->metrics, "bubble_formula", formula);
            metrics_num(run->metrics, "seconds", e.seconds);
            metrics_str(run->metrics, "precision", c->precision);
            metrics_int(run->metrics, "skipped_steps", mixed_precision_skipped(&run->mp));
            metrics_end(run->metrics);
        }
        lr *= c->gamma;
    }
    const double test = evaluate(run, &run->test);
    print0("| end of training | test loss %5.2f | test ppl %8.2f\n", test, exp(test));
    metrics_close(run->metrics);
}

static void finish(Run *run) {
    if (run->dev_tokens != run->host_tokens) {
        device_free(run->stage.device, run->dev_tokens);
        device_free(run->stage.device, run->dev_targets);
    }
    xfree(run->host_tokens), xfree(run->host_targets), xfree(run->tok), xfree(run->tgt);
    pipeline_free(&run->pipe);
    sgd_free(&run->opt);
    mixed_precision_free(&run->mp);
    transformer_free(&run->stage);
    text_batches_free(&run->train), text_batches_free(&run->valid), text_batches_free(&run->test);
    text_free(&run->corpus);
    grid_free(&run->grid);
    dist_finalize(run->world);
}

int lesson_main(int argc, char **argv) {
    Run run = {0};
    ArgSpec specs[MAX_SPECS];
    const int nspecs = parse_args(argc, argv, &run.cfg, specs);
    omp_set_num_threads(run.cfg.threads);
    join(&run, specs, nspecs);
    load_text(&run);
    print0("data: %s, %d words; %lld train, %lld valid, %lld test tokens\n", run.corpus.name,
           run.corpus.vocab.count, (long long)run.corpus.train.count,
           (long long)run.corpus.valid.count, (long long)run.corpus.test.count);
    build_stage(&run);
    dist_trace_start(run.world, run.cfg.trace); /* --trace: ts 0 here on every rank */
    BlockTrace *blocks = block_trace_attach(&run.stage.blocks);
    train(&run);
    block_trace_detach(blocks);
    dist_trace_finish(run.world, run.cfg.trace);
    finish(&run);
    return 0;
}
