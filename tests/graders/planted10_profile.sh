#!/usr/bin/env bash
# Lesson 10's profiling and roofline TODOs (10.1-10.6) against the mistakes participants
# make: each is planted in a temporary copy of the solution, the grader is linked against
# it, and the TODO's check must FAIL with the hint (or the message) that names the
# mistake. Then each TODO alone is put back to its stub: its checks must fail ("not
# implemented yet"), the others pass (or wait for it: "fix TODO X first"). The
# machinery: planted_lib.sh. Needs `make all` first. Last line: "N passed, M failed".
#   tests/graders/planted10_profile.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/graders/planted_lib.sh
. tests/graders/planted_lib.sh
planted_setup "${1:-build}" 10-performance tests/graders/grade10.c
# A plant runs its TODO's checks alone, a stub all of part 1's; never the program on 2
# ranks (timed, slow), which none of these mistakes needs to show.
PART1="ranges:,shares of a step,communication in flight,layer cost,roofline point,MFU of a training step,train --roofline,prefetch:"

# TODO 10.1 (ranges.c): the trace of two steps, the second with --clip 0
PLANTED_CHECKS="ranges:"
# the sheet quotes this hint (TODO 10.1's hints): the line the grader prints, word for word
unclosed="hint: 'optimizer' was opened and never closed (an early return? every trace_begin needs its trace_end, innermost first)"
if tr -s ' \n' '  ' <"$course/README.md" | grep -qF "\"$unclosed\""; then
    verdict "the sheet quotes the grader's hint for a range left open as the grader prints it" 1
else
    verdict "the sheet should quote the grader's hint for a range left open: \"$unclosed\"" 0
fi
plant "a range left open by an early return (--clip 0)" ranges.c 10.1 "$unclosed" \
    "if (s->clip > 0) clip_grad_norm(s->params, s->clip);|||if (s->clip <= 0) {
        adam_step(s->adam, s->params);
        return loss;
    }
    clip_grad_norm(s->params, s->clip);"
plant "a trace_end missing" ranges.c 10.1 "'load batch' was opened and never closed" \
    '    trace_end("load batch");
|||'
plant "ranges closed in the wrong order (\"step\" before \"optimizer\")" ranges.c 10.1 \
    "'step' was closed while 'optimizer' was still open inside it: closed in the wrong order" \
    '    trace_end("optimizer");
    trace_end("step");|||    trace_end("step");
    trace_end("optimizer");'
plant "\"backward\" nested inside \"forward\"" ranges.c 10.1 "'backward' lies inside 'forward'" \
    '    trace_end("forward");
    trace_begin("backward", TRACE_COMPUTE);|||    trace_begin("backward", TRACE_COMPUTE);' \
    '    trace_end("backward");
|||    trace_end("backward");
    trace_end("forward");
'
plant "no \"step\" range" ranges.c 10.1 "is not inside a \"step\" range" \
    '    trace_begin("step", TRACE_STEP);
|||' '    trace_end("step");
|||'
plant "communication inside a compute range" ranges.c 10.1 "lies inside the compute range 'backward'" \
    '    trace_end("backward");
    step_sync_gradients(s);|||    step_sync_gradients(s);
    trace_end("backward");'
plant "\"load batch\" as compute" ranges.c 10.1 "'load batch' has the category compute" \
    'trace_begin("load batch", TRACE_DATA);|||trace_begin("load batch", TRACE_COMPUTE);'

# TODO 10.2 (shares.c): a step's shares
PLANTED_CHECKS="shares of a step"
plant "children's time counted twice" shares.c 10.2 "children's time counted twice" \
    "const int64_t own = e->dur_ns - children[i];|||const int64_t own = e->dur_ns;"
plant "\"other\" counted as compute" shares.c 10.2 '"other" counted as compute' \
    "if (e->cat == TRACE_COMPUTE) s.compute_ns += own;|||if (e->cat == TRACE_COMPUTE || e->cat == TRACE_OTHER) s.compute_ns += own;"
plant "a step inside a step counted as a step" shares.c 10.2 "not inside another step" \
    "step[i] = p >= 0 && step[p] >= 0 ? step[p] : h->ev[i].cat == TRACE_STEP ? i : -1;|||step[i] = h->ev[i].cat == TRACE_STEP ? i : p >= 0 ? step[p] : -1;"
plant "the lanes', streams' and loader's events counted" shares.c 10.2 "other tracks counted" \
    "    xfree(step), xfree(children);
    trace_host_track_free(&h);|||    for (int64_t i = 0; i < t->count; i++) { /* every track's ranges inside a step, not only the host's */
        const TraceRecord *e = &t->events[i];
        if (e->pid != pid || e->tid == TRACE_TID_HOST) continue;
        if (e->cat == TRACE_COMPUTE) s.compute_ns += e->dur_ns;
        else if (e->cat == TRACE_COMM) s.comm_ns += e->dur_ns;
        else if (e->cat == TRACE_DATA) s.data_ns += e->dur_ns;
    }
    xfree(step), xfree(children);
    trace_host_track_free(&h);"
plant "ranges outside the steps counted" shares.c 10.2 "ranges outside the steps counted" \
    "if (step[i] < 0) continue;            /* outside the steps: not counted */|||if (step[i] < 0) {
            if (e->cat == TRACE_COMPUTE) s.compute_ns += e->dur_ns - children[i];
            else if (e->cat == TRACE_COMM) s.comm_ns += e->dur_ns - children[i];
            continue;
        }"

