/* What this rank is doing, and the watchdog that watches it (dist_watch.h).
 *
 * The main thread writes the state under a sequence lock (a counter, odd while it
 * writes; a reader copies and tries again when the counter moved), as relaxed atomic
 * stores: a blocking collective costs a few stores, never a lock or a system call. The
 * watchdog wakes every 10 ms: it answers the queries that came, and when the main thread
 * has been in one wait for a while it looks at the ranks that wait depends on (probe):
 * when one of them is in another collective of that number, has finished, or every rank
 * it reaches waits for another one in the same places twice (a deadlock), the job can
 * never go on, and ends now. Past the timeout it asks every rank and ends the job. */
#include "dist_watch.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "core/timer.h"
#include "dist_diagnose.h"

enum { TAG_QUERY = 2, TAG_REPLY = 3, QUERY_WORDS = 3, COMMS = 64, SLOTS = 16, NODES = 32 };
enum { FAILED = 2 }; /* a state beyond WatchState: an MPI call failed */

typedef struct {
    _Atomic int64_t w[8];
} AtomicOp;

typedef struct {
    _Atomic int64_t id; /* 0: a free slot */
    _Atomic int64_t count, size, n;
    _Atomic int64_t members[WATCH_MEMBERS];
    AtomicOp history[WATCH_HISTORY]; /* collective #seq at seq % WATCH_HISTORY */
} Comm;

static struct {
    int rank, size;
    double timeout_s;
    WatchTransport t;
    bool threaded, running;
    pthread_t thread;
    atomic_bool stop;
    /* written by the main thread, under the lock */
    atomic_uint_fast64_t lock;
    _Atomic int64_t state, waits;
    AtomicOp cur;
    const int64_t *cur_members; /* the main thread's, valid while it waits in cur */
    _Atomic int cur_n;
    Comm comms[COMMS];
    _Atomic int64_t used[SLOTS];
    AtomicOp inflight[SLOTS];
    char failure[256];
    /* the watchdog's own */
    int64_t seen_state, seen_waits;
    double seen_at, next_probe, last_poll;
    int64_t nonce;
} g;

/* ---------------------------------------------------------------- the lock */

static inline void put(_Atomic int64_t *a, int64_t v) { atomic_store_explicit(a, v, memory_order_relaxed); }
static inline int64_t get(_Atomic int64_t *a) { return atomic_load_explicit(a, memory_order_relaxed); }

static inline void put_op(AtomicOp *a, const WatchOp *o) {
    const int64_t *w = &o->kind;
    for (int i = 0; i < 8; i++) put(&a->w[i], w[i]);
}
static inline void get_op(WatchOp *o, AtomicOp *a) {
    int64_t *w = &o->kind;
    for (int i = 0; i < 8; i++) w[i] = get(&a->w[i]);
}

static inline void write_begin(void) {
    const uint_fast64_t s = atomic_load_explicit(&g.lock, memory_order_relaxed);
    atomic_store_explicit(&g.lock, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
}
static inline void write_end(void) {
    const uint_fast64_t s = atomic_load_explicit(&g.lock, memory_order_relaxed);
    atomic_store_explicit(&g.lock, s + 1, memory_order_release);
}
static inline uint_fast64_t read_begin(void) {
    for (;;) {
        const uint_fast64_t s = atomic_load_explicit(&g.lock, memory_order_acquire);
        if (!(s & 1)) return s;
        sched_yield();
    }
}
static inline bool read_again(uint_fast64_t s) {
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&g.lock, memory_order_relaxed) != s;
}

/* ---------------------------------------------------------------- the main thread */

int watch_comm_add(int64_t id, int size, const int64_t *members) {
    for (int i = 0; i < COMMS; i++) {
        Comm *c = &g.comms[i];
        if (get(&c->id)) continue;
        write_begin();
        put(&c->count, 0);
        put(&c->size, size);
        put(&c->n, size < WATCH_MEMBERS ? size : WATCH_MEMBERS);
        for (int k = 0; k < size && k < WATCH_MEMBERS; k++) put(&c->members[k], members[k]);
        for (int k = 0; k < WATCH_HISTORY; k++) put_op(&c->history[k], &(WatchOp){0});
        put(&c->id, id);
        write_end();
        return i;
    }
    return -1;
}

void watch_comm_remove(int slot) {
    if (slot < 0) return;
    write_begin();
    put(&g.comms[slot].id, 0);
    write_end();
}

