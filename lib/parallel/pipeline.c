/* A pipeline stage at run time: its micro-batches' activations in slots, the messages
 * between neighbouring stages, a step's schedule run and recorded. */
#include "pipeline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/log.h"
#include "core/timer.h"
#include "cuda/device.h"

static bool is_last(const Pipeline *p) { return p->stage == p->stages - 1; }
static int first_block(const Pipeline *p) { return p->model->first; }
static int end_block(const Pipeline *p) { return p->model->first + p->model->count; }

/* ---------------------------------------------------------------- the record */

static void record(Pipeline *p, PipeEventKind kind, int micro, double start, double end) {
    if (p->event_count == p->event_cap) {
        const int cap = p->event_cap ? 2 * p->event_cap : 64;
        PipeEvent *e = xcalloc((size_t)cap, sizeof *e);
        if (p->event_count) memcpy(e, p->events, (size_t)p->event_count * sizeof *e);
        xfree(p->events);
        p->events = e, p->event_cap = cap;
    }
    p->events[p->event_count++] = (PipeEvent){start - p->t0, end - p->t0, kind, micro};
}

/* Compute on a GPU is asynchronous: its time is known once it has finished. Only the
 * compute stream is waited for: NCCL's sends in flight keep going. */
static double compute_done(const Pipeline *p) {
    if (p->model->device != DEVICE_CPU) cuda_sync_compute();
    return now_seconds();
}

/* ---------------------------------------------------------------- set-up */

/* The stages must tile the model: stage s begins where stage s - 1 ends, the last one
 * ends with the model's last block; and what one sends, the next receives. */
static void check_stages(Pipeline *p) {
    const BlockList *m = p->model;
    const int P = p->stages, blocks = m->total;
    Tensor in = {0}, out = {0};
    if (p->stage > 0) blocks_input_shape(m, first_block(p), m->B_max, m->T_max, &in);
    if (!is_last(p)) blocks_output_shape(m, end_block(p) - 1, m->B_max, m->T_max, &out);
    double *all = xcalloc((size_t)P * 4, sizeof *all); /* first, end, floats in, floats out */
    dist_all_gather_double(p->dist, first_block(p), all);
    dist_all_gather_double(p->dist, end_block(p), all + P);
    dist_all_gather_double(p->dist, (double)in.size, all + 2 * P);
    dist_all_gather_double(p->dist, (double)out.size, all + 3 * P);
    for (int s = 0; s < P; s++) {
        const int first = (int)all[s], end = (int)all[P + s];
        const int want_first = s == 0 ? 0 : (int)all[P + s - 1];
        if (first != want_first || (s == P - 1 && end != blocks)) {
            if (p->stage != 0) exit(EXIT_USER_ERROR); /* every rank sees it; rank 0 says it */
            fatal("stage %d holds blocks [%d, %d): the stages must tile the model's %d blocks "
                  "in rank order (stage 0 from block 0, each from where the one before ends, "
                  "the last to block %d)", s, first, end, blocks, blocks);
        }
        if (s > 0 && all[3 * P + s - 1] != all[2 * P + s]) {
            if (p->stage != 0) exit(EXIT_USER_ERROR);
            fatal("stage %d sends messages of %.0f floats, stage %d receives %.0f: the stages "
                  "must be built for the same micro-batch (rows x width)", s - 1,
                  all[3 * P + s - 1], s, all[2 * P + s]);
        }
    }
    xfree(all);
}

