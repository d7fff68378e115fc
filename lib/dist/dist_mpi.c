/* The MPI backend: host tensors, Open MPI's collectives and point-to-point messages.
 * Compiled where mpicc was found (HAVE_MPI), with its flags.
 *
 * 16-bit tensors: MPI has no standard bfloat16 or float16 type (Open MPI 4.1 none at
 * all), so they travel as MPI_UINT16_T and are reduced by operations of our own
 * (MPI_Op_create): each addition converts both to float32, adds and rounds back to
 * 16 bits (core/dtype.h), as NCCL does at every hop; a maximum picks one of the two.
 *
 * Waiting with a timeout: MPI_Wait blocks forever when a peer hangs, and polling
 * MPI_Test costs bandwidth (Open MPI's non-blocking collectives are slower than its
 * blocking ones besides: docs/benchmarks.md). So a blocking call (dist_all_reduce)
 * runs MPI's blocking collective, and a dist_wait MPI's blocking wait, while a
 * watchdog thread (dist_watch.c; MPI_THREAD_MULTIPLE) watches: it answers the other
 * ranks' questions on a communicator of its own, and ends the job, naming the world
 * ranks that are missing and what they do instead, when a wait runs past timeout_s or
 * can never finish. Where MPI offers no MPI_THREAD_MULTIPLE the main thread polls
 * MPI_Test and looks after the watching itself. MPI errors come back (MPI_ERRORS_RETURN)
 * and are told the same way. */
#ifdef HAVE_MPI
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/dtype.h"
#include "core/envvars.h"
#include "dist_backend.h"
#include "dist_watch.h"

typedef struct {
    MPI_Comm comm;      /* the collectives and sends */
    bool is_world;      /* dist_init's: its finalize waits for every rank, stops the watchdog */
    bool owns_world;    /* this Dist initialised MPI: finalize ends it */
    int64_t id;         /* the same on every member (dist_watch.h) */
    int64_t collectives; /* started on comm so far: the next one's number - 1 */
    int slot;           /* in dist_watch's table */
    int64_t *world_of;  /* [world_size]: each rank's world rank */
} Mpi;

struct DistRequest {
    MPI_Request req[2];    /* [0] the collective or the send, [1] the receive */
    WatchOp op;            /* for the watchdog */
    int inflight;          /* its slot in dist_watch's list of non-blocking ones, or -1 */
    void *buf;             /* DIST_AVG: divided by the world size once done */
    const void *result_at; /* an in-place reduce-scatter's result, moved to buf once done */
    int64_t n;
    DistType type;
    DistOp dop;
    size_t bytes;
    bool reused;           /* g_blocking, not freed */
};

enum { TAG_DATA = 1 };

static MPI_Comm g_side = MPI_COMM_NULL; /* the watchdog's questions and answers */

static Mpi *impl(const Dist *d) { return (Mpi *)d->impl; }

static MPI_Datatype mpi_type(DistType t) {
    switch (t) {
    case DIST_F32: return MPI_FLOAT;
    case DIST_F64: return MPI_DOUBLE;
    case DIST_I64: return MPI_INT64_T;
    case DIST_BF16:
    case DIST_F16: return MPI_UINT16_T;
    }
    return MPI_DATATYPE_NULL;
}

/* ---------------------------------------------------------------- 16-bit sums */

static float f32_of(DistType t, uint16_t h) {
    return t == DIST_BF16 ? dtype_f32_from_bf16(h) : dtype_f32_from_f16(h);
}
static uint16_t bits_of(DistType t, float x) {
    return t == DIST_BF16 ? dtype_bf16_from_f32(x) : dtype_f16_from_f32(x);
}

static void sum16(DistType t, const uint16_t *in, uint16_t *inout, int n) {
    for (int i = 0; i < n; i++) inout[i] = bits_of(t, f32_of(t, in[i]) + f32_of(t, inout[i]));
}

/* The larger of the two, a NaN if either is one: no rounding, one of them is taken. */
static void max16(DistType t, const uint16_t *in, uint16_t *inout, int n) {
    for (int i = 0; i < n; i++) {
        const float a = f32_of(t, in[i]), b = f32_of(t, inout[i]);
        if (a > b || isnan(a)) inout[i] = in[i];
    }
}