/* Inside a write: a collective into its slot's history (again: the same entry). */
static void record(int slot, const WatchOp *op) {
    if (slot < 0 || op->kind < WATCH_ALL_REDUCE || op->kind > WATCH_SPLIT) return;
    Comm *c = &g.comms[slot];
    if (get(&c->count) < op->seq) put(&c->count, op->seq);
    put_op(&c->history[op->seq % WATCH_HISTORY], op);
}

void watch_collective(int slot, const WatchOp *op) {
    write_begin();
    record(slot, op);
    write_end();
}

void watch_begin(int slot, const WatchOp *op, const int64_t *members, int n) {
    write_begin();
    record(slot, op);
    put_op(&g.cur, op);
    g.cur_members = members;
    atomic_store_explicit(&g.cur_n, n, memory_order_relaxed);
    put(&g.waits, get(&g.waits) + 1);
    put(&g.state, WATCH_WAITING);
    write_end();
}

void watch_update(const WatchOp *op) {
    write_begin();
    put_op(&g.cur, op);
    write_end();
}

void watch_end(void) {
    write_begin();
    put(&g.state, WATCH_WORKING);
    write_end();
}

int watch_inflight_add(const WatchOp *op) {
    for (int i = 0; i < SLOTS; i++) {
        if (get(&g.used[i])) continue;
        write_begin();
        put_op(&g.inflight[i], op);
        put(&g.used[i], 1);
        write_end();
        return i;
    }
    return -1;
}

void watch_inflight_remove(int slot) {
    if (slot < 0) return;
    write_begin();
    put(&g.used[slot], 0);
    write_end();
}

/* ---------------------------------------------------------------- answering */

static Comm *find_comm(int64_t id) {
    for (int i = 0; id && i < COMMS; i++)
        if (get(&g.comms[i].id) == id) return &g.comms[i];
    return NULL;
}

/* collective #seq of c, if still remembered */
static void remembered(WatchOp *o, Comm *c, int64_t seq) {
    *o = (WatchOp){0};
    if (!c || seq < 1 || seq > get(&c->count) || get(&c->count) - seq >= WATCH_HISTORY) return;
    get_op(o, &c->history[seq % WATCH_HISTORY]);
    if (o->seq != seq) *o = (WatchOp){0};
}

/* This rank's answer about collective #seq of comm. */
static void snapshot(WatchReply *r, int64_t comm, int64_t seq) {
    for (;;) {
        const uint_fast64_t s = read_begin();
        memset(r, 0, sizeof *r);
        r->rank = g.rank;
        r->state = get(&g.state) == WATCH_WORKING ? WATCH_WORKING : WATCH_WAITING;
        r->waits = get(&g.waits);
        get_op(&r->cur, &g.cur);
        Comm *c = find_comm(comm);
        r->count = c ? get(&c->count) : -1;
        remembered(&r->at, c, seq);
        remembered(&r->next, c, seq + 1);
        for (int i = 0; i < SLOTS && r->inflight_n < WATCH_INFLIGHT; i++)
            if (get(&g.used[i])) get_op(&r->inflight[r->inflight_n++], &g.inflight[i]);
        Comm *mine = find_comm(r->cur.comm);
        if (mine) {
            r->comm_size = get(&mine->size);
            r->members_n = get(&mine->n);
            for (int k = 0; k < r->members_n; k++) r->members[k] = get(&mine->members[k]);
        }
        if (!read_again(s)) break;
    }
    const bool same = r->state == (g.seen_state == WATCH_WORKING ? WATCH_WORKING : WATCH_WAITING) &&
                      r->waits == g.seen_waits;
    r->ms = same ? (int64_t)((now_seconds() - g.seen_at) * 1000) : 0;
}

static void answer_queries(void) {
    int64_t q[8], w[1 + WATCH_REPLY_WORDS];
    int from;
    while (g.t.poll(TAG_QUERY, &from, q, 8) == QUERY_WORDS) {
        WatchReply r;
        snapshot(&r, q[1], q[2]);
        w[0] = q[0];
        memcpy(w + 1, &r, sizeof r);
        g.t.send(from, TAG_REPLY, w, 1 + WATCH_REPLY_WORDS);
    }
}

static void sleep_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* ---------------------------------------------------------------- asking */

/* The main thread is still in wait number `waits` (not finished with it, nor in another). */
static bool still_in(int64_t waits) {
    for (;;) {
        const uint_fast64_t s = read_begin();
        const bool in = get(&g.waits) == waits && get(&g.state) != WATCH_WORKING;
        if (!read_again(s)) return in;
    }
}

