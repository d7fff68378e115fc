/* TODO 8.5: stage 3, a block's parameters just in time.
 *
 * At stage 3 no rank holds the whole model. Before a block's forward (and again before
 * its backward: the parameters were dropped after the forward) its pieces are gathered
 * into a window; after the pass the window is given back. Waiting for each gather
 * would stall every block on the network, so the next block's gather starts as soon as
 * this one's parameters are there: it travels while this block computes (prefetch).
 * Forward runs the blocks in order, backward in reverse: the next one is the unit after
 * this one going forward, the one before it going back. Two windows are enough: one in
 * use, one on its way.
 *
 * The library gives the mechanics (lib/parallel/zero.h): zero_unit_of(z, b) (NULL for a
 * block without parameters), zero_gather(z, u) (start; nothing if it is there or on its
 * way), zero_await(z, u) (wait, and point the block's parameters at the window),
 * zero_release(z, u); the units are z->units[0 .. z->nunits), in block order. */
#include "lesson.h"

void lesson_stage3_hook(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after) {
    Zero *z = ctx;
    ZeroUnit *u = zero_unit_of(z, b);
    if (!u) return;
    (void)l;
    if (after) {
        zero_release(z, u);
        return;
    }
    zero_await(z, u);
    const int next = (int)(u - z->units) + (pass == BLOCK_FORWARD ? 1 : -1);
    if (next >= 0 && next < z->nunits) zero_gather(z, &z->units[next]);
}
