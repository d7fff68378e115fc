#!/usr/bin/env bash
# Lesson 11's refusals and messages, without an image (part of make test; make
# check-image runs the real image):
#   1. binds.sh refuses a data or scratch path that a runtime's mount syntax would split
#      (',' for Pyxis and Apptainer, ':' for all three), naming it;
#   2. the job script, with stand-ins for srun, ch-run and ch-fromhost: a half-built
#      image (no build/image/stamp) stops it with "make image", and a node without GPUs
#      gets no ch-fromhost --nvidia even where COURSE_DEVICE=cuda (the sites' default);
#   3. the program (build/solutions/11-containers/train) with stand-in runs: no image or
#      a half-built one says make image, exit codes and signals in words (not wait
#      statuses), a failed run is never "the same parameters", and its own guard holds
#      against a lesson_compare_digests that calls two missing digests the same.
# Last line "N passed, M failed".
#   tests/container/messages.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/../.." || exit 1
build=${1:-build}
src=solutions/11-containers
passed=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { # name, ok (0/1), what was seen
    if [ "$2" = 1 ]; then echo "PASS  $1"; passed=$((passed + 1))
    else echo "FAIL  $1"; sed 's/^/        /' <<<"$3" | head -20; failed=$((failed + 1)); fi
}

# ---------------------------------------------------------------- 1. binds.sh
binds() { # runtime data scratch: "status|message|words"
    bash -c '. "$1"; container_binds "$2" "$3" "$4"; s=$?; echo "status $s"; printf "%s\n" "${CONTAINER_BINDS[@]:-}"' \
        _ "$src/binds.sh" "$@" 2>&1
}
for c in "pyxis data /srv/a,b /work/s ,"  "apptainer scratch /srv/d /work/s,x ,"  "charliecloud data /srv/a:b /work/s :" \
         "pyxis scratch /srv/d /work/s:x :"  "apptainer data /srv/a:b /work/s :"; do
    read -r rt name data scratch ch <<<"$c"
    path=$([ "$name" = data ] && echo "$data" || echo "$scratch")
    o=$(binds "$rt" "$data" "$scratch")
    check "binds.sh: $rt refuses the $name path $path (a '$ch' in it), naming it" \
        "$(grep -q '^status 1$' <<<"$o" && grep -qF "the $name directory '$path' has a '$ch' in it" <<<"$o" &&
           ! grep -q ":/data\|:/scratch" <<<"$o" && echo 1)" "$o"
done
o=$(binds charliecloud /srv/a,b /work/s)
check "binds.sh: charliecloud takes a ',' in a path (one mount per -b)" \
    "$(grep -q '^status 0$' <<<"$o" && grep -qx '/srv/a,b:/data' <<<"$o" && echo 1)" "$o"
o=$(bash -c '. "$1"; container_setup pyxis /img "/srv/a,b" /work/s; echo "status $?"; printf "%s\n" "${CONTAINER_SRUN[@]:-none}"' \
    _ "$src/binds.sh" 2>&1)
check "binds.sh: container_setup stops at the refusal (no container options)" \
    "$(grep -q '^status 1$' <<<"$o" && grep -qx none <<<"$o" && echo 1)" "$o"

# ---------------------------------------------------------------- 2. the job script
# a course root of its own: slurm/ and the solution's files, build/image/ as make image
# leaves it (or not), stand-ins that record their words
job_root=$tmp/course
mkdir -p "$job_root/solutions" "$job_root/build/image/root/etc" "$job_root/build/solutions/11-containers" \
    "$tmp/bin" "$tmp/data" "$tmp/scratch"
ln -s "$PWD/slurm" "$job_root/slurm" && ln -s "$PWD/$src" "$job_root/$src"
printf '#!/bin/sh\n' >"$job_root/build/solutions/11-containers/train"
chmod +x "$job_root/build/solutions/11-containers/train"
for t in srun ch-run ch-fromhost apptainer; do
    printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n' "$t" "$tmp" >"$tmp/bin/$t" && chmod +x "$tmp/bin/$t"
