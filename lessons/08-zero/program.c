/* Lesson 08: the program (given; worth reading: TODOs 8.1-8.6 are called from here).
 *
 *   make run-lesson 8 RANKS=2 ARGS="--stage 3"                 # 2 CPU ranks, stage 3
 *   mpirun -n 4 train --stage 2 --max-steps 20 --metrics m.jsonl
 *   srun train --device cuda --model seed --stage 3             # in a Slurm job, GPUs
 *   mpirun -n 2 train --collectives                             # part 2: the ring
 *   mpirun -n 2 train --precision bf16                          # bfloat16 compute, float32 master weights
 *
 * Every rank builds lesson 04's transformer (or the seed's), trains on its share of each
 * batch's columns (the batch's sequences side by side, as lesson 04 batchifies the text),
 * and shards by --stage: 0 is plain data parallel (lesson 06's buckets), 1-3 ZeRO with
 * your parts (TODOs 8.1-8.5; --impl library: the library's). Rank 0 prints the memory
 * each rank holds against your formula (8.6), a line per epoch (train loss, valid loss
 * and perplexity, tokens/s, the bytes a step sent against the formula, the exposed
 * communication) and, with --metrics FILE, a JSON line per step. Every rank ends with
 * the digest of the whole model's parameters and of the optimiser's state, gathered:
 * the same on every rank, and the same at every stage for the same run. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/args.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/trace.h"
#include "core/timer.h"
#include "cuda/device.h"
#include "data/text.h"
#include "dist/dist_options.h"
#include "dist/dist_trace.h"
#include "lesson.h"
#include "models/block_trace.h"
#include "models/transformer.h"
#include "parallel/ddp.h"
#include "parallel/zero_checkpoint.h"
#include "train/checkpoint.h"
#include "train/clip.h"
#include "train/lm_options.h"
#include "train/loop.h"
#include "train/loss_watch.h"
#include "train/mixed_precision.h"
#include "train/precision_gpu.h"

const ZeroOps LESSON_OPS = {lesson_shard_range, lesson_reduce_gradients, lesson_sharded_step,
                            lesson_gather_params, lesson_stage3_hook};

/* Whose TODOs LESSON_OPS holds, for the model's line and the memory table: make lessons
 * writes this file to lessons/ (your TODOs) and to solutions/ (the solution's) */
static const char *const WHOSE_SHARDS = "your", *const FORMULA_ROW = "your formula (8.6)";

/* ---------------------------------------------------------------- options */

typedef struct {
    LmOptions lm; /* --d-model, --heads, --d-hid, --layers, --dropout, --bptt, --tokenizer */
    const char *dataset, *data, *model, *optimizer, *impl, *device, *dist, *metrics, *checkpoint_dir;
    const char *trace;
    const char *precision; /* fp32, bf16 or fp16 (lib/train/mixed_precision.h) */
    DType dtype;           /* --precision, parsed */
    int stage, batch_size, epochs, max_steps, valid_batches, seed, threads, ranks, collectives;
    int checkpoint_every, resume;
    float lr, weight_decay, momentum, clip, bucket_mb, timeout_s;
} Config;

/* Options each rank may set its own way; every other one must agree (dist_check_options). */
static const char *const per_rank_options[] = {"metrics", "threads", "timeout", NULL};
enum { OWN = 28, MAX_SPECS = OWN + LM_OPTION_SPECS };

/* Parses into *out; specs (MAX_SPECS) keep pointing at *out's fields, for the ranks'
 * comparison. Returns how many. */
