/* TODO 3.3: resuming.
 *
 * The newest checkpoint is the one to continue from, unless it is damaged (a disk
 * that filled up, a file someone copied half of): then the one before it. Loading
 * checks everything before it changes anything, so a failed load leaves the run as
 * it was and the next candidate can be tried. */
#include <stdio.h>

#include "lesson.h"

bool lesson_resume(Run *run) {
    int64_t steps[64];
    int n = ckpt_store_list(&run->store, steps, 64); /* newest first */
    for (int i = 0; i < n; i++) {
        char path[CKPT_PATH_MAX];
        ckpt_store_path(&run->store, steps[i], path, sizeof path);
        CkptError err;
        if (ckpt_load(&run->ckpt, path, &err) != 0) {
            fprintf(stderr, "warning: %s\n", err.msg); /* say it, then try the one before */
            continue;
        }
        TrainState *ts = &run->ts;
        if (ts->sampler_count != run->sampler.count)
            fatal("checkpoint %s was written for a training set of %lld examples, but this run "
                  "has %d: resume with the same --dataset and --train-limit, or use a new "
                  "--checkpoint-dir", path, (long long)ts->sampler_count, run->sampler.count);
        run->rng.state = ts->rng_state;
        run->rng.inc = ts->rng_inc;
        run->sampler.seed = ts->sampler_seed; /* the order is rebuilt from seed and epoch */
        sampler_restore(&run->sampler, (int)ts->sampler_epoch, (int)ts->sampler_position);
        return true;
    }
    if (n > 0)
        fatal("none of the %d checkpoints in %s loads (the reasons are above). Move them away "
              "to start afresh, or resume from another --checkpoint-dir", n, run->store.dir);
    return false;
}
