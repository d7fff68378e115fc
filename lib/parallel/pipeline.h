/* Pipeline-parallel training (GPipe and 1F1B), in C: a model's blocks are cut
 * into p stages, one per rank; a batch is cut into m micro-batches; stage s receives
 * each micro-batch's activations from stage s - 1, runs its blocks and sends its output
 * to stage s + 1; the gradients travel back the same way. While stage 1 works on
 * micro-batch 0, stage 0 already works on micro-batch 1: the stages overlap, except at
 * the start and end of each step (the bubble, (p - 1) / (m + p - 1) of the step when
 * every stage takes the same time).
 *
 *   transformer_block_costs(&cfg, T, costs);           // the blocks' forward FLOPs
 *   pipeline_partition(costs, blocks, p, first);       // balanced stages: first[0..p]
 *   transformer_init_blocks(&m, &cfg, B / micro, T, seed, first[s], first[s + 1]);
 *   Pipeline pipe;
 *   pipeline_init(&pipe, dist, &m.blocks, micro, PIPE_1F1B);
 *   for each step:
 *       loss = pipeline_step(&pipe, tokens, targets);   // [micro][B/micro * T] each
 *       optimiser step on m.params (each stage its own parameters)
 *
 * The pipeline sees only the block interface (models/block.h): this stage's slice of
 * the model's blocks, their inputs and outputs, and the model's loss on the last stage.
 * It keeps one set of activations per micro-batch in flight (BlockActs), from the
 * forward to the backward: the model's own set is the first, the others it makes as
 * more micro-batches are in flight. Messages between stages are [rows, width] tensors
 * and stage 0 reads the micro-batch's ids (tokens): a language model's shape.
 *
 * A step runs the schedule's list of forwards and backwards (pipeline_schedule). The
 * gradients of all micro-batches are added up (the backward adds, +=), each scaled by
 * 1/m, so that the step is the step of the whole batch: the unsplit model's gradients.
 * Sends are non-blocking (a stage never waits for its neighbour to receive), receives
 * block: the time a stage waits there is its share of the bubble. Activations and
 * gradients travel on two communicators of their own: on GPUs each has its own CUDA
 * stream, and NCCL's send holds its stream until the peer receives, so with one stream
 * for both directions 1F1B's facing sends (an activation to s + 1 while s + 1 sends a
 * gradient to s) would queue each receive behind a send that waits for it. Every forward,
 * backward, send and wait is recorded with its time (PipeEvent), for the timeline.
 *
 * What the lesson writes itself (lessons/07-pipeline) goes through PipelineOps: the
 * library's functions are the default, a lesson puts its own in their place. */
#ifndef PARALLEL_PIPELINE_H
#define PARALLEL_PIPELINE_H

#include <stdbool.h>

#include "dist/dist.h"
#include "models/block.h"

typedef enum { PIPE_GPIPE, PIPE_1F1B } PipeSchedule;
typedef enum { PIPE_FORWARD, PIPE_BACKWARD } PipeOpKind;
typedef struct {
    PipeOpKind kind;
    int micro;
} PipeOp;

/* The 2m operations of stage `stage` of `stages` in one step, in order; returns 2m.
 *   GPipe: F0 F1 ... F(m-1), then B0 B1 ... B(m-1)
 *   1F1B:  w = min(p - 1 - stage, m) forwards (warm-up), then F B pairs (the steady
 *          state: forward of micro-batch i + w, backward of i), then the last w
 *          backwards (cool-down). At most p - stage micro-batches are in flight. */
int pipeline_schedule(PipeSchedule schedule, int stages, int stage, int micro, PipeOp *ops);
const char *pipeline_schedule_name(PipeSchedule schedule); /* "gpipe", "1f1b" */

/* The bubble's share of a step when every stage takes the same time and sends cost
 * nothing: (p - 1) / (m + p - 1). */
double pipeline_bubble_formula(int stages, int micro);

/* Contiguous stages with at least one block each whose largest cost is the least
 * possible: stage s holds blocks [first[s], first[s + 1]), first[0] = 0,
 * first[stages] = blocks. Ties: the earliest cuts. */
void pipeline_partition(const double *costs, int blocks, int stages, int *first);
/* The same from "--split 3,5": the first block of stages 1 .. p-1, increasing; a bad
 * list is a user error that says what is wrong. */
void pipeline_parse_split(const char *text, int blocks, int stages, int *first);

typedef enum { PIPE_EV_FORWARD, PIPE_EV_BACKWARD, PIPE_EV_SEND, PIPE_EV_WAIT } PipeEventKind;
typedef struct {
    double start, end; /* seconds since the step began (after a barrier) */
    int kind;          /* PipeEventKind */
    int micro;
} PipeEvent;

typedef struct Pipeline Pipeline;

/* What a lesson can replace (NULL: the library's). */
typedef struct {
    DistRequest *(*send_activation)(Pipeline *p, const Tensor *x);   /* to stage + 1 */
    void (*recv_activation)(Pipeline *p, Tensor *x);                 /* from stage - 1 */
    DistRequest *(*send_gradient)(Pipeline *p, const Tensor *dx);    /* to stage - 1 */
    void (*recv_gradient)(Pipeline *p, Tensor *dy);                  /* from stage + 1 */
    float (*micro_loss_grad)(Pipeline *p, int micro);  /* last stage: loss, dloss (1/m) */
    void (*run_gpipe)(Pipeline *p);                    /* the step's forwards and backwards */
    void (*run_1f1b)(Pipeline *p);
} PipelineOps;