static int parse_args(int argc, char **argv, Config *out, ArgSpec *specs) {
    Config *c = out;
    *c = (Config){.lm = lm_options_defaults(), .dataset = "auto", .model = "tutorial",
                .optimizer = "adamw", .impl = "mine", .device = "cpu", .dist = "auto",
                .stage = 3, .batch_size = 32, .epochs = 1, .seed = 42, .threads = 1,
                .lr = -1, .weight_decay = 0.01f, .momentum = 0.9f, .clip = 0.5f, .bucket_mb = 25, .timeout_s = 300,
                .precision = "fp32"};
    const ArgSpec own[OWN] = {
        {"stage", ARG_INT, &c->stage, "0: plain data parallel; 1: optimiser state sharded; 2: and gradients; 3: and parameters", "0..3"},
        {"model", ARG_CHOICE, &c->model, "tutorial: lesson 04's (200 wide, 2 layers); seed: the seed exercise's (1024 wide, 3 layers)", "tutorial|seed"},
        {"dataset", ARG_CHOICE, &c->dataset, "the text: auto = WikiText-2 where found, else Debian's fortunes text", "auto|wikitext2|fortunes|text"},
        {"data", ARG_STRING, &c->data, "a directory with WikiText-2, or a text file / directory for --dataset text", NULL},
        {"optimizer", ARG_CHOICE, &c->optimizer, "adamw (two moments: 8 bytes a parameter) or sgd (momentum: 4)", "sgd|adamw"},
        {"lr", ARG_FLOAT, &c->lr, "learning rate (default: adamw 5e-4, sgd 0.5)", NULL},
        {"weight-decay", ARG_FLOAT, &c->weight_decay, "decoupled weight decay of AdamW (SGD: L2)", NULL},
        {"momentum", ARG_FLOAT, &c->momentum, "SGD's momentum: its buffer is the state ZeRO shards (above 0)", NULL},
        {"clip", ARG_FLOAT, &c->clip, "largest global gradient norm (0: no clipping)", NULL},
        {"batch-size", ARG_INT, &c->batch_size, "sequences per step, all ranks together (each takes batch-size / ranks)", "1..1048576"},
        {"epochs", ARG_INT, &c->epochs, "passes over the training text", "1..1048576"},
        {"max-steps", ARG_INT, &c->max_steps, "stop after this many steps in all (0: every epoch whole)", "0..1073741824"},
        {"valid-batches", ARG_INT, &c->valid_batches, "evaluate on the first this many batches of the valid text (0: all)", "0..1073741824"},
        {"seed", ARG_INT, &c->seed, "seed of the weights and the dropout masks", NULL},
        {"impl", ARG_CHOICE, &c->impl, "mine: your TODOs 8.1-8.5 shard; library: lib/parallel/zero.c's", "mine|library"},
        {"bucket-mb", ARG_FLOAT, &c->bucket_mb, "stage 0: the all-reduce's buckets (lesson 06)", NULL},
        {"threads", ARG_INT, &c->threads, "OpenMP threads per rank", "1..1024"},
        {"device", ARG_CHOICE, &c->device, "where each rank trains (cuda: one GPU per rank)", "cpu|cuda"},
        {"dist", ARG_CHOICE, &c->dist, "communication backend (auto: nccl for GPUs, mpi for CPU ranks)", "auto|mpi|nccl|single"},
        {"ranks", ARG_INT, &c->ranks, "stop unless the job has this many ranks (0: any)", "0..1048576"},
        {"timeout", ARG_FLOAT, &c->timeout_s, "seconds a rank waits for another before the job ends", NULL},
        {"metrics", ARG_STRING, &c->metrics, "JSON lines, one per step: loss, tokens_per_s, bytes, memory, seconds", NULL},
        {"checkpoint-dir", ARG_STRING, &c->checkpoint_dir, "every rank writes its shard of a checkpoint here (a directory on a file system all ranks see)", NULL},
        {"checkpoint-every", ARG_INT, &c->checkpoint_every, "steps between checkpoints (0: at each epoch's end and the last step)", "0..1073741824"},
        {"resume", ARG_FLAG, &c->resume, "continue from the newest complete checkpoint in --checkpoint-dir (any number of ranks, any stage)", NULL},
        {"trace", ARG_STRING, &c->trace, "where the time goes: each rank writes FILE.rank<r>.json (Chrome's trace format; make trace)", NULL},
        {"precision", ARG_CHOICE, &c->precision, "compute in float32, or in bfloat16 / float16 with float32 master weights; fp16 with loss scaling", "fp32|bf16|fp16"},
        {"collectives", ARG_FLAG, &c->collectives, "part 2: your ring reduce-scatter against the library's, and its bandwidth", NULL},
    };
    memcpy(specs, own, sizeof own);
    const int n = OWN + lm_options_specs(&c->lm, specs + OWN);
    dist_help_once(argc, argv); /* one help, not one per rank */
    args_parse(argc, argv, specs, n,
               "Lesson 08: lesson 04's transformer trained data-parallel over ranks with ZeRO's "
               "sharding (stages 0-3), mpirun or srun.");
    lm_options_check(&c->lm);
    /* the integers' ranges are in their specs (args_parse refuses a value outside one) */
    const bool sgd = strcmp(c->optimizer, "sgd") == 0;
    if (c->lr < 0) c->lr = sgd ? 0.5f : 5e-4f;
    if (!(c->lr > 0) || !isfinite(c->lr)) fatal("--lr must be positive, got %g", (double)c->lr);
    if (!(c->weight_decay >= 0) || !isfinite(c->weight_decay)) fatal("--weight-decay must be 0 or more");
    if (!(c->momentum >= 0 && c->momentum < 1)) fatal("--momentum must be in [0, 1), got %g", (double)c->momentum);
    if (sgd && c->momentum == 0)
        fatal("--optimizer sgd needs --momentum above 0 (0.9, say): SGD without momentum keeps no "
              "state, so there is nothing for ZeRO to shard; --optimizer adamw keeps two moments");
    if (!(c->clip >= 0) || !isfinite(c->clip)) fatal("--clip must be 0 or more, got %g", (double)c->clip);
    if (!(c->bucket_mb > 0) || !isfinite(c->bucket_mb)) fatal("--bucket-mb must be positive");
    if (!(c->timeout_s > 0) || !isfinite(c->timeout_s)) fatal("--timeout must be positive, got %g", (double)c->timeout_s);
    if ((c->resume || c->checkpoint_every) && !c->checkpoint_dir)
        fatal("--resume and --checkpoint-every need --checkpoint-dir (where the checkpoints are)");
    if (!dtype_parse(c->precision, &c->dtype)) fatal("--precision %s: fp32, bf16 or fp16", c->precision);
    /* what ZeRO takes (lib/parallel/zero.c refuses the same, later): said here, where
     * every rank parses the same options (join checks they agree), so that every rank
     * stops alike, before any text is read */
    if (c->dtype == DTYPE_F16)
        fatal("--precision fp16: ZeRO takes float32 or bfloat16 models: float16's loss scaling "
              "divides the whole gradient buffer by the scale, and ZeRO shards it (stages 2 and "
              "3); use --precision bf16 (the range of float32, no loss scaling) or fp32");
    return n;
}

