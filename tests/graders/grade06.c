/* Grader of lesson 06. Most checks need several ranks: each starts
 *   mpirun -n 2 (and 3) <this grader> --worker NAME ...
 * whose ranks run one of your functions (with the library's communicator, so that a
 * check tests one TODO) and each print what they saw; the check reads that. A check
 * that needs ranks SKIPs where there is no mpirun, never PASSes. Each has a time
 * limit, so a deadlock fails that check ("hung: killed after N s") and the rest go on.
 * Run with `make check-lesson 6` (your code) or `make check-lesson 6 SOLUTION=1`. */
#include <dlfcn.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "core/rng.h"
#include "framework/check.h"
#include "graders/made_up_text.h"
#include "graders/ranks.h"
#include "lesson.h"
#include "train/checkpoint_file.h"
#include "train/train_state.h"

#ifndef LESSON_PATH /* the lesson's directory, from the Makefile: lessons/... or solutions/... */
#define LESSON_PATH "lessons/06-ddp"
#endif

/* ================================================================ watching the lesson's calls
 * (linked with --wrap, Makefile GRADE_WRAPPED_06) */

/* TODO 6.7 builds the all-reduce from sends and receives: the ring must not call the
 * library's collectives (refuse_library.h). */
static bool lesson_function(const char *name) { return strcmp(name, "lesson_ring_all_reduce") == 0; }
#include "graders/refuse_library.h"
WRAP_VOID(dist_broadcast, (Dist *d, Tensor *t, int root), (d, t, root))
WRAP_VOID(dist_all_gather, (Dist *d, Tensor *out, const Tensor *in), (d, out, in))
WRAP_VOID(dist_reduce_scatter, (Dist *d, Tensor *out, const Tensor *in, DistOp op), (d, out, in, op))

/* The name of the lesson's function at a return address, or "". */
static const char *caller_name(void *address) {
    Dl_info info;
    return dladdr(address, &info) && info.dli_sname ? info.dli_sname : "";
}

/* lesson_average_gradients' non-blocking all-reduce: its values are ready at dist_wait */
static bool g_average_async;
DistRequest *__real_dist_all_reduce_start(Dist *d, Tensor *t, DistOp op);
DistRequest *__wrap_dist_all_reduce_start(Dist *d, Tensor *t, DistOp op);
DistRequest *__wrap_dist_all_reduce_start(Dist *d, Tensor *t, DistOp op) {
    void *from = __builtin_return_address(0);
    refuse_from_lesson("dist_all_reduce_start", from);
    if (strcmp(caller_name(from), "lesson_average_gradients") == 0) g_average_async = true;
    return __real_dist_all_reduce_start(d, t, op);
}


/* worker_average's second part: gradients tagged DEVICE_CUDA (host memory that may not
 * be touched, as GPU memory on the CPU) and the op lesson_average_gradients asked for */
static int g_fake_gpu, g_fake_gpu_op = -1;

/* TODO 6.4 asks for the average by hand on the CPU (a sum, then a division): one
 * DIST_AVG call there is refused, as the stub says. On a GPU DIST_AVG is the way. */
void __real_dist_all_reduce(Dist *d, Tensor *t, DistOp op);
void __wrap_dist_all_reduce(Dist *d, Tensor *t, DistOp op);
void __wrap_dist_all_reduce(Dist *d, Tensor *t, DistOp op) {
    void *from = __builtin_return_address(0);
    refuse_from_lesson("dist_all_reduce", from);
    if (g_fake_gpu && t->device != DEVICE_CPU) { /* worker_average's stand-in for GPU gradients */
        g_fake_gpu_op = (int)op;
        if (op != DIST_AVG) {
            printf("WORKER rank %d FAIL: with gradients in GPU memory (--device cuda), lesson_average_gradients "
                   "calls dist_all_reduce with %s: TODO 6.4 asks for DIST_AVG there, which NCCL sums and divides "
                   "in one call on the GPU, with no second pass over the buffer (and a loop over grads.data on "
                   "the CPU would crash: it cannot read GPU memory): where grads.device != DEVICE_CPU, call "
                   "dist_all_reduce with DIST_AVG and return\n", d->rank, op == DIST_SUM ? "DIST_SUM" : "another op");
            fflush(stdout);
            _exit(1);
        }
        return; /* host memory that no one may touch: nothing to average */
    }
    if (op == DIST_AVG && t->device == DEVICE_CPU && strcmp(caller_name(from), "lesson_average_gradients") == 0) {
        printf("WORKER rank %d FAIL: lesson_average_gradients calls dist_all_reduce with DIST_AVG on CPU "
               "gradients: TODO 6.4 asks for the average by hand here (DIST_SUM, then divide every element "
               "by the world size); DIST_AVG is for gradients in GPU memory\n", d->rank);
        fflush(stdout);
        _exit(1);
    }
    __real_dist_all_reduce(d, t, op);
}

static void ring_unwatch(void);

/* A blocking send of the ring that does not return: every rank sent first. */
static int g_send_rank = -1, g_send_peer = -1;
static void on_send_alarm(int sig) {
    (void)sig;
    char line[700]; /* a signal handler: one write, no stdio */
    const int n = snprintf(line, sizeof line, "WORKER rank %d FAIL: its blocking dist_send to rank %d has not "
                           "returned in 10 s: rank %d never started the matching receive. Where every rank "
                           "sends first, none receives: a send larger than MPI buffers (here 200 KB and more) "
                           "waits for its receive, so none returns. Use dist_sendrecv (it sends and receives "
                           "at once)\n", g_send_rank, g_send_peer, g_send_peer);
    if (n > 0 && write(STDOUT_FILENO, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1)) < 0) _exit(2);
    _exit(1);
}
void __real_dist_send(Dist *d, const Tensor *t, int peer);
void __wrap_dist_send(Dist *d, const Tensor *t, int peer);
void __wrap_dist_send(Dist *d, const Tensor *t, int peer) {
    const bool ring = strcmp(caller_name(__builtin_return_address(0)), "lesson_ring_all_reduce") == 0;
    if (ring) {
        ring_unwatch();
        g_send_rank = d->rank, g_send_peer = peer;
        signal(SIGALRM, on_send_alarm);
        alarm(10); /* before the library's own time limit (30 s) */
    }
    __real_dist_send(d, t, peer);
    if (ring) alarm(0);
}

/* TODO 6.7's schedule, watched: while worker_ring runs a ring, each dist_sendrecv is one
 * step (the reduce-scatter's W - 1, then the all-gather's W - 1). Where a rank first
 * leaves the stub's schedule (sends, receives or adds another chunk), it says which chunk
 * it used and which the step wants, once, and before the step runs: a wrong receive
 * often waits for a message that no rank sends, and the library's words for that
 * ("different operations or sizes") cannot name the chunk. It only speaks: the check's
 * verdict stays the values'. */
static struct {
    Tensor *t;     /* [n] the tensor of the ring under way; NULL outside one */
    int step;      /* dist_sendrecv calls so far in this ring */
    int add_step;  /* >= 0: the reduce-scatter step whose received chunk is to be added */
    float *before; /* [n] t right after that step's receive: where did the add go? */
    bool said;     /* a rank says its first departure only */
    int other_step; /* >= 0: the first all-gather step that received into another buffer; said at
                     * the end, when the ring took its 2 (W - 1) steps: an extra reduce-scatter step
                     * looks like that too */
} g_ring = {.add_step = -1, .other_step = -1};

static int ring_mod(int x, int W) { return (x % W + W) % W; }

/* A ring that also calls dist_send or dist_recv: its dist_sendrecv calls are not its
 * steps, and the watch would name the wrong step (a receive-first ring's all-gather as
 * the reduce-scatter's step 0), so it stops. A deadlock there gets check_ring's hint. */
static void ring_unwatch(void) {
    if (g_ring.t) g_ring.said = true;
}
void __real_dist_recv(Dist *d, Tensor *t, int peer);
void __wrap_dist_recv(Dist *d, Tensor *t, int peer);
void __wrap_dist_recv(Dist *d, Tensor *t, int peer) {
    if (strcmp(caller_name(__builtin_return_address(0)), "lesson_ring_all_reduce") == 0) ring_unwatch();
    __real_dist_recv(d, t, peer);
}

/* Chunk k of W over n values, as the stub defines it (the first n % W one longer). */
static void ring_chunk(int W, int k, int64_t *start, int64_t *count) {
    const int64_t n = g_ring.t->size, base = n / W, extra = n % W;
    *start = k * base + (k < extra ? k : extra);
    *count = base + (k < extra ? 1 : 0);
}

/* The chunk of the ring's tensor a sendrecv's part is: its index; -1: another buffer
 * (only its size tells); -2: nothing (NULL or empty); -3: inside t but no chunk. */
static int ring_which(const Tensor *part, int W) {
    const Tensor *t = g_ring.t;
    if (!part || part->size == 0) return -2;
    if (part->data < t->data || part->data >= t->data + t->size) return -1;
    for (int k = 0; k < W; k++) {
        int64_t start, count;
        ring_chunk(W, k, &start, &count);
        if (part->data == t->data + start && part->size == count) return k;
    }
    return -3;
}

/* "1 value", "7 values", "empty: NULL" */
static const char *ring_values(int64_t n, char *out, size_t cap) {
    if (n == 0) snprintf(out, cap, "empty: NULL");
    else snprintf(out, cap, "%lld value%s", (long long)n, n == 1 ? "" : "s");
    return out;
}