/* MPI's reduction callbacks: inout[i] = in[i] op inout[i], for *n values. */
static void sum_bf16(void *in, void *inout, int *n, MPI_Datatype *type) {
    (void)type;
    sum16(DIST_BF16, in, inout, *n);
}
static void sum_f16(void *in, void *inout, int *n, MPI_Datatype *type) {
    (void)type;
    sum16(DIST_F16, in, inout, *n);
}
static void max_bf16(void *in, void *inout, int *n, MPI_Datatype *type) {
    (void)type;
    max16(DIST_BF16, in, inout, *n);
}
static void max_f16(void *in, void *inout, int *n, MPI_Datatype *type) {
    (void)type;
    max16(DIST_F16, in, inout, *n);
}

/* [bf16, f16][sum, max]: made once MPI runs, freed before MPI_Finalize. */
static MPI_Op g_ops16[2][2] = {{MPI_OP_NULL, MPI_OP_NULL}, {MPI_OP_NULL, MPI_OP_NULL}};

static void make_ops16(void) {
    if (g_ops16[0][0] != MPI_OP_NULL) return;
    MPI_Op_create(sum_bf16, 1, &g_ops16[0][0]); /* 1: commutative */
    MPI_Op_create(max_bf16, 1, &g_ops16[0][1]);
    MPI_Op_create(sum_f16, 1, &g_ops16[1][0]);
    MPI_Op_create(max_f16, 1, &g_ops16[1][1]);
}

static void free_ops16(void) {
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++)
            if (g_ops16[i][k] != MPI_OP_NULL) MPI_Op_free(&g_ops16[i][k]);
}

/* DIST_AVG is a sum here, divided once done (finish). */
static MPI_Op mpi_op(DistOp op, DistType t) {
    if (t == DIST_BF16 || t == DIST_F16) return g_ops16[t == DIST_F16][op == DIST_MAX];
    return op == DIST_MAX ? MPI_MAX : MPI_SUM;
}

static int count(int64_t n, const char *what) {
    CHECK(n >= 0 && n <= INT_MAX, "%s of %lld values: more than MPI's int counts", what, (long long)n);
    return (int)n;
}

/* ---------------------------------------------------------------- requests */

/* The request of a blocking call: one at a time (the calling thread waits in it), so
 * one that is reused spares a malloc and a free per call (a 1 KB all-reduce takes half
 * a microsecond). */
static DistRequest g_blocking;
static bool g_blocking_taken;

static DistRequest *request(Dist *d, WatchKind kind, void *buf, int64_t n, DistType t, DistOp op,
                            bool blocking) {
    DistRequest *r;
    if (blocking && !g_blocking_taken) {
        r = &g_blocking, g_blocking_taken = true;
        *r = (DistRequest){.reused = true};
    } else {
        r = xcalloc(1, sizeof *r);
    }
    r->req[0] = r->req[1] = MPI_REQUEST_NULL;
    r->inflight = -1;
    r->buf = buf;
    r->n = n;
    r->type = t;
    r->dop = op;
    r->bytes = (size_t)n * dist_type_size(t);
    r->op = (WatchOp){.kind = kind, .comm = impl(d)->id, .bytes = (int64_t)r->bytes, .root = -1,
                      .to = -1, .from = -1, .op = op};
    return r;
}

/* A collective: the next number on its communicator. */
static DistRequest *collective(Dist *d, WatchKind kind, void *buf, int64_t n, DistType t, DistOp op,
                               bool blocking) {
    DistRequest *r = request(d, kind, buf, n, t, op, blocking);
    r->op.seq = ++impl(d)->collectives;
    return r;
}

/* An MPI error: told with what this rank waits in (the watchdog asks the others). */
static __attribute__((noreturn)) void failed(Dist *d, DistRequest *r, int rc) {
    char why[MPI_MAX_ERROR_STRING + 1] = "";
    int len = 0;
    MPI_Error_string(rc, why, &len);
    watch_begin(impl(d)->slot, &r->op, impl(d)->world_of, d->world_size);
    watch_failed(why);
}

/* The first error of a wait on several requests. */
static int first_error(int rc, const MPI_Status *st, int n) {
    if (rc != MPI_ERR_IN_STATUS) return rc;
    for (int i = 0; i < n; i++)
        if (st[i].MPI_ERROR != MPI_SUCCESS) return st[i].MPI_ERROR;
    return rc;
}