/* ---------------------------------------------------------------- the run */

typedef struct {
    Config cfg;
    Dist *dist;
    TextCorpus corpus;
    TextBatches train, valid;       /* batchify: batch_size columns */
    TransformerConfig model_cfg;
    Transformer lm;
    int Bl, T;                      /* this rank's sequences per step, tokens per sequence */
    int *host_tokens, *host_targets; /* [Bl * T] batch-major */
    int *dev_tokens, *dev_targets;
    Ddp ddp;                        /* stage 0 */
    Adam adam;                      /* stage 0, AdamW */
    Sgd sgd;                        /* stage 0, SGD */
    Zero zero;                      /* stages 1-3 */
    MixedPrecision mp;              /* bf16: the working copy rounded after stage 0's step */
    MetricsFile *metrics;
    int64_t steps;                  /* done, all epochs */
    int64_t epoch, epoch_step;      /* the epoch in progress (from 1), steps done in it */
    uint64_t fingerprint;           /* of the training text: a checkpoint of another is refused */
    ZeroCkpt ckpt;                  /* --checkpoint-dir */
    int64_t steps_here;             /* done by this process (a resumed run: since it resumed) */
    int64_t saved_step;             /* the step of the last checkpoint written (-1: none) */
    double bytes_sent;              /* by this rank in those steps */
    LossWatch watch;                /* the training loss, each step */
} Run;

static bool sgd(const Run *run) { return strcmp(run->cfg.optimizer, "sgd") == 0; }

static void join(Run *run, const ArgSpec *specs, int nspecs) {
    const Config *c = &run->cfg;
    const Device device = strcmp(c->device, "cuda") == 0 ? DEVICE_CUDA : DEVICE_CPU;
    run->dist = dist_init(&(DistOptions){.backend = c->dist, .device = device,
                                         .timeout_s = c->timeout_s, .expect_world = c->ranks});
    dist_check_options(run->dist, specs, nspecs, per_rank_options);
    char line[256];
    dist_describe(run->dist, line, sizeof line);
    print0("%s\n", line);
    /* fp16 is refused here for ZeRO's reasons (parse_args): fp32 is the way out */
    if (device == DEVICE_CUDA) precision_require_gpu(run->dist, c->dtype, c->precision, "fp32");
}

/* Training only (--collectives trains nothing): each rank takes batch-size / ranks. */
static void check_batch(const Run *run) {
    const int W = run->dist->world_size, B = run->cfg.batch_size;
    if (B % W != 0)
        fatal("--batch-size %d does not split evenly over %d ranks: make it a multiple of %d", B, W, W);
}

/* Full batches only: the model is built for sequences of --bptt tokens. */
static void load_text(Run *run) {
    const Config *c = &run->cfg;
    lm_load_text(&c->lm, c->dataset, c->data, c->batch_size, &run->corpus, &run->train, &run->valid);
}

/* After rank 0's weights were broadcast or a checkpoint loaded: a bf16 working copy of
 * them (stage 3 keeps none of the whole model: ZeRO rounds its shard itself, at
 * zero_init, a checkpoint's load and each zero_step). */
static void weights_changed(Run *run) {
    if (run->cfg.dtype != DTYPE_F32 && run->cfg.stage != 3) params_refresh_working(&run->lm.params);
}

