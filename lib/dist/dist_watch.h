/* Inside lib/dist's MPI backend: what this rank is doing, kept where a watchdog thread
 * can read it, and that thread, which answers the other ranks' "what are you doing?",
 * ends the job when a wait runs past the timeout or can never finish, and says why
 * (dist_diagnose.h builds the message).
 *
 * The main thread only publishes: a collective's number on its communicator and what
 * it is (a history of the last few per communicator), the wait it is in, its
 * non-blocking operations in flight. A few stores under a sequence lock, no clock, no
 * system call: the blocking call itself (MPI_Allreduce, ...) runs at MPI's own speed.
 * No MPI here: the backend hands over a transport (send, poll, abort). */
#ifndef DIST_DIST_WATCH_H
#define DIST_DIST_WATCH_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    WATCH_NONE,
    WATCH_ALL_REDUCE,
    WATCH_BROADCAST,
    WATCH_ALL_GATHER,
    WATCH_REDUCE_SCATTER,
    WATCH_BARRIER,
    WATCH_SPLIT,    /* dist_split: a collective of the communicator split */
    WATCH_SEND,
    WATCH_RECV,
    WATCH_SENDRECV,
    WATCH_FINALIZE, /* dist_finalize of the world: waits for every rank to get there */
    WATCH_KINDS
} WatchKind;

enum { WATCH_WORLD = 1 }; /* the world communicator's id; a split's is derived from it */

/* One operation, 8 words on the wire. Collectives: their number on the communicator
 * (seq, from 1) and root (broadcast), a world rank, else -1; point to point: to and
 * from, world ranks, -1 where there is none or once that part is done; op: the DistOp
 * of a reduction. */
typedef struct {
    int64_t kind, comm, seq, bytes, root, to, from, op;
} WatchOp;

enum { WATCH_INFLIGHT = 8, WATCH_MEMBERS = 32, WATCH_HISTORY = 16 };
typedef enum { WATCH_WORKING, WATCH_WAITING } WatchState;

/* A rank's answer to "what are you doing?", asked about collective #seq of comm. Only
 * int64_t: it travels as words. */
typedef struct {
    int64_t rank, state; /* WatchState: in a wait of lib/dist, or in its own code */
    int64_t waits;       /* how many waits it has begun: the same number, the same wait */
    int64_t ms;          /* how long it has been in this state */
    WatchOp cur;         /* the wait it is in, or (working) the last one it was in */
    int64_t count;       /* collectives it has started on comm; -1: not a member */
    WatchOp at, next;    /* its collective #seq and #seq + 1 there (kind WATCH_NONE: not
                          * started yet, or too long ago to be remembered) */
    int64_t inflight_n;
    WatchOp inflight[WATCH_INFLIGHT]; /* non-blocking operations not finished yet */
    int64_t comm_size, members_n;     /* cur's communicator: its size, and its first */
    int64_t members[WATCH_MEMBERS];   /* members_n world ranks */
} WatchReply;

enum { WATCH_REPLY_WORDS = (int)(sizeof(WatchReply) / sizeof(int64_t)) };

typedef struct {
    void (*send)(int to, int tag, const int64_t *words, int n); /* never blocks */
    /* A message with this tag that has arrived, into words (cap of them): how many
     * words it had, or -1 when none is there; *from its sender. */
    int (*poll)(int tag, int *from, int64_t *words, int cap);
    __attribute__((noreturn)) void (*abort)(int status);
} WatchTransport;

/* Starts watching, for world rank `rank` of `size`; threaded: a thread of its own
 * (the transport may be called from it while the main thread is in MPI), else the
 * main thread calls watch_poll in its waits. watch_stop: the thread ends (dist_finalize,
 * and at exit). */
void watch_start(int rank, int size, double timeout_s, const WatchTransport *t, bool threaded);
void watch_stop(void);
bool watch_threaded(void);

/* A communicator of `size` ranks, members[i] the world rank of its rank i: a slot of
 * its own (-1 when all are taken: then it has no history), freed by watch_comm_remove. */
int watch_comm_add(int64_t id, int size, const int64_t *members);
void watch_comm_remove(int slot);

/* The main thread, in order: watch_collective keeps a collective (numbered by the
 * caller: op->seq) in the history of its communicator's slot; watch_begin: it waits in op
 * (a collective: kept in the history too; members: the world ranks of its communicator,
 * valid until watch_end); watch_update: the parts still pending changed; watch_end:
 * back in its own code. */
void watch_collective(int slot, const WatchOp *op);
void watch_begin(int slot, const WatchOp *op, const int64_t *members, int n);
void watch_update(const WatchOp *op);
void watch_end(void);
/* A non-blocking operation in flight (a slot, or -1 when there is no room to list it),
 * and finished. */
int watch_inflight_add(const WatchOp *op);
void watch_inflight_remove(int slot);
/* The operation of the last watch_begin failed in MPI (why: MPI's message): says why it
 * failed, asking the others, and ends the job. Never returns. */
__attribute__((noreturn)) void watch_failed(const char *why);
/* Without a thread of its own: one look (answers the others, checks the deadline). */
void watch_poll(void);

#endif
