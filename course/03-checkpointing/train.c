/* Lesson 03: the training program, step by step, with checkpoints (given, except
 * TODO 3.5 in lesson_after_step; worth reading).
 *
 *   train --dataset fashion-mnist --epochs 3 --checkpoint-dir ckpt --checkpoint-every 100
 *   train ... --resume          # continue from the newest checkpoint in ckpt/
 *
 * The lesson 01 CNN with Adam, from the library. A run stops early, writes a
 * checkpoint and exits with EXIT_REQUEUE (75) on SIGUSR1 or SIGTERM, or after
 * --stop-after-steps steps; --resume continues it exactly. The last line is
 * "parameter digest: <16 hex digits>", a hash of every parameter's bytes. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"
#include "core/trace.h"
#include "layers/softmax_xent.h"
#include "lesson.h"

/* ---------------------------------------------------------------- options */

static Config parse_args(int argc, char **argv) {
    /* the site's scratch when the Slurm scripts set COURSE_RUN_DIR, else here */
    static char default_dir[CKPT_PATH_MAX];
    const char *run_dir = getenv("COURSE_RUN_DIR");
    snprintf(default_dir, sizeof default_dir, "%s%scheckpoints", run_dir ? run_dir : "",
             run_dir && *run_dir ? "/" : "");
    Config c = {.train = train_options_defaults(), .augment = "shift",
                .checkpoint_dir = default_dir, .checkpoint_every = 100, .keep = 2};
    c.train.epochs = 2;
    ArgSpec specs[TRAIN_OPTION_SPECS + 7] = {
        {"augment", ARG_CHOICE, &c.augment, "random shifts of up to 2 pixels, or none", "shift|none"},
        {"checkpoint-dir", ARG_STRING, &c.checkpoint_dir,
         "where checkpoints go ($COURSE_RUN_DIR/checkpoints in a course job)", NULL},
        {"checkpoint-every", ARG_INT, &c.checkpoint_every,
         "steps between checkpoints (0: only at the end of each epoch and on a stop)", NULL},
        {"keep", ARG_INT, &c.keep, "how many of the newest checkpoints to keep", NULL},
        {"resume", ARG_FLAG, &c.resume,
         "continue from the newest checkpoint in --checkpoint-dir (start afresh if there is none)", NULL},
        {"stop-after-steps", ARG_INT, &c.stop_after_steps,
         "stop as if signalled after this many steps of this run (0: never); simulates a time limit", NULL},
        {"allow-other-data", ARG_FLAG, &c.allow_other_data,
         "--resume even from a checkpoint of another training set (fine-tuning)", NULL},
    };
    int n = 7 + train_options_specs(&c.train, specs + 7);
    args_parse(argc, argv, specs, n,
               "Lesson 03: train the simple CNN with checkpoints that survive the job's time limit.");
    train_options_check(&c.train);
    if (c.checkpoint_every < 0) fatal("--checkpoint-every must be >= 0, got %d", c.checkpoint_every);
    if (c.keep < 1) fatal("--keep must be at least 1, got %d", c.keep);
    if (c.stop_after_steps < 0) fatal("--stop-after-steps must be >= 0, got %d", c.stop_after_steps);
    return c;
}

/* ---------------------------------------------------------------- one step */

/* Shifts each image [C, H, W] by a random (dy, dx) in -2..2, filling with 0: the
 * same image looks a little different every epoch. The draws come from run->rng,
 * which is why the Rng belongs in the checkpoint. */
static void augment_shift(Tensor *images, Rng *rng) {
    int N = images->shape[0], C = images->shape[1], H = images->shape[2], W = images->shape[3];
    float *tmp = xmalloc((size_t)H * W * sizeof(float));
    for (int n = 0; n < N; n++) {
        int dy = (int)rng_below(rng, 5) - 2, dx = (int)rng_below(rng, 5) - 2;
        for (int c = 0; c < C; c++) {
            float *plane = images->data + ((size_t)n * C + c) * H * W;
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    int sy = y - dy, sx = x - dx;
                    tmp[y * W + x] = sy >= 0 && sy < H && sx >= 0 && sx < W ? plane[sy * W + sx] : 0.0f;
                }
            memcpy(plane, tmp, (size_t)H * W * sizeof(float));
        }
    }
    xfree(tmp);
}