/* A blocking call of MPI, watched. */
#define WATCHED(d, r, call)                                                              \
    do {                                                                                 \
        watch_begin(impl(d)->slot, &(r)->op, impl(d)->world_of, (d)->world_size);        \
        const int rc_ = (call);                                                          \
        if (rc_ != MPI_SUCCESS) failed((d), (r), rc_);                                    \
        watch_end();                                                                     \
    } while (0)

/* A non-blocking start: its collective in the history, the request in flight unless it
 * is waited for at once. */
static DistRequest *started(Dist *d, DistRequest *r, bool blocking, int rc) {
    if (rc != MPI_SUCCESS) failed(d, r, rc);
    watch_collective(impl(d)->slot, &r->op);
    if (!blocking) r->inflight = watch_inflight_add(&r->op);
    return r;
}

/* MPI's blocking call where a watchdog thread watches (fast), else its non-blocking
 * one, polled. */
static bool g_threaded; /* watch_threaded(), asked once */
static bool fast(bool blocking) { return blocking && g_threaded; }

static void finish(Dist *d, DistRequest *r) {
    if (r->result_at && r->result_at != r->buf) memmove(r->buf, r->result_at, r->bytes);
    if (r->dop == DIST_AVG && r->buf) {
        if (r->type == DIST_F32) {
            float *x = r->buf, inv = 1.0f / (float)d->world_size;
            for (int64_t i = 0; i < r->n; i++) x[i] *= inv;
        } else if (r->type == DIST_F64) {
            double *x = r->buf;
            for (int64_t i = 0; i < r->n; i++) x[i] /= d->world_size;
        } else if (r->type == DIST_BF16 || r->type == DIST_F16) {
            uint16_t *x = r->buf;
            const float inv = 1.0f / (float)d->world_size;
            for (int64_t i = 0; i < r->n; i++) x[i] = bits_of(r->type, f32_of(r->type, x[i]) * inv);
        }
    }
    if (r->inflight >= 0) watch_inflight_remove(r->inflight);
    if (r->reused) g_blocking_taken = false;
    else xfree(r);
}

/* Request i done: a send+receive's part no longer pending, for the watchdog. */
static void part_done(DistRequest *r, int i) {
    if (r->op.kind == WATCH_SENDRECV) {
        if (i == 0) r->op.to = -1;
        else r->op.from = -1;
        watch_update(&r->op);
    }
}

static bool test(Dist *d, DistRequest *r) {
    MPI_Status st[2];
    int done = 0;
    const int rc = MPI_Testall(2, r->req, &done, st); /* null requests count as done */
    if (rc != MPI_SUCCESS) failed(d, r, first_error(rc, st, 2));
    return done;
}

static void wait(Dist *d, DistRequest *r) {
    Mpi *m = impl(d);
    const int pending = (r->req[0] != MPI_REQUEST_NULL) + (r->req[1] != MPI_REQUEST_NULL);
    if (pending) {
        watch_begin(m->slot, &r->op, m->world_of, d->world_size);
        for (int left = pending; left > 0;) {
            int i = MPI_UNDEFINED, done = 0, rc;
            MPI_Status st;
            if (g_threaded) { /* MPI's own wait: the watchdog thread watches */
                rc = MPI_Waitany(2, r->req, &i, &st);
                done = i != MPI_UNDEFINED;
            } else {
                watch_poll();
                rc = MPI_Testany(2, r->req, &i, &done, &st);
                done = done && i != MPI_UNDEFINED;
            }
            if (rc != MPI_SUCCESS) failed(d, r, rc == MPI_ERR_IN_STATUS ? st.MPI_ERROR : rc);
            if (done) part_done(r, i), left--;
        }
        watch_end();
    }
    finish(d, r);
}

/* ---------------------------------------------------------------- operations */

static DistRequest *broadcast(Dist *d, void *buf, int64_t n, DistType t, int root, bool blocking) {
    DistRequest *r = collective(d, WATCH_BROADCAST, NULL, n, t, DIST_SUM, blocking);
    r->op.root = impl(d)->world_of[root];
    const int c = count(n, "broadcast");
    if (fast(blocking)) WATCHED(d, r, MPI_Bcast(buf, c, mpi_type(t), root, impl(d)->comm));
    else started(d, r, blocking, MPI_Ibcast(buf, c, mpi_type(t), root, impl(d)->comm, &r->req[0]));
    return r;
}

