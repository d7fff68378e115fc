#!/usr/bin/env bash
# Lesson 06's TODOs against the mistakes participants make: each is planted in a
# temporary copy of the solution, the grader is linked against it, and the TODO's check
# must FAIL with the hint that names the mistake. The rings that deadlock must also be
# ended by the library early, with its line naming the rank that did not send ("... can
# never finish: rank 1 did not send to rank 0"), not at the timeout. Only the planted
# TODO's own check runs (CHECK_ONLY); the stubs failing every check are
# tests/check-stubs.sh's. The machinery: planted_lib.sh. Needs `make all` first. Last
# line: "N passed, M failed".
#   tests/graders/planted06.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/graders/planted_lib.sh
. tests/graders/planted_lib.sh
planted_setup "${1:-build}" 06-ddp tests/graders/grade06.c

# plant_also NAME FILE TODO HINT ALSO "old|||new"...: plant's test, and the job's output
# must say ALSO too (the library's line)
plant_also() {
    local name=$1 f=$2 todo=$3 hint=$4 also=$5 out block
    shift 5
    patched "$f" "$@" || { verdict "$name (the patch did not apply)" 0; return; }
    out=$(grade "$f")
    block=$(failed_block "$todo" "$out")
    if [ -n "$block" ] && grep -qF -- "$hint" <<<"$block" && grep -qF -- "$also" <<<"$block"; then
        verdict "$name: TODO $todo fails with \"$hint\", the library says \"$also\"" 1
        grep -m1 -F -- "$hint" <<<"$block" | cut -c1-150
        grep -m1 -F -- "$also" <<<"$block" | cut -c1-150
    else
        verdict "$name: TODO $todo should fail with \"$hint\", the library saying \"$also\"" 0
        sed 's/^/    /' <<<"$out" | head -30
    fi
}

# plant_script NAME TODO HINT "old|||new"...: the mistake in the job script (ddp.sbatch,
# read by the grader from the copy); the grader as the last plant linked it
plant_script() {
    local name=$1 todo=$2 hint=$3 out block
    shift 3
    cp "$src/ddp.sbatch" "$tmp/ddp.sbatch"
    patched ddp.sbatch "$@" || { verdict "$name (the patch did not apply)" 0; return; }
    cp "$tmp/ddp.sbatch.new" "$tmp/ddp.sbatch"
    out=$(CHECK_ONLY="$PLANTED_CHECKS" "$tmp/grade" 2>&1)
    cp "$src/ddp.sbatch" "$tmp/ddp.sbatch"
    block=$(failed_block "$todo" "$out")
    if [ -n "$block" ] && grep -qF -- "$hint" <<<"$block"; then
        verdict "$name: TODO $todo fails with \"$hint\"" 1
        grep -m1 -F -- "$hint" <<<"$block" | cut -c1-150
    else
        verdict "$name: TODO $todo should fail with \"$hint\"" 0
        sed 's/^/    /' <<<"$out" | head -30
    fi
}

# TODO 6.1 (setup.c): joining the job
PLANTED_CHECKS="setup: 2 and 3"
plant "the describe line on every rank (printf, no flush)" setup.c 6.1 "only rank 0 prints it, with print0" \
    'print0("%s\n", line);|||printf("%s\n", line);'
plant "--timeout left out of DistOptions" setup.c 6.1 "pass .timeout_s = c->timeout_s to dist_init" \
    ".timeout_s = c->timeout_s, |||"
plant "--dist ignored: .backend = \"mpi\"" setup.c 6.1 "a backend that is not --dist's: pass .backend = c->dist" \
    '.backend = c->dist,|||.backend = "mpi",'
plant "--dist ignored: .backend = \"auto\"" setup.c 6.1 "a backend that is not --dist's: pass .backend = c->dist" \
    '.backend = c->dist,|||.backend = "auto",'
plant ".device left out of DistOptions" setup.c 6.1 "pass .device = device" \
    '.device = device,|||'
plant "cuda_require for CPU ranks too" setup.c 6.1 "lesson_setup called cuda_require: call it only for --device cuda" \
    'if (device == DEVICE_CUDA) cuda_require();|||cuda_require();'
plant "cuda_require after dist_init" setup.c 6.1 "lesson_setup calls dist_init before cuda_require" \
    "if (device == DEVICE_CUDA) cuda_require();|||" \
    "const Dist *d = run->dist;|||if (device == DEVICE_CUDA) cuda_require();
    const Dist *d = run->dist;"

# TODO 6.2 (train.c): the broadcast of rank 0's weights
PLANTED_CHECKS="every rank starts from rank 0's weights"
plant "no broadcast" train.c 6.2 "its parameters are not rank 0's after lesson_broadcast_weights (they did not change)" \
    "dist_broadcast(run->dist, &run->model.params.values, 0);|||(void)run;"

