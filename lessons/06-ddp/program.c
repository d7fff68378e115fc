/* Lesson 06: the program (given; worth reading, TODOs 6.1 to 6.6 are called from here).
 *
 *   mpirun -n 4 train --dataset fashion-mnist --epochs 2        # 4 CPU ranks
 *   srun train --device cuda --ranks $SLURM_NTASKS ...           # in a Slurm job
 *   make run-lesson 6 RANKS=2 ARGS="--epochs 1"                  # the same, locally
 *   train --collectives                                          # part 2: the ring
 *   mpirun -n 2 train --model transformer --batch-size 10        # lesson 04's model (lm.c)
 *
 * Every rank trains the lesson 01 CNN (or lesson 04's transformer) on its share of each
 * batch; rank 0 prints one line per epoch (the job's mean training loss, test loss and
 * accuracy, seconds, the job's images (tokens) per second) and, with --metrics FILE,
 * writes the same as JSON lines.
 * Every rank ends with "rank R parameter digest: <16 hex digits>": the same on all
 * ranks, or the ranks did not take the same steps. */
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
#include "train/precision_gpu.h"
#include "train/stop_note.h"
#include "train/train_state.h"

/* ---------------------------------------------------------------- options */

/* The options every rank must share are compared across ranks once the job is joined
 * (lib/dist/dist_options.h); these may differ: the file rank 0 writes, each rank's
 * threads and patience. */
enum { OWN = 15, MAX_SPECS = OWN + TRAIN_OPTION_SPECS + LM_OPTION_SPECS };
static const char *const per_rank_options[] = {"metrics", "threads", "timeout", NULL};

/* Fills *c, and specs (MAX_SPECS) with the options pointing into it; returns how many. */
static int parse_args(int argc, char **argv, Config *c, ArgSpec *specs) {
    *c = (Config){.train = train_options_defaults(), .device = "cpu", .dist = "auto",
                  .grad_sync = "mine", .bucket_mb = 25.0f, .timeout_s = 300.0f,
                  .model = "cnn", .lm = lm_options_defaults(), .text = "auto", .clip = 0.5f,
                  .precision = "fp32"};
    c->train.threads = 1; /* one core per rank: ranks, not threads, share the machine */
    const ArgSpec own[OWN] = {
        {"model", ARG_CHOICE, &c->model, "lesson 01's CNN (images) or lesson 04's transformer (text)", "cnn|transformer"},
        {"text", ARG_CHOICE, &c->text, "transformer: the text (auto: WikiText-2 where found, else Debian's fortunes; text: --data FILE)",
         "auto|wikitext2|fortunes|text"},
        {"clip", ARG_FLOAT, &c->clip, "transformer: largest global gradient norm (0: no clipping)", NULL},
        {"precision", ARG_CHOICE, &c->precision, "transformer: float32, or bfloat16 / float16 compute with float32 master weights; fp16 with loss scaling", "fp32|bf16|fp16"},
        {"device", ARG_CHOICE, &c->device, "where each rank trains (cuda: one GPU per rank)", "cpu|cuda"},
        {"dist", ARG_CHOICE, &c->dist, "communication backend (auto: nccl for GPUs, mpi for CPU ranks)",
         "auto|mpi|nccl|single"},
        {"ranks", ARG_INT, &c->ranks, "stop unless the job has this many ranks (0: any)", NULL},
        {"max-steps", ARG_INT, &c->max_steps, "stop after this many steps (0: all epochs)", NULL},
        {"grad-sync", ARG_CHOICE, &c->grad_sync,
         "gradient averaging: yours (TODO 6.4) or the library's buckets", "mine|buckets"},
        {"bucket-mb", ARG_FLOAT, &c->bucket_mb, "bucket size of --grad-sync buckets (PyTorch: 25)", NULL},
        {"no-overlap", ARG_FLAG, &c->no_overlap, "buckets: reduce after the backward, not during it", NULL},
        {"timeout", ARG_FLOAT, &c->timeout_s, "seconds a rank waits for the others before the job ends", NULL},
        {"checkpoint-dir", ARG_STRING, &c->checkpoint_dir, "rank 0 writes a checkpoint here after each epoch", NULL},
        {"resume", ARG_FLAG, &c->resume, "continue from the newest checkpoint there (any rank count)", NULL},
        {"collectives", ARG_FLAG, &c->collectives, "part 2: check the ring all-reduce, measure bandwidths", NULL},
    };
    memcpy(specs, own, sizeof own);
    int n = OWN + train_options_specs(&c->train, specs + OWN);
    n += lm_options_specs(&c->lm, specs + n); /* lesson 04's --d-model, --bptt, ... */
    for (int i = 0; i < n; i++) { /* lesson 01's words, said for ranks */
        if (strcmp(specs[i].name, "batch-size") == 0) {
            specs[i].help = "examples (images, or sequences) per step on each rank: the job's batch is "
                            "this x the ranks";
            specs[i].choices = "1..65536"; /* as lesson 04's; at most a rank's share of the data too */
        }
        if (strcmp(specs[i].name, "trace") == 0)
            specs[i].help = "where the time goes: each rank writes FILE.rank<r>.json (Chrome's trace "
                            "format; make trace)";
    }
    dist_help_once(argc, argv); /* one help, not one per rank */
    args_parse(argc, argv, specs, n,
               "Lesson 06: data-parallel training of the simple CNN (or lesson 04's transformer) "
               "over ranks (mpirun, srun).");
    train_options_check(&c->train);
    lm_options_check(&c->lm);
    if (!(c->clip >= 0.0f) || !isfinite(c->clip)) fatal("--clip must be 0 or more, got %g", (double)c->clip);
    if (c->ranks < 0) fatal("--ranks must be 0 or more, got %d", c->ranks);
    if (c->max_steps < 0) fatal("--max-steps must be 0 or more, got %d", c->max_steps);
    if (!(c->bucket_mb > 0) || !isfinite(c->bucket_mb)) fatal("--bucket-mb must be positive, got %g", (double)c->bucket_mb);
    if (!(c->timeout_s > 0) || !isfinite(c->timeout_s)) fatal("--timeout must be positive, got %g", (double)c->timeout_s);
    if (c->resume && !c->checkpoint_dir) fatal("--resume needs --checkpoint-dir (where the checkpoints are)");
    if (!dtype_parse(c->precision, &c->dtype)) fatal("--precision %s: fp32, bf16 or fp16", c->precision);
    if (c->dtype != DTYPE_F32 && strcmp(c->model, "transformer") != 0)
        fatal("--precision %s: the CNN runs in float32 only (its convolutions and max-pool); "
              "16-bit compute is the transformer's (--model transformer)", c->precision);
    return n;
}