static void build(Run *run) {
    const Config *c = &run->cfg;
    const int W = run->dist->world_size;
    run->model_cfg = lm_model_config(&c->lm, strcmp(c->model, "seed") == 0 ? "seed" : "tutorial",
                                     run->corpus.vocab.count);
    /* the options agree (join); a text of another vocabulary on some rank would not */
    dist_check_same(run->dist, transformer_param_count(&run->model_cfg),
                    "the model's number of parameters (--model, --d-model, --layers, the text's vocabulary)");
    run->T = c->lm.bptt;
    run->Bl = c->batch_size / W;
    /* every rank draws its own weights from the same seed; ZeRO (and stage 0's
     * broadcast) starts every rank from rank 0's anyway */
    transformer_init(&run->lm, &run->model_cfg, run->Bl, run->T, (uint64_t)c->seed);
    const Device device = strcmp(c->device, "cuda") == 0 ? DEVICE_CUDA : DEVICE_CPU;
    if (device != DEVICE_CPU) transformer_to_device(&run->lm, device);
    /* bf16: the layers compute in bfloat16 from a working copy of the parameters; their
     * float32 values, gradients and the optimiser's state stay what they were */
    transformer_set_precision(&run->lm, c->dtype);
    mixed_precision_init(&run->mp, c->dtype, &run->lm.blocks, &run->lm.params);
    const ZeroOps *ops = strcmp(c->impl, "library") == 0 ? &ZERO_LIBRARY : &LESSON_OPS;
    if (c->stage == 0) {
        dist_broadcast(run->dist, &run->lm.params.values, 0);
        ddp_init(&run->ddp, run->dist, &run->lm.params, c->bucket_mb, true);
        if (sgd(run)) sgd_init(&run->sgd, &run->lm.params, c->lr, c->momentum, c->weight_decay);
        else adamw_init(&run->adam, &run->lm.params, c->lr, c->weight_decay);
    } else {
        zero_init(&run->zero, run->dist, &run->lm.blocks, c->stage, ops);
        if (sgd(run)) zero_optimizer_sgd(&run->zero, c->lr, c->momentum, c->weight_decay);
        else zero_optimizer_adamw(&run->zero, c->lr, c->weight_decay);
    }
    weights_changed(run);
    const size_t bytes = (size_t)run->Bl * run->T * sizeof(int);
    run->host_tokens = xmalloc(bytes), run->host_targets = xmalloc(bytes);
    run->dev_tokens = run->host_tokens, run->dev_targets = run->host_targets;
    if (device != DEVICE_CPU) {
        run->dev_tokens = device_alloc(device, bytes);
        run->dev_targets = device_alloc(device, bytes);
    }
}

/* What this rank holds now: the stage's buffers, as allocated. */
static ZeroMemory allocated(const Run *run) {
    if (run->cfg.stage > 0) return run->zero.memory;
    const int64_t psi = run->lm.params.total;
    return (ZeroMemory){.params = 4 * psi, .grads = 4 * psi, .optim = (sgd(run) ? 4 : 8) * psi};
}

static void print_memory(Run *run) {
    const int64_t psi = run->lm.params.total;
    const int W = run->dist->world_size;
    const ZeroOptimizer opt = sgd(run) ? ZERO_SGD : ZERO_ADAMW;
    const ZeroMemory f = lesson_memory_formula(run->cfg.stage, psi, W, opt); /* TODO 8.6 */
    const ZeroMemory a = allocated(run);
    const double ftotal = (double)(f.params + f.grads + f.optim);
    const double atotal = (double)(a.params + a.grads + a.optim);
    print0("model: %s transformer, %lld parameters in %d blocks; stage %d on %d rank%s, %s, "
           "%d sequences of %d tokens per rank per step (%s shards)\n", run->cfg.model,
           (long long)psi, transformer_block_count(&run->model_cfg), run->cfg.stage, W,
           W == 1 ? "" : "s", sgd(run) ? "SGD" : "AdamW", run->Bl, run->T,
           strcmp(run->cfg.impl, "library") == 0 ? "the library's" : WHOSE_SHARDS);
    print0("memory per rank (MB):  %10s %10s %10s %10s\n", "params", "grads", "optimizer", "total");
    print0("  %-20s %10.3f %10.3f %10.3f %10.3f\n", FORMULA_ROW, f.params / 1e6, f.grads / 1e6,
           f.optim / 1e6, ftotal / 1e6);
    print0("  allocated            %10.3f %10.3f %10.3f %10.3f  (%+.0f bytes: the padding)\n",
           a.params / 1e6, a.grads / 1e6, a.optim / 1e6, atotal / 1e6, atotal - ftotal);
    if (a.windows) { /* the largest block's own size, and what padding makes of it on W ranks */
        const ZeroUnit *big = &run->zero.units[0];
        for (int k = 1; k < run->zero.nunits; k++)
            if (run->zero.units[k].size > big->size) big = &run->zero.units[k];
        print0("  + windows            %10.3f MB: %s of the largest block (%lld scalars; %d pieces of "
               "%lld, %lld padded), one in use and one in flight\n", a.windows / 1e6,
               run->cfg.stage == 3 ? "two for parameters and two for gradients" : "two for gradients",
               (long long)big->size, W, (long long)big->piece, (long long)(big->piece * W));
    }
    if (run->cfg.dtype != DTYPE_F32) /* beside the float32 master values the table counts */
        print0("  + working copy       %10.3f MB: the parameters in %s, what the layers read%s\n",
               (double)(run->cfg.stage == 3 ? a.working : (int64_t)tensor_bytes(&run->lm.params.working)) / 1e6,
               run->cfg.precision, run->cfg.stage == 3 ? " (this rank's shard of them, gathered into the windows)" : "");
}

