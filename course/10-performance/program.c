/* Lesson 10: the program (given; worth reading: TODOs 10.1-10.3 and 10.6 are called from
 * here).
 *
 *   make run-lesson 10 RANKS=2 ARGS="--trace run.json"            # 2 CPU ranks, slowed loader
 *   mpirun -n 2 train --trace run.json --loader slow --read-latency-us 500
 *   mpirun -n 2 train --trace fixed.json --loader mine            # TODO 10.6's prefetch
 *   make trace TRACE="run.rank*.json"                             # the shares and an SVG
 *   srun train --device cuda --trace run.json                     # GPUs, in a Slurm job
 *
 * Every rank trains lesson 04's transformer on its columns of each batch (lesson 08's
 * layout: the batch's sequences side by side), the gradients averaged by lesson 06's
 * buckets (--grad-sync buckets: all-reduces started during the backward; blocking:
 * after it), AdamW. Batches come from --loader (lesson.h: plain, slow, mine). Each step
 * is TODO 10.1's. With --trace every rank writes its file, then rank 0 reads them back
 * and prints, per rank, the shares of the steps by your TODOs 10.2-10.3 beside the
 * library's (core/trace_shares.h), the communication in flight, hidden and exposed, and
 * the model's FLOP/s and MFU (a CPU rank's peak measured; a GPU's from --peak-gflops).
 * --metrics FILE: a JSON line per step. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/machine.h"
#include "core/metrics.h"
#include "core/timer.h"
#include "cuda/device.h"
#include "dist/dist_options.h"
#include "dist/dist_trace.h"
#include "lesson.h"
#include "models/block_trace.h"
#include "train/lm_options.h"
#include "train/loop.h"
#include "train/loss_watch.h"

/* ---------------------------------------------------------------- options */

typedef struct {
    LmOptions lm; /* --d-model, --heads, --d-hid, --layers, --dropout, --bptt, --tokenizer */
    const char *dataset, *data, *device, *dist, *metrics, *trace, *loader, *token_file, *grad_sync;
    int batch_size, max_steps, seed, threads, ranks, read_latency_us;
    float lr, weight_decay, clip, bucket_mb, timeout_s, peak_gflops;
} Config;

static const char *const per_rank_options[] = {"metrics", "threads", "timeout", NULL};
enum { OWN = 21, MAX_SPECS = OWN + LM_OPTION_SPECS };