static DistRequest *all_reduce(Dist *d, void *buf, int64_t n, DistType t, DistOp op, bool blocking) {
    DistRequest *r = collective(d, WATCH_ALL_REDUCE, buf, n, t, op, blocking);
    const int c = count(n, "all-reduce");
    MPI_Comm comm = impl(d)->comm;
    if (fast(blocking))
        WATCHED(d, r, MPI_Allreduce(MPI_IN_PLACE, buf, c, mpi_type(t), mpi_op(op, t), comm));
    else
        started(d, r, blocking, MPI_Iallreduce(MPI_IN_PLACE, buf, c, mpi_type(t), mpi_op(op, t), comm,
                                               &r->req[0]));
    return r;
}

static DistRequest *all_gather(Dist *d, void *out, const void *in, int64_t n, DistType t,
                               bool blocking) {
    DistRequest *r = collective(d, WATCH_ALL_GATHER, NULL, n, t, DIST_SUM, blocking);
    /* in place (dist.h): MPI wants this rank's block left where it is */
    const bool in_place = in == (const char *)out + (size_t)d->rank * r->bytes;
    const void *from = in_place ? MPI_IN_PLACE : in;
    const int c = count(n, "all-gather");
    MPI_Comm comm = impl(d)->comm;
    if (fast(blocking))
        WATCHED(d, r, MPI_Allgather(from, c, mpi_type(t), out, c, mpi_type(t), comm));
    else
        started(d, r, blocking, MPI_Iallgather(from, c, mpi_type(t), out, c, mpi_type(t), comm, &r->req[0]));
    return r;
}

static DistRequest *reduce_scatter(Dist *d, void *out, const void *in, int64_t n, DistType t,
                                   DistOp op, bool blocking) {
    DistRequest *r = collective(d, WATCH_REDUCE_SCATTER, out, n, t, op, blocking);
    const void *from = in;
    void *into = out;
    if ((const char *)out == (const char *)in + (size_t)d->rank * r->bytes) {
        /* in place: MPI reads in and leaves the result at its start; finish moves it to
         * this rank's block */
        r->result_at = in;
        from = MPI_IN_PLACE;
        into = (void *)in;
    }
    const int c = count(n, "reduce-scatter");
    MPI_Comm comm = impl(d)->comm;
    if (fast(blocking))
        WATCHED(d, r, MPI_Reduce_scatter_block(from, into, c, mpi_type(t), mpi_op(op, t), comm));
    else
        started(d, r, blocking, MPI_Ireduce_scatter_block(from, into, c, mpi_type(t), mpi_op(op, t), comm,
                                                          &r->req[0]));
    return r;
}

static DistRequest *barrier(Dist *d, bool blocking) {
    DistRequest *r = collective(d, WATCH_BARRIER, NULL, 0, DIST_F32, DIST_SUM, blocking);
    if (fast(blocking)) WATCHED(d, r, MPI_Barrier(impl(d)->comm));
    else started(d, r, blocking, MPI_Ibarrier(impl(d)->comm, &r->req[0]));
    return r;
}

/* Both halves non-blocking, then (blocking) waited for: MPI's own wait. */
static DistRequest *sendrecv(Dist *d, const void *out, int64_t out_n, int to, void *in,
                             int64_t in_n, int from, DistType t, bool blocking) {
    Mpi *m = impl(d);
    DistRequest *r = request(d, in ? (out ? WATCH_SENDRECV : WATCH_RECV) : WATCH_SEND, NULL,
                             out_n + in_n, t, DIST_SUM, blocking);
    if (out) r->op.to = m->world_of[to];
    if (in) r->op.from = m->world_of[from];
    int rc = MPI_SUCCESS;
    if (in) rc = MPI_Irecv(in, count(in_n, "receive"), mpi_type(t), from, TAG_DATA, m->comm, &r->req[1]);
    if (out && rc == MPI_SUCCESS)
        rc = MPI_Isend(out, count(out_n, "send"), mpi_type(t), to, TAG_DATA, m->comm, &r->req[0]);
    return started(d, r, blocking, rc);
}

/* ---------------------------------------------------------------- the watchdog's messages */

/* Sends in flight, each with its own copy of the words (a reply of ~1 KB at most). */
typedef struct {
    MPI_Request req;
    int64_t words[1 + WATCH_REPLY_WORDS];
} Outgoing;

static Outgoing **g_out;
static int g_out_n;

