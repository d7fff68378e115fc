#!/usr/bin/env bash
# make check-image: the image of make image, run and checked (CI runs it after make
# test; building the image takes minutes and the network to Debian's archive).
#   1. the digest recorded in the image is that of its files (tools/image/digest.sh)
#   2. the SquashFS file against Enroot's format (tools/image/check-enroot.sh), and a
#      file without /etc/rc must fail that check
#   3. the Apptainer definitions (the image's, the CUDA one) syntax-checked
#      (tools/image/check-apptainer-def.sh); the Enroot CUDA recipe's commands (DRY=1)
#   4. ch-run: lesson 01's solution grader inside the image (all pass, nothing rebuilt)
#   5. ch-run: lesson 01 for a few steps inside and outside, the same parameter digest
#      (lesson 11's program; outside: a build with the image's ARCH)
#   6. ch-run as an unprivileged user with lesson 11's binds: /scratch writable and
#      seen by the host; /data, the image, / refused; the host's home and /tmp unseen
#   7. lesson 11's sbatch script under the local Slurm (tests/slurm/test-11-containers.sh:
#      lessons 01 and 06, 2 ranks by srun --mpi=pmix into the containers); skipped
#      without Slurm
# Steps 5-7 run the solution's binds.sh, job script and program, or with
# LESSON_FILES=lessons a participant's (lessons/11-containers, build/lessons/...).
# Last line "N passed, M failed[, K skipped]".
set -u
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
kind=${LESSON_FILES:-solutions}
case $kind in solutions | lessons) ;; *) echo "LESSON_FILES=$kind: give solutions or lessons" >&2; exit 2 ;; esac
export LESSON_FILES=$kind
out=build/image
root=$out/root
export USER=${USER:-$(id -un)}
. tests/lib-checks.sh # pass, fail, skip, show, checks_summary
indent() { sed 's/^/        /'; }
suite() { # $1: title; the rest: a command whose PASS/FAIL lines and result line count
    local title=$1 o p f
    shift
    o=$("$@" 2>&1)
    p=$(grep -c '^PASS  ' <<<"$o") f=$(grep -c '^FAIL  ' <<<"$o")
    grep -E '^(FAIL|SKIP)  ' <<<"$o" | indent
    if [ "$f" -eq 0 ] && [ "$p" -gt 0 ]; then pass "$title ($p checks)"; else fail "$title ($f of $((p + f)) checks failed)"; fi
}
if [ ! -r "$root/etc/dl-course-image" ] || [ ! -f "$out/stamp" ]; then  # the stamp: written last
    if [ -d "$root" ]; then fail "the image in $out is half-built (no $([ -f "$out/stamp" ] && echo "$root/etc/dl-course-image" || echo "$out/stamp")): run make image"
    else fail "no image in $out: run make image first"; fi
    echo "$passed passed, $failed failed"
    exit 1
fi
recorded=$(sed -n 's/^digest //p' "$root/etc/dl-course-image")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1
actual=$(tools/image/digest.sh "$root")
if [ "$actual" = "$recorded" ]; then pass "digest: the image's files hash to its recorded $recorded"
else fail "digest: the image records $recorded, its files hash to $actual"; fi

# 2
suite "enroot format of $out/dl-course.sqsh" tools/image/check-enroot.sh "$out/dl-course.sqsh" "$root"
mkdir -p "$tmp/bad/etc" && echo "A=1" >"$tmp/bad/etc/environment"
mksquashfs "$tmp/bad" "$tmp/bad.sqsh" -quiet -noappend >/dev/null 2>&1
if ! tools/image/check-enroot.sh "$tmp/bad.sqsh" >/dev/null 2>&1; then pass "enroot format: a SquashFS file without /etc/rc fails the check"
else fail "enroot format: a SquashFS file without /etc/rc passed the check"; fi

# 3
suite "apptainer definition $out/dl-course.def" tools/image/check-apptainer-def.sh "$out/dl-course.def"
suite "apptainer definition tools/image/cuda.def (not built here)" tools/image/check-apptainer-def.sh tools/image/cuda.def
printf 'Bootstrap: docker\n%%post\n    if then\n' >"$tmp/bad.def"
if ! tools/image/check-apptainer-def.sh "$tmp/bad.def" >/dev/null 2>&1; then pass "apptainer definition: one without From: and with broken %post fails the check"
else fail "apptainer definition: a broken one passed the check"; fi
enroot_cmds=$(DRY=1 tools/image/cuda-enroot.sh "$tmp/cuda.sqsh" 2>&1)
if [ "$(grep -c '^+ enroot \(import\|create\|start\|export\|remove\) ' <<<"$enroot_cmds")" -eq 5 ] &&
   bash -n <(sed -n "/^build='/,/'\$/p" tools/image/cuda-enroot.sh | sed "1s/^build='//; \$s/'\$//"); then
    pass "enroot CUDA recipe: import, create, start (build), export, remove; its build script is valid shell (DRY=1, not run here)"