static int parse_args(int argc, char **argv, Config *c, ArgSpec *specs) {
    *c = (Config){.lm = lm_options_defaults(), .dataset = "auto", .device = "cpu", .dist = "auto",
                  .loader = "slow", .grad_sync = "buckets", .batch_size = 16, .max_steps = 30,
                  .seed = 42, .threads = 1, .read_latency_us = 500, .lr = 5e-4f, .weight_decay = 0.01f,
                  .clip = 0.5f, .bucket_mb = 25, .timeout_s = 300};
    const ArgSpec own[OWN] = {
        {"dataset", ARG_CHOICE, &c->dataset, "the text: auto = WikiText-2 where found, else Debian's fortunes text", "auto|wikitext2|fortunes|text"},
        {"data", ARG_STRING, &c->data, "a directory with WikiText-2, or a text file / directory for --dataset text", NULL},
        {"loader", ARG_CHOICE, &c->loader, "plain: batches from memory; slow: read from the token file when the step asks (the planted bottleneck); mine: your TODO 10.6's prefetch", "plain|slow|mine"},
        {"read-latency-us", ARG_INT, &c->read_latency_us, "slow and mine: microseconds slept before each sequence's read (a parallel file system's latency on small reads; 0: none)", "0..10000000"},
        {"token-file", ARG_STRING, &c->token_file, "slow and mine: where rank 0 writes the training tokens (default: in $TMPDIR or /tmp)", NULL},
        {"grad-sync", ARG_CHOICE, &c->grad_sync, "buckets: all-reduces started during the backward (lesson 06); blocking: all after it", "buckets|blocking"},
        {"bucket-mb", ARG_FLOAT, &c->bucket_mb, "the all-reduce's buckets (lesson 06)", NULL},
        {"batch-size", ARG_INT, &c->batch_size, "sequences per step, all ranks together (each takes batch-size / ranks)", "1..1048576"},
        {"max-steps", ARG_INT, &c->max_steps, "steps to train (at most one epoch)", "1..1073741824"},
        {"lr", ARG_FLOAT, &c->lr, "AdamW's learning rate", NULL},
        {"weight-decay", ARG_FLOAT, &c->weight_decay, "AdamW's decoupled weight decay", NULL},
        {"clip", ARG_FLOAT, &c->clip, "largest global gradient norm (0: no clipping)", NULL},
        {"seed", ARG_INT, &c->seed, "seed of the weights and the dropout masks", NULL},
        {"threads", ARG_INT, &c->threads, "OpenMP threads per rank", "1..1024"},
        {"device", ARG_CHOICE, &c->device, "where each rank trains (cuda: one GPU per rank)", "cpu|cuda"},
        {"dist", ARG_CHOICE, &c->dist, "communication backend (auto: nccl for GPUs, mpi for CPU ranks)", "auto|mpi|nccl|single"},
        {"ranks", ARG_INT, &c->ranks, "stop unless the job has this many ranks (0: any)", "0..1048576"},
        {"timeout", ARG_FLOAT, &c->timeout_s, "seconds a rank waits for another before the job ends", NULL},
        {"metrics", ARG_STRING, &c->metrics, "JSON lines, one per step: loss, step_seconds, tokens_per_s", NULL},
        {"trace", ARG_STRING, &c->trace, "each rank writes FILE.rank<r>.json; then the shares of a step are printed (make trace draws it)", NULL},
        {"peak-gflops", ARG_FLOAT, &c->peak_gflops, "a rank's peak GFLOP/s, for the MFU (0: a CPU rank's FMA peak measured after the steps; a GPU's not printed)", NULL},
    };
    memcpy(specs, own, sizeof own);
    const int n = OWN + lm_options_specs(&c->lm, specs + OWN);
    dist_help_once(argc, argv);
    args_parse(argc, argv, specs, n,
               "Lesson 10: where a step's time goes. Lesson 04's transformer trained data-parallel "
               "over ranks (mpirun or srun), traced (--trace), its data loader slowed (--loader slow) "
               "and fixed (--loader mine).");
    lm_options_check(&c->lm);
    /* the integers' ranges are in their specs (args_parse refuses a value outside one) */
    if (!(c->lr > 0) || !isfinite(c->lr)) fatal("--lr must be positive, got %g", (double)c->lr);
    if (!(c->weight_decay >= 0) || !isfinite(c->weight_decay)) fatal("--weight-decay must be 0 or more");
    if (!(c->clip >= 0) || !isfinite(c->clip)) fatal("--clip must be 0 or more, got %g", (double)c->clip);
    if (!(c->bucket_mb > 0) || !isfinite(c->bucket_mb)) fatal("--bucket-mb must be positive");
    if (!(c->timeout_s > 0) || !isfinite(c->timeout_s)) fatal("--timeout must be positive");
    if (!(c->peak_gflops >= 0) || !isfinite(c->peak_gflops)) fatal("--peak-gflops must be 0 or more");
    return n;
}

/* ---------------------------------------------------------------- the loader */

const TokenBatch *loader_next(Loader *l) {
    CHECK(l->next < l->count, "loader_next: all %lld batches handed out", (long long)l->count);
    if (strcmp(l->kind, "mine") == 0) return lesson_next_batch(l); /* TODO 10.6 */
    const int64_t row = l->rows[l->next++];
    TokenBatch *b = &l->own;
    b->row = row;
    b->read_start_ns = trace_now_ns();
    if (strcmp(l->kind, "slow") == 0) { /* now, a read per sequence, each waiting the latency */
        char why[512];
        if (!token_file_read_batch(&l->file, row, l->bptt, l->col0, l->n, b->tokens, b->targets, why, sizeof why))
            fatal("the data loader: %s", why);
    } else { /* plain: get_batch in memory, this rank's columns, batch-major */
        const TextBatch t = text_get_batch(l->split, row, l->bptt);
        for (int s = 0; s < l->n; s++)
            for (int k = 0; k < l->bptt; k++) {
                b->tokens[s * l->bptt + k] = t.input[k * t.cols + l->col0 + s];
                b->targets[s * l->bptt + k] = t.target[k * t.cols + l->col0 + s];
            }
    }
    b->read_end_ns = trace_now_ns();
    return b;
}