/* Asks the n ranks about collective #seq of comm and waits up to wait_s for their
 * answers (into s), answering the others meanwhile; gives up early when this rank's
 * wait `waits` has ended (waits >= 0). How many did not answer. (The probe judges only
 * while its wait goes on: one that finished meanwhile could look like a rank that went
 * on past it.) */
static int ask(const int *ranks, int n, int64_t comm, int64_t seq, double wait_s, WatchAnswers *s,
               int64_t waits) {
    const int64_t nonce = ++g.nonce, q[QUERY_WORDS] = {nonce, comm, seq};
    bool *pending = xcalloc((size_t)g.size, sizeof *pending);
    int left = 0;
    for (int i = 0; i < n; i++) {
        if (ranks[i] != g.rank) continue;
        WatchReply mine; /* this rank answers itself at once */
        snapshot(&mine, comm, seq);
        watch_answers_put(s, g.rank, comm, seq, &mine);
    }
    for (int i = 0; i < n; i++)
        if (ranks[i] != g.rank && ranks[i] >= 0 && ranks[i] < g.size && !pending[ranks[i]]) {
            pending[ranks[i]] = true, left++;
            g.t.send(ranks[i], TAG_QUERY, q, QUERY_WORDS);
        }
    int64_t w[2 + WATCH_REPLY_WORDS];
    const double until = now_seconds() + wait_s;
    while (left > 0 && now_seconds() < until) {
        answer_queries();
        int from, k;
        bool any = false;
        while ((k = g.t.poll(TAG_REPLY, &from, w, 2 + WATCH_REPLY_WORDS)) >= 0) {
            any = true;
            if (k != 1 + WATCH_REPLY_WORDS || w[0] != nonce || from < 0 || from >= g.size || !pending[from])
                continue; /* an answer to an earlier question */
            WatchReply r;
            memcpy(&r, w + 1, sizeof r);
            watch_answers_put(s, from, comm, seq, &r);
            pending[from] = false, left--;
        }
        if (waits >= 0 && !still_in(waits)) break;
        if (!any) sleep_s(0.001);
    }
    xfree(pending);
    return left;
}

/* ---------------------------------------------------------------- ending the job */

typedef enum { ENDS_TIMEOUT, ENDS_FAILED, ENDS_STUCK } Ending;

/* What the main thread waits in, its communicator's world ranks, and the wait's number. */
static int64_t current(WatchOp *op, const int64_t **members, int *n) {
    for (;;) {
        const uint_fast64_t s = read_begin();
        get_op(op, &g.cur);
        *members = g.cur_members;
        *n = atomic_load_explicit(&g.cur_n, memory_order_relaxed);
        const int64_t waits = get(&g.waits);
        if (!read_again(s)) return waits;
    }
}

/* Prints why the wait ends the job (asking every rank first, unless `have` has the
 * answers already), then ends it. `more`: a sentence to add, or NULL. */
static __attribute__((noreturn)) void end_job(Ending how, WatchAnswers *have, const char *more) {
    WatchOp op;
    const int64_t *members;
    int n;
    current(&op, &members, &n);
    WatchAnswers s = {0};
    if (have) {
        s = *have;
    } else {
        int *all = xcalloc((size_t)g.size, sizeof *all);
        for (int r = 0; r < g.size; r++) all[r] = r;
        const double give_up = how == ENDS_TIMEOUT ? (g.timeout_s < 20 ? g.timeout_s / 2 : 10)
                                                   : (g.timeout_s < 6 ? g.timeout_s / 2 : 3);
        ask(all, g.size, op.comm, op.seq, give_up, &s, -1);
        xfree(all);
    }
    const size_t cap = 8192;
    char *why = xmalloc(cap), *line = xmalloc(cap + 1024), group[160], what[400];
    watch_explain(g.rank, g.size, &op, members, n, &s, !have, why, cap);
    watch_group_name(op.comm, n, members, n, group, sizeof group);
    watch_op_text(&op, group, what, sizeof what);
    if (how == ENDS_TIMEOUT)
        snprintf(line, cap + 1024, "error: rank %d: %s did not finish within %.0f s (--timeout): %s%s%s. "
                 "Ending the whole job.\n", g.rank, what, g.timeout_s, why, more ? ". " : "", more ? more : "");
    else if (how == ENDS_FAILED)
        snprintf(line, cap + 1024, "error: rank %d: %s failed in MPI (%s): %s%s%s. Ending the whole job.\n",
                 g.rank, what, g.failure, why, more ? ". " : "", more ? more : "");
    else
        snprintf(line, cap + 1024, "error: rank %d: %s can never finish: %s%s%s. Ending the whole job.\n",
                 g.rank, what, why, more ? ". " : "", more ? more : "");
    fflush(stdout);
    fputs(line, stderr);
    fflush(stderr);
    g.t.abort(EXIT_USER_ERROR);
}

