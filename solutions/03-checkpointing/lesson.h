/* Lesson 03: checkpointing. The functions you write in this lesson, and the run they
 * work on.
 *
 * The library's checkpoint module (lib/train/checkpoint.h) holds the file format
 * and the reference versions of your functions; the grader compares the two, and
 * runs the whole program with stops, signals and kills. */
#ifndef LESSON03_H
#define LESSON03_H

#include <signal.h>
#include <stdbool.h>

#include "core/check.h"
#include "core/rng.h"
#include "core/todo.h"
#include "data/dataset.h"
#include "models/cnn.h"
#include "train/checkpoint_store.h"
#include "train/loop.h"
#include "train/optim.h"
#include "train/run_trace.h"
#include "train/options.h"
#include "train/sampler.h"
#include "train/train_state.h"

#define LESSON_DIR "lessons/03-checkpointing"
#define TODO_STOP(id) todo_stop(id, LESSON_DIR, __func__)

typedef struct {
    TrainOptions train;   /* the options every lesson shares (lib/train/options.h) */
    const char *augment, *checkpoint_dir;
    int checkpoint_every, keep, stop_after_steps, resume, allow_other_data;
} Config;

/* Everything one training run holds. What of it changes while training, and must
 * therefore be in a checkpoint, is TODO 3.1's question. */
typedef struct {
    Config cfg;
    Dataset train, test;
    Cnn model;            /* parameters (and gradients, activations: rebuilt every step) */
    Adam opt;             /* m, v [per parameter] and the step count t */
    Sampler sampler;      /* the order of the epoch and how far into it we are */
    Rng rng;              /* the augmentation's random numbers */
    TrainState ts;        /* epoch, step, running loss, best accuracy; copies of the above */
    Checkpoint ckpt;      /* the manifest: what is saved, pointing at the variables above */
    CkptStore store;      /* the directory: the last K checkpoints and best.ckpt */
    Batch batch;          /* the examples of one step: indices, images, labels */
    int steps_this_run;   /* steps since this process started (--stop-after-steps) */
    int64_t saved_step;   /* global step of the newest checkpoint this process wrote (0: none) */
    uint64_t data_fingerprint; /* of the training set (train_data_fingerprint) */
    uint64_t ckpt_fingerprint; /* "data.fingerprint" in the checkpoint: saved, loaded */
    int saves;            /* checkpoints written by this process, and their cost */
    int save_failures;    /* checkpoints this process could not write */
    bool last_save_failed; /* the newest state is not on disk */
    double save_seconds;
    size_t save_bytes;
    RunTrace trace;       /* --trace FILE: steps, blocks, data loading, checkpoints */
} Run;

/* TODO 3.1 (state.c): register in c every piece of the run that training changes:
 * the model's parameters, Adam's state, the training state. */
void lesson_describe_checkpoint(Checkpoint *c, Run *run);
/* TODO 3.1 (state.c): copy the sampler's and the Rng's state into run->ts (before
 * every save: the manifest points at run->ts, not at them). */
void lesson_capture_state(Run *run);

/* TODO 3.2 (atomic.c): write len bytes to path so that a crash at any moment leaves
 * either the old file or the new one at path. 0, or -1 with err filled in. */
int lesson_write_atomic(const char *path, const uint8_t *buf, size_t len, CkptError *err);

/* TODO 3.3 (resume.c): load the newest checkpoint in run->store that loads, falling
 * back to older ones; restore the sampler and the Rng. true: resumed; false: the
 * directory holds no checkpoint (start afresh). Exits with a clear message when
 * there are checkpoints but none of them loads. */
bool lesson_resume(Run *run);

/* TODO 3.4 (signals.c): the signal that asked this run to stop (SIGUSR1, SIGTERM),
 * 0 while none has; and the handlers that set it. */
extern volatile sig_atomic_t lesson_stop_signal;
void lesson_install_stop_handlers(void);

/* TODO 3.5 (train.c): after each training step: save a checkpoint when one is due
 * or a stop was asked for; true when the run must stop now (then the program exits
 * with EXIT_REQUEUE). */
bool lesson_after_step(Run *run);

/* Given (train.c): saves a step checkpoint of the run (capture, encode, write
 * through lesson_write_atomic, rotate); false with a warning when it failed. */
bool save_checkpoint(Run *run);
/* Given (train.c): the whole program; main() calls it, the grader too. */
int lesson_main(int argc, char **argv);

#endif
