/* Inside lib/dist: why a wait of the MPI backend cannot finish, from the other ranks'
 * answers (dist_watch.h's WatchReply): which world ranks are missing from a collective
 * or did not send, what they do instead, in which group, and a hint. Plain functions
 * of their arguments, no MPI: tests/unit/test_dist_diagnose.c feeds them made-up
 * answers. */
#ifndef DIST_DIST_DIAGNOSE_H
#define DIST_DIST_DIAGNOSE_H

#include <stdbool.h>
#include <stddef.h>

#include "dist_watch.h"

/* The answers collected so far: one per rank and question (the collective asked
 * about: comm and seq). */
typedef struct {
    int rank;
    int64_t comm, seq;
    WatchReply r;
} WatchAnswer;

typedef struct {
    WatchAnswer *a;
    int n, cap;
} WatchAnswers;

void watch_answers_put(WatchAnswers *s, int rank, int64_t comm, int64_t seq, const WatchReply *r);
/* rank's answer about collective #seq of comm, or (comm 0) its latest about anything;
 * NULL: none */
const WatchReply *watch_answer(const WatchAnswers *s, int rank, int64_t comm, int64_t seq);
void watch_answers_free(WatchAnswers *s);

/* What a wait needs from one other rank. */
typedef enum {
    NEED_JOIN,  /* to be in the same collective (its number, kind, size and root) */
    NEED_SEND,  /* to send to this rank */
    NEED_RECV,  /* to receive from this rank */
    NEED_FINAL, /* to be in dist_finalize too */
} NeedKind;

typedef struct {
    int rank;
    NeedKind kind;
} Need;

/* Whether that rank provides it: */
typedef enum {
    NEED_MET,
    NEED_UNMET,     /* not (yet): it does something else */
    NEED_DIFFERENT, /* its collective of that number is another one: never */
    NEED_GONE,      /* it has finished (dist_finalize) without it: never */
    NEED_SILENT,    /* no answer */
} NeedState;

/* The needs of `self`'s op (members: the world ranks of op's communicator, n of them;
 * world: the job's size) into out (cap of them): how many. */
int watch_needs(int self, int world, const WatchOp *op, const int64_t *members, int n, Need *out,
                int cap);
/* z: the answer of nd->rank (about op's collective, for NEED_JOIN); NULL: none came. */
NeedState watch_need_state(const Need *nd, int self, const WatchOp *op, const WatchReply *z);
/* The answer a need is judged on (comm and seq asked, for NEED_JOIN). */
const WatchReply *watch_need_answer(const WatchAnswers *s, const Need *nd, const WatchOp *op);

/* "all-reduce", "send+receive", "dist_finalize", ... */
const char *watch_kind_name(int64_t kind);
/* "the world", "the group of world ranks 2, 3", "the group of 64 ranks (world ranks 0,
 * 2, ...)" */
void watch_group_name(int64_t comm, int64_t size, const int64_t *members, int64_t n, char *out,
                      size_t cap);
/* "all-reduce of 96 bytes (collective #57 of GROUP)", "receive of 4096 bytes from rank 3
 * (in GROUP)" */
void watch_op_text(const WatchOp *op, const char *group, char *out, size_t cap);

/* Why `self`'s op (on a communicator of n ranks, members their world ranks) does not
 * finish, told from the answers: one or more sentences, into out. everyone: every rank
 * was asked, so a rank without an answer is silent even where op does not need it. */
void watch_explain(int self, int world, const WatchOp *op, const int64_t *members, int n,
                   const WatchAnswers *s, bool everyone, char *out, size_t cap);
/* The ranks answer only from inside lib/dist (no watchdog thread): a silent one may be
 * busy in its own code. */
void watch_explain_polling(bool on);

#endif
