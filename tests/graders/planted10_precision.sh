#!/usr/bin/env bash
# Lesson 10's mixed-precision TODOs (10.7-10.10) against the mistakes participants make:
# each is planted in a temporary copy of the solution, the grader is linked against it,
# and the TODO's check must FAIL with the hint that names the mistake. Then each TODO
# alone is put back to its stub: its check must fail ("not implemented yet"), the others
# pass (or wait for it: "fix TODO X first"). And the sheet's --precision-demo output is
# the program's. The machinery: planted_lib.sh. Needs `make all` first. Last line: "N
# passed, M failed".
#   tests/graders/planted10_precision.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/graders/planted_lib.sh
. tests/graders/planted_lib.sh
planted_setup "${1:-build}" 10-performance tests/graders/grade10.c
# Only part 2's checks run: the profile's program check (2 ranks, timed) tests none of this.
PLANTED_CHECKS="bf16 rounding,master weights,unscale,scale update,fp16 step"
plant "rounding by truncation" bf16.c 10.7 "that is cutting the low 16 bits" \
    "return (uint16_t)((u + 0x7fffu + lsb) >> 16);|||return (uint16_t)(u >> 16);"
plant "ties away from zero" bf16.c 10.7 "a tie rounded away from zero" "(u + 0x7fffu + lsb)|||(u + 0x8000u)"
plant "ties towards zero (+0x7fff only)" bf16.c 10.7 "a tie rounded down (towards zero)" "(u + 0x7fffu + lsb)|||(u + 0x7fffu)"
plant "NaN turned into inf" bf16.c 10.7 "a NaN turned into infinity" \
    "if ((u & 0x7fffffffu) > 0x7f800000u) return|||if (0) return"
plant "inf treated as NaN" bf16.c 10.7 "infinity treated as a NaN" \
    "if ((u & 0x7fffffffu) > 0x7f800000u) return|||if ((u & 0x7fffffffu) >= 0x7f800000u) return"
plant "the library's converter" bf16.c 10.7 "uses the library's dtype_bf16_from" \
    "    uint32_t u;|||    return dtype_bf16_from_f32(x);
    uint32_t u;"
plant "the bits converted as an integer" bf16.c 10.7 "converts the integer" \
    "const uint32_t u = (uint32_t)h << 16;|||return (float)h;
    const uint32_t u = (uint32_t)h << 16;"
plant "the update applied to the bf16 copy" master.c 10.8 "applied to the bf16 copy" \
    "master[k] -= lr * grad[k];|||work[k] = lesson_bf16_from_f32(lesson_f32_from_bf16(work[k]) - lr * grad[k]);" \
    "work[k] = lesson_bf16_from_f32(master[k]);|||master[k] = lesson_f32_from_bf16(work[k]);"
plant "the working copy not refreshed" master.c 10.8 "the working copy was not refreshed" \
    "work[k] = lesson_bf16_from_f32(master[k]);|||"
plant "the working copy rounded before the update" master.c 10.8 "work[] is one step stale" \
    "master[k] -= lr * grad[k];                 /* float32: the update is kept */
        work[k] = lesson_bf16_from_f32(master[k]); /* then the copy the forward reads */|||work[k] = lesson_bf16_from_f32(master[k]);
        master[k] -= lr * grad[k];"
plant "inf tested after the multiply by 1/S" loss_scale.c 10.9 "the test came after the multiply" \
    "found |= !isfinite(g[k]);
        g[k] *= inv;|||g[k] *= inv;
        found |= !isfinite(g[k]);"
plant "NaN missed" loss_scale.c 10.9 "a NaN was missed" "found |= !isfinite(g[k]);|||found |= isinf(g[k]);"
plant "divided by S" loss_scale.c 10.9 "that is g / S" "g[k] *= inv;|||g[k] /= scale;"
plant "growth count not reset on overflow" loss_scale.c 10.9 "not reset on the overflow" \
    "s->growth_tracker = 0;
        s->steps_skipped++;|||s->steps_skipped++;"
plant "doubling every clean step" loss_scale.c 10.9 "doubled after every clean step" \
    "if (++s->growth_tracker == s->growth_interval) {|||if (++s->growth_tracker >= 1) {"
plant "a skip not counted" loss_scale.c 10.9 "counted as skipped" "s->steps_skipped++;|||"
plant "scaling not undone before clipping" loss_scale.c 10.10 "clipped the scaled gradients: unscale first" \
    "clip_grad_norm(p, st->max_norm);         /* on the true gradients */|||" \
    "    const bool found = lesson_unscale|||    clip_grad_norm(p, st->max_norm);
    const bool found = lesson_unscale"
plant "stepping on inf" loss_scale.c 10.10 "stepped on inf" "if (!found) {|||if (1) {"
plant "a skip's gradients not zeroed" loss_scale.c 10.10 "set to zero" "if (found) tensor_fill(&p->grads, 0.0f);|||"
plant "the fp16 working copy not refreshed" loss_scale.c 10.10 "working copy was not refreshed" \
    "params_refresh_working(p);|||"
plant "the scale not updated" loss_scale.c 10.10 "the scale was not updated" "lesson_scale_update(st->scaler, found);|||"
plant "the scale updated twice on an overflow" loss_scale.c 10.10 "lesson_scale_update ran twice in this step" \
    "if (found) tensor_fill(&p->grads, 0.0f);|||if (found) tensor_fill(&p->grads, 0.0f), lesson_scale_update(st->scaler, found);"
plant "a step counted twice" loss_scale.c 10.10 "the step was counted 2 times (taken 0 -> 2" \
    "lesson_scale_update(st->scaler, found);|||lesson_scale_update(st->scaler, found);
    if (found) st->scaler->steps_skipped++;
    else st->scaler->steps_taken++;"

# each TODO alone back to its stub
stub 10.7 bf16.c 1 10.8
stub 10.7 bf16.c 2 10.8
stub 10.8 master.c 1 -
stub 10.9 loss_scale.c 1 10.10
stub 10.9 loss_scale.c 2 10.10
stub 10.10 loss_scale.c 3 -
# The sheet shows --precision-demo's output (course/10-performance/README.md): every line it
# shows there (but "...") is one the solution's program prints, word for word.
if "$build/solutions/10-performance/train" --precision-demo >"$tmp/demo.txt" 2>&1; then
    missing=$(python3 - "$course/README.md" "$tmp/demo.txt" <<'PY'
import sys
sheet, printed = open(sys.argv[1]).read().splitlines(), set(l.rstrip() for l in open(sys.argv[2]))
start = next(i for i, l in enumerate(sheet) if 'ARGS="--precision-demo"' in l)
shown = []
for line in sheet[start + 1:]:
    if line.strip() and not line.startswith("    "):
        break
    if line.strip() and line.strip() != "...":
        shown.append(line[4:].rstrip())
print("\n".join(l for l in shown if l not in printed) if shown else "(no lines shown)")
PY
)
    if [ -z "$missing" ]; then
        verdict "the sheet's --precision-demo lines are the program's" 1
    else
        verdict "the sheet's --precision-demo lines are the program's; not printed:" 0
        sed 's/^/    /' <<<"$missing"
    fi
else
    verdict "train --precision-demo ran (for the sheet's lines)" 0
    sed 's/^/    /' "$tmp/demo.txt" | head -5
fi
planted_end