/* ---------------------------------------------------------------- training */

static bool is_lm(const Run *run) { return strcmp(run->cfg.model, "transformer") == 0; }

/* A batch (per rank) larger than a rank's share of the data set (count examples, dealt
 * out by the sampler, padded: ceil(count / ranks) each) is refused before the model is
 * built for it. */
void check_batch_size(const Run *run, int count, const char *what) {
    const int W = run->dist->world_size, share = (int)(((int64_t)count + W - 1) / W);
    const int B = run->cfg.train.batch_size;
    if (B > share && W == 1)
        fatal("--batch-size %d is more than the %d %s: a step cannot take more than all of "
              "them. Give a --batch-size of at most %d", B, count, what, share);
    if (B > share)
        fatal("--batch-size %d is more than a rank's share of the %d %s (%d each on %d ranks): "
              "give a --batch-size of at most %d", B, count, what, share, W, share);
}

static void setup_training(Run *run) {
    if (is_lm(run)) {
        lm_setup(run);
        return;
    }
    const Config *c = &run->cfg;
    const TrainOptions *t = &c->train;
    train_options_load_data(t, &run->train, &run->test);
    check_batch_size(run, run->train.count, "training images");
    rng_seed(&run->rng, (uint64_t)t->seed, 1);
    run->data_fingerprint = train_data_fingerprint(&run->train);
    Rng rng; /* each rank its own initial weights: TODO 6.2 must make them one */
    rng_seed(&rng, (uint64_t)t->seed + 1000u * (uint64_t)run->dist->rank, 0);
    cnn_init(&run->model, run->train.channels, run->train.height, run->train.width,
             run->train.num_classes, t->batch_size, &rng);
    const Device device = strcmp(c->device, "cuda") == 0 ? DEVICE_CUDA : DEVICE_CPU;
    cnn_to_device(&run->model, device);
    batch_init(&run->batch, t->batch_size, &run->train);
    batch_to_device(&run->batch, device);
    if (strcmp(c->grad_sync, "buckets") == 0)
        ddp_init(&run->ddp, run->dist, &run->model.params, c->bucket_mb, !c->no_overlap);
    else
        dist_check_same(run->dist, run->model.params.total, "the number of parameters");
}

