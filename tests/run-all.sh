#!/usr/bin/env bash
# Everything `make test` runs, in order, then one total:
#   1. the library's unit tests
#   1b. lib/dist with 2 and 3 ranks under mpirun, and the faults that must end a job;
#       traces of lessons 06 and 07 (--trace) against the format's rules
#   1c. make check-gpu: CUDA against CPU (every check skips where there is no GPU), and
#       the same checks on a CPU emulator of lib/cuda/*.cu (the kernels' logic only);
#       make gpu-report's report writer, without a GPU and with a stand-in one; its
#       multi-GPU items with stand-ins for 2, 4 and 8 GPUs and on 2 real CPU ranks;
#       its profile-step item (issue 38) on made-up traces and ncu listings;
#       make bench-gpu-lm's script on the CPU (--smoke) and with stand-in programs
#   2. every solution's grader (all checks must pass)
#   3. every stub's grader (every TODO check must fail)
#   4. lessons/ and solutions/ in sync with course/; the solutions' programs against
#      faults, bad options, a terminal and a pipe (tests/programs/run.sh, issue30.sh,
#      issue39-data.sh);
#      lesson 04 in bf16 against float32 over an epoch, lesson 07 in bf16 and fp16 on 2
#      stages against 1, lessons 08 and 09 in bf16 on 2 ranks (tests/programs/precision.sh);
#      the node monitor with a stand-in NVML (tests/programs/monitor.sh)
#   5. the unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer
#   6. datasets/fetch.sh against a local mirror (no internet needed), and the sbatch
#      command line make submit builds for every site profile
#   7. the sbatch scripts under a real Slurm (make check-slurm; skipped without
#      Slurm, started by tests/slurm/run.sh when run as root; skipped with the reason
#      beside a Slurm that is not the project's own, tests/slurm/foreign.sh)
#   8. the slides: every deck against its lesson, then in headless Chromium with the
#      network off (make check-slides; the browser part skips without Chromium)
# The last line is "N passed, M failed[, K skipped]"; exit status 0 only if none failed.
set -u
cd "$(dirname "$0")/.."
build=${BUILD:-build}
. tests/lib-tally.sh

tally() { # $1: title; the rest: the command whose last result line is counted
    local title=$1 out
    shift
    echo
    echo "#### $title"
    out=$("$@" 2>&1)
    printf '%s\n' "$out"
    if ! tally_add "$out"; then
        echo "FAIL  $title: no result line (did it build?)"
        failed=$((failed + 1))
    fi
}

sync_check() {
    if ! command -v unifdef >/dev/null; then
        echo "SKIP  unifdef is not installed: cannot regenerate lessons/ to compare"
        echo "0 passed, 0 failed, 1 skipped"
        return
    fi
    if tools/generate-lessons.sh --check; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
}

tally "unit tests" tests/run-suites.sh "$build"/tests/test_*
tally "lib/dist with several ranks (mpirun)" tests/dist/run.sh "$build"
tally "lesson 06 on two hosts (network namespaces) and a killed rank" tests/dist/lesson06.sh "$build"
tally "lesson 08: resumed on other rank counts and stages, a killed rank, disagreeing ranks" tests/dist/lesson08.sh "$build"
tally "traces of lessons 01-07 and 10 (--trace): the format's rules, the shares of a step, C = Python" tests/trace/run.sh "$build"
tally "lesson 09: bad layouts refused, data x pipeline x tensor on 8 and 12 ranks = 1 rank" tests/dist/lesson09.sh "$build"
tally "CUDA against CPU (make check-gpu)" "$build"/tests/check_gpu
tally "CUDA kernels on a CPU emulator, not a GPU (make check-gpu-emulated)" tests/gpu/emulator/run.sh "$build"/emulator
tally "make gpu-report: parsing, verdicts, no GPU, a stand-in GPU, figures from a report" python3 tests/gpu/test_gpu_report.py
tally "make gpu-report's profile-step (issue 38): a step's ranges and kernels from made-up traces and ncu listings, the script on the CPU with stand-in ncus" python3 tests/gpu/test_profile_step.py "$build"
tally "make gpu-report's multi-GPU items: stand-ins for 2, 4, 8 GPUs (mpirun), planted mistakes, 1 GPU, the budget; 2 real CPU ranks" python3 tests/gpu/test_gpu_report_multi.py "$build"
tally "make bench-gpu-lm: PyTorch's model against the tutorial's, --smoke on the CPU, stand-in programs" "$(command -v "${PYTHON:-/usr/bin/python3}" || command -v python3)" tests/bench/test_bench_gpu_lm.py "$build"
tally "solutions" tests/run-suites.sh "$build"/solutions/*/grade
tally "stubs: every TODO check fails" tests/check-stubs.sh "$build"
tally "lesson 04's TODOs: planted mistakes each fail with the hint that names them; those past 9 positions too (issue 39)" tests/graders/planted04.sh "$build"
tally "lesson 06's TODOs: planted mistakes each fail with the hint that names them; deadlocked rings ended early, the rank named" tests/graders/planted06.sh "$build"
tally "lesson 08's TODOs: planted mistakes each fail with the hint that names them, the library's twins refused" tests/graders/planted08.sh "$build"
tally "lesson 09's TODOs: planted mistakes each fail with the hint that names them" tests/graders/planted09.sh "$build"
tally "lesson 10's profile TODOs: planted mistakes each fail with the hint that names them" tests/graders/planted10_profile.sh "$build"
tally "lesson 10's mixed-precision TODOs: planted mistakes each fail with the hint that names them" tests/graders/planted10_precision.sh "$build"
tally "lesson 11's TODOs: planted mistakes each fail with the hint that names them; the solution through a symbolic link" tests/graders/planted11.sh "$build"
tally "lesson 11 without an image: binds.sh's refusals, the job script's half-built image and GPUs, the program's messages" tests/container/messages.sh "$build"
tally "lessons/ and solutions/ in sync with course/" sync_check
tally "lesson READMEs list their graders' checks" tests/check-readme-checks.sh
tally "lesson programs: divergence, failed saves, other data, bad options, progress" tests/programs/run.sh "$build"
tally "--precision: lesson 04 bf16 within 2% of float32 after an epoch of fortunes, fp16's skips, refusals; lesson 07 bf16/fp16 on 2 stages = 1 stage; lessons 08 and 09 in bf16" tests/programs/precision.sh "$build"
tally "node monitor: a line per source a second, a stand-in NVML's GPUs, clean stop on SIGTERM, make plot of it" tests/programs/monitor.sh "$build"
tally "lesson programs: issue 30's faults (huge vocabulary, planted links, sparse checkpoint, limits, modes)" tests/programs/issue30.sh "$build"
tally "lesson programs: issue 39's data faults (--token-file on a device, an unfinished first save, another run's checkpoints, finite divergence, batch sizes, options)" tests/programs/issue39-data.sh "$build"
tally "unit tests under ASan + UBSan" make --no-print-directory -s asan-tests
tally "data set fetching" tests/datasets/test-fetch.sh
tally "make submit DRY=1 for every site profile" tests/slurm/submit-dry.sh
tally "make test beside a Slurm that is not the project's own (stand-in commands)" tests/slurm/foreign.sh
tally "sbatch scripts under Slurm" make --no-print-directory -s check-slurm
tally "slides: decks against lessons, every slide in headless Chromium" tests/slides/run.sh

echo
tally_total