/* Batch i of a split (get_batch, [T, columns]): this rank's columns, batch-major. */
static void load_batch(Run *run, const TextBatches *split, int64_t i) {
    trace_begin("load batch", TRACE_DATA); /* with --trace (core/trace.h) */
    const TextBatch b = text_get_batch(split, i, run->T);
    const int Bl = run->Bl, T = run->T, col0 = run->dist->rank * Bl;
    for (int s = 0; s < Bl; s++)
        for (int t = 0; t < T; t++) {
            run->host_tokens[s * T + t] = b.input[t * b.cols + col0 + s];
            run->host_targets[s * T + t] = b.target[t * b.cols + col0 + s];
        }
    if (run->dev_tokens != run->host_tokens) {
        const size_t bytes = (size_t)Bl * T * sizeof(int);
        device_copy(run->dev_tokens, run->lm.device, run->host_tokens, DEVICE_CPU, bytes);
        device_copy(run->dev_targets, run->lm.device, run->host_targets, DEVICE_CPU, bytes);
    }
    trace_end("load batch");
}

/* This rank's bytes of every kind of operation since the counters were reset, sent or
 * received (dist_counts). */
static double counted_bytes(const Dist *d, bool received) {
    double sum = 0;
    for (int k = 0; k < DIST_KINDS; k++) {
        const DistCounts n = dist_counts(d, (DistKind)k);
        sum += (double)(received ? n.bytes_received : n.bytes_sent);
    }
    return sum;
}

/* One step: the loss, the mean over the ranks. */
static double train_step(Run *run) {
    const Config *c = &run->cfg;
    float loss;
    trace_begin("step", TRACE_STEP);
    if (c->stage == 0) {
        params_zero_grad(&run->lm.params);
        loss = transformer_forward_backward(&run->lm, run->dev_tokens, run->dev_targets);
        ddp_finish_gradients(&run->ddp);
        if (c->clip > 0) clip_grad_norm(&run->lm.params, c->clip);
        if (sgd(run)) sgd_step(&run->sgd, &run->lm.params);
        else adam_step(&run->adam, &run->lm.params);
        mixed_precision_step_done(&run->mp); /* bf16: the working copy from the new weights */
    } else { /* zero_step rounds the working copy again after its all-gather */
        zero_begin_step(&run->zero);
        loss = transformer_forward_backward(&run->lm, run->dev_tokens, run->dev_targets);
        zero_finish_gradients(&run->zero);
        if (c->clip > 0) zero_clip(&run->zero, c->clip);
        zero_step(&run->zero);
    }
    trace_end("step");
    return dist_sum_double(run->dist, loss) / run->dist->world_size;
}

static double exposed_seconds(const Run *run) {
    return run->cfg.stage == 0 ? run->ddp.exposed_s : run->zero.exposed_s;
}

static void write_step(Run *run, int epoch, double loss, double seconds, double exposed) {
    if (!run->metrics) return;
    const ZeroMemory a = allocated(run);
    metrics_begin(run->metrics);
    metrics_int(run->metrics, "step", run->steps);
    metrics_int(run->metrics, "epoch", epoch);
    metrics_num(run->metrics, "loss", loss);
    metrics_num(run->metrics, "tokens_per_s", (double)run->cfg.batch_size * run->T / seconds);
    metrics_num(run->metrics, "bytes_sent", counted_bytes(run->dist, false));
    metrics_num(run->metrics, "bytes_received", counted_bytes(run->dist, true));
    metrics_int(run->metrics, "param_bytes", a.params);
    metrics_int(run->metrics, "grad_bytes", a.grads);
    metrics_int(run->metrics, "optim_bytes", a.optim);
    metrics_int(run->metrics, "peak_bytes", a.params + a.grads + a.optim + a.windows);
    metrics_num(run->metrics, "step_seconds", seconds);
    metrics_num(run->metrics, "exposed_comm_seconds", exposed);
    metrics_str(run->metrics, "precision", run->cfg.precision);
    metrics_int(run->metrics, "skipped_steps", mixed_precision_skipped(&run->mp));
    metrics_end(run->metrics);
}

/* The mean loss of a split, forwards only (dropout off), over the ranks' columns. */
static double evaluate(Run *run, const TextBatches *split) {
    transformer_eval(&run->lm);
    const int blocks = transformer_block_count(&run->model_cfg);
    int64_t n = lm_full_batches(split, run->T);
    if (run->cfg.valid_batches && run->cfg.valid_batches < n) n = run->cfg.valid_batches;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        load_batch(run, split, i * run->T);
        transformer_forward(&run->lm, 0, blocks, run->dev_tokens, NULL);
        Tensor logits = *transformer_logits(&run->lm);
        sum += run->lm.layers.softmax_cross_entropy_fast(NULL, &logits, run->dev_targets, 1.0f);
    }
    transformer_train(&run->lm);
    const double loss = n ? sum / (double)n : NAN;
    return dist_sum_double(run->dist, loss) / run->dist->world_size;
}

/* ---------------------------------------------------------------- checkpoints */

/* FNV-1a over the vocabulary's size and the training tokens. */
static uint64_t text_fingerprint(const TextCorpus *c) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)c->vocab.count;
    for (int64_t i = 0; i < c->train.count; i++) h = (h ^ (uint32_t)c->train.ids[i]) * 1099511628211ull;
    return h;
}

/* What a checkpoint holds besides the shards: where the run is, the text it trains on,
 * and every block's dropout stream (the same on every rank), so that a resumed run
 * continues the uninterrupted one. */
