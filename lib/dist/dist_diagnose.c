/* Why a wait cannot finish, from the other ranks' answers (dist_diagnose.h). */
#include "dist_diagnose.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "dist.h"

/* ---------------------------------------------------------------- answers */

void watch_answers_put(WatchAnswers *s, int rank, int64_t comm, int64_t seq, const WatchReply *r) {
    for (int i = 0; i < s->n; i++)
        if (s->a[i].rank == rank && s->a[i].comm == comm && s->a[i].seq == seq) {
            s->a[i].r = *r;
            return;
        }
    if (s->n == s->cap) {
        const int cap = s->cap ? 2 * s->cap : 16;
        WatchAnswer *a = xcalloc((size_t)cap, sizeof *a);
        if (s->n) memcpy(a, s->a, (size_t)s->n * sizeof *a);
        xfree(s->a);
        s->a = a, s->cap = cap;
    }
    s->a[s->n++] = (WatchAnswer){rank, comm, seq, *r};
}

const WatchReply *watch_answer(const WatchAnswers *s, int rank, int64_t comm, int64_t seq) {
    for (int i = s->n - 1; i >= 0; i--)
        if (s->a[i].rank == rank && (comm == 0 || (s->a[i].comm == comm && s->a[i].seq == seq)))
            return &s->a[i].r;
    return NULL;
}

void watch_answers_free(WatchAnswers *s) {
    xfree(s->a);
    *s = (WatchAnswers){0};
}

/* ---------------------------------------------------------------- needs */

static bool is_collective(int64_t kind) { return kind >= WATCH_ALL_REDUCE && kind <= WATCH_SPLIT; }

int watch_needs(int self, int world, const WatchOp *op, const int64_t *members, int n, Need *out,
                int cap) {
    int k = 0;
    if (is_collective(op->kind)) {
        for (int i = 0; i < n && k < cap; i++)
            if (members[i] != self) out[k++] = (Need){(int)members[i], NEED_JOIN};
    } else if (op->kind == WATCH_FINALIZE) {
        for (int r = 0; r < world && k < cap; r++)
            if (r != self) out[k++] = (Need){r, NEED_FINAL};
    } else {
        if (op->from >= 0 && k < cap) out[k++] = (Need){(int)op->from, NEED_SEND};
        if (op->to >= 0 && k < cap) out[k++] = (Need){(int)op->to, NEED_RECV};
    }
    return k;
}

/* The same collective, as MPI matches them: kind, size, root, and a maximum or a sum
 * (an average is a sum divided afterwards). */
static bool same_collective(const WatchOp *a, const WatchOp *b) {
    return a->kind == b->kind && a->bytes == b->bytes && a->root == b->root &&
           (a->op == DIST_MAX) == (b->op == DIST_MAX);
}

/* z has a part of kind `part` (WATCH_SEND: a send to peer, WATCH_RECV: a receive from
 * peer) on comm pending: in the wait it is in, or in flight. */
static bool has_part(const WatchReply *z, int part, int peer, int64_t comm) {
    for (int i = -1; i < (int)z->inflight_n && i < WATCH_INFLIGHT; i++) {
        const WatchOp *o = i < 0 ? &z->cur : &z->inflight[i];
        if (i < 0 && z->state != WATCH_WAITING) continue;
        if (o->comm != comm) continue;
        if (part == WATCH_SEND && (o->kind == WATCH_SEND || o->kind == WATCH_SENDRECV) && o->to == peer)
            return true;
        if (part == WATCH_RECV && (o->kind == WATCH_RECV || o->kind == WATCH_SENDRECV) && o->from == peer)
            return true;
    }
    return false;
}

static bool finalizing(const WatchReply *z) {
    return z->state == WATCH_WAITING && z->cur.kind == WATCH_FINALIZE;
}

NeedState watch_need_state(const Need *nd, int self, const WatchOp *op, const WatchReply *z) {
    if (!z) return NEED_SILENT;
    switch (nd->kind) {
    case NEED_JOIN:
        if (z->at.kind != WATCH_NONE) return same_collective(&z->at, op) ? NEED_MET : NEED_DIFFERENT;
        if (z->count >= op->seq) return NEED_DIFFERENT; /* gone on past it, long ago */
        return finalizing(z) ? NEED_GONE : NEED_UNMET;
    case NEED_SEND:
        if (has_part(z, WATCH_SEND, self, op->comm)) return NEED_MET;
        return finalizing(z) ? NEED_GONE : NEED_UNMET;
    case NEED_RECV:
        if (has_part(z, WATCH_RECV, self, op->comm)) return NEED_MET;
        return finalizing(z) ? NEED_GONE : NEED_UNMET;
    case NEED_FINAL: return finalizing(z) ? NEED_MET : NEED_UNMET;
    }
    return NEED_UNMET;
}

