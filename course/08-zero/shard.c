/* TODO 8.1: the shard ranges, with padding.
 *
 * ZeRO cuts each block's parameters (one range of the flat buffer, n scalars) into as
 * many pieces as there are ranks, all of the same size, so that a reduce-scatter gives
 * every rank one piece and an all-gather puts the pieces back together: collectives
 * move equal blocks. When n does not divide by the world size the range is padded with
 * zeros at its end: the padding is reduced, updated and gathered like the rest, stays
 * zero (its gradient is zero, so is every update), and is never a parameter. Rank r's
 * piece is [r s, r s + s) of the padded range; the last ranks' pieces may hold padding
 * only partly, or entirely (n = 5 on 4 ranks: s = 2, padded 8; rank 3's piece [6, 8)
 * holds none of the 5 scalars). */
#include "lesson.h"

ZeroRange lesson_shard_range(int64_t n, int world, int rank) {
#ifdef SOLUTION
    ZeroRange r;
    r.piece = (n + world - 1) / world;
    r.padded = r.piece * world;
    r.start = r.piece * rank;
    const int64_t end = r.start + r.piece < n ? r.start + r.piece : n;
    r.own = end > r.start ? end - r.start : 0;
    return r;
#else
    /* TODO 8.1: piece = n / world rounded up (in integers: (n + world - 1) / world);
     * padded = world pieces; start = rank's piece's first scalar; own = how many of
     * [start, start + piece) are below n (never negative). */
    TODO_STOP("8.1");
#endif
}
