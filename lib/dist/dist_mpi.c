/* The MPI backend: host tensors, Open MPI's own non-blocking collectives (MPI-3), waited
 * for with a timeout. Compiled where mpicc was found (HAVE_MPI), with its flags.
 *
 * 16-bit tensors: MPI has no standard bfloat16 or float16 type (Open MPI 4.1 none at
 * all), so they travel as MPI_UINT16_T and are reduced by operations of our own
 * (MPI_Op_create): each addition converts both to float32, adds and rounds back to
 * 16 bits (core/dtype.h), as NCCL does at every hop; a maximum picks one of the two.
 *
 * Why a wait loop and not MPI_Wait: MPI_Wait blocks forever when a peer hangs. Here a
 * wait polls MPI_Test, and while polling answers "are you there?" pings from other
 * ranks on a communicator of their own. When timeout_s passes, the waiting rank pings
 * every other rank, names the ones that do not answer, and aborts the job. */
#ifdef HAVE_MPI
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/dtype.h"
#include "core/timer.h"
#include "dist_backend.h"

typedef struct {
    MPI_Comm comm;    /* the collectives and sends */
    MPI_Comm ping;    /* liveness pings, never mixed with data */
    bool owns_world;  /* this Dist initialised MPI: finalize ends it */
} Mpi;

struct DistRequest {
    MPI_Request req[2]; /* one, or a send and a receive */
    void *buf;        /* DIST_AVG: divided by the world size once done */
    const void *result_at; /* an in-place reduce-scatter's result, moved to buf once done */
    int64_t n;
    DistType type;
    DistOp op;
    const char *what; /* for the timeout message */
    size_t bytes;
};

enum { TAG_DATA = 1, TAG_PING = 2, TAG_PONG = 3 };

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

static DistRequest *request(const char *what, void *buf, int64_t n, DistType t, DistOp op) {
    DistRequest *r = xcalloc(1, sizeof *r);
    r->req[0] = r->req[1] = MPI_REQUEST_NULL;
    r->what = what;
    r->buf = buf;
    r->n = n;
    r->type = t;
    r->op = op;
    r->bytes = (size_t)n * dist_type_size(t);
    return r;
}

/* ---------------------------------------------------------------- liveness */

/* Answers every ping that has arrived (a 1-int eager send never blocks). */
static void answer_pings(Mpi *m) {
    for (;;) {
        int flag = 0, token = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_PING, m->ping, &flag, &st);
        if (!flag) return;
        MPI_Recv(&token, 1, MPI_INT, st.MPI_SOURCE, TAG_PING, m->ping, MPI_STATUS_IGNORE);
        MPI_Send(&token, 1, MPI_INT, st.MPI_SOURCE, TAG_PONG, m->ping);
    }
}

/* Pings every other rank and lists those that have not answered within a few seconds:
 * "rank 2 does not answer" or "ranks 2, 3 do not answer". */
static void find_silent(Dist *d, char *out, size_t cap) {
    Mpi *m = impl(d);
    const int world = d->world_size;
    bool *answered = xcalloc((size_t)world, sizeof *answered);
    int token = d->rank, missing = world - 1;
    for (int r = 0; r < world; r++) {
        if (r == d->rank) continue;
        MPI_Request q;
        MPI_Isend(&token, 1, MPI_INT, r, TAG_PING, m->ping, &q);
        MPI_Request_free(&q);
    }
    const double give_up = now_seconds() + (d->timeout_s < 20 ? d->timeout_s / 2 : 10);
    while (missing > 0 && now_seconds() < give_up) {
        answer_pings(m);
        int flag = 0, got;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_PONG, m->ping, &flag, &st);
        if (!flag) {
            sched_yield();
            continue;
        }
        MPI_Recv(&got, 1, MPI_INT, st.MPI_SOURCE, TAG_PONG, m->ping, MPI_STATUS_IGNORE);
        if (!answered[st.MPI_SOURCE]) answered[st.MPI_SOURCE] = true, missing--;
    }
    if (missing == 0) {
        snprintf(out, cap, "every rank answers, so they called different operations or sizes "
                 "(every rank must call the same collectives in the same order)");
    } else {
        size_t used = (size_t)snprintf(out, cap, "%s", missing == 1 ? "rank" : "ranks");
        for (int r = 0, k = 0; r < world && used < cap; r++)
            if (r != d->rank && !answered[r])
                used += (size_t)snprintf(out + used, cap - used, "%s %d", k++ ? "," : "", r);
        if (used < cap)
            snprintf(out + used, cap - used, " %s not answer (stopped, hung in its own work, or "
                     "its node is gone)", missing == 1 ? "does" : "do");
    }
    xfree(answered);
}

/* ---------------------------------------------------------------- waiting */