static void ring_say(Dist *d, int step, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void ring_say(Dist *d, int step, const char *fmt, ...) {
    const int W = d->world_size, r = d->rank, rs = step < W - 1, s = rs ? step : step - (W - 1);
    const int send = rs ? ring_mod(r - s, W) : ring_mod(r + 1 - s, W);
    const int recv = rs ? ring_mod(r - s - 1, W) : ring_mod(r - s, W);
    int64_t start, ns, nr;
    ring_chunk(W, send, &start, &ns);
    ring_chunk(W, recv, &start, &nr);
    char what[400], sv[32], rv[32], nv[32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    printf("hint: rank %d of %d, a tensor of %s, step s = %d of the %s: %s. At this step rank r sends chunk "
           "%s mod W = %d (%s) to rank r + 1 and receives chunk %s mod W = %d (%s) from rank r - 1, which "
           "sends that chunk now; it %s its copy of chunk %d\n",
           r, W, ring_values(g_ring.t->size, nv, sizeof nv), s, rs ? "reduce-scatter" : "all-gather", what,
           rs ? "(r - s)" : "(r + 1 - s)", send, ring_values(ns, sv, sizeof sv), rs ? "(r - s - 1)" : "(r - s)",
           recv, ring_values(nr, rv, sizeof rv), rs ? "adds it into" : "overwrites", recv);
    fflush(stdout);
    g_ring.said = true;
}

/* After a reduce-scatter step: did the received chunk land in chunk (r - s - 1)? */
static void ring_check_add(Dist *d) {
    const int step = g_ring.add_step, W = d->world_size;
    g_ring.add_step = -1;
    if (step < 0 || g_ring.said) return;
    int64_t start, count, i = 0;
    ring_chunk(W, ring_mod(d->rank - step - 1, W), &start, &count);
    const float *t = g_ring.t->data;
    while (i < g_ring.t->size && (t[i] == g_ring.before[i] || (i >= start && i < start + count))) i++;
    if (i < g_ring.t->size) {
        int k = 0;
        for (int64_t ks, kc; k < W - 1; k++) {
            ring_chunk(W, k, &ks, &kc);
            if (i < ks + kc) break;
        }
        ring_say(d, step, "it added what it received into chunk %d (its element %lld changed)", k, (long long)i);
        return;
    }
    bool changed = false;
    for (int64_t j = start; j < start + count && !changed; j++) changed = t[j] != g_ring.before[j];
    if (count > 0 && !changed)
        ring_say(d, step, "its copy of chunk %d did not change after the receive: what it received went elsewhere "
                 "(outside the tensor?) or nowhere", ring_mod(d->rank - step - 1, W));
}

/* "chunk 1 (3 values)", "3 values" (another buffer), "nothing (NULL)", "3 values of the
 * tensor from element 2, which are no chunk" */
static const char *ring_part(const Tensor *part, int which, char *out, size_t cap) {
    char v[32];
    if (which == -2) snprintf(out, cap, "nothing (NULL)");
    else if (which == -1) snprintf(out, cap, "%s", ring_values(part->size, v, sizeof v));
    else if (which == -3)
        snprintf(out, cap, "%s of the tensor from element %lld, which are no chunk",
                 ring_values(part->size, v, sizeof v), (long long)(part->data - g_ring.t->data));
    else snprintf(out, cap, "chunk %d (%s)", which, ring_values(part->size, v, sizeof v));
    return out;
}

static void ring_watch(Dist *d, const Tensor *out, int to, const Tensor *in, int from) {
    const int step = g_ring.step++;
    if (!g_ring.t || g_ring.said) return;
    ring_check_add(d);
    if (g_ring.said) return;
    const int W = d->world_size, r = d->rank, rs = step < W - 1, s = rs ? step : step - (W - 1);
    if (step >= 2 * (W - 1)) {
        char nv[32];
        printf("hint: rank %d of %d, a tensor of %s: a dist_sendrecv after the ring's 2 (W - 1) = %d steps (W - 1 "
               "of reduce-scatter, W - 1 of all-gather)\n", r, W, ring_values(g_ring.t->size, nv, sizeof nv),
               2 * (W - 1));
        fflush(stdout);
        g_ring.said = true;
        return;
    }
    if (to != (r + 1) % W || from != (r + W - 1) % W) {
        ring_say(d, step, "it sends to rank %d and receives from rank %d", to, from);
        return;
    }
    const int send = rs ? ring_mod(r - s, W) : ring_mod(r + 1 - s, W);
    const int recv = rs ? ring_mod(r - s - 1, W) : ring_mod(r - s, W);
    int64_t start, ns, nr;
    ring_chunk(W, send, &start, &ns);
    ring_chunk(W, recv, &start, &nr);
    const int ws = ring_which(out, W), wr = ring_which(in, W);
    char part[160], also[300] = "";
    /* the chunks as large as a part of another buffer: the one it sends, or the first */
    const int64_t got = wr == -1 ? in->size : wr == -2 ? 0 : -1;
    for (int k = 0; k < W && got >= 0; k++) {
        int64_t ks, kc;
        ring_chunk(W, k, &ks, &kc);
        if (kc == got && (k == send || !*also))
            snprintf(also, sizeof also, ", the size of chunk %d%s", k, k != send ? ""
                     : rs ? " = (r - s) mod W, the chunk it sends" : " = (r + 1 - s) mod W, the chunk it sends");
    }
    /* a chunk index below 0 (no mod): chunk's formula gives it n / W + 1 values */
    const int raw = rs ? r - s - 1 : r - s;
    if (raw < 0 && got == g_ring.t->size / W + 1) {
        const size_t len = strlen(also);
        snprintf(also + len, sizeof also - len, "%s chunk %d without the mod: in C %d %% W is %d; "
                 "write ((x %% W) + W) %% W", len ? ", or of" : ", the size of", raw, raw, raw % W);
    }
    if (ws >= 0 ? ws != send : ws == -1 ? out->size != ns : ws == -2 ? ns != 0 : true)
        ring_say(d, step, "it sends %s", ring_part(out, ws, part, sizeof part));
    else if (rs && (wr >= 0 || wr == -3))
        ring_say(d, step, "it receives straight into its tensor (%s), over its own values: receive into "
                 "`incoming`, then add", ring_part(in, wr, part, sizeof part));
    else if (!rs && wr == -1 && in->size == nr && nr > 0) {
        if (g_ring.other_step < 0) g_ring.other_step = step;
    } else if (wr == -1 ? in->size != nr : wr == -2 ? nr != 0 : wr != recv)
        ring_say(d, step, "it receives %s%s", ring_part(in, wr, part, sizeof part), wr < 0 ? also : "");
}

/* A chunk's view that tensor_range refuses (its CHECK names no ring): a negative start
 * (C's % of a negative number) or an empty chunk (count 0), said as the ring's mistake
 * before the library stops the rank. */
Tensor __real_tensor_range(const Tensor *t, int64_t start, int64_t n);
Tensor __wrap_tensor_range(const Tensor *t, int64_t start, int64_t n);
Tensor __wrap_tensor_range(const Tensor *t, int64_t start, int64_t n) {
    if ((start < 0 || n < 1 || start + n > t->size) &&
        strcmp(caller_name(__builtin_return_address(0)), "lesson_ring_all_reduce") == 0) {
        const int rank = g_dist ? g_dist->rank : -1, W = g_dist ? g_dist->world_size : 0;
        if (start < 0)
            printf("hint: rank %d of %d: tensor_range(t, %lld, %lld): a negative start, from a negative chunk "
                   "index: in C, %% keeps the sign (-1 %% W is -1, not W - 1): write ((x %% W) + W) %% W\n",
                   rank, W, (long long)start, (long long)n);
        else if (n < 1)
            printf("hint: rank %d of %d: tensor_range(t, %lld, %lld): an empty chunk (count 0), which tensor_range "
                   "refuses: build the view only when count > 0, and pass NULL to dist_sendrecv for an empty "
                   "chunk (sn ? &out : NULL)\n", rank, W, (long long)start, (long long)n);
        else
            printf("hint: rank %d of %d: tensor_range(t, %lld, %lld) runs past the tensor's %lld values: chunk k "
                   "starts at k * (n / W) + min(k, n %% W) (the stub's chunk())\n", rank, W, (long long)start,
                   (long long)n, (long long)t->size);
        fflush(stdout);
        g_ring.said = true;
    }
    return __real_tensor_range(t, start, n);
}

void __real_dist_sendrecv(Dist *d, const Tensor *out, int to, Tensor *in, int from);
void __wrap_dist_sendrecv(Dist *d, const Tensor *out, int to, Tensor *in, int from);
void __wrap_dist_sendrecv(Dist *d, const Tensor *out, int to, Tensor *in, int from) {
    const int step = g_ring.step;
    if (g_ring.t) ring_watch(d, out, to, in, from);
    __real_dist_sendrecv(d, out, to, in, from);
    if (g_ring.t && !g_ring.said && step < d->world_size - 1) { /* a reduce-scatter step: the add follows */
        memcpy(g_ring.before, g_ring.t->data, (size_t)g_ring.t->size * sizeof(float));
        g_ring.add_step = step;
    }
}

/* The ring of worker_ring on t begins, ends. */
static void ring_watch_begin(Tensor *t) {
    g_ring.t = t, g_ring.step = 0, g_ring.add_step = -1, g_ring.other_step = -1;
    g_ring.before = xmalloc((size_t)t->size * sizeof(float));
}
/* Returns the ring's dist_sendrecv calls. */
static int ring_watch_end(Dist *d) {
    ring_check_add(d);
    const int W = d->world_size, steps = g_ring.step;
    if (!g_ring.said && steps == 2 * (W - 1) && g_ring.other_step >= 0)
        ring_say(d, g_ring.other_step, "it receives into another buffer (`incoming`?), not into its tensor: in the "
                 "all-gather the chunk that arrives is already the whole sum; receive it straight into its place "
                 "in t, which it overwrites");
    if (!g_ring.said && g_ring.step > 0 && g_ring.step < 2 * (W - 1)) {
        char nv[32];
        printf("hint: rank %d of %d, a tensor of %s: the ring took only %d dist_sendrecv step%s, not 2 (W - 1) = %d "
               "(W - 1 of reduce-scatter, then W - 1 of all-gather)\n", d->rank, W,
               ring_values(g_ring.t->size, nv, sizeof nv), g_ring.step, g_ring.step == 1 ? "" : "s", 2 * (W - 1));
        fflush(stdout);
        g_ring.said = true;
    }
    xfree(g_ring.before);
    g_ring.t = NULL, g_ring.before = NULL;
    return steps;
}

/* With GRADE_FAKE_NODES=N in its environment, dist_init reports the ranks as spread over
 * nodes of N ranks each (N = 2: ranks 0-1 on the first, 2-3 on the next, ...), as a launch on
 * several nodes does: the local rank is then not the rank (TODO 6.1's line must tell). */
/* worker_setup's child: lesson_setup with --device cuda on this machine without a GPU,
 * stopped at dist_init: cuda_require must have run first (it picks the local rank's GPU,
 * which NCCL's communicator then uses; after it, every rank of a node is on GPU 0). */
static bool g_cuda_probe, g_cuda_required;
/* What lesson_setup handed dist_init: --dist and --device must reach it, not constants
 * (the probe asks for nccl on cuda, the CPU run for auto on cpu: no constant fits both). */
static char g_seen_backend[32];
static int g_seen_device = -1;
void __real_cuda_require(void);
void __wrap_cuda_require(void);
/* worker_setup's --device cpu run: a cuda_require there is named, not run (on a machine
 * without a GPU the library would stop the rank with its own advice) */
static bool g_cpu_setup, g_cpu_cuda_required;
void __wrap_cuda_require(void) {
    if (g_cuda_probe) g_cuda_required = true;
    else if (g_cpu_setup) g_cpu_cuda_required = true;
    else __real_cuda_require();
}
Dist *__real_dist_init(const DistOptions *opt);
Dist *__wrap_dist_init(const DistOptions *opt);
Dist *__wrap_dist_init(const DistOptions *opt) {
    snprintf(g_seen_backend, sizeof g_seen_backend, "%s", opt->backend ? opt->backend : "(NULL)");
    g_seen_device = (int)opt->device;
    if (g_cuda_probe) {
        if (!g_cuda_required) _exit(3);
        if (strcmp(g_seen_backend, "nccl") != 0) _exit(4);
        _exit(opt->device == DEVICE_CUDA ? 0 : 5);
    }
    Dist *d = __real_dist_init(opt);
    const char *fake = getenv("GRADE_FAKE_NODES");
    if (fake && atoi(fake) > 0) {
        const int per = atoi(fake), W = d->world_size;
        d->local_rank = d->rank % per;
        d->local_size = W - d->rank / per * per < per ? W - d->rank / per * per : per;
        d->nodes = (W + per - 1) / per;
    }
    return d;
}

/* ================================================================ the ranks' side */

/* A run with a small CNN (16x16 images) whose weights come from the rank's own seed. */
static Run *small_run(Dist *d) {
    Run *run = xcalloc(1, sizeof *run);
    run->dist = d;
    run->cfg.train = train_options_defaults();
    run->cfg.train.seed = 17;
    dataset_make_synthetic(103, 1, 16, 2, &run->train);
    Rng rng;
    rng_seed(&rng, 100 + (uint64_t)d->rank, 0);
    cnn_init(&run->model, 1, 16, 16, 10, 4, &rng);
    return run;
}

/* stdout as a batch job's (a file: written in blocks), not as under mpirun's terminal
 * (by lines): a rank's line must leave lesson_setup flushed (TODO 6.1 step 3). */
static char g_stdout_buffer[1 << 16]; /* stdout's buffer in worker_setup: what is still in it */
static void worker_setup(int expect) {
    setvbuf(stdout, g_stdout_buffer, _IOFBF, sizeof g_stdout_buffer);
    int status = 0;
    fflush(stdout);
    const pid_t probe = fork(); /* --device cuda, up to dist_init (__wrap_dist_init) */
    if (probe == 0) {
        g_cuda_probe = true;
        Run gpu = {0};
        gpu.cfg.device = "cuda", gpu.cfg.dist = "nccl", gpu.cfg.timeout_s = 37, gpu.cfg.ranks = expect;
        lesson_setup(&gpu);
        _exit(0);
    }
    const int probed = probe > 0 && waitpid(probe, &status, 0) == probe && WIFEXITED(status)
                           ? WEXITSTATUS(status) : 0;
    if (probed == 3 || probed == 4 || probed == 5) {
        g_dist = library_dist();
        if (probed == 3)
            say(false, "with --device cuda, lesson_setup calls dist_init before cuda_require: cuda_require first "
                "(TODO 6.1 step 1): it starts CUDA on this rank's GPU (its local rank's), which NCCL's "
                "communicator then takes; the other way round every rank of a node is on GPU 0");
        else if (probed == 4)
            say(false, "run with --dist nccl --device cuda, lesson_setup gave dist_init a backend that is not "
                "--dist's: pass .backend = c->dist (TODO 6.1 step 2), not a name: --dist chooses it "
                "(auto: NCCL for GPUs, MPI for CPU ranks)");
        else
            say(false, "run with --device cuda, lesson_setup gave dist_init .device = DEVICE_CPU (the "
                "default when .device is left out): pass .device = device (TODO 6.1 step 2), so that the "
                "library puts its buffers where the tensors are");
        return;
    }
    Run run = {0};
    run.cfg.device = "cpu";
    run.cfg.dist = "auto";
    run.cfg.timeout_s = 37; /* not the library's default (300): --timeout must reach dist_init */
    run.cfg.ranks = expect;
    g_cpu_setup = true;
    lesson_setup(&run);
    g_cpu_setup = false;
    g_dist = run.dist;
    const size_t waiting = __fpending(stdout); /* bytes printed but not yet written */
    /* they are the buffer's first bytes: a full-buffered stream writes from its start */
    const bool describe = waiting > 0 && memmem(g_stdout_buffer, waiting, "dist: ", 6);
    if (g_cpu_cuda_required)
        say(false, "run with --device cpu, lesson_setup called cuda_require: call it only for --device cuda "
            "(if (device == DEVICE_CUDA), TODO 6.1 step 1); on a node without a GPU it stops every CPU rank");
    else if (describe && run.dist->rank != 0)
        say(false, "rank %d printed dist_describe's line (still in stdout's buffer when lesson_setup returned): "
            "only rank 0 prints it, with print0 (TODO 6.1 step 4), not printf", run.dist->rank);
    else if (describe)
        say(false, "dist_describe's line was still in stdout's buffer when lesson_setup returned: print it "
            "with print0 (TODO 6.1 step 4), which prints on rank 0 only and flushes, not printf");
    else if (strcmp(g_seen_backend, "auto") != 0)
        say(false, "run with --dist auto, lesson_setup gave dist_init .backend = \"%s\": pass .backend = "
            "c->dist (TODO 6.1 step 2), not a name: --dist chooses it (auto: NCCL for GPUs, MPI for CPU "
            "ranks)", g_seen_backend);
    else if (g_seen_device != DEVICE_CPU)
        say(false, "run with --device cpu, lesson_setup gave dist_init .device = %d: pass .device = device "
            "(TODO 6.1 step 2)", g_seen_device);
    else if (run.dist->timeout_s != 37)
        say(false, "--timeout 37 was given, and the library's time limit is %g s: pass .timeout_s = "
            "c->timeout_s to dist_init (TODO 6.1 step 2)", run.dist->timeout_s);
    else if (waiting > 0)
        say(false, "%zu bytes it printed were still in stdout's buffer when lesson_setup returned: "
            "fflush(stdout) after its line (TODO 6.1 step 3). In a batch job stdout is a file, which C "
            "writes in blocks: an unflushed line comes out when the buffer fills or the rank ends, "
            "after later output and mixed with the other ranks', and never if the job is killed "
            "(time limit, another rank's crash)",
            waiting);
    else say(true, " world %d local %d", run.dist->world_size, run.dist->local_rank);
}

static void worker_broadcast(void) {
    Dist *d = library_dist();
    Run *run = small_run(d);
    Tensor mine = tensor_to(&run->model.params.values, DEVICE_CPU);
    Tensor root = tensor_to(&run->model.params.values, DEVICE_CPU);
    dist_broadcast(d, &root, 0); /* what rank 0 had */
    lesson_broadcast_weights(run);
    const size_t bytes = (size_t)root.size * 4;
    if (memcmp(run->model.params.values.data, root.data, bytes) != 0)
        say(false, "its parameters are not rank 0's after lesson_broadcast_weights%s",
            memcmp(run->model.params.values.data, mine.data, bytes) == 0 ? " (they did not change)" : "");
    else say(true, "%s", "");
}

/* Whether a sampler of these settings, at `epoch` (0: never set), hands out `mine` first. */
static bool sampler_gives(const int *mine, int n, int count, bool shuffle, uint64_t seed, int replicas, int rank,
                          int epoch) {
    Sampler alt;
    sampler_init_distributed(&alt, count, shuffle, seed, replicas, rank, false);
    if (epoch) sampler_set_epoch(&alt, epoch);
    int got[128];
    const int m = sampler_next(&alt, got, 128);
    sampler_free(&alt);
    return m == n && memcmp(got, mine, sizeof(int) * (size_t)n) == 0;
}

/* The usual mistakes of TODO 6.3, replayed: the words for the one that gives `mine`. */
static const char *sampler_mistake(const int *mine, int n, int count, int W, int rank, int epoch) {
    if (sampler_gives(mine, n, count, false, 17, W, rank, epoch))
        return "they are in order, not shuffled: shuffle true";
    static char words[300];
    if (sampler_gives(mine, n, count, true, 17, W, rank, 0)) {
        snprintf(words, sizeof words, "the order of epoch 0, as if the epoch were never set: "
                 "sampler_set_epoch(&run->sampler, epoch) in lesson_start_epoch, with the epoch given%s",
                 epoch == 1 ? " (not epoch - 1)" : "");
        return words;
    }
    for (int delta = -1; delta <= 1; delta += 2) /* 0 was tried above */
        if (epoch + delta > 0 && sampler_gives(mine, n, count, true, 17, W, rank, epoch + delta)) {
            snprintf(words, sizeof words, "the order of epoch %d, not %d: sampler_set_epoch(&run->sampler, epoch) "
                     "with the epoch given, not epoch %s 1", epoch + delta, epoch, delta < 0 ? "-" : "+");
            return words;
        }
    for (uint64_t seed = 0; seed < 64; seed++)
        if (seed != 17 && (sampler_gives(mine, n, count, true, seed, W, rank, epoch) ||
                           sampler_gives(mine, n, count, true, seed + (uint64_t)rank, W, rank, epoch)))
            return "another seed: the program's, run->cfg.train.seed, the same on every rank (or the ranks' "
                   "shuffles differ and their shares overlap)";
    for (int r = 0; r < W; r++)
        if (r != rank && sampler_gives(mine, n, count, true, 17, W, r, epoch))
            return "another rank's share: pass this rank, run->dist->rank";
    return "the arguments: (&run->sampler, run->train.count, true, run->cfg.train.seed, world size, rank, false)";
}

/* Your sampler against the library's distributed sampler of the same settings. */
static void worker_sampler(void) {
    Dist *d = library_dist();
    Run *run = small_run(d);
    dataset_make_synthetic(37, 1, 16, 2, &run->test); /* another size than the training set's 103 */
    lesson_make_sampler(run);
    Sampler want;
    sampler_init_distributed(&want, run->train.count, true, 17, d->world_size, d->rank, false);
    int first[128], mine[128], ref[128];
    for (int e = 1; e <= 2; e++) {
        lesson_start_epoch(run, e);
        sampler_set_epoch(&want, e);
        int n = sampler_next(&run->sampler, mine, 128), m = sampler_next(&want, ref, 128);
        if (n != m) {
            const int W = d->world_size, tests = run->test.count;
            say(false, "epoch %d: this rank takes %d examples, expected %d (%d examples over %d "
                "ranks, padded%s)", e, n, m, run->train.count, W,
                d->local_size != W && n == (run->train.count + d->local_size - 1) / d->local_size
                    ? ": a share of this node's ranks only (the job as if on 3 nodes): num_replicas is the "
                      "world size and the rank the world rank, run->dist->world_size and run->dist->rank, not "
                      "local_size and local_rank"
                : n == run->train.count ? ": all of them, as if it were alone: num_replicas and rank?"
                : n == (tests + W - 1) / W || n == tests / W
                    ? ": a share of the test set's 37 examples (run->test.count): the sampler goes over the "
                      "training set, run->train.count"
                : n == run->train.count / W && run->train.count % W
                    ? ": the last examples were dropped, drop_last true: pass false, which pads the last share "
                      "with examples from the start so every rank takes as many"
                    : "");
            return;
        }
        if (memcmp(mine, ref, sizeof(int) * (size_t)n) != 0) {
            int k = 0;
            while (mine[k] == ref[k]) k++;
            say(false, "epoch %d: its examples are not those of the distributed sampler with the "
                "program's seed (shuffled, rank %d of %d): its %s example is %d, expected %d: %s", e, d->rank,
                d->world_size, k == 0 ? "first" : "next", mine[k], ref[k],
                sampler_mistake(mine, n, run->train.count, d->world_size, d->rank, e));
            return;
        }
        if (e == 1) memcpy(first, mine, sizeof first);
        else if (memcmp(first, mine, sizeof(int) * (size_t)n) == 0) {
            say(false, "epoch 2 visits the same order as epoch 1: set the sampler's epoch");
            return;
        }
    }
    say(true, "%s", "");
}

/* A read or write of the gradients tagged as GPU memory: a loop over .data on the CPU. */
static int g_gpu_rank;
static void on_gpu_touch(int sig) {
    (void)sig;
    char line[600]; /* a signal handler: one write, no stdio */
    const int len = snprintf(line, sizeof line, "WORKER rank %d FAIL: with gradients in GPU memory (--device cuda), "
                             "lesson_average_gradients read or wrote grads.data on the CPU, which crashes: where "
                             "grads.device != DEVICE_CPU, call dist_all_reduce with DIST_AVG (NCCL averages on the "
                             "GPU) and return before the loop\n", g_gpu_rank);
    if (write(STDOUT_FILENO, line, (size_t)len) < 0) _exit(1);
    _exit(1);
}

/* Gradients made from each rank's seed: every rank can make the others' too. */
static void fake_grads(float *g, int64_t n, int rank) { fill_uniform(g, n, 500 + (uint64_t)rank, -1, 1); }

static void worker_average(void) {
    Dist *d = library_dist();
    Run *run = small_run(d);
    const int64_t n = run->model.params.total;
    fake_grads(run->model.params.grads.data, n, d->rank);
    float *want = xcalloc((size_t)n, sizeof *want), *other = xcalloc((size_t)n, sizeof *other);
    for (int r = 0; r < d->world_size; r++) {
        fake_grads(other, n, r);
        for (int64_t i = 0; i < n; i++) want[i] += other[i];
    }
    for (int64_t i = 0; i < n; i++) want[i] /= (float)d->world_size;
    float *own = xcalloc((size_t)n, sizeof *own), *values = xcalloc((size_t)n, sizeof *values);
    fake_grads(own, n, d->rank);
    memcpy(values, run->model.params.values.data, (size_t)n * sizeof *values);
    lesson_average_gradients(run);
    const float *got = run->model.params.grads.data;
#define NEAR(a, b) (fabsf((a) - (b)) <= 1e-6f + 1e-5f * fabsf(b)) /* float sums in another order */
    for (int64_t i = 0; i < n; i++)
        if (!NEAR(got[i], want[i])) {
            const int W = d->world_size;
            if (d->local_size != W && NEAR(got[i], want[i] * (float)W / (float)d->local_size)) {
                say(false, "gradient %lld is %g, the average is %g: the sum divided by this node's %d "
                    "rank%s (the job as if on 3 nodes), not by the world's %d: divide by "
                    "run->dist->world_size, not local_size", (long long)i, (double)got[i], (double)want[i],
                    d->local_size, d->local_size == 1 ? "" : "s", W);
                return;
            }
            const float sum = want[i] * (float)W;
            bool zero = true;
            int64_t last = i, wrong = 0, mine = 0;
            for (int64_t k = 0; k < n; k++) {
                zero = zero && got[k] == 0.0f;
                if (!NEAR(got[k], want[k])) /* not summed: its own, divided or not */
                    last = k, wrong++, mine += NEAR(got[k], own[k]) || NEAR(got[k], own[k] / (float)W);
            }
            const bool moved = memcmp(values, run->model.params.values.data, (size_t)n * sizeof *values) != 0;
            char part[300] = "";
            if (mine == wrong && wrong == last - i + 1)
                snprintf(part, sizeof part, ": gradients %lld..%lld of the %lld are this rank's own (divided or not), "
                         "not summed over the ranks, "
                         "the rest are right: %s", (long long)i, (long long)last, (long long)n,
                         wrong == 1 ? "one element left out between two parts (a bucket's boundary?): the parts "
                                      "must cover every element once"
                                    : "the all-reduce covered only part of the buffer: all grads.size values");
            say(false, "gradient %lld is %g, the average over the ranks is %g%s", (long long)i,
                (double)got[i], (double)want[i],
                zero ? ": every gradient is 0: an integer division? 1 / world_size is 0 in integers; divide by (float)world_size"
                : moved
                    ? ": its weights changed (lesson_average_gradients must not touch them): the all-reduce went to the "
                      "parameters' values, run->model.params.values; average run->model.params.grads"
                : NEAR(got[i], sum) && g_average_async
                    ? ": that is the sum: it divided before dist_wait (with dist_all_reduce_start the values are "
                      "the sum only once dist_wait returns, which writes over them): divide after the wait"
                : NEAR(got[i], sum) && W == 2
                    ? ": that is the sum: not divided, or divided by 1 (W - 1 on 2 ranks?): divide it by the world "
                      "size, W = run->dist->world_size"
                : NEAR(got[i], sum) ? ": that is the sum, divide it by the world size"
                : NEAR(got[i], want[i] / (float)W) ? ": that is the average divided by the world size once more: divide once"
                : W != 2 && NEAR(got[i], sum * 0.5f)
                    ? ": that is the sum times 0.5: a fixed 0.5 (right on 2 ranks only) or a division by W - 1 = 2: "
                      "divide by the world size, run->dist->world_size"
                : part);
            return;
        }
#undef NEAR
    xfree(own), xfree(values);
    /* --device cuda: the same buffer tagged as GPU memory, its pages unreadable, as GPU
     * memory is to the CPU; the wrapper above takes the all-reduce */
    Tensor *g = &run->model.params.grads;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = ((size_t)n * sizeof(float) + page - 1) / page * page;
    float *host = g->data;
    float *locked = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(locked != MAP_FAILED, "grader: mmap of %zu bytes failed", bytes);
    struct sigaction crash = {.sa_handler = on_gpu_touch}, before;
    sigaction(SIGSEGV, &crash, &before);
    g->data = locked, g->device = DEVICE_CUDA, g_fake_gpu = 1, g_gpu_rank = d->rank;
    lesson_average_gradients(run);
    g->data = host, g->device = DEVICE_CPU, g_fake_gpu = 0;
    sigaction(SIGSEGV, &before, NULL);
    munmap(locked, bytes);
    if (g_fake_gpu_op != DIST_AVG) {
        say(false, "%s", "with gradients in GPU memory (--device cuda), lesson_average_gradients made no "
            "all-reduce: where grads.device != DEVICE_CPU, call dist_all_reduce with DIST_AVG");
        return;
    }
    say(true, "%s", "");
}

static void worker_stats(void) {
    Dist *d = library_dist();
    Run run = {.dist = d};
    EpochStats s = {.loss_sum = d->rank + 0.5, .correct = 2.0 * d->rank, .examples = 10 + d->rank};
    lesson_sum_stats(&run, &s);
    const int W = d->world_size;
    const double tri = W * (W - 1) / 2.0;
    const double mine[3] = {d->rank + 0.5, 2.0 * d->rank, 10 + d->rank}, got[3] = {s.loss_sum, s.correct, s.examples};
    const double want[3] = {tri + 0.5 * W, 2 * tri, 10.0 * W + tri};
    static const char *names[3] = {"loss_sum", "correct", "examples"};
    char words[600] = "";
    int wrong = 0;
    for (int k = 0; k < 3; k++) {
        if (got[k] == want[k]) continue;
        const size_t len = strlen(words);
        snprintf(words + len, sizeof words - len, "%s%s is %g, the sum over the ranks is %g%s", wrong++ ? "; " : "",
                 names[k], got[k], want[k],
                 got[k] == mine[k] ? " (this rank's own: not summed)"
                 : fabs(got[k] - want[k] / W) < 1e-9 ? " (the mean over the ranks, the sum divided by the world size: "
                                                       "keep the sum, the program divides loss_sum by examples)"
                                                     : "");
    }
    if (wrong) say(false, "this rank's loss_sum %g, correct %g, examples %g: %s (dist_sum_double of each field)",
                   mine[0], mine[1], mine[2], words);
    else say(true, "%s", "");
}

/* Counts the checkpoint writes of this rank (and writes beside the real path, so that
 * two ranks never race on one file). */
static int g_writes;
static char g_written[CKPT_PATH_MAX + 16]; /* the last write's file (beside the real path) */
static const char *g_write_name = "";      /* its name as the store chose it */
static int counting_write(const char *path, const uint8_t *buf, size_t len, CkptError *err) {
    g_writes++;
    snprintf(g_written, sizeof g_written, "%s.rank%d", path, g_dist->rank);
    const char *slash = strrchr(path, '/');
    g_write_name = strdup(slash ? slash + 1 : path);
    return ckpt_write_atomic(g_written, buf, len, err);
}
/* A disk that is full: every write fails, as ckpt_write_atomic says it */
static int failing_write(const char *path, const uint8_t *buf, size_t len, CkptError *err) {
    (void)buf, (void)len;
    snprintf(err->msg, sizeof err->msg, "cannot write %s: No space left on device (the grader's)", path);
    return -1;
}
static void exit_after_fatal(void) { _exit(42); } /* fatal's exit(1), without MPI's handlers */

/* What went wrong in rank 0's checkpoint (of `steps` steps, after epoch 1), or NULL. */
static const char *checkpoint_mistake(Run *run, int64_t steps, char *words, size_t cap) {
    char want[64];
    snprintf(want, sizeof want, "ckpt-%012lld.ckpt", (long long)steps);
    if (strcmp(g_write_name, want) != 0) {
        snprintf(words, cap, "after %lld steps (run->steps) it saved %s, expected %s: the checkpoint's step is "
                 "run->steps (ckpt_store_save(&run->store, &c, run->steps, ...)), what --resume continues from",
                 (long long)steps, g_write_name, want);
        return words;
    }
    TrainState ts = {0};
    uint64_t fingerprint = 0;
    Checkpoint c = {0};
    ckpt_add_params(&c, "model", &run->model.params);
    ckpt_add_adam(&c, &run->opt, &run->model.params);
    ckpt_add_train_state(&c, &ts);
    ckpt_add_u64(&c, "data.fingerprint", &fingerprint);
    CkptError err;
    const int loaded = ckpt_load(&c, g_written, &err);
    ckpt_free(&c);
    if (loaded != 0) snprintf(words, cap, "its checkpoint does not load: %.300s", err.msg);
    else if (ts.epoch != 2 || ts.sampler_epoch != 2)
        snprintf(words, cap, "the checkpoint written after epoch 1 says epoch %lld next (sampler epoch %lld), "
                 "expected 2: a resume would repeat or skip an epoch (TrainState .epoch = epoch + 1, "
                 ".sampler_epoch = epoch + 1)", (long long)ts.epoch, (long long)ts.sampler_epoch);
    else if (ts.global_step != steps)
        snprintf(words, cap, "the checkpoint says %lld steps done, the run took %lld: a resume would go on at the "
                 "wrong step (TrainState .global_step = run->steps)", (long long)ts.global_step, (long long)steps);
    else return NULL;
    return words;
}

/* Rank 0's save where the write fails (a full disk): it must stop with the store's
 * message (fatal), not go on as if saved. In a child, so that the rank goes on. */
static const char *failed_save_mistake(Run *run) {
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        const int null = open("/dev/null", O_WRONLY); /* the child's "error: ..." is expected */
        if (null >= 0) dup2(null, STDERR_FILENO);
        run->store.write = failing_write;
        atexit(exit_after_fatal);
        lesson_save_checkpoint(run, 1);
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return NULL; /* cannot tell */
    if (WIFEXITED(status) && WEXITSTATUS(status) == 42) return NULL;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return "where ckpt_store_save fails (here: a full disk) lesson_save_checkpoint went on as if it had "
               "saved: when it returns non-zero, fatal(\"%s\", err.msg) (TODO 6.6), or the run ends with no "
               "checkpoint and no word of it";
    return "where ckpt_store_save fails (here: a full disk) lesson_save_checkpoint crashed: when it returns "
           "non-zero, fatal(\"%s\", err.msg) (TODO 6.6)";
}

static void worker_report(const char *dir) {
    Dist *d = library_dist();
    Run *run = small_run(d);
    adam_init(&run->opt, &run->model.params, 1e-3f);
    sampler_init_distributed(&run->sampler, run->train.count, true, 17, d->world_size, d->rank, false);
    char path[600], ckdir[600];
    snprintf(path, sizeof path, "%s/metrics-%d.jsonl", dir, d->rank); /* every rank has one */
    snprintf(ckdir, sizeof ckdir, "%s/ckpt-%d", dir, d->rank);
    run->metrics = metrics_open(path);
    run->cfg.checkpoint_dir = ckdir;
    ckpt_store_init(&run->store, ckdir, 2);
    run->store.write = counting_write;
    EpochStats tr = {.loss_sum = 60, .examples = 40}, ev = {.loss_sum = 10, .correct = 15, .examples = 20};
    run->steps = 300; /* the checkpoint is named after them */
    rng_seed(&run->rng, 3, 0);
    lesson_report_epoch(run, 1, &tr, &ev, 2.0);
    lesson_save_checkpoint(run, 1);
    char words[400];
    const char *wrong = d->rank == 0 && g_writes == 1 ? checkpoint_mistake(run, 300, words, sizeof words) : NULL;
    if (!wrong && d->rank == 0 && g_writes == 1) wrong = failed_save_mistake(run);
    metrics_close(run->metrics);
    int lines = 0;
    FILE *f = fopen(path, "r");
    for (int c; f && (c = fgetc(f)) != EOF;) lines += c == '\n';
    if (f) fclose(f);
    /* only rank 0 writes: one metrics line and one checkpoint there, nothing elsewhere */
    const int want = d->rank == 0;
    if (lines == want && g_writes == want && wrong) say(false, "%s", wrong);
    else if (lines == want && g_writes == want) say(true, "%s", "");
    else say(false, "it wrote %d metrics line%s and %d checkpoint%s; %s (only rank 0 writes: the metrics line "
             "where run->dist->rank == 0, and the checkpoint, save0)", lines, lines == 1 ? "" : "s", g_writes, g_writes == 1 ? "" : "s",
             want ? "rank 0 writes one of each" : "a rank other than 0 writes nothing");
}

/* What a wrong element of the ring's result says, for the values worker_ring gives:
 * rank r holds (r + 1) u at it, the sum is u W (W + 1) / 2. */
static const char *ring_mistake(float got, float sum, float u, int rank, int W, int64_t n) {
    const double k = got / u; /* how many (r + 1) units it holds */
    if (got == 0) return "0: the chunk holding it was never written (its receive went elsewhere?)";
    if (got == (float)(rank + 1) * u)
        return "this rank's own value: no chunk with this element ever arrived or was added: every element is "
               "in one of the W chunks, and the 2 (W - 1) steps reach all of them (chunk k of n / W values, "
               "the first n % W one longer)";
    if (got > sum)
        return "more than the sum: the all-gather steps add what they receive; there the chunks are "
               "already whole sums, overwrite your copy instead";
    /* only where this rank took fewer than the ring's 2 (W - 1) steps */
    if (n < W && g_ring.step < 2 * (W - 1))
        return "fewer values than ranks: some chunks are empty (0 values); the loop must still take its steps";
    if (k == floor(k))
        return "the sum of some ranks' values, not all: the reduce-scatter must take W - 1 steps, each sending "
               "chunk (r - s) mod W to r + 1 and adding the received chunk (r - s - 1) mod W";
    return "send chunk (r - s) mod W, receive and add chunk (r - s - 1) mod W (W - 1 steps), then pass the "
           "finished chunks on, overwriting (W - 1 more steps)";
}

static void worker_ring(void) {
    /* a ring that waits for a message no rank sends: the library ends the job, naming the
     * rank, its call and who did not send, within seconds where every rank waits for
     * another ("can never finish": a deadlock), else after 8 s ("did not finish
     * within"), well before the check's 30 s */
    Dist *d = g_dist = dist_init(&(DistOptions){.backend = "auto", .timeout_s = 8});
    const int W = d->world_size;
    const int64_t sizes[] = {1, 2, W, 7, 1000, 100003}; /* fewer values than ranks, too */
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const int64_t n = sizes[k];
        Tensor a = tensor_zeros(1, (int)n);
        for (int64_t i = 0; i < n; i++) /* quarters of small integers: exact in any order */
            a.data[i] = (float)((d->rank + 1) * (i % 97 + 1)) * 0.25f;
        ring_watch_begin(&a);
        lesson_ring_all_reduce(d, &a);
        const int steps = ring_watch_end(d);
        /* no message of this ring may meet the next one's; the barrier waits longer than
         * the ring (12 s, 8 s), so that the library names a rank the ring left waiting */
        d->timeout_s = 12;
        dist_barrier(d);
        d->timeout_s = 8;
        /* the sum over the ranks, by definition */
        for (int64_t i = 0; i < n; i++) {
            const float u = (float)(i % 97 + 1) * 0.25f, sum = (float)(W * (W + 1) / 2) * u;
            if (a.data[i] != sum) {
                say(false, "%lld values: element %lld is %g, the sum over the ranks is %g: %s",
                    (long long)n, (long long)i, (double)a.data[i], (double)sum,
                    ring_mistake(a.data[i], sum, u, d->rank, W, n));
                _exit(1); /* the others may wait in the next size's ring: mpirun stops them */
            }
        }
        /* right values from a longer ring (an extra reduce-scatter step is overwritten by
         * the all-gather): more bytes than the bandwidth-optimal ring that TODO 6.8 assumes */
        if (steps > 2 * (W - 1)) {
            say(false, "%lld values: the sum is right, but the ring took %d dist_sendrecv steps, not 2 (W - 1) = %d: "
                "each extra step moves a chunk that the result does not need (W - 1 steps of reduce-scatter: "
                "s = 0 .. W - 2, then W - 1 of all-gather)", (long long)n, steps, 2 * (W - 1));
            _exit(1);
        }
        tensor_free(&a);
    }
    say(true, "%s", "");
}

/* The worker argv[2] (ranks_main runs "main" itself); false: no such worker. */
static bool worker(int argc, char **argv) {
    const char *name = argv[2];
    if (strcmp(name, "setup") == 0) worker_setup(argc > 3 ? atoi(argv[3]) : 0);
    else if (strcmp(name, "broadcast") == 0) worker_broadcast();
    else if (strcmp(name, "sampler") == 0) worker_sampler();
    else if (strcmp(name, "average") == 0) worker_average();
    else if (strcmp(name, "stats") == 0) worker_stats();
    else if (strcmp(name, "report") == 0 && argc > 3) worker_report(argv[3]);
    else if (strcmp(name, "ring") == 0) worker_ring();
    else return false;
    return true;
}

/* ================================================================ the grader's side */

/* ---------------------------------------------------------------- TODO 6.1 */

/* 2 ranks on this machine, then 3 as if on 2 nodes (GRADE_FAKE_NODES=2: ranks 0-1 on the
 * first, rank 2 on the second), where the local rank is not the rank. */
static int check_setup(void) {
    REQUIRE_RANKS();
    for (int ranks = 2; ranks <= 3; ranks++) {
        CommandResult r;
        char n[8];
        snprintf(n, sizeof n, "%d", ranks);
        const char *args[] = {"setup", n, NULL};
        if (ranks == 3) setenv("GRADE_FAKE_NODES", "2", 1);
        run_ranks(ranks, args, 30, &r);
        unsetenv("GRADE_FAKE_NODES");
        if (!all_ok(ranks, &r, "setup")) return CHECK_FAIL;
        for (int k = 0; k < ranks; k++) {
            const int local = ranks == 3 ? k % 2 : k, local_size = ranks == 3 ? (k < 2 ? 2 : 1) : ranks;
            char line[96], world[96], as_rank[96];
            snprintf(line, sizeof line, "rank %d of %d: local rank %d of %d on its node, cpu", k,
                     ranks, local, local_size);
            snprintf(world, sizeof world, "WORKER rank %d ok world %d local %d", k, ranks, local);
            snprintf(as_rank, sizeof as_rank, "rank %d of %d: local rank %d of", k, ranks, k);
            if (!expect_true(strstr(r.out, line) && strstr(r.out, world),
                             "%d ranks%s: no line \"%s\" (every rank prints its own, TODO 6.1 step 3)%s",
                             ranks, ranks == 3 ? " as if on 2 nodes (ranks 0-1 on one, rank 2 on the other)" : "",
                             line, local != k && strstr(r.out, as_rank)
                                       ? "\nhint: it printed its rank as its local rank: the local rank is its "
                                         "place on its own node, run->dist->local_rank (of local_size), not "
                                         "run->dist->rank"
                                       : ""))
                return CHECK_FAIL;
        }
        const char *first = strstr(r.out, "dist: mpi backend");
        if (!expect_true(first && !strstr(first + 1, "dist: mpi backend"),
                         "%d ranks: the line of dist_describe must appear once (print0), it "
                         "appears %s", ranks, first ? "more than once" : "never"))
            return CHECK_FAIL;
    }
    return CHECK_PASS;
}

/* A launch of 2 ranks where the job script asked for 4 must stop, with a message. */
static int check_setup_wrong_count(void) {
    REQUIRE_RANKS();
    CommandResult r;
    const char *args[] = {"setup", "4", NULL};
    run_ranks(2, args, 30, &r);
    char end[96];
    bool ok = expect_true(!r.timed_out && !(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) &&
                              strstr(r.out, "4 were asked for"),
                          "2 ranks started, --ranks 4 asked for: the job must end with a message "
                          "(pass .expect_world = c->ranks to dist_init); it ended: %s", describe_end(&r, end, sizeof end));
    if (!ok) print_ranks_output(r.out);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- TODOs 6.2-6.5 */

/* A run of a few seconds, limited to 30: a hang costs 30 s, and the later checks of its
 * TODO are skipped (tests/framework/check.h). */
static int check_broadcast(void) { return on_2_and_3("broadcast", "broadcast of the weights", 30); }
/* 2 ranks, then 3 as if on 3 nodes of one rank each (GRADE_FAKE_NODES=1): a share or an
 * average over the node's ranks (local_size, local_rank) instead of the world's shows only
 * there. (Mistakes that give the same numbers, the sum not divided, fail at 2 ranks first.) */
static int on_2_then_3_nodes(const char *worker, const char *what) {
    REQUIRE_RANKS();
    for (int ranks = 2; ranks <= 3; ranks++) {
        CommandResult r;
        const char *args[] = {worker, NULL};
        if (ranks == 3) setenv("GRADE_FAKE_NODES", "1", 1);
        run_ranks(ranks, args, 30, &r);
        unsetenv("GRADE_FAKE_NODES");
        if (!all_ok(ranks, &r, what)) return CHECK_FAIL;
    }
    return CHECK_PASS;
}
static int check_sampler(void) { return on_2_then_3_nodes("sampler", "the distributed sampler"); }
static int check_average(void) { return on_2_then_3_nodes("average", "the gradient average"); }
static int check_stats(void) { return on_2_and_3("stats", "the sums of the metrics", 30); }

/* ---------------------------------------------------------------- TODO 6.6 */

static int body_report(const char *dir) {
    REQUIRE_RANKS();
    for (int ranks = 2; ranks <= 3; ranks++) {
        CommandResult r;
        char sub[600];
        snprintf(sub, sizeof sub, "%s/%d", dir, ranks);
        mkdir(sub, 0755);
        const char *args[] = {"report", sub, NULL};
        run_ranks(ranks, args, 30, &r);
        if (!all_ok(ranks, &r, "print0/save0")) return CHECK_FAIL;
        int lines = 0;
        for (const char *p = r.out; (p = strstr(p, "    1      1.5000")); p++) lines++;
        if (!expect_true(lines == 1, "%d ranks: the epoch's line appears %d times, once expected "
                         "(print0, not printf)", ranks, lines))
            return CHECK_FAIL;
    }
    return CHECK_PASS;
}
static int check_report(void) { return with_tmpdir("grade06", body_report); }

/* ---------------------------------------------------------------- the program */

/* The program on `ranks` ranks with `batch` per rank, 6 steps of one epoch over 6 x
 * ranks x batch synthetic 16x16 images, checkpoint in dir. */
static bool run_program(int ranks, int batch, const char *dir, CommandResult *r) {
    char b[16], limit[16];
    snprintf(b, sizeof b, "%d", batch);
    snprintf(limit, sizeof limit, "%d", 6 * 96);
    const char *args[] = {"main", "--dataset", "synthetic", "--train-limit", limit,
                          "--test-limit", "64", "--batch-size", b, "--epochs", "1", "--seed", "5",
                          "--max-steps", "6", "--checkpoint-dir", dir, NULL};
    run_ranks(ranks, args, 30, r); /* 4 runs of a few seconds within the check's 150 s */
    char end[96];
    if (!r->timed_out && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0) return true;
    printf("the program on %d ranks ended: %s.\n", ranks, describe_end(r, end, sizeof end));
    print_job_output(r);
    return false;
}

/* The values of params from the newest checkpoint in dir (the program's model, built
 * here with the same shapes), into a flat array (malloc'ed); NULL when none loads. With
 * moment, Adam's first moment too (malloc'ed, as many values). */
static float *checkpoint_params(const char *dir, ParamList *params, int64_t *n, float **moment) {
    Adam opt;
    adam_init(&opt, params, 1e-3f);
    TrainState ts;
    uint64_t fingerprint;
    Checkpoint c = {0};
    ckpt_add_params(&c, "model", params);
    ckpt_add_adam(&c, &opt, params);
    ckpt_add_train_state(&c, &ts);
    ckpt_add_u64(&c, "data.fingerprint", &fingerprint); /* as the lesson's save adds it */
    CkptStore s;
    ckpt_store_init(&s, dir, 2);
    CkptError err;
    char path[CKPT_PATH_MAX];
    float *out = NULL;
    if (ckpt_store_load_latest(&s, &c, path, sizeof path, &err) == 1) {
        *n = params->total;
        out = xmalloc((size_t)*n * sizeof *out);
        memcpy(out, params->values.data, (size_t)*n * sizeof *out);
        if (moment) {
            *moment = xmalloc((size_t)*n * sizeof **moment);
            memcpy(*moment, opt.m.data, (size_t)*n * sizeof **moment);
        }
    } else {
        printf("no checkpoint of the run loads from %s (TODO 6.6 writes one)\n", dir);
    }
    ckpt_free(&c);
    adam_free(&opt);
    return out;
}

/* The CNN's parameters from the newest checkpoint in dir (the synthetic set's 28x28). */
static float *program_params(const char *dir, int64_t *n) {
    Rng rng;
    rng_seed(&rng, 1, 0);
    Cnn m;
    cnn_init(&m, 1, 28, 28, 10, 1, &rng);
    float *out = checkpoint_params(dir, &m.params, n, NULL);
    cnn_free(&m);
    return out;
}

/* "rank R parameter digest: X" of every rank, all the same. */
static bool digests_agree(const CommandResult *r, int ranks) {
    char first[32] = "";
    for (int k = 0; k < ranks; k++) {
        char key[48], got[32] = "";
        snprintf(key, sizeof key, "rank %d parameter digest: ", k);
        const char *at = strstr(r->out, key);
        if (at) sscanf(at + strlen(key), "%31s", got);
        if (!expect_true(*got, "no \"%s\" line in the output", key)) return false;
        if (k == 0) snprintf(first, sizeof first, "%s", got);
        else if (!expect_true(strcmp(got, first) == 0, "rank %d ends with parameters %s, rank 0 "
                              "with %s: the ranks took different steps", k, got, first))
            return false;
    }
    return true;
}

/* The largest and the mean absolute difference of two parameter arrays. */
static void params_difference(const float *a, const float *b, int64_t n, double *worst,
                              double *mean) {
    *worst = 0, *mean = 0;
    for (int64_t i = 0; i < n; i++) {
        const double diff = fabs((double)a[i] - b[i]);
        *worst = diff > *worst ? diff : *worst;
        *mean += diff / (double)n;
    }
}

/* N steps on W ranks with batch B each against N steps on 1 rank with batch W x B, from
 * the same seed. The same mathematics (the mean gradient over the same W x B images);
 * only the order of float sums differs, and Adam can turn a rounding difference into
 * a step of up to lr when a gradient is near 0 (its sign decides). So each parameter
 * may differ by at most 2 lr per step (6 steps, lr 1e-3: 0.012), and the mean
 * difference must stay at rounding level (1e-5). A missing average (sums: W times the
 * gradient) or a rank on its own data alone leaves the mean far above that. */
static int body_program(const char *dir) {
    REQUIRE_RANKS();
    for (int ranks = 2; ranks <= 3; ranks++) {
        char d1[600], dw[600];
        snprintf(d1, sizeof d1, "%s/one-%d", dir, ranks);
        snprintf(dw, sizeof dw, "%s/many-%d", dir, ranks);
        CommandResult r;
        if (!run_program(1, 16 * ranks, d1, &r)) return CHECK_FAIL;
        if (!run_program(ranks, 16, dw, &r) || !digests_agree(&r, ranks)) return CHECK_FAIL;
        int64_t n1 = 0, nw = 0;
        float *one = program_params(d1, &n1), *many = program_params(dw, &nw);
        if (!one || !many) return CHECK_FAIL;
        double worst, mean;
        params_difference(one, many, n1, &worst, &mean);
        printf("%d ranks x batch 16 against 1 rank x batch %d, 6 Adam steps: parameters differ "
               "by %.2g at most, %.2g on average\n", ranks, 16 * ranks, worst, mean);
        if (!expect_true(worst <= 2 * 6 * 1e-3 && mean <= 1e-5, "the data-parallel run does not "
                         "take the steps of one big batch (at most %.3g and 1e-5 on average "
                         "allowed): the broadcast (6.2), the sampler (6.3) or the average (6.4)?",
                         2 * 6 * 1e-3))
            return CHECK_FAIL;
        xfree(one), xfree(many);
    }
    return CHECK_PASS;
}
static int check_program(void) { return with_tmpdir("grade06", body_program); }

/* The same for lesson 04's transformer (--model transformer, lm.c): a made-up text of
 * 40 words (so the vocabulary, and the run, stay small), sequences of 8 tokens, a model
 * 16 wide with one layer and no dropout (deterministic), 6 Adam steps of 4 sequences on
 * each of 2 ranks against 6 steps of 8 on one rank. The sampler hands both runs the same
 * 8 sequences a step, so the mean gradient is the same but for the order of float sums.
 * No clipping (--clip 0): it would scale a sum and an average to the same norm. The bound
 * on the parameters is the CNN's: Adam may turn a rounding difference into a step of up
 * to lr where a gradient is near 0, so at most 2 lr a parameter per step (0.012), and
 * 1e-5 on average (the embedding rows of words no step saw have no gradient and do not
 * move at all). Measured here: 3e-5 at most, 6e-8 on average; ranks that each take every
 * sequence (the sampler's num_replicas and rank left at 1 and 0) give 1e-3 on average.
 * Adam's steps do not show a missing average (a gradient W times too large gives the
 * same m / sqrt(v), but for eps: measured, the parameters pass), so the check compares
 * Adam's first moment too, which the checkpoint holds: a running mean of the gradients,
 * W times the one-rank run's where the ranks sum them. Its relative distance
 * |m2 - m1| / |m1| is allowed 1e-3 (measured: 1.1e-7; a sum gives 1). */
static LmOptions lm_test_options(void) {
    LmOptions o = lm_options_defaults();
    o.d_model = 16, o.heads = 2, o.d_hid = 16, o.layers = 1, o.dropout = 0.0f, o.bptt = 8;
    return o;
}

static bool run_lm_program(int ranks, int batch, const char *text, const char *dir,
                           CommandResult *r) {
    char b[16];
    snprintf(b, sizeof b, "%d", batch);
    const char *args[] = {"main", "--model", "transformer", "--text", "text", "--data", text,
                          "--d-model", "16", "--heads", "2", "--d-hid", "16", "--layers", "1",
                          "--dropout", "0", "--bptt", "8", "--batch-size", b, "--epochs", "1",
                          "--seed", "5", "--max-steps", "6", "--test-limit", "16", "--clip", "0",
                          "--checkpoint-dir", dir, NULL};
    run_ranks(ranks, args, 30, r); /* 2 runs of a few seconds within the check's 90 s */
    char end[96];
    if (!r->timed_out && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0) return true;
    printf("the transformer on %d ranks ended: %s.\n", ranks, describe_end(r, end, sizeof end));
    print_job_output(r);
    return false;
}

static float *lm_program_params(const char *dir, const char *text, int64_t *n, float **moment) {
    const LmOptions o = lm_test_options();
    const TextOptions topt = lm_text_options(&o);
    TextCorpus corpus;
    text_load("text", text, &topt, &corpus);
    const TransformerConfig cfg = lm_model_config(&o, "tutorial", corpus.vocab.count);
    text_free(&corpus);
    Transformer m;
    transformer_init(&m, &cfg, 1, o.bptt, 1);
    float *out = checkpoint_params(dir, &m.params, n, moment);
    transformer_free(&m);
    return out;
}

static int body_lm_program(const char *dir) {
    REQUIRE_RANKS();
    char text[600], d1[600], d2[600];
    snprintf(text, sizeof text, "%s/words.txt", dir);
    snprintf(d1, sizeof d1, "%s/one", dir);
    snprintf(d2, sizeof d2, "%s/two", dir);
    if (!expect_true(write_made_up_text(text, 700), "cannot write %s", text)) return CHECK_FAIL;
    CommandResult r;
    if (!run_lm_program(1, 8, text, d1, &r)) return CHECK_FAIL;
    if (!run_lm_program(2, 4, text, d2, &r) || !digests_agree(&r, 2)) return CHECK_FAIL;
    int64_t n1 = 0, n2 = 0;
    float *m1 = NULL, *m2 = NULL;
    float *one = lm_program_params(d1, text, &n1, &m1), *two = lm_program_params(d2, text, &n2, &m2);
    if (!one || !two) return CHECK_FAIL;
    double worst, mean;
    params_difference(one, two, n1, &worst, &mean);
    printf("transformer, 2 ranks x 4 sequences against 1 rank x 8, 6 Adam steps: parameters "
           "differ by %.2g at most, %.2g on average\n", worst, mean);
    /* Adam's first moment: |m1|, |m2| and |m2 - m1| */
    double norm1 = 0, norm2 = 0, apart = 0;
    for (int64_t i = 0; i < n1; i++) {
        norm1 += (double)m1[i] * m1[i], norm2 += (double)m2[i] * m2[i];
        apart += ((double)m2[i] - m1[i]) * ((double)m2[i] - m1[i]);
    }
    norm1 = sqrt(norm1), norm2 = sqrt(norm2), apart = sqrt(apart) / (norm1 > 0 ? norm1 : 1);
    const double ratio = norm1 > 0 ? norm2 / norm1 : 0;
    printf("Adam's first moment (a running mean of the gradients) on 2 ranks: %.3f times the "
           "one-rank run's, %.2g apart (relative)\n", ratio, apart);
    xfree(one), xfree(two), xfree(m1), xfree(m2);
    if (!expect_true(worst <= 2 * 6 * 1e-3 && mean <= 1e-5, "the data-parallel transformer "
                     "does not take the steps of one big batch (at most %.3g and 1e-5 on "
                     "average allowed): the broadcast (6.2), the sampler (6.3) or the average "
                     "(6.4)?", 2 * 6 * 1e-3))
        return CHECK_FAIL;
    return expect_true(apart <= 1e-3, "the gradients the 2 ranks step with are not the one-rank "
                       "run's (1e-3 relative allowed; Adam's steps hide a scale, its first moment "
                       "does not): %s", fabs(ratio - 2) < 0.05
                           ? "twice as large: the ranks sum their gradients and do not divide the sum "
                             "by the world size (TODO 6.4: DIST_SUM, then every element / W)"
                       : fabs(ratio - 0.5) < 0.025
                           ? "half as large: the average is divided by the world size once more"
                           : "the average (6.4)?")
               ? CHECK_PASS : CHECK_FAIL;
}
static int check_lm_program(void) { return with_tmpdir("grade06", body_lm_program); }

/* Three epochs on 2 ranks: the job's training loss falls from epoch to epoch. */
static int body_learns(const char *dir) {
    REQUIRE_RANKS();
    char metrics[600];
    snprintf(metrics, sizeof metrics, "%s/m.jsonl", dir);
    const char *args[] = {"main", "--dataset", "synthetic", "--train-limit", "1200", "--test-limit",
                          "200", "--batch-size", "25", "--epochs", "3", "--metrics", metrics, NULL};
    CommandResult r;
    run_ranks(2, args, 40, &r); /* about 5 s */
    char end[96];
    if (!expect_true(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
                     "the program on 2 ranks ended: %s.", describe_end(&r, end, sizeof end))) {
        print_job_output(&r);
        return CHECK_FAIL;
    }
    double loss[3] = {0};
    int epochs = 0;
    FILE *f = fopen(metrics, "r");
    char line[1024];
    while (f && epochs < 3 && fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "\"train_loss\": ");
        if (at) loss[epochs++] = atof(at + 14);
    }
    if (f) fclose(f);
    bool ok = expect_true(epochs == 3, "%d lines with train_loss in the metrics file (rank 0 "
                          "writes one per epoch)", epochs) &&
              expect_true(loss[1] < loss[0] && loss[2] < loss[1], "training losses %.4f, %.4f, "
                          "%.4f do not fall", loss[0], loss[1], loss[2]);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_learns(void) { return with_tmpdir("grade06", body_learns); }

/* ---------------------------------------------------------------- part 2 */

static int check_ring(void) {
    REQUIRE_RANKS();
    for (int ranks = 2; ranks <= 3; ranks++) {
        CommandResult r;
        const char *args[] = {"ring", NULL};
        run_ranks(ranks, args, 30, &r);
        if (all_ok(ranks, &r, "the ring all-reduce")) continue;
        /* unless a rank named the step where it left the schedule ("hint: rank ..."): a
         * wait the library ended, at the timeout or earlier as a deadlock */
        if (!strstr(r.out, "hint: rank ") &&
            (strstr(r.out, "did not finish within") || strstr(r.out, "can never finish")))
            printf("hint: a rank waited for a message that never came (the library's line above names it and its "
                   "call): every rank takes the same 2 (W - 1) steps, each a dist_sendrecv; at step s of the "
                   "reduce-scatter it receives chunk (r - s - 1) mod W, the chunk prev sends at that step; the "
                   "all-gather runs on every rank, not one\n");
        return CHECK_FAIL;
    }
    return CHECK_PASS;
}

static int check_bus_bandwidth(void) {
    static const double cases[][4] = {/* bytes, seconds, ranks, GB/s */
                                      {1e9, 1, 2, 1.0}, {1e9, 1, 4, 1.5}, {2e9, 0.5, 8, 7.0},
                                      {4e6, 0.002, 3, 8.0 / 3.0}, {1e9, 2, 1, 0.0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double got = lesson_bus_bandwidth(cases[i][0], cases[i][1], (int)cases[i][2]);
        const int n = (int)cases[i][2];
        const double algbw = cases[i][0] / cases[i][1] / 1e9;
        /* 2 (n - 1) / n in ints: 1 for n >= 2; 2 ((n - 1) / n): 0 */
        const bool ints = fabs(got - algbw * (2 * (n - 1) / n)) <= 1e-9 * algbw ||
                          fabs(got - algbw * 2 * ((n - 1) / n)) <= 1e-9 * algbw;
        if (!expect_true(fabs(got - cases[i][3]) <= 1e-9 * fabs(cases[i][3]) + 1e-12,
                         "%g bytes in %g s on %g ranks: %g GB/s, expected %g (algbw = bytes / s / "
                         "1e9, busbw = algbw * 2 (n - 1) / n)%s", cases[i][0], cases[i][1],
                         cases[i][2], got, cases[i][3],
                         ints ? "\nhint: that is 2 (n - 1) / n in integer arithmetic (ranks is an int: 2 * (3 - 1) / 3 "
                                "is 1, (3 - 1) / 3 is 0): write 2.0 * (ranks - 1) / ranks" : ""))
            return CHECK_FAIL;
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- the job script */

/* The whole text file (free it), or NULL when it cannot be read. */
static char *read_text(const char *path) {
    uint8_t *bytes;
    size_t len;
    char msg[FS_MSG_MAX];
    return fs_read_file(path, 1 << 20, &bytes, &len, msg, sizeof msg) == 0 ? (char *)bytes : NULL;
}

/* A line of the script that starts with `text` (its own line, not a comment about it). */
static bool has_line(const char *script, const char *text) {
    for (const char *p = script; (p = strstr(p, text)); p++)
        if (p == script || p[-1] == '\n') {
            char next = p[strlen(text)];
            if (next == '\n' || next == ' ' || next == '\0') return true;
        }
    return false;
}

static int check_script_resources(void) {
    char *s = read_text(LESSON_PATH "/ddp.sbatch");
    if (!expect_true(s != NULL, "cannot read %s", LESSON_PATH "/ddp.sbatch")) return CHECK_FAIL;
    static const char *want[] = {"#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=4",
                                 "#SBATCH --cpus-per-task=8", "#COURSE gpus=4"};
    int rc = CHECK_PASS;
    for (size_t i = 0; rc == CHECK_PASS && i < sizeof want / sizeof want[0]; i++)
        if (!expect_true(has_line(s, want[i]), "%s/ddp.sbatch has no line \"%s\" (2 nodes x 4 "
                         "GPUs: one task per GPU, 8 cores each, 4 GPUs per node)", LESSON_PATH, want[i]))
            rc = CHECK_FAIL;
    free(s);
    return rc;
}

/* Writes an executable shell script. */
static bool write_script(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return expect_true(false, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    return chmod(path, 0755) == 0;
}

/* Runs the job script as Slurm would on the first node of a 2-node job, with a fake
 * srun and scontrol that record what they were asked; device: cuda or cpu. */
static bool run_script(const char *dir, const char *device, const char *tasks, const char *cpus,
                       CommandResult *r, char *log, size_t cap) {
    char bin[600], fake[1000], path[4096], build[700], prog[800];
    snprintf(bin, sizeof bin, "%s/bin", dir);
    mkdir(bin, 0755);
    snprintf(log, cap, "%s/srun.log", dir);
    char text[1200];
    snprintf(fake, sizeof fake, "%s/srun", bin);
    /* srun's arguments, each in [] too: "$@" keeps "7 8" one argument, $* makes two */
    snprintf(text, sizeof text, "#!/bin/sh\nargs=\nfor a in \"$@\"; do args=\"$args[$a]\"; done\n"
             "echo \"srun $* MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT ARGS=$args\" >> '%s'\n", log);
    if (!write_script(fake, text)) return false;
    snprintf(fake, sizeof fake, "%s/scontrol", bin);
    if (!write_script(fake, "#!/bin/sh\n[ \"$1 $2\" = \"show hostnames\" ] && "
                            "printf 'node03\\nnode04\\n'\n"))
        return false;
    /* the program the script starts: a stand-in that only has to exist */
    snprintf(build, sizeof build, "%s/build", dir);
    /* where job.sh looks for it; planted06.sh's copy (an absolute path) is the solution's */
    const char *rel = LESSON_PATH[0] == '/' ? "solutions/06-ddp" : LESSON_PATH;
    snprintf(prog, sizeof prog, "%s/%s", build, rel);
    mkdir(build, 0755);
    make_dirs(build, rel);
    snprintf(fake, sizeof fake, "%s/train", prog);
    if (!write_script(fake, "#!/bin/sh\n")) return false;
    snprintf(path, sizeof path, "%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin");
    char cwd[1024];
    if (!getcwd(cwd, sizeof cwd)) return false;
    char script[2200];
    if (LESSON_PATH[0] == '/') snprintf(script, sizeof script, "%s/ddp.sbatch", LESSON_PATH); /* planted06.sh's copy */
    else snprintf(script, sizeof script, "%s/%s/ddp.sbatch", cwd, LESSON_PATH);
    setenv("PATH", path, 1);
    setenv("SLURM_JOB_ID", "4242", 1), setenv("SLURM_JOB_NODELIST", "node[03-04]", 1);
    setenv("SLURM_NTASKS", tasks, 1), setenv("SLURM_CPUS_PER_TASK", cpus, 1);
    setenv("SLURM_SUBMIT_DIR", cwd, 1), setenv("COURSE_SITE", "generic", 1);
    setenv("COURSE_BUILD", build, 1), setenv("COURSE_SCRATCH_DIR", dir, 1);
    setenv("COURSE_DEVICE", device, 1);
    setenv("SOLUTION", strncmp(rel, "solutions", 9) == 0 ? "1" : "0", 1);
    unsetenv("MASTER_ADDR"), unsetenv("MASTER_PORT");
    /* sbatch passes the arguments after the script's name on to it (make submit's ARGS):
     * the launch line's closing "$@" hands them to the program */
    const char *argv[] = {"bash", script, "--grader-extra", "7 8", NULL};
    run_command(argv, 30, r);
    return true;
}

static int body_script_launch(const char *dir) {
    CommandResult r;
    char log[700] = "", end[96];
    /* 2 nodes x 4 tasks, then 4 tasks (make submit 6 NODES=1) of 6 cores (a site's
     * COURSE_SBATCH_OPTIONS): the numbers must come from Slurm's variables */
    static const char *devices[] = {"cuda", "cpu"}, *tasks[] = {"8", "4"}, *cpus[] = {"8", "6"};
    for (int k = 0; k < 2; k++) {
        if (*log) unlink(log); /* the calls of the first run */
        if (!run_script(dir, devices[k], tasks[k], cpus[k], &r, log, sizeof log)) return CHECK_FAIL;
        char *calls = read_text(log);
        if (!expect_true(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && calls,
                         "the job script (COURSE_DEVICE=%s) ended: %s, without starting srun:\n%s",
                         devices[k], describe_end(&r, end, sizeof end), r.out)) {
            free(calls);
            return CHECK_FAIL;
        }
        for (size_t n = strlen(calls); n > 0 && calls[n - 1] == '\n'; n--) calls[n - 1] = '\0';
        bool mpi = strstr(calls, "--mpi=pmix") != NULL;
        char ranks[32], threads[32];
        snprintf(ranks, sizeof ranks, "[--ranks][%s]", tasks[k]);
        snprintf(threads, sizeof threads, "[--threads][%s]", cpus[k]);
        /* empty in srun's environment: set in the script but not exported */
        const bool addr_empty = strstr(calls, "MASTER_ADDR= ") != NULL;
        const char *port = strstr(calls, "MASTER_PORT=");
        const bool port_empty = port && (port[12] == ' ' || port[12] == '\n' || port[12] == '\0');
        bool ok = expect_true(strstr(calls, "MASTER_ADDR=node03 "), "srun saw \"%s\": MASTER_ADDR %s (TODO 6.10)",
                              calls, addr_empty ? "is empty in the program's environment: export it (export "
                              "MASTER_ADDR MASTER_PORT)" : "must be the first node (node03), exported") &&
                  expect_true(strstr(calls, "MASTER_PORT=29742"), "srun saw \"%s\": MASTER_PORT %s (TODO 6.10)",
                              calls, port_empty ? "is empty in the program's environment: export it (export "
                              "MASTER_ADDR MASTER_PORT)" : "must be 29500 + SLURM_JOB_ID % 1000 = 29742") &&
                  expect_true(strstr(calls, ranks), "srun saw \"%s\" where SLURM_NTASKS is %s: pass --ranks "
                              "\"$SLURM_NTASKS\" to the program, not a number (TODO 6.11)", calls, tasks[k]) &&
                  expect_true(strstr(calls, threads), "srun saw \"%s\" where SLURM_CPUS_PER_TASK is %s: pass "
                              "--threads \"$SLURM_CPUS_PER_TASK\" to the program, not a number: a site or "
                              "COURSE_SBATCH_OPTIONS may give a task other cores than 8 (TODO 6.11)", calls, cpus[k]) &&
                  expect_true(strstr(calls, "/train --device"), "srun saw \"%s\": it must start "
                              "\"$JOB_BIN\" --device \"$COURSE_DEVICE\" (TODO 6.11)", calls) &&
                  expect_true(strstr(calls, "[--grader-extra][7 8]"), "srun saw \"%s\": the script was given "
                              "the 2 arguments --grader-extra and \"7 8\" (make submit's ARGS), which must reach "
                              "the program as they are, \"7 8\" one argument: end the launch line with \"$@\" "
                              "(quoted; $* and \"$*\" split or join them) (TODO 6.11)", calls) &&
                  expect_true(mpi == (k == 1), "COURSE_DEVICE=%s: srun %s --mpi=pmix (%s); it "
                              "saw \"%s\" (TODO 6.11)", devices[k], k ? "needs" : "must not have",
                              k ? "CPU ranks talk through MPI" : "GPU ranks meet through NCCL at MASTER_ADDR",
                              calls);
        free(calls);
        if (!ok) return CHECK_FAIL;
    }
    return CHECK_PASS;
}
static int check_script_launch(void) { return with_tmpdir("grade06", body_script_launch); }

static void checks(void) {
    check_signal_hint(SIGSEGV, "a ring chunk past the tensor's end (start + count <= n), or GPU memory read on the CPU");
    check_run("TODO 6.1", "setup: 2 and 3 ranks each know their rank, world and local rank", check_setup, 120);
    check_run("TODO 6.1", "setup: 2 ranks where the script asked for 4 stop with a message", check_setup_wrong_count, 90);
    check_run("TODO 6.2", "every rank starts from rank 0's weights (2 and 3 ranks)", check_broadcast, 120);
    check_run("TODO 6.3", "distributed sampler: this rank's share, a new order each epoch", check_sampler, 120);
    check_run("TODO 6.4", "gradients: the average over the ranks (2 and 3 ranks)", check_average, 120);
    check_run("TODO 6.5", "metrics: the sums over all ranks", check_stats, 120);
    check_run("TODO 6.6", "print0 and save0: the epoch line once, only rank 0 writes", check_report, 120);
    check_run("TODO 6.1-6.6", "N steps on 2 (3) ranks x batch B = N steps on 1 rank x batch 2B (3B); ranks bit-identical", check_program, 150);
    check_run("TODO 6.1-6.6", "the transformer: N steps on 2 ranks x B = 1 rank x 2B; ranks bit-identical", check_lm_program, 90);
    check_run("TODO 6.1-6.6", "3 epochs on 2 ranks: the training loss falls", check_learns, 60);
    check_run("TODO 6.7", "ring all-reduce = the library's, any size, 2 and 3 ranks", check_ring, 120);
    check_run("TODO 6.8", "bus bandwidth as nccl-tests define it", check_bus_bandwidth, 10);
    check_run("TODO 6.9", "job script: 2 nodes x 4 tasks, 8 cores each, 4 GPUs per node", check_script_resources, 10);
    check_run("TODO 6.10-6.11", "job script: MASTER_ADDR/PORT and the launch line (GPU and CPU ranks)", check_script_launch, 60);
}

int main(int argc, char **argv) {
    return ranks_main(argc, argv, "lesson 06: ddp", checks, worker, lesson_main);
}