void watch_loss(Run *run, double loss) {
    const double mean = dist_sum_double(run->dist, loss) / run->dist->world_size;
    loss_watch_step(&run->watch, mean, run->steps + 1, run->cfg.train.lr);
}

EpochStats train_epoch(Run *run, int epoch) {
    if (is_lm(run)) return lm_train_epoch(run, epoch);
    EpochStats s = {0};
    const bool buckets = strcmp(run->cfg.grad_sync, "buckets") == 0;
    int n;
    lesson_start_epoch(run, epoch);
    while ((n = sampler_next(&run->sampler, run->batch.indices, run->batch.size)) > 0) {
        if (run->cfg.max_steps && run->steps >= run->cfg.max_steps) break;
        trace_begin("step", TRACE_STEP); /* with --trace (core/trace.h) */
        const int *labels;
        Tensor images = batch_load(&run->batch, &run->train, n, &labels);
        Tensor logits = cnn_forward(&run->model, &images);
        Tensor dlogits = tensor_rows(&run->model.d_logits, n);
        tensor_fill(&dlogits, 0.0f);
        trace_begin("loss", TRACE_COMPUTE);
        float loss = run->model.layers.softmax_cross_entropy(&dlogits, &logits, labels);
        trace_end("loss");
        params_zero_grad(&run->model.params);
        cnn_backward(&run->model, &images);
        if (buckets) ddp_finish_gradients(&run->ddp); /* started during the backward */
        else lesson_average_gradients(run);
        watch_loss(run, loss); /* the job's loss: NaN or diverging stops every rank */
        adam_step(&run->opt, &run->model.params);
        trace_end("step");
        s.loss_sum += (double)loss * n;
        s.examples += n;
        run->steps++;
        progress("  epoch %d: %.0f images on this rank, %.0f images/s, loss %.4f", epoch,
                 s.examples, progress_rate(s.examples), s.loss_sum / s.examples);
    }
    progress_clear();
    return s;
}

EpochStats evaluate_share(Run *run) {
    /* rank r evaluates test examples r, r + W, ...: each exactly once in the job */
    if (is_lm(run)) return lm_evaluate_share(run);
    EpochStats s = {0};
    const Dataset *d = &run->test;
    const int W = run->dist->world_size, B = run->batch.size;
    for (int first = run->dist->rank; first < d->count; first += W * B) {
        int n = 0;
        for (int i = first; i < d->count && n < B; i += W) run->batch.indices[n++] = i;
        const int *labels;
        Tensor images = batch_load(&run->batch, d, n, &labels);
        Tensor logits = cnn_forward(&run->model, &images);
        s.loss_sum += (double)run->model.layers.softmax_cross_entropy(NULL, &logits, labels) * n;
        s.correct += run->model.layers.count_correct(&logits, labels);
        s.examples += n;
    }
    return s;
}

/* Every rank reads the newest checkpoint rank 0 wrote (a shared file system) and
 * continues at the epoch after it. Written at an epoch's end, it holds no position
 * inside an epoch, so the rank count may differ from the run that wrote it. */
