/* Unit tests of lib/dist's diagnosis of a wait that cannot finish (dist_diagnose.c),
 * from made-up answers of the other ranks: who is missing from a collective and what
 * it does instead, who did not send, who is silent, in which group. The same situations
 * with real ranks are tests/dist/run.sh's faults. */
#include <stdio.h>
#include <string.h>

#include "dist/dist.h"
#include "dist/dist_diagnose.h"
#include "framework/check.h"

static WatchOp all_reduce(int64_t comm, int64_t seq, int64_t bytes) {
    return (WatchOp){.kind = WATCH_ALL_REDUCE, .comm = comm, .seq = seq, .bytes = bytes, .root = -1,
                     .to = -1, .from = -1, .op = DIST_SUM};
}

/* Rank `rank`'s answer: waiting in cur (or working since it), with its collective #seq
 * of the asked communicator `at` (kind 0: not started; count: how many it started). */
static WatchReply reply(int rank, WatchState state, WatchOp cur, int64_t count, WatchOp at,
                        const int64_t *members, int n) {
    WatchReply r = {.rank = rank, .state = state, .waits = 7, .ms = 2500, .cur = cur, .count = count,
                    .at = at, .comm_size = n, .members_n = n};
    for (int i = 0; i < n; i++) r.members[i] = members[i];
    return r;
}

/* The explanation contains every one of the words, and not `absent`. */
static bool says(const char *what, const char *text, const char *absent, const char *const *words) {
    bool ok = true;
    for (; *words; words++)
        ok = expect_true(strstr(text, *words) != NULL, "%s: \"%s\" not in: %s", what, *words, text) && ok;
    if (absent) ok = expect_true(strstr(text, absent) == NULL, "%s: \"%s\" in: %s", what, absent, text) && ok;
    return ok;
}

/* All but the last of 3 ranks are in all-reduce #5 of 96 bytes; rank 2 went on to one of
 * 4608 bytes as its #5. */
