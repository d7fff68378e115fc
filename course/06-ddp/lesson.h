/* Lesson 06: data-parallel training across ranks (GPUs or CPU processes, on one or
 * several nodes). The functions you write, and the run they work on.
 *
 * Every rank runs this same program on its own share of the data; the ranks talk
 * through the library's communicator (lib/dist/dist.h: broadcast, all-reduce,
 * send/recv, ...), MPI between CPU processes, NCCL between GPUs. */
#ifndef LESSON06_H
#define LESSON06_H

#include <stdbool.h>
#include <stdint.h>

#include "core/check.h"
#include "core/metrics.h"
#include "core/todo.h"
#include "data/dataset.h"
#include "data/text.h"
#include "dist/dist.h"
#include "models/cnn.h"
#include "models/transformer.h"
#include "parallel/ddp.h"
#include "train/loop.h"
#include "train/optim.h"
#include "train/options.h"
#include "train/checkpoint_store.h"
#include "train/lm_options.h"
#include "train/loss_watch.h"
#include "train/mixed_precision.h"
#include "train/sampler.h"

#define LESSON_DIR "lessons/06-ddp"
#define TODO_STOP(id) todo_stop(id, LESSON_DIR, __func__)

typedef struct {
    TrainOptions train;   /* lesson 01's options (lib/train/options.h) */
    const char *model;    /* cnn (lesson 01's) or transformer (lesson 04's) */
    LmOptions lm;         /* the transformer's sizes, bptt, tokenizer (lib/train/lm_options.h) */
    const char *text;     /* the transformer's text: auto, wikitext2, fortunes, text */
    float clip;           /* the transformer: largest global gradient norm (0: no clipping) */
    const char *precision; /* the transformer: fp32, bf16 or fp16 (lib/train/mixed_precision.h) */
    DType dtype;          /* --precision, parsed */
    const char *device;   /* cpu or cuda */
    const char *dist;     /* the communication backend: auto, mpi, nccl, single */
    const char *grad_sync; /* mine (TODO 6.4) or buckets (lib/parallel/ddp.h) */
    const char *checkpoint_dir;
    int ranks;            /* the ranks the job script asked for (0: any) */
    int max_steps;        /* stop after this many steps (0: the whole epochs) */
    int collectives;      /* part 2: the ring all-reduce and its bandwidths instead */
    int no_overlap;       /* buckets: reduce after the backward, not during it */
    int resume;           /* continue from the newest checkpoint in checkpoint_dir */
    float bucket_mb, timeout_s;
} Config;

/* Everything one rank holds. */
typedef struct {
    Config cfg;
    Dist *dist;           /* who am I, how many are we, and how to talk (TODO 6.1) */
    Dataset train, test;  /* the transformer: no images, count = its sequences (below) */
    Cnn model;            /* the whole model, on every rank. With --model transformer only
                           * model.params is set: a copy of lm.params's header, the same
                           * buffers, so the TODOs and the checkpoint work on either model */
    Transformer lm;       /* --model transformer: lesson 04's model */
    MixedPrecision mp;    /* --model transformer: its precision's step (working copy, fp16's
                           * loss scale) */
    TextCorpus corpus;    /* --model transformer: the text, cut into sequences of bptt + 1
                           * tokens (input and the target one token on); run->train.count
                           * and run->test.count of them are what the sampler deals out */
    int *seq;             /* [batch_size] the sequences of one step (transformer) */
    int *tokens, *targets; /* [batch_size * bptt] their tokens, batch-major, on the host */
    int *dev_tokens, *dev_targets; /* the same in the model's device memory */
    Adam opt;
    Sampler sampler;      /* this rank's share of each epoch (TODO 6.3) */
    uint64_t data_fingerprint; /* of the training set: checkpoints record it */
    Rng rng;              /* the training's random numbers, the same seed on every rank:
                           * nothing draws from it yet (the CNN has no dropout), but a
                           * checkpoint holds it, as lesson 03's does */
    Batch batch;          /* the examples of one step on this rank */
    Ddp ddp;              /* the library's bucketed all-reduce (--grad-sync buckets) */
    MetricsFile *metrics; /* open on rank 0 only (TODO 6.6) */
    CkptStore store;      /* checkpoint_dir: lesson 03's checkpoints, written by rank 0 */
    int64_t steps;        /* steps done, all epochs */
    LossWatch watch;      /* the job's loss each step: a diverging one stops every rank */
} Run;