static void setup_checkpoints(Run *run) {
    ZeroCkpt *k = &run->ckpt;
    zero_ckpt_init(k, run->cfg.checkpoint_dir, 2);
    run->fingerprint = text_fingerprint(&run->corpus);
    ckpt_add_i64(&k->scalars, "train.global_step", &run->steps);
    ckpt_add_i64(&k->scalars, "train.epoch", &run->epoch);
    ckpt_add_i64(&k->scalars, "train.epoch_step", &run->epoch_step);
    ckpt_add_u64(&k->scalars, "data.fingerprint", &run->fingerprint);
    BlockList *l = &run->lm.blocks;
    for (int i = 0; i < l->count; i++) {
        char name[64];
        snprintf(name, sizeof name, "rng.block%d.state", i);
        ckpt_add_u64(&k->scalars, name, &l->items[i].rng.state);
        snprintf(name, sizeof name, "rng.block%d.inc", i);
        ckpt_add_u64(&k->scalars, name, &l->items[i].rng.inc);
    }
}

static void save_checkpoint(Run *run) {
    CkptError err;
    Adam *adam = sgd(run) ? NULL : &run->adam;
    Sgd *s = sgd(run) ? &run->sgd : NULL;
    const int rc = run->cfg.stage == 0
                       ? zero_ckpt_save_plain(&run->ckpt, run->dist, &run->lm.blocks, adam, s, run->steps, &err)
                       : zero_ckpt_save(&run->ckpt, &run->zero, run->steps, &err);
    if (rc != 0) fatal("%s", err.msg);
    run->saved_step = run->steps;
    char path[CKPT_PATH_MAX];
    zero_ckpt_path(&run->ckpt, run->steps, path, sizeof path);
    print0("checkpoint: %s (%d shards)\n", path, run->dist->world_size);
}

/* Without --resume, a directory that holds complete checkpoints is another run's: saving
 * there would overwrite some of them and leave the rest, and a later --resume would go on
 * from the other run's state without a word (lesson 03's rule). Rank 0 looks (an
 * unfinished save is no checkpoint); every rank stops. */
static void refuse_earlier_run(Run *run) {
    const double mine = run->dist->rank == 0 ? (double)zero_ckpt_newest_complete(&run->ckpt) + 1 : 0;
    const int64_t newest = (int64_t)dist_sum_double(run->dist, mine) - 1; /* rank 0's, on all */
    if (newest >= 0)
        fatal("%s already holds checkpoints of an earlier run (newest: step %lld): pass --resume "
              "to continue it, or give another --checkpoint-dir to start afresh", run->ckpt.dir,
              (long long)newest);
}

static void resume(Run *run) {
    const uint64_t mine = run->fingerprint;
    CkptError err;
    int64_t step = 0;
    Adam *adam = sgd(run) ? NULL : &run->adam;
    Sgd *s = sgd(run) ? &run->sgd : NULL;
    const int rc = run->cfg.stage == 0
                       ? zero_ckpt_load_latest_plain(&run->ckpt, run->dist, &run->lm.blocks, adam, s, &step, &err)
                       : zero_ckpt_load_latest(&run->ckpt, &run->zero, &step, &err);
    if (rc < 0) fatal("%s", err.msg);
    if (rc == 0) {
        print0("no checkpoint in %s: starting afresh\n", run->ckpt.dir);
        run->steps = 0, run->epoch = 1, run->epoch_step = 0, run->fingerprint = mine;
        return;
    }
    if (run->fingerprint != mine)
        fatal("the checkpoint of step %lld in %s was written for another training text "
              "(fingerprint %016llx, this run's %016llx): resume with the text it trained on",
              (long long)step, run->ckpt.dir, (unsigned long long)run->fingerprint,
              (unsigned long long)mine);
    weights_changed(run);
    print0("resumed from step %lld in %s: epoch %lld, step %lld of it, now on %d ranks at stage %d\n",
           (long long)run->steps, run->ckpt.dir, (long long)run->epoch, (long long)run->epoch_step,
           run->dist->world_size, run->cfg.stage);
}