# TODO 6.3 (train.c): the distributed sampler
PLANTED_CHECKS="distributed sampler"
plant "no set_epoch" train.c 6.3 "as if the epoch were never set" \
    "sampler_set_epoch(&run->sampler, epoch);|||(void)epoch;"
plant "the sampler over the test set" train.c 6.3 "a share of the test set's 37 examples (run->test.count)" \
    "run->train.count, true,|||run->test.count, true,"
plant "drop_last true" train.c 6.3 "drop_last true: pass false" \
    "d->rank, false);|||d->rank, true);"
plant "the node's ranks, not the world's" train.c 6.3 "local_size and local_rank" \
    "d->world_size, d->rank, false);|||d->local_size, d->local_rank, false);"

# TODO 6.4 (train.c): the average
PLANTED_CHECKS="gradients: the average"
plant "divided by the node's ranks" train.c 6.4 "divide by run->dist->world_size, not local_size" \
    "1.0f / (float)run->dist->world_size;|||1.0f / (float)run->dist->local_size;"
plant "the sum, not the average" train.c 6.4 "that is the sum: not divided" \
    "for (int64_t i = 0; i < g->size; i++) g->data[i] *= inv;|||(void)inv;"
plant "divided before dist_wait" train.c 6.4 "it divided before dist_wait" \
    "dist_all_reduce(run->dist, g, DIST_SUM);|||DistRequest *q = dist_all_reduce_start(run->dist, g, DIST_SUM);" \
    "g->data[i] *= inv;|||g->data[i] *= inv;
    dist_wait(run->dist, q);"
plant "half the buffer reduced" train.c 6.4 "the all-reduce covered only part of the buffer" \
    "dist_all_reduce(run->dist, g, DIST_SUM);|||Tensor half = tensor_range(g, 0, g->size / 2);
    dist_all_reduce(run->dist, &half, DIST_SUM);"
plant "two buckets, the boundary element skipped" train.c 6.4 "one element left out between two parts" \
    "dist_all_reduce(run->dist, g, DIST_SUM);|||Tensor a = tensor_range(g, 0, g->size / 2),
           b = tensor_range(g, g->size / 2 + 1, g->size - g->size / 2 - 1);
    dist_all_reduce(run->dist, &a, DIST_SUM);
    dist_all_reduce(run->dist, &b, DIST_SUM);"
plant "a fixed 0.5 (2 ranks only)" train.c 6.4 "right on 2 ranks only" \
    "const float inv = 1.0f / (float)run->dist->world_size;|||const float inv = 0.5f;"
plant "divided by W - 1" train.c 6.4 "divided by 1 (W - 1 on 2 ranks?)" \
    "const float inv = 1.0f / (float)run->dist->world_size;|||const float inv = 1.0f / (float)(run->dist->world_size - 1);"
plant "the weights all-reduced, not the gradients" train.c 6.4 "its weights changed" \
    "Tensor *g = &run->model.params.grads;|||Tensor *g = &run->model.params.values;"
plant "GPU gradients: DIST_SUM, then tensor_scale" train.c 6.4 "TODO 6.4 asks for DIST_AVG there" \
    "dist_all_reduce(run->dist, g, DIST_AVG);|||dist_all_reduce(run->dist, g, DIST_SUM);
        tensor_scale(g, 1.0f / (float)run->dist->world_size);"

# TODO 6.5 (train.c): the sums of the metrics
PLANTED_CHECKS="metrics: the sums"
plant "examples not summed" train.c 6.5 "examples is 10, the sum over the ranks is 21 (this rank's own: not summed)" \
    "s->examples = dist_sum_double(run->dist, s->examples);|||"
plant "loss_sum averaged" train.c 6.5 "loss_sum is 1, the sum over the ranks is 2 (the mean over the ranks" \
    "s->loss_sum = dist_sum_double(run->dist, s->loss_sum);|||s->loss_sum = dist_sum_double(run->dist, s->loss_sum) / run->dist->world_size;"

# TODO 6.6 (save.c): save0
PLANTED_CHECKS="print0 and save0"
plant "every rank saves" save.c 6.6 "a rank other than 0 writes nothing" \
    "if (run->dist->rank == 0) { /* save0|||if (1) { /* save0"
plant "the checkpoint named after the epoch" save.c 6.6 "it saved ckpt-000000000001.ckpt, expected ckpt-000000000300.ckpt" \
    "&c, run->steps, path|||&c, epoch, path"
plant "the checkpoint named after steps + 1" save.c 6.6 "the checkpoint's step is run->steps" \
    "&c, run->steps, path|||&c, run->steps + 1, path"
plant "TrainState's epoch: the one done, not the next" save.c 6.6 "a resume would repeat or skip an epoch" \
    ".epoch = epoch + 1,|||.epoch = epoch,"
