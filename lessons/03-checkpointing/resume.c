/* TODO 3.3: resuming.
 *
 * The newest checkpoint is the one to continue from, unless it is damaged (a disk
 * that filled up, a file someone copied half of): then the one before it. Loading
 * checks everything before it changes anything, so a failed load leaves the run as
 * it was and the next candidate can be tried. */
#include <stdio.h>

#include "lesson.h"

bool lesson_resume(Run *run) {
    /* TODO 3.3:
     *   1. n = ckpt_store_list(&run->store, steps, 64): the steps of the checkpoints
     *      in the directory, newest first; ckpt_store_path() turns a step into a path;
     *   2. for each, newest first: ckpt_load(&run->ckpt, path, &err). When it fails,
     *      print err.msg to stderr as a warning and try the next one;
     *   3. once one loads: check run->ts.sampler_count == run->sampler.count (else
     *      fatal(): another --train-limit or data set), then restore what
     *      lesson_capture_state() copied: run->rng from rng_state/rng_inc,
     *      run->sampler.seed, and sampler_restore(&run->sampler, epoch, position);
     *      return true;
     *   4. no checkpoint at all: return false. Checkpoints that all fail: fatal(),
     *      saying so and what to do (never start afresh over them). */
    TODO_STOP("3.3");
}