static void train(Run *run) {
    const Config *c = &run->cfg;
    const int64_t n = lm_full_batches(&run->train, run->T);
    print0("training: %s lr %g, clip %g, %lld steps an epoch of %d sequences, %d thread%s per "
           "rank, precision %s%s\n", sgd(run) ? "SGD" : "AdamW", (double)c->lr, (double)c->clip,
           (long long)n, c->batch_size, c->threads, c->threads == 1 ? "" : "s", c->precision,
           c->dtype == DTYPE_F32 ? "" : " (bfloat16 compute, float32 master weights)");
    if (run->dist->rank == 0) run->metrics = metrics_open(c->metrics);
    loss_watch_init(&run->watch, run->model_cfg.vocab);
    for (; run->epoch <= c->epochs; run->epoch++, run->epoch_step = 0) {
        const int epoch = (int)run->epoch;
        double loss_sum = 0, tokens = 0, exposed = 0, t0 = now_seconds();
        int steps = 0;
        for (int64_t i = run->epoch_step; i < n && !(c->max_steps && run->steps >= c->max_steps); i++) {
            load_batch(run, &run->train, i * run->T);
            dist_counts_reset(run->dist);
            const double e0 = exposed_seconds(run), s0 = now_seconds();
            const double loss = train_step(run);
            const double took = now_seconds() - s0, waited = exposed_seconds(run) - e0;
            /* the mean over the ranks, the same on all: NaN, far above its start or rising
             * stops every rank at this step (lib/train/loss_watch.h) */
            loss_watch_step(&run->watch, loss, run->steps + 1, c->lr);
            run->steps++, run->steps_here++, steps++, run->epoch_step = i + 1;
            run->bytes_sent += counted_bytes(run->dist, false);
            loss_sum += loss, tokens += (double)c->batch_size * run->T, exposed += waited;
            write_step(run, epoch, loss, took, waited);
            progress("  epoch %d: step %lld/%lld, loss %.3f, %.0f tokens/s", epoch,
                     (long long)run->epoch_step, (long long)n, loss, tokens / (now_seconds() - t0));
            if (c->checkpoint_every && run->steps % c->checkpoint_every == 0 && run->epoch_step < n) {
                progress_clear();
                save_checkpoint(run);
            }
        }
        progress_clear();
        if (steps == 0) break;
        const bool last = run->epoch == c->epochs || (c->max_steps && run->steps >= c->max_steps);
        if (c->checkpoint_dir && run->saved_step != run->steps) { /* the next epoch starts at step 0 */
            if (run->epoch_step >= n) run->epoch++, run->epoch_step = 0;
            save_checkpoint(run);
            if (run->epoch_step == 0) run->epoch--; /* the loop's own increment follows */
        }
        const double seconds = now_seconds() - t0, valid = evaluate(run, &run->valid);
        print0("| end of epoch %3d | time: %6.2fs | train loss %5.2f | valid loss %5.2f | valid ppl "
               "%8.2f | %.0f tokens/s | exposed communication %.1f ms a step\n", epoch, seconds,
               loss_sum / steps, valid, exp(valid), tokens / seconds, 1e3 * exposed / steps);
        if (last) break;
    }
    if (c->max_steps && run->steps < c->max_steps)
        print0("note: %d epoch%s ended after %lld steps, before --max-steps %d (--epochs for more)\n",
               c->epochs, c->epochs == 1 ? "" : "s", (long long)run->steps, c->max_steps);
    if (run->steps_here > 0) {
        const double want = zero_bytes_formula(c->stage, run->lm.params.total, run->dist->world_size,
                                               c->dtype);
        const char *how = c->stage < 3 ? "2 x 4" : c->dtype == DTYPE_F32 ? "3 x 4" : "(2 x 2 + 4)";
        print0("communication: %.3f MB sent per step by rank 0, the formula %s psi (N-1)/N = "
               "%.3f MB%s%s%s\n", run->bytes_sent / run->steps_here / 1e6, how, want / 1e6,
               c->stage == 3 && c->dtype != DTYPE_F32 ? " (the gathers move " : "",
               c->stage == 3 && c->dtype != DTYPE_F32 ? c->precision : "",
               c->stage == 3 && c->dtype != DTYPE_F32 ? ")" : "");
    }
    metrics_close(run->metrics);
}

/* ---------------------------------------------------------------- digests */

/* The same chain as params_digest (train/checkpoint.h): one hash per parameter. */
static uint64_t packed_digest(const ParamList *params, const float *packed) {
    uint64_t h = 0;
    int64_t at = 0;
    for (int i = 0; i < params->count; i++) {
        const int64_t n = params->items[i]->value.size;
        h = ckpt_hash64(packed + at, (size_t)n * 4, h);
        at += n;
    }
    return h;
}

/* The whole model's parameters and optimiser state (m then v), on every rank. */
static void print_digests(Run *run) {
    const ParamList *params = &run->lm.params;
    const int64_t psi = params->total;
    float *values = xmalloc((size_t)psi * sizeof *values), *state = xmalloc((size_t)psi * sizeof *state);
    const int states = sgd(run) ? 1 : 2;
    uint64_t opt_digest = 0;
    if (run->cfg.stage == 0) {
        device_copy(values, DEVICE_CPU, params->values.data, params->values.device, (size_t)psi * 4);
        const Tensor *s[2] = {sgd(run) ? &run->sgd.buf : &run->adam.m, &run->adam.v};
        for (int k = 0; k < states; k++) {
            device_copy(state, DEVICE_CPU, s[k]->data, s[k]->device, (size_t)psi * 4);
            opt_digest = ckpt_hash64(state, (size_t)psi * 4, opt_digest);
        }
    } else {
        zero_full_params(&run->zero, values);
        for (int k = 0; k < states; k++) {
            zero_full_state(&run->zero, k, state);
            opt_digest = ckpt_hash64(state, (size_t)psi * 4, opt_digest);
        }
    }
    printf("rank %d parameter digest: %016llx\n", run->dist->rank,
           (unsigned long long)packed_digest(params, values));
    printf("rank %d optimizer digest: %016llx\n", run->dist->rank, (unsigned long long)opt_digest);
    fflush(stdout);
    xfree(values), xfree(state);
}