done
job() { # the job script in the root, with the environment given; its output, then the calls
    rm -f "$tmp/calls"
    (cd "$job_root" && env -u SLURM_GPUS_ON_NODE -u CUDA_VISIBLE_DEVICES -u COURSE_IMAGE -u COURSE_DEVICE \
        PATH="$tmp/bin:$PATH" SLURM_JOB_ID=77 SLURM_NTASKS=2 SLURM_CPUS_PER_TASK=1 \
        SLURM_SUBMIT_DIR="$job_root" COURSE_SITE=generic COURSE_SCRATCH_DIR="$tmp/scratch" \
        COURSE_CONTAINER_RUNTIME=charliecloud COURSE_DATA_DIR="$tmp/data" SOLUTION=1 "$@" \
        bash "$src/containers.sbatch" 2>&1; echo "status $?")
    echo "--- calls"
    cat "$tmp/calls" 2>/dev/null
}
o=$(job)
check "job script: a half-built image (no build/image/stamp) stops it, saying make image; nothing started" \
    "$(grep -q '^status 1$' <<<"$o" && grep -q 'is half-built (no build/image/stamp.*run make image' <<<"$o" &&
       [ "$(sed -n '/^--- calls/,$p' <<<"$o" | wc -l)" -eq 1 ] && echo 1)" "$o"
echo "digest sha256:0" >"$job_root/build/image/root/etc/dl-course-image" && echo stamp >"$job_root/build/image/stamp"
o=$(job COURSE_DEVICE=cuda)
check "job script: COURSE_DEVICE=cuda on a node without GPUs (gpus none): no ch-fromhost --nvidia, said so" \
    "$(grep -q '^status 0$' <<<"$o" && grep -q '^gpus none\|, gpus none,' <<<"$o" &&
       grep -q '^no GPU on this node' <<<"$o" && ! grep -q '^ch-fromhost' <<<"$o" &&
       [ "$(grep -c '^srun ' <<<"$o")" -eq 2 ] && echo 1)" "$o"
o=$(job COURSE_DEVICE=cuda SLURM_GPUS_ON_NODE=2)
check "job script: COURSE_DEVICE=cuda with the node's GPUs: ch-fromhost --nvidia IMAGE, once, before the lessons" \
    "$(grep -q '^status 0$' <<<"$o" && [ "$(sed -n '/^--- calls/{n;p}' <<<"$o")" = "ch-fromhost --nvidia $job_root/build/image/root" ] &&
       [ "$(grep -c '^ch-fromhost' <<<"$o")" -eq 1 ] && echo 1)" "$o"

# ---------------------------------------------------------------- 3. the program
prog=$PWD/$build/$src/train
[ -x "$prog" ] || { echo "FAIL  $prog is not built (make all)"; echo "$passed passed, $((failed + 1)) failed"; exit 1; }
run() { (cd "$tmp" && "$@" 2>&1; echo "status $?"); } # in a directory with no build/image/
o=$(run "$prog" --image "$tmp/none")
check "program: no image says make image (exit 2)" \
    "$(grep -q "^status 2$" <<<"$o" && grep -q "no image $tmp/none: make image builds it" <<<"$o" && echo 1)" "$o"
mkdir -p "$tmp/half/root/etc"
o=$(run "$prog" --image "$tmp/half/root")
check "program: a half-built image (no etc/dl-course-image) says make image (exit 2), before ch-run" \
    "$(grep -q "^status 2$" <<<"$o" && grep -q "half-built (no $tmp/half/root/etc/dl-course-image.*run make image" <<<"$o" &&
       ! grep -q "ch-run" <<<"$o" && echo 1)" "$o"
