/* Ranges for the blocks' passes (models/block_trace.h). */
#include "block_trace.h"

#include <stdio.h>

#include "core/check.h"
#include "core/trace.h"

struct BlockTrace {
    BlockList *list;
    char (*names)[2][TRACE_NAME_MAX]; /* [count][pass]: made once, not at every pass */
};

static void hook(void *ctx, BlockList *l, Block *b, BlockPass pass, bool after) {
    const BlockTrace *bt = ctx;
    const char *name = bt->names[b - l->items][pass == BLOCK_BACKWARD];
    if (after) trace_end(name);
    else trace_begin(name, TRACE_COMPUTE);
}

BlockTrace *block_trace_attach(BlockList *l) {
    if (!trace_is_open()) return NULL;
    BlockTrace *bt = xcalloc(1, sizeof *bt);
    bt->list = l;
    bt->names = xcalloc((size_t)l->count, sizeof *bt->names);
    for (int i = 0; i < l->count; i++) {
        snprintf(bt->names[i][0], TRACE_NAME_MAX, "%s forward", l->items[i].name);
        snprintf(bt->names[i][1], TRACE_NAME_MAX, "%s backward", l->items[i].name);
    }
    blocks_add_hook(l, hook, bt);
    return bt;
}

void block_trace_detach(BlockTrace *bt) {
    if (!bt) return;
    blocks_remove_hook(bt->list, hook, bt);
    xfree(bt->names), xfree(bt);
}