/* What one rank saw in an epoch, before (and after) averaging over the ranks. */
typedef struct {
    double loss_sum;      /* sum over its examples of the loss */
    double correct;       /* examples classified correctly (evaluation) */
    double examples;
} EpochStats;

/* TODO 6.1 (setup.c): join the job: run->dist from the launcher's environment, with
 * the backend, device, timeout and expected number of ranks of run->cfg; every rank
 * says who it is in one line. */
void lesson_setup(Run *run);

/* TODO 6.2 (train.c): every rank starts from rank 0's weights. */
void lesson_broadcast_weights(Run *run);

/* TODO 6.3 (train.c): this rank's sampler over the training set, and the reshuffle
 * at the start of each epoch. */
void lesson_make_sampler(Run *run);
void lesson_start_epoch(Run *run, int epoch);

/* TODO 6.4 (train.c): after the backward, every rank's gradients become the average
 * of all ranks' gradients. */
void lesson_average_gradients(Run *run);

/* TODO 6.5 (train.c): the sums of all ranks, so every rank knows the job's totals. */
void lesson_sum_stats(Run *run, EpochStats *s);

/* TODO 6.6 (save.c): only rank 0 prints the epoch's line and writes its metrics and
 * the checkpoint; the others stay quiet and write nothing. */
void lesson_report_epoch(Run *run, int epoch, const EpochStats *train, const EpochStats *test,
                         double seconds);
void lesson_save_checkpoint(Run *run, int epoch);

/* TODO 6.7 (ring.c): the sum over all ranks of t, in place, from send and receive
 * alone: a ring reduce-scatter, then a ring all-gather. */
void lesson_ring_all_reduce(Dist *d, Tensor *t);
/* TODO 6.8 (ring.c): the bus bandwidth of an all-reduce of `bytes` that took `seconds`
 * on `ranks` ranks, as nccl-tests define it (GB/s). */
double lesson_bus_bandwidth(double bytes, double seconds, int ranks);

/* Given (program.c): a --batch-size larger than a rank's share of the count examples
 * (images, or sequences) is refused, naming both. */
void check_batch_size(const Run *run, int count, const char *what);

/* Given (program.c): the job's loss of a step, the mean over the ranks (the same on
 * every rank), watched: NaN, far above where it started or rising stops every rank at
 * this step, with a message (lib/train/loss_watch.h). */
void watch_loss(Run *run, double loss);

/* Given (program.c): the whole program; main() calls it, the grader too. */
int lesson_main(int argc, char **argv);
/* Given (program.c): one epoch of training on this rank's share; its sums. */
EpochStats train_epoch(Run *run, int epoch);
/* Given (program.c): loss and accuracy over this rank's share of the test set. */
EpochStats evaluate_share(Run *run);

/* Given (lm.c): the same for --model transformer: the text, the model and its buffers;
 * an epoch over this rank's sequences (examples count tokens); the test loss and the
 * next-token accuracy over its share of the test sequences; everything freed. */
void lm_setup(Run *run);
EpochStats lm_train_epoch(Run *run, int epoch);
/* After the weights were set from elsewhere (the broadcast, a checkpoint): the 16-bit
 * working copy of a --precision bf16/fp16 run made from them again. */
void lm_weights_changed(Run *run);
EpochStats lm_evaluate_share(Run *run);
void lm_free(Run *run);

#endif
