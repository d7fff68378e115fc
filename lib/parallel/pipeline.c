#include "pipeline.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/log.h"
#include "core/timer.h"
#include "cuda/device.h"

/* ---------------------------------------------------------------- schedules */

const char *pipeline_schedule_name(PipeSchedule s) { return s == PIPE_GPIPE ? "gpipe" : "1f1b"; }

int pipeline_schedule(PipeSchedule schedule, int stages, int stage, int micro, PipeOp *ops) {
    CHECK(stages >= 1 && stage >= 0 && stage < stages && micro >= 1,
          "stage %d of %d with %d micro-batches", stage, stages, micro);
    int n = 0;
    if (schedule == PIPE_GPIPE) {
        for (int i = 0; i < micro; i++) ops[n++] = (PipeOp){PIPE_FORWARD, i};
        for (int i = 0; i < micro; i++) ops[n++] = (PipeOp){PIPE_BACKWARD, i};
        return n;
    }
    const int warmup = stages - 1 - stage < micro ? stages - 1 - stage : micro;
    for (int i = 0; i < warmup; i++) ops[n++] = (PipeOp){PIPE_FORWARD, i};
    for (int i = 0; i < micro - warmup; i++) {
        ops[n++] = (PipeOp){PIPE_FORWARD, i + warmup};
        ops[n++] = (PipeOp){PIPE_BACKWARD, i};
    }
    for (int i = micro - warmup; i < micro; i++) ops[n++] = (PipeOp){PIPE_BACKWARD, i};
    return n;
}

double pipeline_bubble_formula(int stages, int micro) {
    return (double)(stages - 1) / (double)(micro + stages - 1);
}

double pipeline_bubble_fraction(const double *busy, int ranks, double seconds) {
    if (!(seconds > 0)) return 0;
    double idle = 0;
    for (int r = 0; r < ranks; r++) idle += (seconds - busy[r]) / seconds;
    return idle / ranks;
}

/* ---------------------------------------------------------------- partition */

void pipeline_block_costs(const TransformerConfig *c, int T, double *costs) {
    const double D = c->d_model, F = c->d_ff, V = c->vocab;
    const int blocks = transformer_block_count(c);
    costs[0] = 2 * D; /* the embedding's lookup and the positions: next to nothing */
    for (int k = 1; k <= c->layers; k++) /* in_proj, out_proj, the feed-forward, attention */
        costs[k] = 2 * (3 * D * D) + 2 * D * D + 2 * (2 * D * F) + 4.0 * T * D;
    costs[blocks - 1] = 2 * D * V; /* the decoder */
}

void pipeline_partition(const double *costs, int blocks, int stages, int *first) {
    CHECK(stages >= 1 && stages <= blocks, "%d stages for %d blocks", stages, blocks);
    /* best[s][k]: the least largest stage cost of blocks [0, k) in s + 1 stages; cut[s][k]
     * where its last stage begins. O(stages * blocks^2): a few hundred blocks at most. */
    double *prefix = xcalloc((size_t)blocks + 1, sizeof *prefix);
    for (int k = 0; k < blocks; k++) prefix[k + 1] = prefix[k] + costs[k];
    double *best = xcalloc((size_t)stages * (blocks + 1), sizeof *best);
    int *cut = xcalloc((size_t)stages * (blocks + 1), sizeof *cut);
#define BEST(s, k) best[(size_t)(s) * (blocks + 1) + (k)]
#define CUT(s, k) cut[(size_t)(s) * (blocks + 1) + (k)]
    for (int k = 1; k <= blocks; k++) BEST(0, k) = prefix[k];
    for (int s = 1; s < stages; s++)
        for (int k = s + 1; k <= blocks; k++) {
            BEST(s, k) = INFINITY;
            for (int j = s; j < k; j++) { /* stage s holds [j, k) */
                const double worst = fmax(BEST(s - 1, j), prefix[k] - prefix[j]);
                if (worst < BEST(s, k)) BEST(s, k) = worst, CUT(s, k) = j;
            }
        }
    first[stages] = blocks;
    for (int s = stages - 1; s > 0; s--) first[s] = CUT(s, first[s + 1]);
    first[0] = 0;
#undef BEST
#undef CUT
    xfree(prefix), xfree(best), xfree(cut);
}