# TODO 10.3 (shares.c): communication in flight, hidden, exposed
PLANTED_CHECKS="communication in flight"
plant "lane time added to exposed" shares.c 10.3 "exposed communication counted where it overlaps compute" \
    "    xfree(inside), xfree(lanes)|||    c.exposed_ns += c.in_flight_ns; /* the lanes' time too */
    xfree(inside), xfree(lanes)"
plant "lanes summed, not unioned" shares.c 10.3 "hint: the lanes summed, not unioned:" \
    "nlanes = union_of(lanes, nlanes), nsteps|||qsort(lanes, (size_t)nlanes, sizeof *lanes, by_start);
    nsteps"
plant "lanes not cut to the steps" shares.c 10.3 "hint: the lanes not cut to the steps" \
    "for (int64_t i = 0; i < ninside; i++) c.in_flight_ns += inside[i].b - inside[i].a;|||for (int64_t i = 0; i < nlanes; i++) c.in_flight_ns += lanes[i].b - lanes[i].a;"

# TODO 10.4 (roofline.c): a layer's FLOP and bytes
PLANTED_CHECKS="layer cost"
plant "an FMA counted as 1 FLOP" roofline.c 10.4 "an FMA counted as 1 FLOP" ".flop = 2 * N * K * M|||.flop = N * K * M"
plant "4 bytes hard-coded for bf16" roofline.c 10.4 "4 bytes an element is float32's" \
    "size = (double)dtype_size(s->dtype);|||size = 4.0;"
plant "the library's roofline_layer_cost called" roofline.c 10.4 "lesson_layer_cost calls the library's roofline_layer_cost" \
    "    const double N = (double)s->rows, size|||    return roofline_layer_cost(s);
    const double N = (double)s->rows, size"

# TODO 10.5 (roofline.c): the roofline point, MFU
PLANTED_CHECKS="roofline point,MFU of a training step"
plant "max for min" roofline.c 10.5 "max for min" \
    "p.roof_gflops = memory_roof < m->peak_gflops|||p.roof_gflops = memory_roof > m->peak_gflops"
plant "the ridge inverted" roofline.c 10.5 "the ridge inverted" \
    "p.intensity < m->peak_gflops / m->bandwidth_gbs|||p.intensity < m->bandwidth_gbs / m->peak_gflops"
plant "forward-only FLOP in the MFU" roofline.c 10.5 "forward-only FLOP for a training step" \
    "3.0 * forward_flop_per_token * tokens|||forward_flop_per_token * tokens"
plant "the MFU against twice the peak" roofline.c 10.5 "against twice the peak" \
    "(peak_gflops * 1e9)|||(2 * peak_gflops * 1e9)"
plant "the library's roofline_point called" roofline.c 10.5 "lesson_roofline_point calls the library's roofline_point" \
    "    RooflinePoint p;
    p.intensity|||    return roofline_point(c, seconds, m);
    RooflinePoint p;
    p.intensity"
plant "the library's roofline_mfu called" roofline.c 10.5 "lesson_mfu calls the library's roofline_mfu" \
    "    const double step_flop = 3.0|||    return roofline_mfu(forward_flop_per_token, tokens, step_seconds, peak_gflops);
    const double step_flop = 3.0"

# TODO 10.6 (prefetch.c): the next batch read during the step
PLANTED_CHECKS="prefetch:"
plant "waiting right after starting the read" prefetch.c 10.6 "waited right after starting" \
    "if (!prefetch_in_flight(l->prefetch)) prefetch_start|||prefetch_start" \
    "    if (l->next < l->count) prefetch_start(l->prefetch, l->rows[l->next]); /* during this step */
|||"
plant "the current batch prefetched again" prefetch.c 10.6 "prefetched the current batch again" \
    "    l->next++;
    if (l->next < l->count) prefetch_start(l->prefetch, l->rows[l->next]);|||    if (l->next + 1 < l->count) prefetch_start(l->prefetch, l->rows[l->next]);
    l->next++;"
plant "the previous batch returned (racing the read that fills its buffer)" prefetch.c 10.6 \
    "returned the previous batch: wait for this call's read (prefetch_wait) and return what it gives; a batch stays valid only until the second prefetch_start after its wait, and the read in flight now is filling that very buffer" \
    "    const TokenBatch *b = prefetch_wait(l->prefetch);|||    static const TokenBatch *previous; /* handed out one call late */
    const TokenBatch *ready = prefetch_wait(l->prefetch), *b = previous ? previous : ready;
    previous = ready;"
plant "a batch skipped by the next read" prefetch.c 10.6 "a batch skipped" \
    "prefetch_start(l->prefetch, l->rows[l->next]); /* during this step */|||prefetch_start(l->prefetch, l->rows[l->next + 1 < l->count ? l->next + 1 : l->next]);"

PLANTED_CHECKS=$PART1
# each TODO alone back to its stub (the TODO 10.4-10.5 check of train --roofline runs both)
# TODO 10.1's stub is the step without ranges: it runs, its trace has no step
stub 10.1 ranges.c 1 - "nothing of category step in the trace"
stub 10.2 shares.c 2 10.3
stub 10.3 shares.c 3,4 -
stub 10.4 roofline.c 1 10.4-10.5
stub 10.5 roofline.c 2 10.4-10.5
stub 10.5 roofline.c 3 10.4-10.5
stub 10.6 prefetch.c 1 -
planted_end