/* Forward, loss, backward, Adam on the n examples in run->batch.indices; the batch's loss. */
static float train_step(Run *run, int n) {
    trace_begin("step", TRACE_STEP); /* with --trace (core/trace.h) */
    const int *labels;
    Tensor images = batch_load(&run->batch, &run->train, n, &labels); /* [n, C, H, W] */
    if (strcmp(run->cfg.augment, "shift") == 0) augment_shift(&images, &run->rng);
    Tensor logits = cnn_forward(&run->model, &images);          /* [n, classes] */
    Tensor dlogits = tensor_rows(&run->model.d_logits, n);
    tensor_fill(&dlogits, 0.0f);
    float loss = softmax_cross_entropy(&dlogits, &logits, labels);
    params_zero_grad(&run->model.params);
    cnn_backward(&run->model, &images);
    adam_step(&run->opt, &run->model.params);
    trace_end("step");
    return loss;
}

/* ---------------------------------------------------------------- checkpoints */

bool save_checkpoint(Run *run) {
    double t0 = now_seconds();
    lesson_capture_state(run);
    CkptError err; /* writes through run->store.write: your lesson_write_atomic */
    trace_begin("save checkpoint", TRACE_OTHER);
    const int failed = ckpt_store_save(&run->store, &run->ckpt, run->ts.global_step, NULL, 0, &err);
    trace_end("save checkpoint");
    if (failed) {
        fprintf(stderr, "warning: checkpoint of step %lld not saved (the previous one stays): %s\n",
                (long long)run->ts.global_step, err.msg);
        run->save_failures++;
        run->last_save_failed = true;
        return false;
    }
    run->last_save_failed = false;
    run->saved_step = run->ts.global_step;
    run->saves++;
    run->save_bytes = ckpt_encoded_size(&run->ckpt);
    run->save_seconds += now_seconds() - t0;
    return true;
}

static void save_best(Run *run) {
    lesson_capture_state(run);
    CkptError err;
    if (ckpt_store_save_best(&run->store, &run->ckpt, &err) != 0)
        fprintf(stderr, "warning: best checkpoint not saved: %s\n", err.msg);
}

bool lesson_after_step(Run *run) {
#ifdef SOLUTION
    const Config *c = &run->cfg;
    bool stop = lesson_stop_signal != 0 ||
                (c->stop_after_steps > 0 && run->steps_this_run >= c->stop_after_steps);
    bool due = c->checkpoint_every > 0 && run->ts.global_step % c->checkpoint_every == 0;
    if (due || stop) save_checkpoint(run); /* on a failed save the previous one stays */
    return stop;
#else
    /* TODO 3.5: a stop is asked for when lesson_stop_signal is not 0 (TODO 3.4), or
     * when run->cfg.stop_after_steps > 0 and run->steps_this_run has reached it.
     * A checkpoint is due when run->cfg.checkpoint_every > 0 and
     * run->ts.global_step is a multiple of it. Call save_checkpoint(run) when one
     * is due or a stop is asked for (once, not twice), and return whether to stop. */
    TODO_STOP("3.5");
#endif
}

/* ---------------------------------------------------------------- the program */

static void setup(Run *run) {
    const Config *cfg = &run->cfg;
    const TrainOptions *t = &cfg->train;
    train_options_load_data(t, &run->train, &run->test);
    const Dataset *d = &run->train;
    int B = t->batch_size < d->count ? t->batch_size : d->count;
    Rng init;
    rng_seed(&init, (uint64_t)t->seed, 0);
    cnn_init(&run->model, d->channels, d->height, d->width, d->num_classes, B, &init);
    adam_init(&run->opt, &run->model.params, t->lr);
    sampler_init(&run->sampler, d->count, true, (uint64_t)t->seed);
    sampler_set_epoch(&run->sampler, 1);
    rng_seed(&run->rng, (uint64_t)t->seed, 1); /* its own stream: not the weights' */
    run->ts = (TrainState){.epoch = 1, .best_metric = -INFINITY};
    batch_init(&run->batch, B, d);
}

static void teardown(Run *run) {
    run_trace_finish(&run->trace); /* a stopped run's trace too: the steps it made */
    ckpt_free(&run->ckpt);
    batch_free(&run->batch);
    sampler_free(&run->sampler);
    adam_free(&run->opt);
    cnn_free(&run->model);
    dataset_free(&run->train);
    dataset_free(&run->test);
    xfree(run);
}