void pipeline_init(Pipeline *p, Dist *d, BlockList *model, int micro, PipeSchedule schedule) {
    memset(p, 0, sizeof *p);
    p->dist = d, p->stage = d->rank, p->stages = d->world_size;
    p->activations = dist_split(d, 0, d->rank); /* one communicator (stream) a direction */
    p->gradients = dist_split(d, 0, d->rank);
    p->micro = micro, p->schedule = schedule, p->model = model;
    p->ops = (PipelineOps){pipeline_send_activation, pipeline_recv_activation,
                           pipeline_send_gradient, pipeline_recv_gradient,
                           pipeline_micro_loss_grad, pipeline_run_gpipe, pipeline_run_1f1b};
    if (micro < 1) fatal("--micro-batches must be at least 1, got %d", micro);
    /* the same schedule and micro-batches on every stage, and stages that fit, or the
     * job ends now with a message (not later in a receive of the wrong size) */
    dist_check_same(d, micro, "--micro-batches");
    dist_check_same(d, schedule, "the schedule (0 gpipe, 1 1f1b)");
    check_stages(p);
    CHECK(!is_last(p) || model->loss, "the last stage holds no loss: its blocks end the model");
    model->pinned++; /* its device and batch are what the buffers below are made for */
    p->acts = xcalloc((size_t)micro, sizeof *p->acts);
    p->slot_of = xcalloc((size_t)micro, sizeof *p->slot_of);
    p->slot_busy = xcalloc((size_t)micro, sizeof *p->slot_busy);
    p->in = xcalloc((size_t)micro, sizeof *p->in);
    p->din = xcalloc((size_t)micro, sizeof *p->din);
    p->send_act = xcalloc((size_t)micro, sizeof *p->send_act);
    p->send_grad = xcalloc((size_t)micro, sizeof *p->send_grad);
    p->log = xcalloc((size_t)2 * micro, sizeof *p->log);
    p->rank_busy = xcalloc((size_t)p->stages, sizeof *p->rank_busy);
    for (int i = 0; i < micro; i++) p->slot_of[i] = -1;
    Tensor out; /* the gradient of the last block's output: received, or the loss's */
    blocks_output_shape(model, end_block(p) - 1, model->B_max, model->T_max, &out);
    CHECK(out.ndim == 2, "a stage's output of %d dimensions: [rows, width] only", out.ndim);
    /* the loss's gradient in float32 (a 16-bit model's is rounded once before the backward,
     * after the 1/m), the float32 model's own buffer */
    if (is_last(p)) p->dloss = model->dtype == DTYPE_F32 ? model->dloss : blocks_dloss_f32(model);
    else p->dout = tensor_zeros_typed(model->device, out.dtype, 2, out.shape[0], out.shape[1]);
}

void pipeline_free(Pipeline *p) {
    for (int k = 0; k < p->max_slots; k++) {
        if (k > 0) blocks_acts_free(p->acts[k]), xfree(p->acts[k]); /* slot 0: the model's */
        tensor_free(&p->in[k]), tensor_free(&p->din[k]);
    }
    tensor_free(&p->dout);
    p->model->pinned--;
    xfree(p->acts), xfree(p->in), xfree(p->din), xfree(p->send_act), xfree(p->send_grad);
    xfree(p->slot_of), xfree(p->slot_busy), xfree(p->log), xfree(p->events), xfree(p->rank_busy);
    dist_finalize(p->activations), dist_finalize(p->gradients);
    memset(p, 0, sizeof *p);
}

/* Slot k's sends in flight: finished (wait), or only those that are done (MPI moves a
 * non-blocking send's data only when asked: asking between operations keeps it going). */
static void finish_sends(Pipeline *p, int k, bool wait) {
    if (p->send_act[k] && (wait || dist_test(p->activations, p->send_act[k])))
        dist_wait(p->activations, p->send_act[k]), p->send_act[k] = NULL;
    if (p->send_grad[k] && (wait || dist_test(p->gradients, p->send_grad[k])))
        dist_wait(p->gradients, p->send_grad[k]), p->send_grad[k] = NULL;
}

/* A zero-filled tensor of a block's input shape (and dtype: the model's precision) on the
 * model's device. */