static int resume(Run *run) {
    TrainState ts = {0};
    Checkpoint c = {0};
    ckpt_add_params(&c, "model", &run->model.params);
    ckpt_add_adam(&c, &run->opt, &run->model.params);
    ckpt_add_train_state(&c, &ts);
    uint64_t fingerprint = 0;
    ckpt_add_u64(&c, "data.fingerprint", &fingerprint);
    MixedPrecisionCkpt scaler; /* the transformer's loss scaler (optional: older files lack it) */
    if (run->mp.blocks) mixed_precision_ckpt_add(&c, &run->mp, &scaler); /* as save.c */
    char path[CKPT_PATH_MAX];
    CkptError err;
    int found = ckpt_store_load_latest(&run->store, &c, path, sizeof path, &err);
    ckpt_free(&c);
    if (found < 0) fatal("%s", err.msg);
    if (found == 0) {
        print0("no checkpoint in %s: starting afresh\n", run->store.dir);
        return 1;
    }
    if (ts.sampler_count != run->train.count)
        fatal("%s was written for %lld training examples, this run has %d: the same --dataset "
              "and --train-limit, please", path, (long long)ts.sampler_count, run->train.count);
    if (fingerprint != run->data_fingerprint)
        fatal("%s was written for another training set of the same size (data fingerprint "
              "%016llx, this run's %016llx): resume with the data it was trained on, or start "
              "afresh in another --checkpoint-dir", path, (unsigned long long)fingerprint,
              (unsigned long long)run->data_fingerprint);
    run->steps = ts.global_step;
    run->rng.state = ts.rng_state, run->rng.inc = ts.rng_inc;
    print0("resumed from %s: epoch %lld next, %lld steps done, now on %d ranks\n", path,
           (long long)ts.epoch, (long long)ts.global_step, run->dist->world_size);
    if (is_lm(run) && run->cfg.dtype == DTYPE_F16) {
        if (mixed_precision_ckpt_loaded(&run->mp, &scaler))
            print0("fp16: loss scale %g, %lld steps skipped so far (from the checkpoint)\n",
                   (double)mixed_precision_scale(&run->mp), (long long)mixed_precision_skipped(&run->mp));
        else
            print0("note: %s holds no loss scale (written by a float32 or bf16 run, or before "
                   "checkpoints kept it): fp16's starts again at %g\n", path,
                   (double)mixed_precision_scale(&run->mp));
    }
    return (int)ts.epoch;
}

/* Without --resume, a directory that holds checkpoints already is another run's: saving
 * there would overwrite some of them and leave the rest, and a later --resume would go on
 * from a mixture without a word (lesson 03's rule). Rank 0 looks; every rank stops. */
static void refuse_earlier_run(Run *run) {
    int64_t newest = -1;
    if (run->dist->rank == 0 && ckpt_store_list(&run->store, &newest, 1) < 1) newest = -1;
    newest = (int64_t)dist_sum_double(run->dist, (double)newest + 1) - 1; /* rank 0's, on all */
    if (newest >= 0)
        fatal("%s already holds checkpoints of an earlier run (newest: step %lld): pass --resume "
              "to continue it, or give another --checkpoint-dir to start afresh", run->store.dir,
              (long long)newest);
}

/* Rank 0's words should a signal stop the job (mpirun passes SIGTERM on to the ranks;
 * lib/train/stop_note.h): where it was, and the newest checkpoint to resume from. */
static void note_progress(Run *run, const char *where) {
    if (run->dist->rank != 0) return;
    int64_t step;
    char path[CKPT_PATH_MAX];
    if (!run->cfg.checkpoint_dir)
        stop_note_set("%s; no checkpoint was written (--checkpoint-dir DIR writes one per epoch)", where);
    else if (ckpt_store_list(&run->store, &step, 1) == 1) {
        ckpt_store_path(&run->store, step, path, sizeof path);
        stop_note_set("%s; the last checkpoint is %s (after step %lld): continue from it with "
                      "--resume", where, path, (long long)step);
    } else
        stop_note_set("%s; no checkpoint in %s yet", where, run->store.dir);
}