struct Pipeline {
    Dist *dist;               /* the pipeline's ranks: rank s is stage s (collectives) */
    Dist *activations;        /* the same ranks: activations, stage s to s + 1 */
    Dist *gradients;          /* the same ranks: gradients, stage s + 1 to s */
    int stage, stages, micro; /* this stage, how many, micro-batches per step */
    PipeSchedule schedule;
    BlockList *model;         /* this stage's blocks [first, first + count) of the model */
    PipelineOps ops;
    /* one step's micro-batches (device memory): tokens for stage 0, targets for the last */
    const int *const *tokens, *const *targets;
    /* per activation slot (a micro-batch in flight): its blocks' activations (slot 0 the
     * model's own), the input received from the stage before, the gradient to send back
     * to it, and the sends still in flight from it */
    BlockActs **acts;         /* [slots] */
    Tensor *in, *din;         /* [slots] of the first block's input shape ([N, D]) */
    DistRequest **send_act, **send_grad; /* [slots] */
    int *slot_of;             /* [micro] the slot of each micro-batch, -1: none */
    bool *slot_busy;          /* [micro] slot k holds a micro-batch in flight */
    int max_slots;            /* slots allocated so far (the peak in flight) */
    Tensor dout;              /* [N, D] the gradient received from the stage after */
    Tensor dloss;             /* last stage: [N, V] float32, the loss's gradient of a
                               * micro-batch (a float32 model's model->dloss; a 16-bit
                               * model's is rounded once from it into model->dloss after
                               * micro_loss_grad: the 1/m before the rounding) */
    float loss_sum;           /* last stage: the step's loss, summed over micro-batches */
    /* the last step's record */
    PipeEvent *events;
    int event_count, event_cap;
    double t0, busy;          /* its start (timer), this stage's compute seconds */
    double *rank_busy;        /* [stages] every stage's compute seconds */
    double seconds;           /* its length: from the start to the last stage's end */
    PipeOp *log;              /* [2 * micro] the forwards and backwards in the order run */
    int log_count;
};

/* The stage of this rank (stage = rank of d, stages = its world size) over `model`,
 * its slice of the model's blocks, built for a micro-batch (transformer_init_blocks:
 * m.blocks). The stages must tile the model in rank order; the last one holds its loss.
 * Until pipeline_free the model is pinned: it does not move to another device. */
void pipeline_init(Pipeline *p, Dist *d, BlockList *model, int micro, PipeSchedule schedule);
void pipeline_free(Pipeline *p);

/* One step: zero the gradients, run the schedule over tokens[0..m) / targets[0..m)
 * (device memory, [B * T] each; NULL where the stage does not need them), wait for the
 * sends. Returns the batch's mean loss on every rank (the last stage's, shared). */
float pipeline_step(Pipeline *p, const int *const *tokens, const int *const *targets);

/* The batch's mean loss, forwards only (evaluation: dropout off first, model->training
 * false: transformer_eval); the same arguments as pipeline_step. */
float pipeline_evaluate(Pipeline *p, const int *const *tokens, const int *const *targets);

/* The forward and the backward of micro-batch i on this stage, with their receives
 * and sends: what a schedule calls, in its order. */
void pipeline_forward(Pipeline *p, int micro);
void pipeline_backward(Pipeline *p, int micro);

/* The last stage: micro-batch i's mean loss, from the output of its forward, and its
 * gradient in p->dloss (float32, times the model's loss scale; overwritten): what the
 * backward starts from. */
float pipeline_loss_grad(Pipeline *p, int micro);

/* The library's own versions of PipelineOps. */
DistRequest *pipeline_send_activation(Pipeline *p, const Tensor *x);
void pipeline_recv_activation(Pipeline *p, Tensor *x);
DistRequest *pipeline_send_gradient(Pipeline *p, const Tensor *dx);
void pipeline_recv_gradient(Pipeline *p, Tensor *dy);
float pipeline_micro_loss_grad(Pipeline *p, int micro);
void pipeline_run_gpipe(Pipeline *p);
void pipeline_run_1f1b(Pipeline *p);

/* The bubble measured over a step: each rank's idle share of the step (the step's
 * length, less the rank's compute), averaged over the ranks: after pipeline_step,
 * pipeline_bubble_fraction(p->rank_busy, p->stages, p->seconds). */
double pipeline_bubble_fraction(const double *busy, int ranks, double seconds);

/* Activation memory of this stage: the slots allocated (the most micro-batches in flight
 * at once), each one's activations and received input. Not counted, as the backward's
 * workspaces are not: the gradient of the input that each slot sends back, and the
 * gradient received. */
int64_t pipeline_activation_bytes(Pipeline *p);
/* The backward's workspaces of this stage, the rest of what it allocates besides its
 * parameters, gradients and activations: the input gradient of each slot, the gradient
 * received, and the model's own (the blocks' shared scratch, the gradients passed
 * between blocks, the loss's gradient). */
int64_t pipeline_workspace_bytes(Pipeline *p);

/* Rank 0 writes every rank's events of the last step as JSON lines to path (step 1
 * starts the file, later steps add to it):
 *   {"step": 2, "rank": 1, "kind": "forward", "micro": 3, "start": 0.012300, "end": 0.020100}
 * kind: forward, backward, send (posted), wait (in a receive). A collective: every
 * rank calls it. */
void pipeline_write_timeline(Pipeline *p, const char *path, int step);

#endif