/* ---------------------------------------------------------------- the probe */

typedef struct {
    int rank;
    WatchOp op;
    int64_t members[WATCH_MEMBERS];
    const int64_t *all; /* this rank's own: every member */
    int n;
} Node;

static const int64_t *node_members(const Node *x) { return x->all ? x->all : x->members; }

/* Whether the wait in progress can never finish, from the ranks it depends on and the
 * ranks those depend on (up to NODES of them); ends the job when it cannot. Anything
 * unsure (a rank silent, in its own code, or able to go on) leaves it to the timeout. */
static void probe(void) {
    WatchOp op;
    const int64_t *members;
    int n;
    const int64_t waits = current(&op, &members, &n);
    Node *nodes = xcalloc(NODES, sizeof *nodes);
    bool *reached = xcalloc((size_t)g.size, sizeof *reached);
    Need *needs = xcalloc((size_t)g.size * 2 + 2, sizeof *needs);
    int *want = xcalloc((size_t)g.size * 2 + 2, sizeof *want);
    WatchAnswers s = {0};
    int nn = 1, stuck_at = -1;
    nodes[0] = (Node){.rank = g.rank, .op = op, .all = members, .n = n};
    reached[g.rank] = true;
    for (int i = 0; i < nn; i++) {
        const Node *x = &nodes[i];
        const int k = watch_needs(x->rank, g.size, &x->op, node_members(x), x->n, needs, g.size * 2 + 2);
        int m = 0;
        for (int j = 0; j < k; j++)
            if (!watch_need_answer(&s, &needs[j], &x->op)) want[m++] = needs[j].rank;
        ask(want, m, x->op.comm, x->op.seq, 1.0, &s, waits);
        if (!still_in(waits)) goto unsure;
        bool blocked = false;
        for (int j = 0; j < k; j++) {
            const WatchReply *z = watch_need_answer(&s, &needs[j], &x->op);
            const NeedState st = watch_need_state(&needs[j], x->rank, &x->op, z);
            if (st == NEED_SILENT) goto unsure;
            /* another collective of that number, or one a finished rank never called: for
             * good (what has happened stays so) */
            if (st == NEED_DIFFERENT || (st == NEED_GONE && needs[j].kind == NEED_JOIN)) {
                stuck_at = i;
                goto stuck;
            }
            if (st == NEED_MET) continue;
            blocked = true;
            if (st == NEED_GONE) continue; /* finished, but it may have sent before: judged below */
            if (z->state != WATCH_WAITING) goto unsure; /* it may come */
            if (reached[needs[j].rank]) continue;
            const bool collective = z->cur.kind >= WATCH_ALL_REDUCE && z->cur.kind <= WATCH_SPLIT;
            if (nn == NODES || (collective && z->members_n < z->comm_size)) goto unsure;
            Node *y = &nodes[nn++];
            *y = (Node){.rank = needs[j].rank, .op = z->cur, .n = (int)z->members_n};
            memcpy(y->members, z->members, sizeof y->members);
            reached[needs[j].rank] = true;
        }
        if (!blocked) goto unsure; /* it can finish */
    }
    /* Every rank reached waits for another one of them: a deadlock, unless something
     * moves meanwhile. A rank's answer can lag behind its MPI (a message that came while
     * its thread was not running), so their waits must stay the same over two more
     * looks, half a second apart. Without a watchdog thread a rank's wait does not move
     * while it probes itself: there only the timeout tells. */
    if (!g.threaded) goto unsure;
    for (int look = 0; look < 2; look++) {
        sleep_s(0.5);
        for (int i = 1; i < nn; i++) {
            WatchAnswers again = {0};
            ask(&nodes[i].rank, 1, 0, 0, 1.0, &again, waits);
            const WatchReply *z = watch_answer(&again, nodes[i].rank, 0, 0);
            const WatchReply *before = watch_answer(&s, nodes[i].rank, 0, 0);
            const bool moved = !z || !before || z->waits != before->waits || z->state != before->state;
            watch_answers_free(&again);
            if (moved) goto unsure;
        }
        if (!still_in(waits)) goto unsure;
    }
stuck:;
    /* One rank tells: the one whose own wait shows it, or the lowest one of a deadlock.
     * The others wait a little for it to end the job (their message would tell the same
     * from another side) and tell it themselves if it does not. */
    int lowest = g.rank;
    for (int i = 0; i < nn; i++)
        if (nodes[i].rank < lowest) lowest = nodes[i].rank;
    if (stuck_at != 0 && lowest != g.rank) {
        const double until = now_seconds() + 2.0;
        while (now_seconds() < until) answer_queries(), sleep_s(0.005);
    }
    char *more = xmalloc(4096);
    more[0] = '\0';
    if (stuck_at > 0) {
        const Node *x = &nodes[stuck_at];
        char group[160], what[400], why[3000];
        watch_group_name(x->op.comm, x->n, node_members(x), x->n, group, sizeof group);
        watch_op_text(&x->op, group, what, sizeof what);
        watch_explain(x->rank, g.size, &x->op, node_members(x), x->n, &s, false, why, sizeof why);
        snprintf(more, 4096, "And rank %d's %s can never finish: %s", x->rank, what, why);
    } else if (stuck_at < 0) {
        int k = snprintf(more, 4096, "Every one of ranks");
        for (int r = 0, shown = 0; r < g.size && k < 4000; r++) /* in rank order */
            if (reached[r]) k += snprintf(more + k, 4096 - (size_t)k, "%s %d", shown++ ? "," : "", r);
        snprintf(more + k, 4096 - (size_t)k, " waits for another of them: the job is deadlocked");
    }
    end_job(ENDS_STUCK, &s, more[0] ? more : NULL);
unsure:
    watch_answers_free(&s);
    xfree(nodes), xfree(reached), xfree(needs), xfree(want);
}