static void print_saves(const Run *run) {
    if (run->saves)
        print0("checkpoints: %d written by this run, %.2f MB each, %.1f ms per write (encode, "
               "write, fsync, rename)\n", run->saves, run->save_bytes / 1e6,
               1e3 * run->save_seconds / run->saves);
}

/* The exit status of a stop: EXIT_REQUEUE when the checkpoint of this step was
 * written. Without it a requeue would only run into the same failure (disk full,
 * quota) at the next stop, again and again: exit 1 instead, and say why. */
static int stop_status(const Run *run) {
    const TrainState *ts = &run->ts;
    const char *why = lesson_stop_signal ? strsignal(lesson_stop_signal) : "--stop-after-steps";
    if (run->saved_step != ts->global_step) {
        fprintf(stderr, "error: stopping at epoch %lld, step %lld (%s) without a checkpoint of "
                "this step (see the warning above): exit status 1, not %d, so that the job is "
                "not requeued into the same failure. Fix the cause (space, quota, permissions), "
                "then run again with --resume: it continues from the newest checkpoint that "
                "loads.\n", (long long)ts->epoch, (long long)ts->step, why, EXIT_REQUEUE);
        return EXIT_FAILURE;
    }
    print0("stopping at epoch %lld, step %lld (%s): checkpoint in %s; exit status %d asks for "
           "a requeue, then run again with --resume\n", (long long)ts->epoch,
           (long long)ts->step, why, run->store.dir, EXIT_REQUEUE);
    return EXIT_REQUEUE;
}

/* Resumes or starts afresh, as asked; prints which. */
static void start(Run *run) {
    const Config *cfg = &run->cfg;
    int64_t newest[1];
    bool present = ckpt_store_list(&run->store, newest, 1) > 0;
    if (!cfg->resume) {
        if (present)
            fatal("%s already holds checkpoints of an earlier run (newest: step %lld): pass "
                  "--resume to continue it, or give another --checkpoint-dir to start afresh",
                  run->store.dir, (long long)newest[0]);
        print0("starting afresh; checkpoints go to %s\n", run->store.dir);
        return;
    }
    double t0 = now_seconds();
    if (!lesson_resume(run)) {
        print0("no checkpoint in %s: starting afresh\n", run->store.dir);
        return;
    }
    print0("resumed from %s (epoch %lld, step %lld, %lld steps done) in %.1f ms\n",
           run->store.dir, (long long)run->ts.epoch, (long long)run->ts.step,
           (long long)run->ts.global_step, 1e3 * (now_seconds() - t0));
    if (run->ckpt_fingerprint != run->data_fingerprint) {
        if (!cfg->allow_other_data)
            fatal("the checkpoint in %s was written for another training set of the same sizes "
                  "(data fingerprint %016llx, this run's %016llx): another --dataset, --data or "
                  "--train-limit? Resume with the data it was trained on, or pass "
                  "--allow-other-data to go on with this data (fine-tuning)", run->store.dir,
                  (unsigned long long)run->ckpt_fingerprint,
                  (unsigned long long)run->data_fingerprint);
        print0("warning: continuing on another training set (--allow-other-data)\n");
        run->ckpt_fingerprint = run->data_fingerprint; /* what this run's checkpoints record */
    }
}