static void train(Run *run) {
    const TrainOptions *t = &run->cfg.train;
    setup_training(run);
    precision_require_gpu(run->dist, run->cfg.dtype, run->cfg.precision, NULL); /* its tensor cores */
    adam_init(&run->opt, &run->model.params, t->lr);
    lesson_broadcast_weights(run);
    if (is_lm(run)) lm_weights_changed(run); /* a 16-bit working copy from rank 0's weights */
    lesson_make_sampler(run);
    if (is_lm(run)) loss_watch_init(&run->watch, run->corpus.vocab.count);
    else loss_watch_init_classes(&run->watch, run->train.num_classes);
    if (run->cfg.checkpoint_dir) {
        /* rank 0 makes the directory; the others wait until it is there */
        if (run->dist->rank == 0) ckpt_store_init(&run->store, run->cfg.checkpoint_dir, 2);
        dist_barrier(run->dist);
        if (run->dist->rank != 0) ckpt_store_init(&run->store, run->cfg.checkpoint_dir, 2);
    }
    if (run->cfg.checkpoint_dir && !run->cfg.resume) refuse_earlier_run(run);
    int first_epoch = run->cfg.resume ? resume(run) : 1;
    if (run->cfg.resume && is_lm(run)) lm_weights_changed(run);
    dist_trace_start(run->dist, run->cfg.train.trace); /* --trace: ts 0 here on every rank */
    BlockTrace *blocks = block_trace_attach(is_lm(run) ? &run->lm.blocks : &run->model.blocks);
    if (run->dist->rank == 0) /* a resumed run adds to the earlier epochs' lines */
        run->metrics = run->cfg.resume ? metrics_open_resumed(t->metrics, first_epoch)
                                       : metrics_open(t->metrics);
    const int W = run->dist->world_size;
    const char *sync = strcmp(run->cfg.grad_sync, "mine") == 0 ? "your all-reduce (TODO 6.4)"
                                                                : "the library's buckets";
    if (is_lm(run)) {
        const TransformerConfig *m = &run->lm.cfg;
        print0("data: %s, %d words; %d training and %d test sequences of %d tokens; each of "
               "%d ranks takes %d per epoch\n", run->corpus.name, run->corpus.vocab.count,
               run->train.count, run->test.count, run->cfg.lm.bptt, W, run->sampler.num_samples);
        print0("model: transformer, %lld parameters (width %d, %d heads, feed-forward %d, %d "
               "layers, dropout %g); Adam lr %g, clip %g, batch %d sequences per rank (%d in "
               "all), gradients averaged by %s, precision %s\n", (long long)params_count(&run->lm.params),
               m->d_model, m->heads, m->d_ff, m->layers, (double)m->dropout, (double)t->lr,
               (double)run->cfg.clip, t->batch_size, t->batch_size * W, sync, run->cfg.precision);
        if (run->sampler.num_samples < t->batch_size)
            fatal("each rank has %d sequences an epoch, fewer than one batch of %d: a smaller "
                  "--batch-size or --bptt, or more text", run->sampler.num_samples, t->batch_size);
    } else {
        print0("data: %s, %d training and %d test images; each of %d ranks takes %d per epoch\n",
               run->train.name, run->train.count, run->test.count, W, run->sampler.num_samples);
        print0("model: simple CNN, %lld parameters; Adam lr %g, batch %d per rank (%d in all), "
               "gradients averaged by %s\n", (long long)params_count(&run->model.params),
               (double)t->lr, t->batch_size, t->batch_size * W, sync);
    }
    print0("%5s  %10s  %9s  %13s  %8s  %9s\n", "epoch", "train loss", "test loss",
           is_lm(run) ? "next-token ok" : "test accuracy", "seconds", is_lm(run) ? "tokens/s" : "images/s");
    char where[64];
    for (int epoch = first_epoch; epoch <= t->epochs; epoch++) {
        snprintf(where, sizeof where, "in epoch %d", epoch);
        note_progress(run, where);
        dist_barrier(run->dist); /* the epoch's clock starts together on all ranks */
        double t0 = now_seconds();
        EpochStats tr = train_epoch(run, epoch);
        lesson_sum_stats(run, &tr);
        double seconds = now_seconds() - t0;
        EpochStats ev = evaluate_share(run);
        lesson_sum_stats(run, &ev);
        if (is_lm(run) && tr.examples > 0) { /* rank 0's file only (NULL elsewhere) */
            metrics_also_num(run->metrics, "tokens_per_s", tr.examples / seconds);
            metrics_also_num(run->metrics, "test_ppl", exp(ev.loss_sum / ev.examples));
            metrics_also_num(run->metrics, "skipped_steps", (double)mixed_precision_skipped(&run->mp));
            if (run->cfg.dtype == DTYPE_F16)
                print0("fp16: %lld steps skipped so far (a gradient overflowed), loss scale %g\n",
                       (long long)mixed_precision_skipped(&run->mp), (double)mixed_precision_scale(&run->mp));
        }
        const bool stopped = run->cfg.max_steps && run->steps >= run->cfg.max_steps;
        if (tr.examples == 0 && !stopped) /* the same sums on every rank: all stop */
            fatal("epoch %d took no steps: the sampler was at its end before the epoch began "
                  "(TODO 6.3: lesson_start_epoch calls sampler_set_epoch, which also rewinds it)",
                  epoch);
        if (tr.examples > 0) lesson_report_epoch(run, epoch, &tr, &ev, seconds);
        lesson_save_checkpoint(run, epoch);
        snprintf(where, sizeof where, "after epoch %d", epoch);
        note_progress(run, where);
        if (run->cfg.max_steps && run->steps >= run->cfg.max_steps) break;
    }
    if (!strcmp(run->cfg.grad_sync, "buckets") && run->ddp.steps)
        print0("buckets: %d of up to %g MB, %s; communication not hidden: %.2f ms per step\n",
               run->ddp.nbuckets, (double)run->cfg.bucket_mb,
               run->cfg.no_overlap ? "after the backward" : "overlapped with the backward",
               1e3 * run->ddp.exposed_s / run->ddp.steps);
    printf("rank %d parameter digest: %016llx\n", run->dist->rank,
           (unsigned long long)params_digest(&run->model.params));
    block_trace_detach(blocks);
    dist_trace_finish(run->dist, run->cfg.train.trace);
    metrics_close(run->metrics);
    if (!strcmp(run->cfg.grad_sync, "buckets")) ddp_free(&run->ddp);
    adam_free(&run->opt);
    sampler_free(&run->sampler);
    if (is_lm(run)) {
        lm_free(run);
    } else {
        batch_free(&run->batch);
        cnn_free(&run->model);
        dataset_free(&run->train);
        dataset_free(&run->test);
    }
}