static void side_send(int to, int tag, const int64_t *words, int n) {
    if (n > 1 + WATCH_REPLY_WORDS) return;
    Outgoing *o = NULL;
    for (int i = 0; i < g_out_n && !o; i++) {
        int done = 1;
        if (g_out[i]->req != MPI_REQUEST_NULL) MPI_Test(&g_out[i]->req, &done, MPI_STATUS_IGNORE);
        if (done) o = g_out[i];
    }
    if (!o) { /* all in flight: one more */
        Outgoing **more = xcalloc((size_t)g_out_n + 1, sizeof *more);
        if (g_out_n) memcpy(more, g_out, (size_t)g_out_n * sizeof *more);
        xfree(g_out);
        g_out = more;
        o = g_out[g_out_n++] = xcalloc(1, sizeof *o);
    }
    memcpy(o->words, words, (size_t)n * sizeof *words);
    if (MPI_Isend(o->words, n, MPI_INT64_T, to, tag, g_side, &o->req) != MPI_SUCCESS)
        o->req = MPI_REQUEST_NULL; /* a rank that is gone: it counts as silent */
}

static int side_poll(int tag, int *from, int64_t *words, int cap) {
    int flag = 0, n = 0;
    MPI_Message msg;
    MPI_Status st;
    if (MPI_Improbe(MPI_ANY_SOURCE, tag, g_side, &flag, &msg, &st) != MPI_SUCCESS || !flag) return -1;
    MPI_Get_count(&st, MPI_INT64_T, &n);
    int64_t *into = n <= cap ? words : xcalloc((size_t)n + 1, sizeof *into);
    MPI_Mrecv(into, n, MPI_INT64_T, &msg, MPI_STATUS_IGNORE);
    if (into != words) xfree(into); /* too long to be ours: dropped */
    *from = st.MPI_SOURCE;
    return n;
}

static __attribute__((noreturn)) void side_abort(int status) {
    MPI_Abort(MPI_COMM_WORLD, status);
    exit(status); /* MPI_Abort does not return; this keeps the compiler sure of it */
}

static const WatchTransport SIDE = {side_send, side_poll, side_abort};

/* ---------------------------------------------------------------- the communicator */

static const DistBackend MPI_BACKEND;

/* Ranks, local ranks and nodes of comm, into d. */
static void describe(Dist *d, MPI_Comm comm) {
    MPI_Comm_rank(comm, &d->rank);
    MPI_Comm_size(comm, &d->world_size);
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &d->local_rank);
    MPI_Comm_size(node, &d->local_size);
    MPI_Comm_free(&node);
    int first = d->local_rank == 0;
    MPI_Allreduce(&first, &d->nodes, 1, MPI_INT, MPI_SUM, comm);
}

static Dist *wrap(const Dist *parent, MPI_Comm comm, int64_t id, bool is_world, bool owns_world) {
    Dist *d = xcalloc(1, sizeof *d);
    *d = *parent;
    Mpi *m = xcalloc(1, sizeof *m);
    m->comm = comm;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN); /* errors come back to be told */
    m->is_world = is_world;
    m->owns_world = owns_world;
    m->id = id;
    d->impl = m;
    d->ops = &MPI_BACKEND;
    describe(d, comm);
    /* each rank's world rank */
    MPI_Group mine, world;
    MPI_Comm_group(comm, &mine);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int *ranks = xcalloc((size_t)d->world_size, sizeof *ranks), *in_world = xcalloc((size_t)d->world_size, sizeof *in_world);
    for (int i = 0; i < d->world_size; i++) ranks[i] = i;
    MPI_Group_translate_ranks(mine, d->world_size, ranks, world, in_world);
    m->world_of = xcalloc((size_t)d->world_size, sizeof *m->world_of);
    for (int i = 0; i < d->world_size; i++) m->world_of[i] = in_world[i];
    xfree(ranks), xfree(in_world);
    MPI_Group_free(&mine), MPI_Group_free(&world);
    m->slot = watch_comm_add(id, d->world_size, m->world_of);
    return d;
}

/* A split's id, the same on all its members: from its parent's, its number there and
 * its color (never 0 or WATCH_WORLD). */
static int64_t split_id(int64_t parent, int64_t seq, int color) {
    uint64_t h = (uint64_t)parent * 0x9e3779b97f4a7c15ull ^ (uint64_t)seq * 0xbf58476d1ce4e5b9ull ^
                 ((uint64_t)color + 1) * 0x94d049bb133111ebull;
    h ^= h >> 31;
    return (int64_t)((h & 0x3fffffffffffffffull) | 2);
}