int lesson_main(int argc, char **argv) {
    Run *run = xcalloc(1, sizeof *run);
    run->cfg = parse_args(argc, argv);
    const Config *cfg = &run->cfg;
    lesson_install_stop_handlers(); /* early: a signal before this would kill the job */
    omp_set_num_threads(cfg->train.threads);
    setup(run);
    lesson_describe_checkpoint(&run->ckpt, run);
    /* which data the run trains on, so that a resume notices other data of the same sizes */
    run->data_fingerprint = run->ckpt_fingerprint = train_data_fingerprint(&run->train);
    ckpt_add_u64(&run->ckpt, "data.fingerprint", &run->ckpt_fingerprint);
    ckpt_store_init(&run->store, cfg->checkpoint_dir, cfg->keep);
    run->store.write = lesson_write_atomic;

    print0("data: %s, %d training and %d test images of %dx%dx%d (%s)\n", run->train.name,
           run->train.count, run->test.count, run->train.channels, run->train.height,
           run->train.width, run->train.source);
    print0("model: simple CNN, %lld parameters; Adam lr %g, batch %d, %d thread%s, augment %s\n",
           (long long)params_count(&run->model.params), (double)cfg->train.lr, run->batch.size,
           cfg->train.threads, cfg->train.threads == 1 ? "" : "s", cfg->augment);
    start(run);
    /* resumed: keep the earlier epochs' lines (a requeued job writes one file in all) */
    MetricsFile *metrics = cfg->resume ? metrics_open_resumed(cfg->train.metrics, run->ts.epoch)
                                       : metrics_open(cfg->train.metrics);
    run_trace_start(&run->trace, cfg->train.trace);
    run_trace_blocks(&run->trace, &run->model.blocks);
    TrainState *ts = &run->ts;
    print0("%5s  %10s  %9s  %13s  %8s  %9s\n", "epoch", "train loss", "test loss",
           "test accuracy", "seconds", "images/s");
    while (ts->epoch <= cfg->train.epochs) {
        double t0 = now_seconds();
        int n, seen = 0;
        while ((n = sampler_next(&run->sampler, run->batch.indices, run->batch.size)) > 0) {
            float loss = train_step(run, n);
            if (!isfinite(loss)) {
                char where[64];
                snprintf(where, sizeof where, "step %lld", (long long)ts->global_step + 1);
                train_stop_if_diverged(loss, where, cfg->train.lr);
            }
            ts->loss_sum += (double)loss * n;
            ts->examples += n;
            ts->step++;
            ts->global_step++;
            run->steps_this_run++;
            seen += n;
            progress("  epoch %lld: %lld/%d images, %.0f images/s, loss %.4f", (long long)ts->epoch,
                     (long long)ts->examples, run->train.count, progress_rate(ts->examples),
                     ts->loss_sum / ts->examples);
            if (lesson_after_step(run)) {
                int status = stop_status(run);
                print_saves(run);
                metrics_close(metrics);
                teardown(run);
                return status;
            }
        }
        double seconds = now_seconds() - t0;
        EpochResult ev = cnn_evaluate(&run->model, &run->test, &run->batch);
        double accuracy = ev.accuracy;
        double train_loss = ts->examples ? ts->loss_sum / ts->examples : 0.0;
        double rate = seconds > 0 ? seen / seconds : 0.0;
        print0("%5lld  %10.4f  %9.4f  %13.4f  %8.1f  %9.0f\n", (long long)ts->epoch, train_loss,
               ev.loss, accuracy, seconds, rate);
        metrics_epoch(metrics, NULL, (int)ts->epoch, train_loss, &ev, seconds, rate);

        /* the next epoch begins: that is the state the end-of-epoch checkpoint holds */
        bool improved = accuracy > ts->best_metric;
        if (improved) {
            ts->best_metric = accuracy;
            ts->best_epoch = ts->epoch;
        }
        ts->epoch++;
        ts->step = 0;
        ts->loss_sum = 0;
        ts->examples = 0;
        sampler_set_epoch(&run->sampler, (int)ts->epoch);
        if (improved) save_best(run); /* best first: a kill between the two redoes this epoch */
        save_checkpoint(run);
    }
    char best[CKPT_PATH_MAX + 16];
    snprintf(best, sizeof best, "%s/best.ckpt", run->store.dir);
    if (fs_is_regular_file(best)) /* never name a file that is not there */
        print0("best test accuracy %.4f after epoch %lld (%s)\n", ts->best_metric,
               (long long)ts->best_epoch, best);
    else
        print0("best test accuracy %.4f after epoch %lld (not saved: see the warnings)\n",
               ts->best_metric, (long long)ts->best_epoch);
    print_saves(run);
    if (run->last_save_failed) /* trained, but the result is not on disk: not a success */
        fatal("the run finished, but its last checkpoint could not be written (%d save%s "
              "failed): the trained model is not on disk. Free space in %s or give another "
              "--checkpoint-dir, then run again with --resume", run->save_failures,
              run->save_failures == 1 ? "" : "s", run->store.dir);
    print0("parameter digest: %016llx\n", (unsigned long long)params_digest(&run->model.params));
    metrics_close(metrics);
    teardown(run);
    return 0;
}