static Tensor input_buffer(const Pipeline *p) {
    const BlockList *m = p->model;
    Tensor in;
    blocks_input_shape(m, first_block(p), m->B_max, m->T_max, &in);
    CHECK(in.ndim == 2, "a stage's input of %d dimensions: [rows, width] only", in.ndim);
    return tensor_zeros_typed(m->device, in.dtype, 2, in.shape[0], in.shape[1]);
}

/* A free activation slot for micro-batch i: the lowest one not in flight, once the
 * sends that still read from it have finished. New slots are allocated here, so
 * max_slots is the most micro-batches a run ever had in flight at once. */
static int take_slot(Pipeline *p, int micro) {
    int k = 0;
    while (p->slot_busy[k]) k++;
    if (k == p->max_slots) {
        if (k == 0) {
            p->acts[0] = &p->model->acts;
        } else {
            p->acts[k] = xcalloc(1, sizeof *p->acts[k]);
            blocks_acts_init(p->model, p->acts[k]);
        }
        if (p->stage > 0) p->in[k] = input_buffer(p), p->din[k] = input_buffer(p);
        p->max_slots++;
    }
    finish_sends(p, k, true);
    p->slot_busy[k] = true;
    p->slot_of[micro] = k;
    return k;
}

/* Every slot's sends: those done (between operations), or all of them (a step's end). */
static void progress_sends(Pipeline *p) {
    for (int k = 0; k < p->max_slots; k++) finish_sends(p, k, false);
}
static void wait_sends(Pipeline *p) {
    for (int k = 0; k < p->max_slots; k++) finish_sends(p, k, true);
}

/* ---------------------------------------------------------------- forward, backward */

static void log_op(Pipeline *p, PipeOpKind kind, int micro) {
    const char *what = kind == PIPE_FORWARD ? "forward" : "backward";
    if (micro < 0 || micro >= p->micro)
        fatal("stage %d: %s of micro-batch %d: there are %d (0 .. %d)", p->stage, what, micro,
              p->micro, p->micro - 1);
    if (p->log_count == 2 * p->micro)
        fatal("stage %d: more than %d forwards and backwards in one step (%s of micro-batch %d): "
              "each micro-batch goes forward once and back once", p->stage, 2 * p->micro, what, micro);
    p->log[p->log_count++] = (PipeOp){kind, micro};
}

/* Micro-batch i's forward through this stage's blocks, into slot k. */
static const Tensor *run_forward(Pipeline *p, int k, int micro) {
    return blocks_forward(p->model, p->acts[k], first_block(p), end_block(p),
                          p->stage == 0 ? p->tokens[micro] : NULL, p->stage > 0 ? &p->in[k] : NULL);
}

void pipeline_forward(Pipeline *p, int micro) {
    log_op(p, PIPE_FORWARD, micro);
    if (p->slot_of[micro] >= 0)
        fatal("stage %d: forward of micro-batch %d twice in one step", p->stage, micro);
    const int k = take_slot(p, micro);
    if (p->stage > 0) {
        const double t = now_seconds();
        p->ops.recv_activation(p, &p->in[k]);
        record(p, PIPE_EV_WAIT, micro, t, now_seconds());
    }
    const double t = now_seconds();
    const Tensor *out = run_forward(p, k, micro);
    const double done = compute_done(p);
    record(p, PIPE_EV_FORWARD, micro, t, done);
    p->busy += done - t;
    if (!is_last(p)) {
        p->send_act[k] = p->ops.send_activation(p, out);
        if (!p->send_act[k]) /* never waited for: the next forward would overwrite it in flight */
            fatal("stage %d: the activation send returned no request: return dist_send_start's", p->stage);
        record(p, PIPE_EV_SEND, micro, done, now_seconds());
    }
    progress_sends(p);
}