/* The token file's default name: the same on every rank (from the text and the sizes). */
static void token_path(const Config *c, const TextBatches *split, char *out, size_t cap) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)split->rows ^ ((uint64_t)split->cols << 40);
    for (int64_t i = 0; i < split->rows * split->cols; i++) h = (h ^ (uint32_t)split->data[i]) * 1099511628211ull;
    const char *dir = getenv("TMPDIR");
    if (c->token_file) snprintf(out, cap, "%s", c->token_file);
    else snprintf(out, cap, "%s/course10-tokens-%016llx.bin", dir && *dir ? dir : "/tmp", (unsigned long long)h);
}

static void loader_init(Loader *l, const Config *c, Dist *d, const TextBatches *split, int64_t *rows, int64_t count) {
    const int W = d->world_size, n = c->batch_size / W;
    *l = (Loader){.kind = c->loader, .rows = rows, .count = count, .split = split, .bptt = c->lm.bptt,
                  .col0 = d->rank * n, .n = n, .file = {.fd = -1}};
    l->own.tokens = xmalloc((size_t)n * c->lm.bptt * sizeof(int));
    l->own.targets = xmalloc((size_t)n * c->lm.bptt * sizeof(int));
    if (strcmp(c->loader, "plain") == 0) return;
    char path[1024], why[FS_MSG_MAX];
    token_path(c, split, path, sizeof path);
    /* rank 0 writes it before any rank opens it; when it cannot (or will not: something
     * that is not an earlier token file is at the path), every rank stops */
    const bool written = d->rank != 0 || token_file_write(path, split, why, sizeof why);
    if (dist_sum_double(d, written ? 0.0 : 1.0) > 0)
        fatal("%s", d->rank == 0 ? why : "rank 0 could not write the token file (its message says why)");
    if (!token_file_open(&l->file, path, c->read_latency_us, why, sizeof why)) fatal("%s", why);
    if (strcmp(c->loader, "mine") == 0) l->prefetch = prefetch_init(&l->file, l->bptt, l->col0, n);
    print0("data loader: %s, the token file %s, %d sequence%s per rank a step, one read each%s\n", c->loader,
           path, n, n == 1 ? "" : "s",
           c->read_latency_us ? " after a stand-in latency (--read-latency-us)" : "");
    if (c->read_latency_us)
        print0("  %d us a read: a parallel file system's small reads take some 0.1-1 ms; this one is a "
               "sleep standing for it\n", c->read_latency_us);
}

static void loader_free(Loader *l) {
    prefetch_free(l->prefetch);
    token_file_close(&l->file);
    xfree(l->own.tokens), xfree(l->own.targets);
}

/* ---------------------------------------------------------------- the step's given parts */

void step_load_batch(Step *s) {
    const TokenBatch *b = loader_next(s->loader);
    const size_t bytes = (size_t)s->lm->B * s->lm->T * sizeof(int);
    device_copy(s->tokens, s->lm->device, b->tokens, DEVICE_CPU, bytes);
    device_copy(s->targets, s->lm->device, b->targets, DEVICE_CPU, bytes);
}

void step_sync_gradients(Step *s) { ddp_finish_gradients(s->ddp); }

/* ---------------------------------------------------------------- the report */

static double pct(int64_t part, int64_t whole) { return whole > 0 ? 100.0 * (double)part / (double)whole : 0; }

/* The events of t from the end of its first step on: the first step warms up (the
 * first batch cannot have been read ahead, the caches are cold), so the shares leave
 * it out. */
static void skip_first_step(TraceFile *t) {
    int64_t end = -1;
    for (int64_t i = 0; i < t->count; i++) {
        const TraceRecord *e = &t->events[i];
        if (e->tid == TRACE_TID_HOST && e->cat == TRACE_STEP && (end < 0 || e->ts_ns + e->dur_ns < end))
            end = e->ts_ns + e->dur_ns;
    }
    int64_t kept = 0;
    for (int64_t i = 0; i < t->count; i++)
        if (t->events[i].ts_ns >= end) t->events[kept++] = t->events[i];
    t->count = kept;
}