plant "TrainState's global_step one short" save.c 6.6 "a resume would go on at the wrong step" \
    ".global_step = run->steps,|||.global_step = run->steps - 1,"
plant "a failed save ignored" save.c 6.6 "lesson_save_checkpoint went on as if it had saved" \
    "if (ckpt_store_save(&run->store, &c, run->steps, path, sizeof path, &err) != 0)
            fatal(\"%s\", err.msg);|||snprintf(path, sizeof path, \"?\");
        (void)ckpt_store_save(&run->store, &c, run->steps, path, sizeof path, &err);"

# TODO 6.7 (ring.c): rings that deadlock, ended by the library as such
PLANTED_CHECKS="ring all-reduce"
plant_also "the ring receives from r + 1 (hangs on 3 ranks only)" ring.c 6.7 \
    "it sends to rank 1 and receives from rank 1" "can never finish: rank 1 did not send to rank 0" \
    "prev = (r + W - 1) % W;|||prev = (r + 1) % W;"
plant_also "every rank receives, then sends" ring.c 6.7 \
    "hint: a rank waited for a message that never came" "can never finish: rank 1 did not send to rank 0" \
    "dist_sendrecv(d, sn ? &out : NULL, next, rn ? &in : NULL, prev);|||if (rn) dist_recv(d, &in, prev);
        if (sn) dist_send(d, &out, next);"

plant "no mod in the sent chunk: (r - s) % W, negative on 3 ranks" ring.c 6.7 "in C, % keeps the sign" \
    "chunk(t->size, W, ((r - s) % W + W) % W, &s0, &sn);|||chunk(t->size, W, (r - s) % W, &s0, &sn);"
plant "no mod in either chunk" ring.c 6.7 "without the mod: in C -1 % W is -1" \
    "chunk(t->size, W, ((r - s) % W + W) % W, &s0, &sn);|||chunk(t->size, W, (r - s) % W, &s0, &sn);" \
    "chunk(t->size, W, ((r - s - 1) % W + W) % W, &r0, &rn);|||chunk(t->size, W, (r - s - 1) % W, &r0, &rn);"
plant "the reduce-scatter one step too many (right values)" ring.c 6.7 "the sum is right, but the ring took 3 dist_sendrecv steps" \
    "for (int s = 0; s < W - 1; s++) {
        int64_t s0, sn, r0, rn;
        chunk(t->size, W, ((r - s) % W + W) % W, &s0, &sn);|||for (int s = 0; s < W; s++) {
        int64_t s0, sn, r0, rn;
        chunk(t->size, W, ((r - s) % W + W) % W, &s0, &sn);"
plant "the all-gather receives into incoming" ring.c 6.7 "it receives into another buffer (\`incoming\`?), not into its tensor" \
    "Tensor in = rn ? tensor_range(t, r0, rn) : (Tensor){0}; /* whole: overwrite */|||Tensor in = rn ? tensor_range(&incoming, 0, rn) : (Tensor){0};"
plant "tensor_range of an empty chunk" ring.c 6.7 "an empty chunk (count 0), which tensor_range refuses" \
    "Tensor out = sn ? tensor_range(t, s0, sn) : (Tensor){0};|||Tensor out = tensor_range(t, s0, sn);"
plant_not "the add into the sent chunk" ring.c 6.7 "did not change after the receive: what it received went elsewhere" \
    "fewer values than ranks" \
    "t->data[r0 + i] += incoming.data[i];|||t->data[s0 + i] += incoming.data[i];"

# TODO 6.8 (ring.c): the bus bandwidth
PLANTED_CHECKS="bus bandwidth"
plant "2 (n - 1) / n in integers" ring.c 6.8 "in integer arithmetic" \
    "return algbw * 2.0 * (ranks - 1) / ranks;|||return algbw * (2 * (ranks - 1) / ranks);"

# TODOs 6.10-6.11 (ddp.sbatch): the launch line
PLANTED_CHECKS="job script: MASTER"
plant_script "\$* for \"\$@\"" 6.10-6.11 '"7 8" one argument' \
    '"$COURSE_RUN_DIR/checkpoints-$JOB_ID" "$@"|||"$COURSE_RUN_DIR/checkpoints-$JOB_ID" $*'
plant_script "--ranks 8, not \$SLURM_NTASKS" 6.10-6.11 "where SLURM_NTASKS is 4" \
    '--ranks "${SLURM_NTASKS:-1}"|||--ranks 8'
plant_script "--threads 8, not \$SLURM_CPUS_PER_TASK" 6.10-6.11 "where SLURM_CPUS_PER_TASK is 6" \
    '--threads "${SLURM_CPUS_PER_TASK:-1}"|||--threads 8'

planted_end