const WatchReply *watch_need_answer(const WatchAnswers *s, const Need *nd, const WatchOp *op) {
    return nd->kind == NEED_JOIN ? watch_answer(s, nd->rank, op->comm, op->seq)
                                 : watch_answer(s, nd->rank, 0, 0);
}

/* ---------------------------------------------------------------- words */

typedef struct {
    char *p;
    size_t cap, n;
} Text;

static __attribute__((format(printf, 2, 3))) void add(Text *t, const char *fmt, ...) {
    if (t->n + 1 >= t->cap) return;
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(t->p + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    if (k > 0) t->n = t->n + (size_t)k < t->cap ? t->n + (size_t)k : t->cap - 1;
}

const char *watch_kind_name(int64_t kind) {
    static const char *const NAMES[WATCH_KINDS] = {"nothing", "all-reduce", "broadcast", "all-gather",
                                                   "reduce-scatter", "barrier", "dist_split", "send", "receive",
                                                   "send+receive", "dist_finalize"};
    return kind >= 0 && kind < WATCH_KINDS ? NAMES[kind] : "an unknown operation";
}

/* "rank 2", "ranks 1, 2, 3" */
static void add_ranks(Text *t, const int *ranks, int n) {
    add(t, "rank%s", n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) add(t, "%s %d", i ? "," : "", ranks[i]);
}

void watch_group_name(int64_t comm, int64_t size, const int64_t *members, int64_t n, char *out,
                      size_t cap) {
    Text t = {out, cap, 0};
    out[0] = '\0';
    if (comm == WATCH_WORLD) {
        add(&t, "the world");
        return;
    }
    if (n < size) add(&t, "a group of %lld ranks (world ranks", (long long)size);
    else add(&t, "the group of world rank%s", size == 1 ? "" : "s");
    const int64_t shown = n < 8 ? n : 8;
    for (int64_t i = 0; i < shown; i++) add(&t, "%s %lld", i ? "," : "", (long long)members[i]);
    if (shown < size) add(&t, ", ...");
    if (n < size) add(&t, ")");
}

void watch_op_text(const WatchOp *op, const char *group, char *out, size_t cap) {
    Text t = {out, cap, 0};
    out[0] = '\0';
    const char *name = watch_kind_name(op->kind);
    if (op->kind == WATCH_FINALIZE) {
        add(&t, "dist_finalize");
    } else if (is_collective(op->kind)) {
        add(&t, "%s", name);
        if (op->kind != WATCH_BARRIER && op->kind != WATCH_SPLIT) add(&t, " of %lld bytes", (long long)op->bytes);
        if (op->kind == WATCH_BROADCAST) add(&t, " from rank %lld", (long long)op->root);
        add(&t, " (collective #%lld of %s)", (long long)op->seq, group);
    } else {
        add(&t, "%s of %lld bytes (", name, (long long)op->bytes);
        if (op->to >= 0) add(&t, "to rank %lld%s", (long long)op->to, op->from >= 0 ? ", " : "");
        if (op->from >= 0) add(&t, "from rank %lld", (long long)op->from);
        if (op->to < 0 && op->from < 0) add(&t, "done");
        add(&t, "; in %s)", group);
    }
}

/* silent[r]: rank r was asked and did not answer (NULL: not everyone was asked) */
static bool is_silent(const bool *silent, int64_t r) { return silent && r >= 0 && silent[r]; }

/* "it waits in receive of 4096 bytes (from rank 2; in the world), for 3.0 s", and where
 * that wait waits for a rank that does not answer, ", where rank 2 does not answer";
 * *told: that was said. */
static void add_state(Text *t, const WatchReply *z, const bool *silent, bool *told) {
    char group[160], op[320];
    watch_group_name(z->cur.comm, z->comm_size, z->members, z->members_n, group, sizeof group);
    watch_op_text(&z->cur, group, op, sizeof op);
    const double s = (double)z->ms / 1000.0;
    if (finalizing(z)) add(t, "it has finished: it waits in dist_finalize");
    else if (z->state == WATCH_WAITING) add(t, "it waits in %s, for %.1f s", op, s);
    else if (z->cur.kind == WATCH_NONE) add(t, "it is in its own code, for %.1f s, and has not waited in lib/dist yet", s);
    else add(t, "it is in its own code, for %.1f s since its %s", s, op);
    if (z->state != WATCH_WAITING || finalizing(z)) return;
    int waits_for[WATCH_MEMBERS + 2], k = 0;
    if (is_collective(z->cur.kind)) {
        for (int64_t i = 0; i < z->members_n; i++)
            if (is_silent(silent, z->members[i])) waits_for[k++] = (int)z->members[i];
    } else {
        if (is_silent(silent, z->cur.from)) waits_for[k++] = (int)z->cur.from;
        if (is_silent(silent, z->cur.to) && z->cur.to != z->cur.from) waits_for[k++] = (int)z->cur.to;
    }
    if (!k) return;
    add(t, ", where ");
    add_ranks(t, waits_for, k);
    add(t, " %s", k == 1 ? "does not answer" : "do not answer");
    *told = true;
}

/* ---------------------------------------------------------------- the explanation */

/* Without a watchdog thread a rank answers only from inside lib/dist: one in its own
 * code is silent too. */
static bool g_polling;
void watch_explain_polling(bool on) { g_polling = on; }


void watch_explain(int self, int world, const WatchOp *op, const int64_t *members, int n,
                   const WatchAnswers *s, bool everyone, char *out, size_t cap) {
    Text t = {out, cap, 0};
    out[0] = '\0';
    const int most = world * 2 + 2;
    /* everyone asked: the ranks that did not answer, all of them */
    bool *silent_world = everyone ? xcalloc((size_t)world, sizeof *silent_world) : NULL;
    int n_silent_world = 0;
    for (int r = 0; everyone && r < world; r++)
        if (r != self && !watch_answer(s, r, 0, 0)) silent_world[r] = true, n_silent_world++;
    bool told = false;
    Need *needs = xcalloc((size_t)most, sizeof *needs);
    int *silent = xcalloc((size_t)most, sizeof *silent), *gone = xcalloc((size_t)most, sizeof *gone);
    int *in_it = xcalloc((size_t)most + 1, sizeof *in_it), *other = xcalloc((size_t)most, sizeof *other);
    const int k = watch_needs(self, world, op, members, n, needs, most);
    int n_silent = 0, n_gone = 0, n_in = 0, n_other = 0, n_unmet = 0, n_working = 0;
    NeedKind gone_kind = NEED_JOIN;
    in_it[n_in++] = self;
    char group[160];
    watch_group_name(op->comm, n, members, n, group, sizeof group);
    for (int i = 0; i < k; i++) {
        const WatchReply *z = watch_need_answer(s, &needs[i], op);
        switch (watch_need_state(&needs[i], self, op, z)) {
        case NEED_SILENT: silent[n_silent++] = needs[i].rank; break;
        case NEED_GONE: gone[n_gone++] = needs[i].rank, gone_kind = needs[i].kind; break;
        case NEED_MET: if (needs[i].kind == NEED_JOIN) in_it[n_in++] = needs[i].rank; break;
        case NEED_DIFFERENT: other[n_other++] = i; break;
        case NEED_UNMET: n_unmet++, n_working += z->state == WATCH_WORKING; break;
        }
    }
    const char *sep = "";
    if (n_silent) {
        add_ranks(&t, silent, n_silent);
        add(&t, " %s (stopped, %sor %s node is gone)", n_silent == 1 ? "does not answer" : "do not answer",
            g_polling ? "busy in its own code, " : "", n_silent == 1 ? "its" : "their");
        sep = "; ";
    }
    /* ranks in another collective of this number, each told */
    for (int j = 0; j < n_other; j++) {
        const WatchReply *z = watch_need_answer(s, &needs[other[j]], op);
        add(&t, "%srank %d ", sep, needs[other[j]].rank);
        if (z->at.kind == WATCH_NONE) {
            add(&t, "has gone on past it, to its collective #%lld of %s", (long long)z->count, group);
        } else {
            char theirs[320];
            watch_op_text(&z->at, group, theirs, sizeof theirs);
            char *cut = strstr(theirs, " (collective #"); /* its number is this one's */
            if (cut) *cut = '\0';
            add(&t, "called %s as its collective #%lld of %s", theirs, (long long)op->seq, group);
        }
        sep = "; ";
    }
    if (n_gone) {
        add(&t, "%s", sep);
        add_ranks(&t, gone, n_gone);
        add(&t, " %s finished (%s in dist_finalize) without %s", n_gone == 1 ? "has" : "have",
            n_gone == 1 ? "it waits" : "they wait",
            gone_kind == NEED_SEND ? "sending to rank" : gone_kind == NEED_RECV ? "receiving from rank"
                                                                            : "calling it");
        if (gone_kind == NEED_SEND || gone_kind == NEED_RECV) add(&t, " %d", self);
        sep = "; ";
    }
    /* the ranks it waits for, each with what it does instead (the first few) */
    for (int i = 0, shown = 0; i < k; i++) {
        const WatchReply *z = watch_need_answer(s, &needs[i], op);
        if (watch_need_state(&needs[i], self, op, z) != NEED_UNMET) continue;
        if (shown == 4) {
            add(&t, "%s(and %d more)", sep, n_unmet - shown);
            break;
        }
        shown++;
        const int r = needs[i].rank;
        switch (needs[i].kind) {
        case NEED_JOIN: add(&t, "%srank %d has not called it: ", sep, r); break;
        case NEED_SEND: add(&t, "%srank %d did not send to rank %d: ", sep, r, self); break;
        case NEED_RECV: add(&t, "%srank %d has not received from rank %d: ", sep, r, self); break;
        case NEED_FINAL: add(&t, "%srank %d has not finished: ", sep, r); break;
        }
        add_state(&t, z, silent_world, &told);
        sep = "; ";
    }
    /* the hint */
    for (int i = 1; i < n_in; i++) /* in rank order */
        for (int j = i; j > 0 && in_it[j - 1] > in_it[j]; j--) {
            const int x = in_it[j];
            in_it[j] = in_it[j - 1], in_it[j - 1] = x;
        }
    if (n_other) {
        int *differ = xcalloc((size_t)n_other, sizeof *differ);
        for (int j = 0; j < n_other; j++) differ[j] = needs[other[j]].rank;
        add(&t, ". The ranks disagree on which collective #%lld of %s is: a collective every rank "
            "must call was skipped, by ", (long long)op->seq, group);
        add_ranks(&t, differ, n_other);
        add(&t, " (the %s rank %d is in) or by ", watch_kind_name(op->kind), self);
        add_ranks(&t, in_it, n_in);
        add(&t, " (what ");
        add_ranks(&t, differ, n_other);
        add(&t, " called instead). Every rank must call the same collectives, with the same sizes, "
            "in the same order");
        xfree(differ);
    } else if (is_collective(op->kind) && !n_silent_world && !n_silent && (n_gone || n_unmet > n_working)) {
        /* (with a rank silent, the others most likely wait for it) */
        int *skipped = xcalloc((size_t)k + 1, sizeof *skipped), m = 0;
        for (int i = 0; i < k; i++) {
            const WatchReply *z = watch_need_answer(s, &needs[i], op);
            const NeedState st = watch_need_state(&needs[i], self, op, z);
            if (st == NEED_GONE || (st == NEED_UNMET && z->state == WATCH_WAITING)) skipped[m++] = needs[i].rank;
        }
        add(&t, ". A collective every rank of %s must call was skipped by ", group);
        add_ranks(&t, skipped, m);
        add(&t, ", or comes later for %s than for rank %d", m == 1 ? "it" : "them", self);
        xfree(skipped);
    } else if (op->kind == WATCH_FINALIZE && n_unmet > n_working) {
        add(&t, ". Rank %d has finished while others still wait in lib/dist: did it skip a "
            "collective or a send they wait in?", self);
    } else if (!is_collective(op->kind) && n_unmet > n_working) {
        if (op->from >= 0)
            add(&t, ". A receive with no matching send: rank %lld must send to rank %d (dist_send, or "
                "dist_sendrecv's send), on the same communicator, for it to finish", (long long)op->from, self);
        else
            add(&t, ". A send with no matching receive: rank %lld must receive from rank %d (dist_recv, "
                "or dist_sendrecv's receive), on the same communicator, for it to finish",
                (long long)op->to, self);
    }
    if (n_silent_world > n_silent && !told) { /* silent ranks this wait does not wait for directly */
        int *others = xcalloc((size_t)world, sizeof *others), m = 0;
        for (int r = 0; r < world; r++)
            if (silent_world[r]) others[m++] = r;
        add(&t, "%s", t.n ? ". " : "");
        add_ranks(&t, others, m);
        add(&t, " %s either (stopped, %sor %s node is gone): the others may wait for %s",
            m == 1 ? "does not answer" : "do not answer", g_polling ? "busy in its own code, " : "",
            m == 1 ? "its" : "their", m == 1 ? "it" : "them");
        xfree(others);
    }
    if (n_working)
        add(&t, "%s(a rank in its own code for that long is hung there, or its work takes longer "
            "than --timeout)", t.n ? " " : "");
    if (!n_silent && !n_other && !n_gone && !n_unmet) {
        if (is_collective(op->kind))
            add(&t, "every rank of %s is in it, yet it does not finish (the network, or MPI itself)", group);
        else
            add(&t, "its peer has the matching operation posted, yet it does not finish (sizes that "
                "differ? the network?)");
    }
    xfree(needs), xfree(silent), xfree(gone), xfree(in_it), xfree(other), xfree(silent_world);
}