echo "digest sha256:0" >"$tmp/half/root/etc/dl-course-image"
o=$(run "$prog" --image "$tmp/half/root")
check "program: an image without the build's stamp says make image (exit 2)" \
    "$(grep -q "^status 2$" <<<"$o" && grep -q "half-built (no $tmp/half/stamp.*run make image" <<<"$o" && echo 1)" "$o"
o=$(run "$prog" --inside true)
check "program: no outside build says make image-host (exit 2)" \
    "$(grep -q "^status 2$" <<<"$o" && grep -q "make image-host builds it" <<<"$o" && echo 1)" "$o"

# the runs are shell commands: the training options are appended ("$0" and on, unused)
d='echo parameter digest: 0123456789abcdef'
o=$(run "$prog" --outside "sh -c 'exit 1'" --inside "sh -c 'exit 3'")
check "program: two failed runs: exit 1 and exit 3 in words (not 256, 768), a failure (exit 2), never the same" \
    "$(grep -q "^status 2$" <<<"$o" && grep -q "no parameter digest (exit 1)" <<<"$o" && grep -q "no parameter digest (exit 3)" <<<"$o" &&
       grep -q "^a run failed" <<<"$o" && ! grep -q "256\|768\|the same parameters" <<<"$o" && echo 1)" "$o"
o=$(run "$prog" --outside "sh -c '$d; kill -9 \$\$'" --inside "sh -c '$d'")
check "program: a run killed after its digest: signal 9 in words (not 35072), a failure (exit 2)" \
    "$(grep -q "^status 2$" <<<"$o" && grep -q "it failed (.*signal 9 (Killed))" <<<"$o" && grep -q "^a run failed" <<<"$o" &&
       ! grep -q "35072\|the same parameters" <<<"$o" && echo 1)" "$o"
o=$(run "$prog" --outside no-such-command-here --inside "sh -c '$d'")
check "program: a command not found: exit 127 in words" \
    "$(grep -q "^status 2$" <<<"$o" && grep -q "(exit 127: command not found)" <<<"$o" && echo 1)" "$o"
o=$(run "$prog" --outside "sh -c '$d'" --inside "sh -c '$d'")
check "program: two runs with the same digest: the same parameters (exit 0)" \
    "$(grep -q "^status 0$" <<<"$o" && grep -q "^the same parameters inside the image as outside" <<<"$o" && echo 1)" "$o"
o=$(run "$prog" --outside "sh -c '$d'" --inside "sh -c 'echo parameter digest: 0123456789abcdee'")
check "program: two different digests: different parameters (exit 1)" \
    "$(grep -q "^status 1$" <<<"$o" && grep -q "^different parameters" <<<"$o" && echo 1)" "$o"

# the given main.c against a TODO 11.6 that counts two missing digests as the same
flags() { make -s --no-print-directory BUILD="$build" --eval='print-%: ; @echo $($*)' "print-$1" | sed 's/-DCOURSE_ROOT=[^ ]*//'; }
sed 's/if (!a || !b) return DIGESTS_MISSING;/if (a != b) return DIGESTS_MISSING;/' "$src/same.c" >"$tmp/same.c"
# shellcheck disable=SC2046
if ! grep -q 'if (a != b)' "$tmp/same.c" ||
   ! cc $(flags LESSON_CFLAGS) -I"$src" -c "$tmp/same.c" -o "$tmp/same.o" ||
   ! cc "$build/$src/main.o" "$tmp/same.o" "$build/libcourse.a" $(flags LDLIBS) -o "$tmp/train"; then
    check "program with a planted TODO 11.6: built" 0 "the plant did not apply or build"
else
    o=$(run "$tmp/train" --outside true --inside true)
    check "program with a TODO 11.6 that calls two missing digests the same: not the same parameters (exit 2)" \
        "$(grep -q "^status 2$" <<<"$o" && grep -q "says DIGESTS_SAME, but a run printed no parameter digest" <<<"$o" &&
           ! grep -q "^the same parameters" <<<"$o" && echo 1)" "$o"
    o=$(run "$tmp/train" --outside false --inside false)
    check "program with that TODO 11.6, two failed runs: a failure (exit 2), not the same" \
        "$(grep -q "^status 2$" <<<"$o" && grep -q "^a run failed" <<<"$o" && ! grep -q "^the same parameters" <<<"$o" && echo 1)" "$o"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