/* ---------------------------------------------------------------- part 2 */

/* Your ring against the library's all-reduce on the same data: the same sums (to
 * rounding: the ring adds in another order), then both timed over sizes. */
static void collectives(Run *run) {
    Dist *d = run->dist;
    if (d->device != DEVICE_CPU) fatal("--collectives runs on CPU ranks (--device cpu)");
    const int W = d->world_size;
    print0("ring all-reduce (TODO 6.7) against the library's (%s) on %d ranks\n", d->backend, W);
    static const int64_t check_sizes[] = {1, 3, 1000, 100003};
    for (size_t k = 0; k < sizeof check_sizes / sizeof check_sizes[0]; k++) {
        const int64_t n = check_sizes[k];
        Tensor a = tensor_zeros(1, (int)n), b = tensor_zeros(1, (int)n);
        for (int64_t i = 0; i < n; i++) a.data[i] = b.data[i] = (float)((d->rank + 1) * (i % 97)) * 0.25f;
        lesson_ring_all_reduce(d, &a);
        dist_all_reduce(d, &b, DIST_SUM);
        double worst = 0;
        for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(a.data[i] - b.data[i]));
        worst = dist_sum_double(d, worst); /* nonzero anywhere: reported */
        print0("  %7lld floats: %s (largest difference %g)\n", (long long)n,
               worst == 0 ? "the same sums" : "DIFFERENT", worst);
        if (worst != 0) fatal("the ring all-reduce of %lld floats differs from the library's",
                              (long long)n);
        tensor_free(&a), tensor_free(&b);
    }
    print0("%12s  %12s  %12s  %12s  %8s\n", "bytes", "ring GB/s", "busbw", "library busbw", "ratio");
    for (int64_t bytes = 1 << 10; bytes <= (64 << 20); bytes *= 4) {
        Tensor t = tensor_zeros(1, (int)(bytes / 4));
        double best[2] = {1e30, 1e30};
        for (int rep = 0; rep < 5; rep++)
            for (int which = 0; which < 2; which++) {
                dist_barrier(d);
                double t0 = now_seconds();
                if (which == 0) lesson_ring_all_reduce(d, &t);
                else dist_all_reduce(d, &t, DIST_SUM);
                double s = now_seconds() - t0;
                s = dist_sum_double(d, s) / W; /* the ranks' mean */
                best[which] = fmin(best[which], s);
            }
        double ring = lesson_bus_bandwidth((double)bytes, best[0], W);
        double lib = lesson_bus_bandwidth((double)bytes, best[1], W);
        print0("%12lld  %12.3f  %12.3f  %12.3f  %7.2fx\n", (long long)bytes,
               (double)bytes / best[0] / 1e9, ring, lib, ring / lib);
        tensor_free(&t);
    }
}

int lesson_main(int argc, char **argv) {
    Run *run = xcalloc(1, sizeof *run);
    ArgSpec specs[MAX_SPECS];
    const int nspecs = parse_args(argc, argv, &run->cfg, specs);
    omp_set_num_threads(run->cfg.train.threads);
    lesson_setup(run); /* TODO 6.1 */
    dist_check_options(run->dist, specs, nspecs, per_rank_options);
    if (run->dist->rank == 0) stop_note_install(); /* one line for the job, from rank 0 */
    if (run->cfg.collectives) collectives(run);
    else train(run);
    dist_finalize(run->dist);
    xfree(run);
    return 0;
}