static int check_skipped_by_last(void) {
    const int64_t world[] = {0, 1, 2};
    const WatchOp mine = all_reduce(WATCH_WORLD, 5, 96), theirs = all_reduce(WATCH_WORLD, 5, 4608);
    WatchAnswers s = {0};
    WatchReply r1 = reply(1, WATCH_WAITING, mine, 5, mine, world, 3);
    WatchReply r2 = reply(2, WATCH_WAITING, theirs, 5, theirs, world, 3);
    watch_answers_put(&s, 1, WATCH_WORLD, 5, &r1);
    watch_answers_put(&s, 2, WATCH_WORLD, 5, &r2);
    char text[4096];
    watch_explain(0, 3, &mine, world, 3, &s, true, text, sizeof text);
    const char *want[] = {"rank 2 called all-reduce of 4608 bytes as its collective #5 of the world",
                          "a collective every rank must call was skipped, by rank 2 (the all-reduce rank 0 is in) or by ranks 0, 1 (what rank 2 called instead)",
                          NULL};
    bool ok = says("rank 2 skipped one", text, "rank 1 ", want);
    Need nd = {2, NEED_JOIN};
    ok = expect_true(watch_need_state(&nd, 0, &mine, &r2) == NEED_DIFFERENT, "rank 2's #5 is another one") && ok;
    nd.rank = 1;
    ok = expect_true(watch_need_state(&nd, 0, &mine, &r1) == NEED_MET, "rank 1's #5 is the same") && ok;
    watch_answers_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Rank 0 alone calls all-reduce #9; ranks 1 and 2 have finished (dist_finalize). */
static int check_others_finished(void) {
    const int64_t world[] = {0, 1, 2};
    const WatchOp mine = all_reduce(WATCH_WORLD, 9, 8);
    const WatchOp fin = {.kind = WATCH_FINALIZE, .root = -1, .to = -1, .from = -1};
    WatchAnswers s = {0};
    for (int r = 1; r < 3; r++) {
        WatchReply z = reply(r, WATCH_WAITING, fin, 8, (WatchOp){0}, world, 3);
        watch_answers_put(&s, r, WATCH_WORLD, 9, &z);
    }
    char text[4096];
    watch_explain(0, 3, &mine, world, 3, &s, true, text, sizeof text);
    const char *want[] = {"ranks 1, 2 have finished (they wait in dist_finalize) without calling it",
                          "A collective every rank of the world must call was skipped by ranks 1, 2", NULL};
    bool ok = says("ranks 1, 2 finished", text, NULL, want);
    watch_answers_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Groups {0, 1} and {2, 3} of 4 ranks: world rank 3 waits in its group's all-reduce, and
 * world rank 2 (rank 0 of that group) does not answer: named by its world rank. */
static int check_silent_in_group(void) {
    const int64_t group[] = {2, 3};
    const int64_t group01[] = {0, 1};
    const WatchOp mine = all_reduce(77, 12, 4608), theirs = all_reduce(78, 12, 4608);
    WatchAnswers s = {0};
    for (int r = 0; r < 2; r++) { /* the other group's ranks answer; world rank 2 does not */
        WatchReply z = reply(r, WATCH_WAITING, theirs, -1, (WatchOp){0}, group01, 2);
        watch_answers_put(&s, r, 77, 12, &z);
    }
    char text[4096], name[160];
    watch_explain(3, 4, &mine, group, 2, &s, true, text, sizeof text);
    watch_group_name(77, 2, group, 2, name, sizeof name);
    const char *want[] = {"rank 2 does not answer (stopped, or its node is gone)", NULL};
    const char *group_name[] = {"the group of world ranks 2, 3", NULL};
    bool ok = says("world rank 2 silent", text, "rank 0", want);
    ok = says("the group's name", name, NULL, group_name) && ok;
    char op[400];
    watch_op_text(&mine, name, op, sizeof op);
    const char *op_words[] = {"all-reduce of 4608 bytes (collective #12 of the group of world ranks 2, 3)", NULL};
    ok = says("the operation", op, NULL, op_words) && ok;
    watch_answers_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A ring that receives from r + 1: rank 0 waits for rank 1, which sends to and receives
 * from rank 2. */
static int check_did_not_send(void) {
    const int64_t world[] = {0, 1, 2, 3};
    const WatchOp mine = {.kind = WATCH_SENDRECV, .comm = WATCH_WORLD, .bytes = 8192, .root = -1,
                          .to = -1 /* sent */, .from = 1};
    const WatchOp theirs = {.kind = WATCH_SENDRECV, .comm = WATCH_WORLD, .bytes = 8192, .root = -1,
                            .to = -1, .from = 2};
    WatchAnswers s = {0};
    WatchReply r1 = reply(1, WATCH_WAITING, theirs, 0, (WatchOp){0}, world, 4);
    watch_answers_put(&s, 1, WATCH_WORLD, 0, &r1);
    for (int r = 2; r < 4; r++) { /* the rest of the ring waits too */
        const WatchOp next = {.kind = WATCH_SENDRECV, .comm = WATCH_WORLD, .bytes = 8192, .root = -1,
                              .to = -1, .from = (r + 1) % 4};
        WatchReply z = reply(r, WATCH_WAITING, next, 0, (WatchOp){0}, world, 4);
        watch_answers_put(&s, r, WATCH_WORLD, 0, &z);
    }
    char text[4096];
    watch_explain(0, 4, &mine, world, 4, &s, true, text, sizeof text);
    const char *want[] = {"rank 1 did not send to rank 0: it waits in send+receive of 8192 bytes (from rank 2; in the world)",
                          "A receive with no matching send: rank 1 must send to rank 0", NULL};
    bool ok = says("rank 1 did not send", text, NULL, want);
    /* the same, but rank 1 has a send to rank 0 in flight: the need is met */
    r1.inflight_n = 1;
    r1.inflight[0] = (WatchOp){.kind = WATCH_SEND, .comm = WATCH_WORLD, .bytes = 4096, .to = 0, .from = -1};
    Need nd = {1, NEED_SEND};
    ok = expect_true(watch_need_state(&nd, 0, &mine, &r1) == NEED_MET, "a send in flight to rank 0") && ok;
    r1.inflight[0].comm = 77; /* on another communicator: no match */
    ok = expect_true(watch_need_state(&nd, 0, &mine, &r1) == NEED_UNMET, "a send on another communicator") && ok;
    watch_answers_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A rank in its own code for longer than the timeout is told so, with its last wait. */
static int check_working(void) {
    const int64_t world[] = {0, 1};
    const WatchOp mine = all_reduce(WATCH_WORLD, 3, 4000), last = all_reduce(WATCH_WORLD, 2, 4000);
    WatchAnswers s = {0};
    WatchReply r1 = reply(1, WATCH_WORKING, last, 2, (WatchOp){0}, world, 2);
    watch_answers_put(&s, 1, WATCH_WORLD, 3, &r1);
    char text[4096];
    watch_explain(0, 2, &mine, world, 2, &s, true, text, sizeof text);
    const char *want[] = {"rank 1 has not called it: it is in its own code, for 2.5 s since its all-reduce of 4000 bytes (collective #2 of the world)",
                          "hung there, or its work takes longer than --timeout", NULL};
    bool ok = says("rank 1 in its own code", text, "skipped", want);
    watch_answers_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Lesson 09's groups on 4 ranks, world rank 2 stopped: world rank 1 waits in the data
 * group {1, 3}; rank 3 waits in its tensor group {2, 3} for rank 2. Rank 3 is not blamed
 * for skipping: rank 2, which it waits for, is named. */
static int check_waits_for_silent(void) {
    const int64_t data13[] = {1, 3}, tensor23[] = {2, 3}, data02[] = {0, 2};
    const WatchOp mine = all_reduce(55, 610, 140016);
    WatchAnswers s = {0};
    WatchReply r0 = reply(0, WATCH_WAITING, all_reduce(54, 610, 140016), -1, (WatchOp){0}, data02, 2);
    WatchReply r3 = reply(3, WATCH_WAITING, all_reduce(66, 3966, 4608), 609, (WatchOp){0}, tensor23, 2);
    watch_answers_put(&s, 0, 55, 610, &r0);
    watch_answers_put(&s, 3, 55, 610, &r3);
    char text[4096];
    watch_explain(1, 4, &mine, data13, 2, &s, true, text, sizeof text);
    const char *want[] = {"rank 3 has not called it: it waits in all-reduce of 4608 bytes (collective #3966 "
                          "of the group of world ranks 2, 3), for 2.5 s, where rank 2 does not answer", NULL};
    bool ok = says("rank 3 waits for rank 2", text, "skipped", want);
    watch_answers_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("dist: why a wait cannot finish");
    check_run(NULL, "a collective the last rank skipped: named, with what it called instead", check_skipped_by_last, 10);
    check_run(NULL, "a collective the others skipped to finish: named, with the hint", check_others_finished, 10);
    check_run(NULL, "a silent rank of a group: its world rank, the group by world ranks", check_silent_in_group, 10);
    check_run(NULL, "a receive whose peer did not send: the peer named, with what it waits in", check_did_not_send, 10);
    check_run(NULL, "a rank in its own code past the timeout: told, not called silent", check_working, 10);
    check_run(NULL, "a rank that waits for a silent one: not blamed, the silent one named", check_waits_for_silent, 10);
    return check_end();
}