static void finish(Dist *d, DistRequest *r) {
    if (r->result_at && r->result_at != r->buf) memmove(r->buf, r->result_at, r->bytes);
    if (r->op == DIST_AVG && r->buf) {
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
    xfree(r);
}

static bool test(Dist *d, DistRequest *r) {
    answer_pings(impl(d));
    int done = 0;
    MPI_Testall(2, r->req, &done, MPI_STATUSES_IGNORE); /* null requests count as done */
    return done;
}

static void wait(Dist *d, DistRequest *r) {
    const double deadline = now_seconds() + d->timeout_s;
    for (long spins = 0; !test(d, r); spins++) {
        if (spins < 20000) continue; /* a short wait: spin, the answer is microseconds away */
        sched_yield();
        if (spins % 256 == 0 && now_seconds() > deadline) {
            char silent[512];
            find_silent(d, silent, sizeof silent);
            dist_timed_out(d, r->what, r->bytes, silent);
        }
    }
    finish(d, r);
}

/* ---------------------------------------------------------------- operations */

static DistRequest *broadcast(Dist *d, void *buf, int64_t n, DistType t, int root) {
    DistRequest *r = request("broadcast", NULL, n, t, DIST_SUM);
    MPI_Ibcast(buf, count(n, r->what), mpi_type(t), root, impl(d)->comm, &r->req[0]);
    return r;
}

static DistRequest *all_reduce(Dist *d, void *buf, int64_t n, DistType t, DistOp op) {
    DistRequest *r = request("all-reduce", buf, n, t, op);
    MPI_Iallreduce(MPI_IN_PLACE, buf, count(n, r->what), mpi_type(t), mpi_op(op, t), impl(d)->comm,
                   &r->req[0]);
    return r;
}

static DistRequest *all_gather(Dist *d, void *out, const void *in, int64_t n, DistType t) {
    DistRequest *r = request("all-gather", NULL, n, t, DIST_SUM);
    /* in place (dist.h): MPI wants this rank's block left where it is */
    const bool in_place = in == (const char *)out + (size_t)d->rank * r->bytes;
    MPI_Iallgather(in_place ? MPI_IN_PLACE : in, count(n, r->what), mpi_type(t), out, (int)n,
                   mpi_type(t), impl(d)->comm, &r->req[0]);
    return r;
}

static DistRequest *reduce_scatter(Dist *d, void *out, const void *in, int64_t n, DistType t,
                                   DistOp op) {
    DistRequest *r = request("reduce-scatter", out, n, t, op);
    if ((const char *)out == (const char *)in + (size_t)d->rank * r->bytes) {
        /* in place: MPI reads in and leaves the result at its start; finish moves it to
         * this rank's block */
        r->result_at = in;
        MPI_Ireduce_scatter_block(MPI_IN_PLACE, (void *)in, count(n, r->what), mpi_type(t),
                                  mpi_op(op, t), impl(d)->comm, &r->req[0]);
        return r;
    }
    MPI_Ireduce_scatter_block(in, out, count(n, r->what), mpi_type(t), mpi_op(op, t), impl(d)->comm,
                              &r->req[0]);
    return r;
}

static DistRequest *barrier(Dist *d) {
    DistRequest *r = request("barrier", NULL, 0, DIST_F32, DIST_SUM);
    MPI_Ibarrier(impl(d)->comm, &r->req[0]);
    return r;
}

static DistRequest *sendrecv(Dist *d, const void *out, int64_t out_n, int to, void *in,
                             int64_t in_n, int from, DistType t) {
    DistRequest *r = request(in ? (out ? "send and receive" : "receive") : "send", NULL,
                             out_n + in_n, t, DIST_SUM);
    if (in) MPI_Irecv(in, count(in_n, r->what), mpi_type(t), from, TAG_DATA, impl(d)->comm, &r->req[1]);
    if (out) MPI_Isend(out, count(out_n, r->what), mpi_type(t), to, TAG_DATA, impl(d)->comm, &r->req[0]);
    return r;
}

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

static Dist *wrap(const Dist *parent, MPI_Comm comm, bool owns_world) {
    Dist *d = xcalloc(1, sizeof *d);
    *d = *parent;
    Mpi *m = xcalloc(1, sizeof *m);
    m->comm = comm;
    MPI_Comm_dup(comm, &m->ping);
    m->owns_world = owns_world;
    d->impl = m;
    d->ops = &MPI_BACKEND;
    describe(d, comm);
    return d;
}

static Dist *split(Dist *d, int color, int key) {
    MPI_Comm sub;
    MPI_Comm_split(impl(d)->comm, color, key, &sub);
    return wrap(d, sub, false);
}

static void finalize(Dist *d) {
    Mpi *m = impl(d);
    MPI_Comm_free(&m->ping);
    MPI_Comm_free(&m->comm);
    if (m->owns_world) free_ops16(), MPI_Finalize();
    xfree(m);
}

static __attribute__((noreturn)) void abort_job(Dist *d, int status) {
    (void)d;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
    exit(status); /* MPI_Abort does not return; this keeps the compiler sure of it */
}

static const DistBackend MPI_BACKEND = {broadcast, all_reduce, all_gather, reduce_scatter,
                                        barrier,   sendrecv,   test,       wait,
                                        split,     finalize,   abort_job};

void dist_mpi_init(Dist *d, const Launch *l) {
    int ready = 0, level = 0;
    MPI_Initialized(&ready);
    if (!ready) MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &level);
    make_ops16();
    MPI_Comm world;
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    Dist *w = wrap(d, world, !ready);
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