void pipeline_backward(Pipeline *p, int micro) {
    log_op(p, PIPE_BACKWARD, micro);
    const int k = micro >= 0 && micro < p->micro ? p->slot_of[micro] : -1;
    if (k < 0)
        fatal("stage %d: backward of micro-batch %d before its forward (or twice)", p->stage, micro);
    const Tensor *dy = &p->dout;
    double t = now_seconds();
    if (is_last(p)) {
        p->loss_sum += p->ops.micro_loss_grad(p, micro); /* compute: part of the backward */
        dy = &p->dloss;
        if (p->model->dtype != DTYPE_F32) { /* float32, scaled by S / m: rounded once here */
            tensor_convert(&p->model->dloss, &p->dloss);
            dy = &p->model->dloss;
        }
    } else {
        p->ops.recv_gradient(p, &p->dout);
        const double got = now_seconds();
        record(p, PIPE_EV_WAIT, micro, t, got);
        t = got;
    }
    Tensor *din = p->stage > 0 ? &p->din[k] : NULL;
    if (din) tensor_fill(din, 0.0f); /* the backward adds into it */
    blocks_backward(p->model, p->acts[k], first_block(p), end_block(p), dy,
                    p->stage > 0 ? &p->in[k] : NULL, din);
    const double done = compute_done(p);
    record(p, PIPE_EV_BACKWARD, micro, t, done);
    p->busy += done - t;
    if (din) {
        p->send_grad[k] = p->ops.send_gradient(p, din);
        if (!p->send_grad[k])
            fatal("stage %d: the gradient send returned no request: return dist_send_start's", p->stage);
        record(p, PIPE_EV_SEND, micro, done, now_seconds());
    }
    p->slot_busy[k] = false, p->slot_of[micro] = -1;
    progress_sends(p);
}

/* ---------------------------------------------------------------- the library's ops */

DistRequest *pipeline_send_activation(Pipeline *p, const Tensor *x) {
    return dist_send_start(p->activations, x, p->stage + 1);
}
void pipeline_recv_activation(Pipeline *p, Tensor *x) { dist_recv(p->activations, x, p->stage - 1); }
DistRequest *pipeline_send_gradient(Pipeline *p, const Tensor *dx) {
    return dist_send_start(p->gradients, dx, p->stage - 1);
}
void pipeline_recv_gradient(Pipeline *p, Tensor *dy) { dist_recv(p->gradients, dy, p->stage + 1); }

float pipeline_loss_grad(Pipeline *p, int micro) {
    CHECK(is_last(p), "stage %d: the loss is the last stage's", p->stage);
    const int k = micro >= 0 && micro < p->micro ? p->slot_of[micro] : -1;
    CHECK(k >= 0, "the loss of micro-batch %d before its forward", micro);
    const Tensor *out = &blocks_saved(p->model, p->acts[k], end_block(p) - 1)[0];
    return blocks_loss_f32(p->model, out, p->targets[micro], &p->dloss);
}

float pipeline_micro_loss_grad(Pipeline *p, int micro) {
    /* the batch's loss is the mean of the m micro-batches' means (all the same size):
     * each micro-batch's loss, and so its gradient, counts 1/m (p->dloss is float32: a
     * 16-bit model's gradient is rounded once after it, in pipeline_backward) */
    const float loss = pipeline_loss_grad(p, micro);
    tensor_scale(&p->dloss, 1.0f / (float)p->micro);
    return loss / (float)p->micro;
}

static void run_list(Pipeline *p, PipeSchedule schedule) {
    PipeOp *ops = xcalloc((size_t)2 * p->micro, sizeof *ops);
    const int n = pipeline_schedule(schedule, p->stages, p->stage, p->micro, ops);
    for (int i = 0; i < n; i++)
        if (ops[i].kind == PIPE_FORWARD) pipeline_forward(p, ops[i].micro);
        else pipeline_backward(p, ops[i].micro);
    xfree(ops);
}
void pipeline_run_gpipe(Pipeline *p) { run_list(p, PIPE_GPIPE); }
void pipeline_run_1f1b(Pipeline *p) { run_list(p, PIPE_1F1B); }

/* ---------------------------------------------------------------- a step */

