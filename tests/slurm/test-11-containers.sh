#!/usr/bin/env bash
# Lesson 11's sbatch script under the local Slurm: lesson 01 and lesson 06 (2 ranks,
# srun --mpi=pmix into one ch-run container each: the hybrid model) inside the image
# of make image. The job must complete, both ranks end with the same digest, and what
# they wrote to the bound scratch names the image: the --metrics header and the
# checkpoint's image.digest. Without an image (make image) or ch-run: skipped.
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

info=build/image/root/etc/dl-course-image
if [ ! -r "$info" ] || ! command -v ch-run >/dev/null; then
    echo "SKIP  lesson 11: no image to run in (make image; it needs mmdebstrap, ch-run, mksquashfs)"
    exit 0
fi
digest=$(sed -n 's/^digest //p' "$info")
export COURSE_SBATCH_OPTIONS="--nodes=1 --ntasks=2 --cpus-per-task=1"
# LESSON_FILES=lessons (make check-image LESSON_FILES=lessons): the participant's job script and binds.sh
solution=(--solution)
[ "${LESSON_FILES:-solutions}" = lessons ] && solution=()
if ! submit_job 11 "${solution[@]}"; then
    fail "lesson 11: make submit 11 SITE=local${solution:+ SOLUTION=1} did not submit"
    exit 1
fi
state=$(wait_job "$JOB" 300)
if [ "$state" = COMPLETED ]; then
    pass "lesson 11: job $JOB completed: lessons 01 and 06 in the image (ch-run under srun --mpi=pmix)"
else
    fail "lesson 11: job $JOB ended $state (exit $(job_exit "$JOB"))"
    show_output "$JOB_OUT"
    exit 1
fi
digests=$(sed -nE 's/^rank ([01]) parameter digest: ([0-9a-f]+)$/\1 \2/p' "$JOB_OUT" | sort)
if [ "$(wc -l <<<"$digests")" -eq 2 ] && [ "$(cut -d' ' -f2 <<<"$digests" | sort -u | wc -l)" -eq 1 ]; then
    pass "lesson 11: lesson 06's two ranks, each in its own container, end with the same parameters"
else
    fail "lesson 11: the ranks' parameter digests are missing or differ: ${digests:-none}"
    show_output "$JOB_OUT"
fi
dir="$COURSE_SCRATCH_DIR/dl-course/11-containers"
header=$(head -1 "$dir/metrics-01-$JOB.jsonl" 2>/dev/null)
ckpt=$(ls "$dir/checkpoints-$JOB"/*.ckpt 2>/dev/null | head -1)
# the checkpoint's scalar image.digest: 'u', then 8 bytes little-endian = the digest's first 16 hex digits
stored=$([ -n "$ckpt" ] && python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
i = b.find(b"image.digest")
print(b[i + 13:i + 21][::-1].hex() if i > 0 and b[i + 12:i + 13] == b"u" else "none")' "$ckpt")
if grep -qF "\"image\": \"$digest\"" <<<"$header" && [ "$stored" = "${digest:7:16}" ]; then
    pass "lesson 11: the image's digest heads the metrics file and is in the checkpoint (${digest:0:23}...)"
else
    fail "lesson 11: expected $digest in $dir/metrics-01-$JOB.jsonl's first line (it is: ${header:-none}) and in the checkpoint (${ckpt:-none}: ${stored:-none})"
    show_output "$JOB_OUT"
fi
exit $status