/* ---------------------------------------------------------------- the watchdog */

static void tick(void) {
    answer_queries();
    int64_t state, waits;
    for (;;) {
        const uint_fast64_t s = read_begin();
        state = get(&g.state), waits = get(&g.waits);
        if (!read_again(s)) break;
    }
    const double now = now_seconds(), first_probe = g.timeout_s / 4 < 2 ? g.timeout_s / 4 : 2;
    if (state != g.seen_state || waits != g.seen_waits) {
        g.seen_state = state, g.seen_waits = waits, g.seen_at = now;
        g.next_probe = first_probe;
    }
    if (state == FAILED) end_job(ENDS_FAILED, NULL, NULL);
    if (state != WATCH_WAITING) return;
    const double waited = now - g.seen_at;
    if (waited >= g.timeout_s) end_job(ENDS_TIMEOUT, NULL, NULL);
    if (waited >= g.next_probe) {
        g.next_probe *= 2; /* again later: a wait can become stuck after it began */
        probe();
    }
}

static void *watchdog(void *arg) {
    (void)arg;
    while (!atomic_load(&g.stop)) {
        tick();
        sleep_s(0.01);
    }
    return NULL;
}

void watch_poll(void) {
    const double now = now_seconds();
    if (now - g.last_poll < 0.005) return;
    g.last_poll = now;
    tick();
}

static void stop_at_exit(void) { watch_stop(); }

void watch_start(int rank, int size, double timeout_s, const WatchTransport *t, bool threaded) {
    g.rank = rank, g.size = size, g.timeout_s = timeout_s, g.t = *t, g.threaded = threaded;
    g.seen_state = -1;
    atomic_store(&g.stop, false);
    if (threaded && pthread_create(&g.thread, NULL, watchdog, NULL) != 0)
        g.threaded = false; /* the main thread looks in its waits instead */
    watch_explain_polling(!g.threaded);
    if (!g.threaded) return;
    g.running = true;
    static bool registered = false;
    if (!registered) registered = true, atexit(stop_at_exit);
}

void watch_stop(void) {
    if (!g.running || pthread_equal(pthread_self(), g.thread)) return;
    atomic_store(&g.stop, true);
    pthread_join(g.thread, NULL);
    g.running = false;
}

bool watch_threaded(void) { return g.threaded; }

__attribute__((noreturn)) void watch_failed(const char *why) {
    snprintf(g.failure, sizeof g.failure, "%s", why);
    write_begin();
    put(&g.state, FAILED);
    write_end();
    if (!g.running) end_job(ENDS_FAILED, NULL, NULL);
    for (;;) sleep_s(1); /* the watchdog tells and ends the job */
}