static Dist *split(Dist *d, int color, int key) {
    DistRequest *r = collective(d, WATCH_SPLIT, NULL, 0, DIST_F32, DIST_SUM, false);
    watch_begin(impl(d)->slot, &r->op, impl(d)->world_of, d->world_size);
    MPI_Comm sub;
    const int rc = MPI_Comm_split(impl(d)->comm, color, key, &sub);
    if (rc != MPI_SUCCESS) failed(d, r, rc);
    Dist *s = wrap(d, sub, split_id(impl(d)->id, r->op.seq, color), false, false);
    watch_end();
    xfree(r);
    return s;
}

/* The world's: every rank waits here for all the others (a rank still in a collective
 * is found and named), then the watchdog stops. */
static void finish_job(Dist *d) {
    DistRequest *r = request(d, WATCH_FINALIZE, NULL, 0, DIST_F32, DIST_SUM, false);
    r->op.comm = 0;
    if (g_threaded) {
        WATCHED(d, r, MPI_Barrier(g_side));
    } else {
        const int rc = MPI_Ibarrier(g_side, &r->req[0]);
        if (rc != MPI_SUCCESS) failed(d, r, rc);
        wait(d, r);
        r = NULL;
    }
    xfree(r);
    watch_stop();
    for (int i = 0; i < g_out_n; i++) { /* what is still on its way goes on without us */
        if (g_out[i]->req != MPI_REQUEST_NULL) MPI_Request_free(&g_out[i]->req);
        xfree(g_out[i]);
    }
    xfree(g_out);
    g_out = NULL, g_out_n = 0;
    MPI_Comm_free(&g_side);
}

static void finalize(Dist *d) {
    Mpi *m = impl(d);
    if (m->is_world) finish_job(d);
    watch_comm_remove(m->slot);
    MPI_Comm_free(&m->comm);
    xfree(m->world_of);
    if (m->owns_world) free_ops16(), MPI_Finalize();
    xfree(m);
}

static __attribute__((noreturn)) void abort_job(Dist *d, int status) {
    (void)d;
    fflush(stdout);
    fflush(stderr);
    side_abort(status);
}

static const DistBackend MPI_BACKEND = {broadcast, all_reduce, all_gather, reduce_scatter,
                                        barrier,   sendrecv,   test,       wait,
                                        split,     finalize,   abort_job};

void dist_mpi_init(Dist *d, const Launch *l) {
    int ready = 0, level = MPI_THREAD_SINGLE;
    MPI_Initialized(&ready);
    /* MPI_THREAD_MULTIPLE: the watchdog thread asks and answers while this one waits in
     * MPI. COURSE_DIST_POLL=1 asks for less, as an MPI without it gives (the tests run the
     * faults that way too). */
    const bool poll = env_is_set("COURSE_DIST_POLL");
    if (!ready) MPI_Init_thread(NULL, NULL, poll ? MPI_THREAD_FUNNELED : MPI_THREAD_MULTIPLE, &level);
    else MPI_Query_thread(&level);
    make_ops16();
    MPI_Comm world;
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    MPI_Comm_dup(MPI_COMM_WORLD, &g_side);
    MPI_Comm_set_errhandler(g_side, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    watch_start(rank, size, d->timeout_s, &SIDE, level >= MPI_THREAD_MULTIPLE);
    g_threaded = watch_threaded();
    Dist *w = wrap(d, world, WATCH_WORLD, true, !ready);
    *d = *w;
    xfree(w);
    if (d->world_size != l->world_size) { /* e.g. srun without --mpi=pmix: singletons */
        if (d->rank == 0)
            fprintf(stderr, "error: %s started %d ranks, but MPI sees %d: with Slurm launch with "
                    "srun --mpi=pmix (or mpirun), so that MPI knows the other ranks\n", l->name,
                    l->world_size, d->world_size);
        abort_job(d, EXIT_USER_ERROR);
    }
}
#endif

#ifdef HAVE_MPI
/* For the NCCL backend of an MPI-launched job: NCCL's unique id from rank 0 to all. */
void dist_mpi_broadcast_bytes(void *buf, size_t len) {
    int ready = 0, level = 0;
    MPI_Initialized(&ready);
    if (!ready) MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &level);
    MPI_Bcast(buf, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
}

void dist_mpi_end(void) {
    int ready = 0, done = 0;
    MPI_Initialized(&ready);
    MPI_Finalized(&done);
    if (ready && !done) MPI_Finalize();
}
#endif