/* ---------------------------------------------------------------- part 2 */

/* Your ring reduce-scatter against the library's on the same data, then both timed. */
static void collectives(Run *run) {
    Dist *d = run->dist;
    if (d->device != DEVICE_CPU) fatal("--collectives runs on CPU ranks (--device cpu)");
    const int W = d->world_size;
    print0("ring reduce-scatter (TODO 8.2) against the library's (%s) on %d ranks\n", d->backend, W);
    static const int64_t check_sizes[] = {1, 3, 1000, 100003};
    for (size_t k = 0; k < sizeof check_sizes / sizeof check_sizes[0]; k++) {
        const int64_t s = check_sizes[k];
        Tensor in = tensor_zeros(1, (int)(s * W)), a = tensor_zeros(1, (int)s), b = tensor_zeros(1, (int)s);
        for (int64_t i = 0; i < s * W; i++) in.data[i] = (float)((d->rank + 1) * (i % 97)) * 0.25f;
        lesson_ring_reduce_scatter(d, &a, &in);
        dist_reduce_scatter(d, &b, &in, DIST_SUM);
        double worst = 0;
        for (int64_t i = 0; i < s; i++) worst = fmax(worst, fabs(a.data[i] - b.data[i]));
        worst = dist_sum_double(d, worst);
        print0("  %7lld floats a rank: %s (largest difference %g)\n", (long long)s,
               worst == 0 ? "the same sums" : "DIFFERENT", worst);
        if (worst != 0) fatal("the ring reduce-scatter of %lld floats differs from the library's", (long long)s);
        tensor_free(&in), tensor_free(&a), tensor_free(&b);
    }
    print0("%12s  %15s  %18s  %8s\n", "bytes", "ring busbw GB/s", "library busbw GB/s", "ratio");
    for (int64_t bytes = 1 << 12; bytes <= (16 << 20); bytes *= 4) {
        const int64_t s = bytes / 4 / W;
        if (s < 1) continue;
        Tensor in = tensor_zeros(1, (int)(s * W)), out = tensor_zeros(1, (int)s);
        double best[2] = {1e30, 1e30};
        for (int rep = 0; rep < 5; rep++)
            for (int which = 0; which < 2; which++) {
                dist_barrier(d);
                const double t0 = now_seconds();
                if (which == 0) lesson_ring_reduce_scatter(d, &out, &in);
                else dist_reduce_scatter(d, &out, &in, DIST_SUM);
                best[which] = fmin(best[which], dist_sum_double(d, now_seconds() - t0) / W);
            }
        /* nccl-tests' bus bandwidth of a reduce-scatter: bytes (N - 1) / N per second */
        const double f = (double)(W - 1) / W * (double)(s * W * 4) / 1e9;
        print0("%12lld  %15.3f  %18.3f  %7.2fx\n", (long long)(s * W * 4), f / best[0], f / best[1],
               best[1] / best[0]);
        tensor_free(&in), tensor_free(&out);
    }
}

/* ---------------------------------------------------------------- main */

static void finish(Run *run) {
    if (run->dev_tokens != run->host_tokens) {
        device_free(run->lm.device, run->dev_tokens);
        device_free(run->lm.device, run->dev_targets);
    }
    xfree(run->host_tokens), xfree(run->host_targets);
    if (run->cfg.stage == 0) {
        ddp_free(&run->ddp);
        if (sgd(run)) sgd_free(&run->sgd);
        else adam_free(&run->adam);
    } else {
        zero_free(&run->zero);
    }
    mixed_precision_free(&run->mp);
    if (run->cfg.checkpoint_dir) zero_ckpt_free(&run->ckpt);
    transformer_free(&run->lm);
    text_batches_free(&run->train), text_batches_free(&run->valid);
    text_free(&run->corpus);
}

int lesson_main(int argc, char **argv) {
    Run *run = xcalloc(1, sizeof *run);
    ArgSpec specs[MAX_SPECS];
    const int nspecs = parse_args(argc, argv, &run->cfg, specs);
    omp_set_num_threads(run->cfg.threads);
    join(run, specs, nspecs);
    if (run->cfg.collectives) {
        collectives(run);
    } else {
        check_batch(run);
        load_text(run);
        build(run);
        print_memory(run);
        run->epoch = 1, run->saved_step = -1;
        if (run->cfg.checkpoint_dir) setup_checkpoints(run);
        if (run->cfg.resume) resume(run);
        else if (run->cfg.checkpoint_dir) refuse_earlier_run(run);
        dist_trace_start(run->dist, run->cfg.trace); /* --trace: ts 0 here on every rank */
        BlockTrace *blocks = block_trace_attach(&run->lm.blocks);
        train(run);
        block_trace_detach(blocks);
        dist_trace_finish(run->dist, run->cfg.trace);
        print_digests(run);
        finish(run);
    }
    dist_finalize(run->dist);
    xfree(run);
    return 0;
}
