/* TODO 6.6: print0 and save0.
 *
 * Every rank knows the epoch's numbers (TODO 6.5) and holds the same model, so every
 * rank could print and save them. N ranks printing make N copies of each line; N
 * ranks writing one file make a corrupt file. One rank, rank 0, does it for all. */
#include <stdio.h>

#include "core/log.h"
#include "lesson.h"
#include "train/train_state.h"

void lesson_report_epoch(Run *run, int epoch, const EpochStats *train, const EpochStats *test,
                         double seconds) {
    const double train_loss = train->loss_sum / train->examples;
    const EpochResult ev = {.loss = test->loss_sum / test->examples,
                            .accuracy = test->correct / test->examples,
                            .examples = (int)test->examples};
    const double rate = train->examples / seconds; /* the whole job's images per second */
#ifdef SOLUTION
    print0("%5d  %10.4f  %9.4f  %13.4f  %8.1f  %9.0f\n", epoch, train_loss, ev.loss,
           ev.accuracy, seconds, rate);
    if (run->dist->rank == 0) metrics_epoch(run->metrics, NULL, epoch, train_loss, &ev, seconds, rate);
#else
    /* TODO 6.6 (print0): print the epoch's line on rank 0 only:
     *   print0("%5d  %10.4f  %9.4f  %13.4f  %8.1f  %9.0f\n", epoch, train_loss,
     *          ev.loss, ev.accuracy, seconds, rate);
     * (print0, lib/core/log.h, prints on rank 0 and nowhere else), and write the
     * metrics line only where run->dist->rank == 0:
     *   metrics_epoch(run->metrics, NULL, epoch, train_loss, &ev, seconds, rate). */
    (void)run, (void)epoch, (void)train_loss, (void)ev, (void)rate;
    TODO_STOP("6.6");
#endif
}

void lesson_save_checkpoint(Run *run, int epoch) {
    if (!run->cfg.checkpoint_dir) return;
    /* lesson 03's checkpoint: the model, Adam, and where training is (the end of an
     * epoch: no position inside one, so any rank count can resume it) */
    TrainState ts = {.epoch = epoch + 1, .global_step = run->steps,
                     .rng_state = run->rng.state, .rng_inc = run->rng.inc,
                     .sampler_seed = run->sampler.seed, .sampler_epoch = epoch + 1,
                     .sampler_count = run->sampler.count};
    Checkpoint c = {0};
    ckpt_add_params(&c, "model", &run->model.params);
    ckpt_add_adam(&c, &run->opt, &run->model.params);
    ckpt_add_train_state(&c, &ts);
    ckpt_add_u64(&c, "data.fingerprint", &run->data_fingerprint);
    MixedPrecisionCkpt scaler; /* the transformer's (lm.c sets run->mp up for it alone): fp16's
                                * loss scale, so a resume goes on scaling and skipping as this
                                * run would have */
    if (run->mp.blocks) mixed_precision_ckpt_add(&c, &run->mp, &scaler);
#ifdef SOLUTION
    if (run->dist->rank == 0) { /* save0: one writer; the others hold the same state */
        char path[CKPT_PATH_MAX];
        CkptError err;
        if (ckpt_store_save(&run->store, &c, run->steps, path, sizeof path, &err) != 0)
            fatal("%s", err.msg);
        print0("checkpoint %s\n", path);
    }
#else
    /* TODO 6.6 (save0): on rank 0 only, write c into the run's directory:
     *   ckpt_store_save(&run->store, &c, run->steps, path, sizeof path, &err)
     * (lib/train/checkpoint_store.h; path: a char[CKPT_PATH_MAX], err: a CkptError),
     * fatal("%s", err.msg) when it fails, then print0("checkpoint %s\n", path). */
    TODO_STOP("6.6");
#endif
    ckpt_free(&c);
}
