/* A range for every block's forward and backward in a trace (core/trace.h), for any
 * model: a hook on its block list (models/block.h), so the model itself is not touched.
 *
 *   BlockTrace *bt = block_trace_attach(&model.blocks);  // after the trace is open
 *   ... training: "layer 0 forward", "layer 0 backward", ... on the host track
 *   block_trace_detach(bt);                              // before the list is freed
 *
 * The ranges are named "<block name> forward" and "<block name> backward" (category
 * compute); another strategy's hook (a ZeRO gather, a gradient bucket) runs inside or
 * outside the range, depending on the order the hooks were added, never across it. */
#ifndef MODELS_BLOCK_TRACE_H
#define MODELS_BLOCK_TRACE_H

#include "models/block.h"

typedef struct BlockTrace BlockTrace;

/* NULL (and nothing attached) when no trace is open. */
BlockTrace *block_trace_attach(BlockList *l);
void block_trace_detach(BlockTrace *bt); /* NULL: nothing */

#endif