/* A step's (or an evaluation's) micro-batches: what this stage reads of them. */
static void set_batch(Pipeline *p, const int *const *tokens, const int *const *targets) {
    const BlockList *m = p->model;
    CHECK(p->stage > 0 || tokens, "stage 0 needs the micro-batches' tokens");
    CHECK(!is_last(p) || targets, "the last stage needs the micro-batches' targets");
    CHECK(m->B == m->B_max && m->T == m->T_max, "a pipeline runs micro-batches of the size the "
          "stages were built for (%d x %d, not %d x %d): the messages between stages have that "
          "size", m->B_max, m->T_max, m->B, m->T);
    p->tokens = tokens, p->targets = targets;
}

float pipeline_step(Pipeline *p, const int *const *tokens, const int *const *targets) {
    set_batch(p, tokens, targets);
    params_zero_grad(p->model->params); /* then every micro-batch's backward adds its share */
    p->loss_sum = 0, p->busy = 0, p->event_count = 0, p->log_count = 0;
    dist_barrier(p->dist); /* every stage starts the step together: one clock for the record */
    p->t0 = now_seconds();
    (p->schedule == PIPE_GPIPE ? p->ops.run_gpipe : p->ops.run_1f1b)(p);
    int forwards = 0, backwards = 0;
    for (int i = 0; i < p->log_count; i++) *(p->log[i].kind == PIPE_FORWARD ? &forwards : &backwards) += 1;
    if (forwards != p->micro || backwards != p->micro)
        fatal("stage %d: the %s step ran %d forwards and %d backwards; each of the %d "
              "micro-batches goes forward once and back once", p->stage,
              pipeline_schedule_name(p->schedule), forwards, backwards, p->micro);
    wait_sends(p);
    const double mine = now_seconds() - p->t0;
    double *ends = xcalloc((size_t)p->stages, sizeof *ends);
    dist_all_gather_double(p->dist, p->busy, p->rank_busy);
    dist_all_gather_double(p->dist, mine, ends);
    p->seconds = 0;
    for (int s = 0; s < p->stages; s++) p->seconds = fmax(p->seconds, ends[s]);
    xfree(ends);
    return (float)dist_sum_double(p->dist, is_last(p) ? p->loss_sum : 0.0);
}

float pipeline_evaluate(Pipeline *p, const int *const *tokens, const int *const *targets) {
    set_batch(p, tokens, targets);
    double sum = 0;
    for (int i = 0; i < p->micro; i++) { /* forwards only: a slot is free again at once */
        const int k = take_slot(p, i);
        if (p->stage > 0) p->ops.recv_activation(p, &p->in[k]);
        const Tensor *out = run_forward(p, k, i);
        if (!is_last(p)) p->send_act[k] = p->ops.send_activation(p, out);
        else sum += blocks_loss(p->model, out, targets[i], NULL);
        p->slot_busy[k] = false, p->slot_of[i] = -1;
    }
    wait_sends(p);
    return (float)dist_sum_double(p->dist, is_last(p) ? sum / p->micro : 0.0);
}

int64_t pipeline_workspace_bytes(Pipeline *p) {
    const BlockList *m = p->model;
    int64_t bytes = (int64_t)tensor_bytes(&p->dout) + (int64_t)tensor_bytes(&m->work) +
                    (int64_t)tensor_bytes(&m->grad[0]) + (int64_t)tensor_bytes(&m->grad[1]) +
                    (int64_t)tensor_bytes(&m->dloss) + (int64_t)tensor_bytes(&m->dloss32);
    for (int k = 0; k < p->max_slots; k++) bytes += (int64_t)tensor_bytes(&p->din[k]);
    return bytes;
}

int64_t pipeline_activation_bytes(Pipeline *p) {
    int64_t bytes = 0;
    for (int k = 0; k < p->max_slots; k++)
        bytes += p->acts[k]->bytes + (int64_t)tensor_bytes(&p->in[k]);
    return bytes;
}