else fail "enroot CUDA recipe (DRY=1):"; indent <<<"$enroot_cmds"; fi

# 4
if ! command -v ch-run >/dev/null; then
    skip "ch-run is not installed (sudo apt-get install charliecloud-runtime): nothing run in the image"
else
    o=$(ch-run --set-env -t "$root" -- make -C /opt/course --no-print-directory check-lesson 1 SOLUTION=1 THREADS=2 2>&1)
    if grep -qE '^[0-9]+ passed, 0 failed$' <<<"$o" && ! grep -qE '^(cc|ar) ' <<<"$o"; then
        pass "ch-run: lesson 01's solution grader in the image: $(tail -1 <<<"$o") (nothing rebuilt)"
    else fail "ch-run: lesson 01's solution grader in the image:"; tail -20 <<<"$o" | indent; fi

    # 5
    host=build/image/host
    arch=$(sed -n 's/^arch //p' "$root/etc/dl-course-image")
    if make --no-print-directory -s image-host >"$tmp/make.log" 2>&1 &&
       make --no-print-directory -s "$build/$kind/11-containers/train" >>"$tmp/make.log" 2>&1; then
        o=$("$build/$kind/11-containers/train" --image "$root" --outside "$host/solutions/01-cpu-cnn/train" 2>&1)
        if [ $? -eq 0 ]; then pass "ch-run: lesson 01 for 5 steps, the same parameter digest inside and outside ($(grep -m1 -o '[0-9a-f]\{16\}' <<<"$o"))"
        else fail "ch-run: lesson 01 inside and outside the image:"; indent <<<"$o"; fi
    else fail "building lesson 01 with ARCH=$arch for the comparison:"; tail -20 "$tmp/make.log" | indent; fi

    # 6
    . "$kind/11-containers/binds.sh"
    mkdir -p "$tmp/data" "$tmp/scratch" "$tmp/home"
    echo data >"$tmp/data/file"
    echo host-home >"$tmp/home/marker" && echo host-tmp >"${TMPDIR:-/tmp}/course-host-tmp-$$"
    container_binds charliecloud "$tmp/data" "$tmp/scratch"
    as_user=()
    if [ "$(id -u)" -eq 0 ]; then  # as root, one that is not: ch-run's normal case, and the data not its own
        chown 65534:65534 "$tmp/scratch" && chmod 0755 "$tmp" "$tmp/data" && chmod 0644 "$tmp/data/file"
        as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups env USER=nobody HOME="$tmp/home")
    fi
    o=$("${as_user[@]}" ch-run "${CONTAINER_BINDS[@]}" "$root" -- sh -c '
        for f in /scratch/w /data/w /opt/course/w /w /etc/w; do
            if echo x 2>/dev/null >"$f"; then echo "wrote $f"; else echo "refused $f"; fi
        done
        cat /data/file; ls /home; ls /tmp' 2>&1)
    want="wrote /scratch/w
refused /data/w
refused /opt/course/w
refused /w
refused /etc/w
data"
    if [ "$(head -6 <<<"$o")" = "$want" ] && [ -f "$tmp/scratch/w" ] && ! grep -q "marker\|course-host-tmp" <<<"$o"; then
        pass "binds: /scratch written (and seen by the host), /data read but not written, the image and / refused, the host's home and /tmp not there"
    else fail "binds: ch-run ${CONTAINER_BINDS[*]} as ${as_user[*]:-$USER}:"; indent <<<"$o"; fi
    rm -f "${TMPDIR:-/tmp}/course-host-tmp-$$"

    # 7
    if sinfo -h >/dev/null 2>&1 || { [ "$(id -u)" -eq 0 ] && command -v slurmctld >/dev/null && tools/slurm-local.sh start >/dev/null; }; then
        COURSE_SCRATCH_DIR=$tmp/slurm
        mkdir -p "$COURSE_SCRATCH_DIR"
        export COURSE_SCRATCH_DIR
        o=$(bash tests/slurm/test-11-containers.sh 2>&1)
        grep -E '^(PASS|FAIL|SKIP)  ' <<<"$o" | sed 's/^\(....\)  /\1  slurm: /'
        passed=$((passed + $(grep -c '^PASS  ' <<<"$o"))) failed=$((failed + $(grep -c '^FAIL  ' <<<"$o")))
        grep -v '^\(PASS\|FAIL\|SKIP\)  ' <<<"$o" | grep -q . && grep -q '^FAIL' <<<"$o" && grep -v '^\(PASS\|SKIP\)  ' <<<"$o" | tail -40 | indent
    else skip "no Slurm here: lesson 11's job script not run (sudo make deps; as root it starts one)"; fi
fi

checks_summary