void pipeline_parse_split(const char *text, int blocks, int stages, int *first) {
    const char *p = text;
    first[0] = 0, first[stages] = blocks;
    for (int s = 1; s < stages; s++) {
        char *end;
        const long v = strtol(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0') || (*end == '\0' && s < stages - 1) ||
            (*end == ',' && s == stages - 1))
        {
            if (stages == 2)
                fatal("--split %s: 2 stages take one block number: where stage 1 begins", text);
            fatal("--split %s: %d stages take %d increasing block numbers, comma-separated: "
                  "where stages 1 .. %d begin", text, stages, stages - 1, stages - 1);
        }
        if (v <= first[s - 1] || v >= blocks)
            fatal("--split %s: stage %d cannot begin at block %ld: the numbers must increase, "
                  "from 1 to %d (the model has %d blocks: 0 the embedding, 1 .. %d the encoder "
                  "layers, %d the decoder)", text, s, v, blocks - 1, blocks, blocks - 2, blocks - 1);
        first[s] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (stages == 1 && *text != '\0')
        fatal("--split %s: one stage holds every block: no block numbers", text);
}

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

void pipeline_init(Pipeline *p, Dist *d, Transformer *model, int micro, PipeSchedule schedule) {
    const int blocks = transformer_block_count(&model->cfg);
    memset(p, 0, sizeof *p);
    p->dist = d, p->stage = d->rank, p->stages = d->world_size;
    p->activations = dist_split(d, 0, d->rank); /* one communicator (stream) a direction */
    p->gradients = dist_split(d, 0, d->rank);
    p->micro = micro, p->schedule = schedule, p->model = model;
    p->ops = (PipelineOps){pipeline_send_activation, pipeline_recv_activation,
                           pipeline_send_gradient, pipeline_recv_gradient,
                           pipeline_micro_loss_grad, pipeline_run_gpipe, pipeline_run_1f1b};
    if (micro < 1) fatal("--micro-batches must be at least 1, got %d", micro);
    /* the stages must tile the model: stage s begins where stage s - 1 ends */
    double *ends = xcalloc((size_t)p->stages * 2, sizeof *ends);
    dist_all_gather_double(d, model->first, ends);
    dist_all_gather_double(d, model->last, ends + p->stages);
    for (int s = 0; s < p->stages; s++) {
        const int first = (int)ends[s], last = (int)ends[p->stages + s];
        const int want_first = s == 0 ? 0 : (int)ends[p->stages + s - 1];
        if (first != want_first || (s == p->stages - 1 && last != blocks)) {
            if (p->stage != 0) exit(EXIT_USER_ERROR); /* every rank sees it; rank 0 says it */
            fatal("stage %d holds blocks [%d, %d): the stages must tile the model's %d blocks "
                  "in rank order (stage 0 from block 0, each from where the one before ends, "
                  "the last to block %d)", s, first, last, blocks, blocks);
        }
    }
    xfree(ends);
    p->slot_of = xcalloc((size_t)micro, sizeof *p->slot_of);
    p->slot_busy = xcalloc((size_t)micro, sizeof *p->slot_busy);
    p->in = xcalloc((size_t)micro, sizeof *p->in);
    p->din = xcalloc((size_t)micro, sizeof *p->din);
    p->send_act = xcalloc((size_t)micro, sizeof *p->send_act);
    p->send_grad = xcalloc((size_t)micro, sizeof *p->send_grad);
    p->log = xcalloc((size_t)2 * micro, sizeof *p->log);
    p->rank_busy = xcalloc((size_t)p->stages, sizeof *p->rank_busy);
    for (int i = 0; i < micro; i++) p->slot_of[i] = -1;
    const int rows = model->B * model->T_max, D = model->cfg.d_model; /* a boundary's message */
    if (p->stage < p->stages - 1) p->dout = tensor_zeros_on(model->device, 2, rows, D);
    /* the same schedule, micro-batches and messages on every stage, or the job ends now
     * with a message (not later in a receive of the wrong size) */
    dist_check_same(d, micro, "--micro-batches");
    dist_check_same(d, schedule, "the schedule (0 gpipe, 1 1f1b)");
    dist_check_same(d, (int64_t)rows * D, "the floats of a message between stages (micro-batch rows x d_model)");
}

void pipeline_free(Pipeline *p) {
    for (int k = 0; k < p->max_slots; k++) tensor_free(&p->in[k]), tensor_free(&p->din[k]);
    tensor_free(&p->dout);
    xfree(p->in), xfree(p->din), xfree(p->send_act), xfree(p->send_grad);
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

/* A free activation slot for micro-batch i: the lowest one not in flight, once the
 * sends that still read from it have finished. New slots are allocated here. */
static int take_slot(Pipeline *p, int micro) {
    int k = 0;
    while (p->slot_busy[k]) k++;
    if (k == p->max_slots) {
        if (p->stage > 0) {
            const int N = p->model->B * p->model->T_max, D = p->model->cfg.d_model;
            p->in[k] = tensor_zeros_on(p->model->device, 2, N, D);
            p->din[k] = tensor_zeros_on(p->model->device, 2, N, D);
        }
        p->max_slots++;
    }
    finish_sends(p, k, true);
    p->slot_busy[k] = true;
    p->slot_of[micro] = k;
    transformer_use_slot(p->model, k);
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

static bool is_last(const Pipeline *p) { return p->stage == p->stages - 1; }

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

void pipeline_forward(Pipeline *p, int micro) {
    log_op(p, PIPE_FORWARD, micro);
    if (p->slot_of[micro] >= 0)
        fatal("stage %d: forward of micro-batch %d twice in one step", p->stage, micro);
    Transformer *m = p->model;
    const int k = take_slot(p, micro);
    const Tensor *x = NULL;
    if (p->stage > 0) {
        const double t = now_seconds();
        p->ops.recv_activation(p, &p->in[k]);
        record(p, PIPE_EV_WAIT, micro, t, now_seconds());
        x = &p->in[k];
    }
    const double t = now_seconds();
    const Tensor *out = transformer_forward(m, m->first, m->last, p->stage == 0 ? p->tokens[micro] : NULL, x);
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
    Transformer *m = p->model;
    transformer_use_slot(m, k);
    const Tensor *dy = &p->dout;
    double t = now_seconds();
    if (is_last(p)) {
        p->loss_sum += p->ops.micro_loss_grad(p, micro); /* compute: part of the backward */
        dy = &m->dlogits;
    } else {
        p->ops.recv_gradient(p, &p->dout);
        const double got = now_seconds();
        record(p, PIPE_EV_WAIT, micro, t, got);
        t = got;
    }
    Tensor *din = p->stage > 0 ? &p->din[k] : NULL;
    if (din) tensor_fill(din, 0.0f); /* the backward adds into it */
    transformer_backward(m, m->first, m->last, dy, p->stage > 0 ? &p->in[k] : NULL, din);
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

float pipeline_micro_loss_grad(Pipeline *p, int micro) {
    /* the batch's loss is the mean of the m micro-batches' means (all the same size):
     * each micro-batch's loss, and so its gradient, counts 1/m */
    const float loss = transformer_loss_grad(p->model, p->targets[micro]);
    tensor_scale(&p->model->dlogits, 1.0f / (float)p->micro);
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
    CHECK(p->stage > 0 || tokens, "stage 0 needs the micro-batches' tokens");
    CHECK(!is_last(p) || targets, "the last stage needs the micro-batches' targets");
    CHECK(p->model->T == p->model->T_max, "a pipeline runs sequences of the length the stages "
          "were built for (%d tokens, not %d): the messages between stages have that size",
          p->model->T_max, p->model->T);
    p->tokens = tokens, p->targets = targets;
}

float pipeline_step(Pipeline *p, const int *const *tokens, const int *const *targets) {
    Transformer *m = p->model;
    set_batch(p, tokens, targets);
    params_zero_grad(&m->params); /* then every micro-batch's backward adds its share */
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
    Transformer *m = p->model;
    set_batch(p, tokens, targets);
    double sum = 0;
    for (int i = 0; i < p->micro; i++) { /* forwards only: a slot is free again at once */
        const int k = take_slot(p, i);
        const Tensor *x = NULL;
        if (p->stage > 0) p->ops.recv_activation(p, &p->in[k]), x = &p->in[k];
        const Tensor *out = transformer_forward(m, m->first, m->last, p->stage == 0 ? tokens[i] : NULL, x);
        if (!is_last(p)) p->send_act[k] = p->ops.send_activation(p, out);
        else sum += transformer_loss(m, targets[i]);
        p->slot_busy[k] = false, p->slot_of[i] = -1;
    }
    wait_sends(p);
    return (float)dist_sum_double(p->dist, is_last(p) ? sum / p->micro : 0.0);
}

int64_t pipeline_activation_bytes(Pipeline *p) {
    const int64_t input = p->stage > 0 ? (int64_t)p->model->B * p->model->T_max * p->model->cfg.d_model * 4 : 0;
    return (int64_t)p->max_slots * (transformer_activation_bytes(p->model) + input);
}

/* ---------------------------------------------------------------- the timeline */

static const char *event_name(int kind) {
    static const char *names[] = {"forward", "backward", "send", "wait"};
    return kind >= 0 && kind < 4 ? names[kind] : "?";
}

void pipeline_write_timeline(Pipeline *p, const char *path, int step) {
    Dist *d = p->dist;
    double *counts = xcalloc((size_t)p->stages, sizeof *counts);
    dist_all_gather_double(d, p->event_count, counts);
    FILE *f = NULL;
    if (p->stage == 0 && !(f = fopen(path, step > 1 ? "a" : "w")))
        fatal("cannot write the timeline %s: %s", path, strerror(errno));
    for (int r = 0; r < p->stages; r++) {
        const int n = (int)counts[r];
        if (n == 0 || (p->stage != 0 && p->stage != r)) continue; /* rank 0 and rank r */
        Tensor host = tensor_zeros(2, n, 4); /* start, end, kind, micro: each rank's events */
        if (p->stage == r)
            for (int i = 0; i < n; i++) {
                const PipeEvent *e = &p->events[i];
                float *row = host.data + 4 * i;
                row[0] = (float)e->start, row[1] = (float)e->end;
                row[2] = (float)e->kind, row[3] = (float)e->micro;
            }
        if (r != 0) { /* rank r sends its events to rank 0, in the backend's memory */
            Tensor t = tensor_to(&host, d->device);
            if (p->stage == r) dist_send(d, &t, 0);
            else dist_recv(d, &t, r);
            tensor_free(&host);
            host = tensor_to(&t, DEVICE_CPU);
            tensor_free(&t);
        }
        for (int i = 0; f && i < n; i++) {
            const float *row = host.data + 4 * i;
            fprintf(f, "{\"step\": %d, \"rank\": %d, \"kind\": \"%s\", \"micro\": %d, "
                    "\"start\": %.6f, \"end\": %.6f}\n", step, r, event_name((int)row[2]),
                    (int)row[3], (double)row[0], (double)row[1]);
        }
        tensor_free(&host);
    }
    if (f && fclose(f) != 0) fatal("cannot write the timeline %s", path);
    xfree(counts);
}