/* Rank 0: every rank's file read back, the shares yours beside the library's. */
static void report(const Config *c, int world) {
    for (int r = 0; r < world; r++) {
        char path[1024], why[512];
        if (trace_rank_path(path, sizeof path, c->trace, r) != 0) fatal("--trace %s: too long", c->trace);
        TraceFile t;
        if (!trace_load(path, &t, why, sizeof why)) fatal("%s", why);
        skip_first_step(&t);
        const StepShares y = lesson_step_shares(&t, r), l = trace_step_shares(&t, r);   /* TODO 10.2 */
        const CommSplit yc = lesson_comm_split(&t, r), lc = trace_comm_split(&t, r);   /* TODO 10.3 */
        printf("rank %d, steps 2-%lld, %.2f ms each (yours / library's): compute %.1f/%.1f%% exposed comm "
               "%.1f/%.1f%% data %.1f/%.1f%% idle %.1f/%.1f%%\n", r, (long long)l.steps + 1,
               l.steps ? (double)l.step_ns / (double)l.steps / 1e6 : 0.0, pct(y.compute_ns, y.step_ns),
               pct(l.compute_ns, l.step_ns), pct(y.comm_ns, y.step_ns), pct(l.comm_ns, l.step_ns),
               pct(y.data_ns, y.step_ns), pct(l.data_ns, l.step_ns), pct(y.idle_ns, y.step_ns),
               pct(l.idle_ns, l.step_ns));
        const double n = l.steps ? (double)l.steps : 1;
        printf("rank %d communication (yours / library's): %.2f/%.2f ms in flight a step, %.2f/%.2f "
               "hidden (%.0f%%), %.2f/%.2f exposed\n", r, (double)yc.in_flight_ns / n / 1e6,
               (double)lc.in_flight_ns / n / 1e6, (double)yc.hidden_ns / n / 1e6,
               (double)lc.hidden_ns / n / 1e6, pct(lc.hidden_ns, lc.in_flight_ns),
               (double)yc.exposed_ns / n / 1e6, (double)lc.exposed_ns / n / 1e6);
        trace_file_free(&t);
    }
    printf("the traces: %s (rank r: .rank<r>.json); draw them: make trace TRACE=\"%.*s.rank*.json\"\n",
           c->trace, (int)(strlen(c->trace) > 5 && strcmp(c->trace + strlen(c->trace) - 5, ".json") == 0
                               ? strlen(c->trace) - 5 : strlen(c->trace)), c->trace);
    fflush(stdout);
}

/* PaLM's count (appendix B): 6 N per token for the weights' multiplies, forward and
 * backward (N without the embedding table, a lookup), and 12 L T D for attention's. */
static double flops_per_token(const TransformerConfig *m, int64_t params, int T) {
    return 6.0 * (double)(params - (int64_t)m->vocab * m->d_model) + 12.0 * m->layers * (double)T * m->d_model;
}

/* ---------------------------------------------------------------- main */

