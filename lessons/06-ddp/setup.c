/* TODO 6.1: joining the job.
 *
 * The launcher (mpirun, or srun in a Slurm job) started the same program N times, on
 * one node or several. Each copy must find out who it is (its rank, 0..N-1), how many
 * they are (the world size), which of them share its node (the local rank: the GPU it
 * takes), and how to reach the others. All of that is in the environment the launcher
 * set (lib/dist/launcher.h); dist_init reads it and connects the ranks. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "cuda/device.h"
#include "lesson.h"

void lesson_setup(Run *run) {
    const Config *c = &run->cfg;
    const Device device = strcmp(c->device, "cuda") == 0 ? DEVICE_CUDA : DEVICE_CPU;
    /* TODO 6.1:
     *   1. for --device cuda, cuda_require() first: it starts CUDA on the GPU of this
     *      rank's local rank (lib/cuda/device.h);
     *   2. run->dist = dist_init(&(DistOptions){...}) with .backend = c->dist,
     *      .device = device, .timeout_s = c->timeout_s, .expect_world = c->ranks;
     *   3. every rank prints one line (printf, then fflush(stdout)):
     *        rank R of W: local rank L of N on its node, cpu
     *      or, with --device cuda,
     *        rank R of W: local rank L of N on its node, GPU g
     *      from run->dist->rank, world_size, local_rank, local_size; g is the GPU
     *      cuda_require() chose, cuda_current_device() (lib/cuda/device.h). The
     *      flush: in a batch job stdout is a file, which C writes in blocks, so an
     *      unflushed line comes out late, amid other output, or never if the job is
     *      killed;
     *   4. rank 0 alone prints dist_describe()'s line: dist_describe(run->dist,
     *      line, sizeof line) writes it into a char array of yours (char line[256]
     *      holds it), then print0 (lib/core/log.h) prints it on rank 0 only. */
    (void)device;
    TODO_STOP("6.1");
}