int lesson_main(int argc, char **argv) {
    Config c;
    ArgSpec specs[MAX_SPECS];
    const int nspecs = parse_args(argc, argv, &c, specs);
    omp_set_num_threads(c.threads);
    const Device device = strcmp(c.device, "cuda") == 0 ? DEVICE_CUDA : DEVICE_CPU;
    Dist *d = dist_init(&(DistOptions){.backend = c.dist, .device = device, .timeout_s = c.timeout_s,
                                       .expect_world = c.ranks});
    dist_check_options(d, specs, nspecs, per_rank_options);
    char line[256];
    dist_describe(d, line, sizeof line);
    print0("%s\n", line);
    const int W = d->world_size, T = c.lm.bptt;
    if (c.batch_size % W != 0)
        fatal("--batch-size %d does not split evenly over %d ranks: make it a multiple of %d", c.batch_size, W, W);

    TextCorpus corpus;
    TextBatches train, valid;
    lm_load_text(&c.lm, c.dataset, c.data, c.batch_size, &corpus, &train, &valid);
    const TransformerConfig mc = lm_model_config(&c.lm, "tutorial", corpus.vocab.count);
    Transformer lm;
    transformer_init(&lm, &mc, c.batch_size / W, T, (uint64_t)c.seed);
    if (device != DEVICE_CPU) transformer_to_device(&lm, device);
    Ddp ddp;
    ddp_init(&ddp, d, &lm.params, c.bucket_mb, strcmp(c.grad_sync, "buckets") == 0);
    ddp_broadcast_params(&ddp); /* rank 0's weights everywhere */
    Adam adam;
    adamw_init(&adam, &lm.params, c.lr, c.weight_decay);
    const size_t bytes = (size_t)lm.B * T * sizeof(int);
    int *tokens = device_alloc(device, bytes), *targets = device_alloc(device, bytes);

    int64_t count = lm_full_batches(&train, T);
    if (count > c.max_steps) count = c.max_steps;
    int64_t *rows = xmalloc((size_t)count * sizeof *rows);
    for (int64_t k = 0; k < count; k++) rows[k] = k * T;
    Loader loader;
    loader_init(&loader, &c, d, &train, rows, count);
    const double fpt = flops_per_token(&mc, lm.params.total, T);
    print0("model: %lld parameters, %d sequences of %d tokens per rank a step, %s gradient sync; "
           "%lld steps, %.3g FLOP a token (6N + 12LTD)\n", (long long)lm.params.total, lm.B, T,
           c.grad_sync, (long long)count, fpt);

    Step step = {.lm = &lm, .params = &lm.params, .ddp = &ddp, .adam = &adam, .clip = c.clip,
                 .loader = &loader, .tokens = tokens, .targets = targets};
    MetricsFile *metrics = d->rank == 0 ? metrics_open(c.metrics) : NULL;
    dist_trace_start(d, c.trace); /* --trace: ts 0 here on every rank */
    BlockTrace *blocks = block_trace_attach(&lm.blocks);
    double later = 0, loss_sum = 0; /* steps 2..: the first warms up */
    LossWatch watch;
    loss_watch_init(&watch, mc.vocab);
    for (int64_t k = 0; k < count; k++) {
        const double t0 = now_seconds();
        const float loss = lesson_step(&step); /* TODO 10.1 */
        const double took = now_seconds() - t0;
        if (k > 0) later += took;
        const double mean = dist_sum_double(d, loss) / W;
        /* NaN, or far above its start, or rising: every rank sees the same mean and stops
         * at the same step (lib/train/loss_watch.h) */
        loss_watch_step(&watch, mean, k + 1, c.lr);
        loss_sum += mean;
        if (metrics) {
            metrics_begin(metrics);
            metrics_int(metrics, "step", k + 1);
            metrics_num(metrics, "loss", mean);
            metrics_num(metrics, "step_seconds", took);
            metrics_num(metrics, "tokens_per_s", (double)c.batch_size * T / took);
            metrics_str(metrics, "loader", c.loader);
            metrics_end(metrics);
        }
        progress("  step %lld/%lld, loss %.3f, %.1f ms", (long long)k + 1, (long long)count, mean, 1e3 * took);
    }
    progress_clear();
    block_trace_detach(blocks);
    dist_trace_finish(d, c.trace);
    const double step_s = dist_sum_double(d, count > 1 ? later / (double)(count - 1) : 0) / W;
    print0("trained %lld steps: mean loss %.3f; a step took %.2f ms on average (steps 2-%lld), "
           "%.0f tokens/s\n", (long long)count, loss_sum / (double)count, 1e3 * step_s, (long long)count,
           step_s > 0 ? c.batch_size * T / step_s : 0.0);
    if (step_s > 0) {
        const double gflops = fpt * lm.B * T / step_s / 1e9;
        /* A CPU rank's peak is measured here, after the steps, by every rank at once: each
         * gets its share of the node's cores, as its training did (core/machine.h). */
        const bool measured = c.peak_gflops == 0 && strcmp(c.device, "cpu") == 0;
        const double peak = measured ? machine_fma_peak_gflops(c.threads) : c.peak_gflops;
        if (peak > 0)
            print0("MFU %.1f%% of %.3g GFLOP/s (a rank's FMA peak, %s): %.3g GFLOP/s a rank\n",
                   100 * gflops / peak, peak, measured ? "measured" : "--peak-gflops", gflops);
        else
            print0("model FLOP/s: %.3g GFLOP/s a rank (MFU: give a GPU's peak, --peak-gflops)\n", gflops);
    }
    metrics_close(metrics);
    if (c.trace && *c.trace) {
        dist_barrier(d); /* every rank's file written */
        if (d->rank == 0) report(&c, W);
    }
    loader_free(&loader);
    xfree(rows);
    device_free(device, tokens), device_free(device, targets);
    adam_free(&adam);
    ddp_free(&ddp);
    transformer_free(&lm);
    text_batches_free(&train), text_batches_free(&valid);
    text_free(&corpus);
    dist_finalize(d);
    return 0;
}
