#!/usr/bin/env bash
# Lesson 11's TODOs (11.1-11.6) against the mistakes of participants' trials and a fault
# probe: each is planted in a temporary copy of the solution (the recipe, binds.sh, the
# job script, same.c), the grader is run on it, and the TODO's check must FAIL with the
# hint that names the mistake; a variant the sheet allows (your own lesson 06 in the
# image) must pass. Then each TODO alone is put back to its stub (its checks
# fail, the others pass or wait for it), and the solution is graded through a symbolic
# link to the course (as home and project directories often are on clusters): it must
# pass. The machinery: planted_lib.sh; here the copy is the solutions/11-containers of a
# course root of its own (the job script sources slurm/lib and the lesson's binds.sh
# from the root), where the grader runs. Needs `make all` first. Last line: "N passed,
# M failed".
#   tests/graders/planted11.sh [BUILD_DIR [GRADER]]   (GRADER: another grade11.c, to compare)
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/graders/planted_lib.sh
. tests/graders/planted_lib.sh
build=${1:-build} grader=${2:-tests/graders/grade11.c}
course=course/11-containers
PLANTED_CHECKS=  # all of them: the grader takes about a second

flags() { make -s --no-print-directory BUILD="$build" --eval='print-%: ; @echo $($*)' "print-$1" | sed 's/-DCOURSE_ROOT=[^ ]*//'; }
CFLAGS=$(flags CFLAGS) LESSON_CFLAGS=$(flags LESSON_CFLAGS) LDLIBS=$(flags LDLIBS) FRAMEWORK=$(flags FRAMEWORK_OBJ)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/solutions" && ln -s "$PWD/slurm" "$root/slurm"
tmp=$root/solutions/11-containers
cp -r solutions/11-containers "$tmp"
# shellcheck disable=SC2086
cc $CFLAGS -I"$tmp" -DLESSON_PATH='"solutions/11-containers"' -c "$grader" -o "$tmp/grade.o" &&
    cc $LESSON_CFLAGS -I"$tmp" -c "$tmp/same.c" -o "$tmp/same.o" &&
    cc "$tmp/grade.o" "$tmp/same.o" $FRAMEWORK "$build/libcourse.a" $LDLIBS -o "$tmp/grade" || exit 1

# grade FILE (planted_lib's, for shell files too): the planted copy of FILE in place, the
# grader (relinked when FILE is C) run in the course root; its output
grade() {
    local f=$1 bin=$tmp/grade
    cp "$tmp/$f" "$tmp/$f.orig" && cp "$tmp/$f.new" "$tmp/$f"
    if [ "${f##*.}" = c ]; then
        bin=$tmp/grade.planted
        # shellcheck disable=SC2086
        cc $LESSON_CFLAGS -I"$tmp" -c "$tmp/$f" -o "$tmp/planted.o" 2>&1 &&
            cc "$tmp/grade.o" "$tmp/planted.o" $FRAMEWORK "$build/libcourse.a" $LDLIBS -o "$bin" 2>&1
    fi && (cd "$root" && CHECK_ONLY="$PLANTED_CHECKS" "$bin" 2>&1)
    cp "$tmp/$f.orig" "$tmp/$f"
}

# stub (planted_lib's) runs unifdef: as text (-t), the way tools/generate-lessons.sh
# reads the shell files, whose comments have apostrophes that are no C character constants
unifdef() { command unifdef -t "$@"; }

# accept NAME FILE TODO "old|||new"...: a variant the sheet allows, patched in as plant
# does; the TODO's checks pass, and so does every other
accept() {
    local name=$1 f=$2 todo=$3 out
    shift 3
    patched "$f" "$@" || { verdict "$name (the patch did not apply)" 0; return; }
    out=$(grade "$f")
    if grep -q "^PASS  TODO $todo " <<<"$out" && ! grep -q '^FAIL' <<<"$out"; then
        verdict "$name: TODO $todo passes" 1
    else
        verdict "$name: TODO $todo should pass" 0
        grep -A8 '^FAIL' <<<"$out" | sed 's/^/    /' | head -20
    fi
}

# TODO 11.1 (image.conf): the packages
plant "packages separated by a comma" image.conf 11.1 'IMAGE_PACKAGES has "build-essential,make": packages are separated by spaces' \
    'IMAGE_PACKAGES="build-essential make|||IMAGE_PACKAGES="build-essential,make'

# TODO 11.2 (image.conf): the build step
plant "cd /opt/course before make" image.conf 11.2 "image_build ran cd /opt/course" \
    'image_build() {
    make|||image_build() {
    cd /opt/course && make'
plant "a fixed ARCH in the build step" image.conf 11.2 'make was given a fixed ARCH=x86-64-v2 instead of ARCH="$IMAGE_ARCH"' \
    'ARCH="$IMAGE_ARCH" build/libcourse.a|||ARCH=x86-64-v2 build/libcourse.a'
plant "ARCH in single quotes in the build step" image.conf 11.2 "single quotes keep the variable from expanding: use double quotes" \
    "ARCH=\"\$IMAGE_ARCH\" build/libcourse.a|||'ARCH=\$IMAGE_ARCH' build/libcourse.a"

# TODO 11.3 (image.conf): the environment
plant "ARCH in single quotes in the environment" image.conf 11.3 "single quotes keep the variable from expanding: use double quotes" \
    "    ARCH=\"\$IMAGE_ARCH\"
    OMPI_MCA|||    'ARCH=\$IMAGE_ARCH'
    OMPI_MCA"
plant "two variables in one word" image.conf 11.3 "two variables quoted together in one word; they must be separate words" \
    '    ARCH="$IMAGE_ARCH"
    OMPI_MCA_btl_vader_single_copy_mechanism=none|||    "ARCH=$IMAGE_ARCH OMPI_MCA_btl_vader_single_copy_mechanism=none"'

# TODO 11.4 (binds.sh): each runtime's binds unquoted, for a data path with a space
plant "ch-run's binds unquoted" binds.sh 11.4 "charliecloud: the data path (/srv/my data here, with a space in it) was split into two words at the space: quote" \
    'CONTAINER_BINDS=(-b "$data:/data" -b "$scratch:/scratch" -t)|||CONTAINER_BINDS=(-b $data:/data -b $scratch:/scratch -t)'
plant "Pyxis's mounts unquoted" binds.sh 11.4 "pyxis: the data path (/srv/my data here, with a space in it) was split into two words at the space: quote" \
    'CONTAINER_BINDS=("--container-mounts=$data:/data:ro,$scratch:/scratch" --no-container-mount-home)|||CONTAINER_BINDS=(--container-mounts=$data:/data:ro,$scratch:/scratch --no-container-mount-home)'
plant "Apptainer's binds unquoted" binds.sh 11.4 "apptainer: the data path (/srv/my data here, with a space in it) was split into two words at the space: quote" \
    'CONTAINER_BINDS=(--contain --bind "$data:/data:ro,$scratch:/scratch")|||CONTAINER_BINDS=(--contain --bind $data:/data:ro,$scratch:/scratch)'

# TODO 11.5 (containers.sbatch): the launch line
accept "your own lesson 06 in the image (the sheet's way)" containers.sbatch 11.5 \
    '/opt/course/build/solutions/06-ddp/train \|||/opt/course/build/lessons/06-ddp/train \'
plant "the host's lesson 06, not the image's" containers.sbatch 11.5 "lesson 06's program must be the image's" \
    '/opt/course/build/solutions/06-ddp/train \|||"$PWD/build/solutions/06-ddp/train" \'
plant "the arrays unquoted" containers.sbatch 11.5 "charliecloud: lesson 06's line split the data path (.../my data here, with a space in it) into two words at the space: quote" \
    '"${JOB_LAUNCH[@]}" "${CONTAINER_SRUN[@]}" "${CONTAINER_RUN[@]}" /opt/course/build/solutions/06-ddp|||${JOB_LAUNCH[*]} ${CONTAINER_SRUN[*]} ${CONTAINER_RUN[*]} /opt/course/build/solutions/06-ddp'
plant "ch-run's words joined into one" containers.sbatch 11.5 "several words joined into one" \
    '"${CONTAINER_RUN[@]}" /opt/course/build/solutions/06-ddp|||"${CONTAINER_RUN[*]}" /opt/course/build/solutions/06-ddp'
plant "lesson 06 on --device cuda" containers.sbatch 11.5 "lesson 06's line passes --device cuda: the line is --device cpu" \
    '--device cpu --ranks|||--device cuda --ranks'
plant "lesson 06 on the job's device" containers.sbatch 11.5 "passes --device cuda with COURSE_DEVICE=cuda on a node with a GPU" \
    '--device cpu --ranks|||--device "$device" --ranks'
# lesson 06's metrics where the container cannot write
plant "lesson 06's metrics into the read-only image" containers.sbatch 11.5 "lesson 06's --metrics /opt/course/metrics-06-4242.jsonl is not under /scratch" \
    '--metrics "/scratch/metrics-06-$JOB_ID.jsonl"|||--metrics "/opt/course/metrics-06-$JOB_ID.jsonl"'
plant "lesson 06's metrics at the host's run directory" containers.sbatch 11.5 "the host's paths (\$COURSE_RUN_DIR) are not there" \
    '--metrics "/scratch/metrics-06-$JOB_ID.jsonl"|||--metrics "$COURSE_RUN_DIR/metrics-06-$JOB_ID.jsonl"'
plant "lesson 06 without --metrics" containers.sbatch 11.5 "lesson 06's line has no --metrics" \
    '--metrics "/scratch/metrics-06-$JOB_ID.jsonl" |||'

# TODO 11.6 (same.c): finding and comparing the digests
plant "the digit read as decimal" same.c 11.6 "the digits were read as a decimal number; they are hex" \
    'sscanf(hex, "%16llx", &v)|||sscanf(hex, "%16llu", &v)'
plant "the first digest line wins" same.c 11.6 "that is the first digest line's number; the last one wins" \
    'if (sscanf(hex, "%16llx", &v) == 1) {|||if (!found && sscanf(hex, "%16llx", &v) == 1) {'
plant "15 of the 16 digits checked" same.c 11.6 "the 16th digit, G, is no hex digit" \
    'strspn(hex, "0123456789abcdef") != 16|||strspn(hex, "0123456789abcdef") < 15'
plant "the 16th digit checked in either case" same.c 11.6 "the 16th digit is an uppercase F" \
    'strspn(hex, "0123456789abcdef") != 16|||strspn(hex, "0123456789abcdef") < 15 || !strchr("0123456789abcdefABCDEF", hex[15])'
plant "a digest on the first line missed" same.c 11.6 "a digest line at the very start of the text counts too" \
    "if (p != output && p[-1] != '\\n') continue;|||if (p == output || p[-1] != '\\n') continue;"
plant "a digest at the end of the text missed" same.c 11.6 "a digest at the end of the text counts too" \
    "(hex[16] != '\\n' && hex[16] != '\\0')|||hex[16] != '\\n'"
plant "the digest changed when none is found" same.c 11.6 "*digest must stay as it was when no digest line is found" \
    'bool found = false;|||bool found = false;
    *digest = 0;'
plant "two missing digests counted as equal" same.c 11.6 "two missing digests are not equal ones" \
    'if (!a || !b) return DIGESTS_MISSING;|||if (a != b) return DIGESTS_MISSING;'
plant "the outside digest compared with itself" same.c 11.6 "the outside digest was compared with itself" \
    'lesson_find_digest(inside, inside_digest)|||lesson_find_digest(outside, inside_digest)'
plant "the pointers compared" same.c 11.6 "were the pointers compared" \
    'return *outside_digest == *inside_digest ?|||return outside_digest == inside_digest ?'

# each TODO alone back to its stub
stub 11.1 image.conf 1 - "IMAGE_PACKAGES lacks libopenmpi-dev"
stub 11.2 image.conf 2 - "TODO 11.2 is not done yet"
stub 11.3 image.conf 3 - "IMAGE_ENVIRONMENT lacks the word ARCH=x86-64-v3"
stub 11.4 binds.sh 1 11.5 "TODO 11.4 is not done yet"
stub 11.5 containers.sbatch 1 - "TODO 11.5 is not done yet"
stub 11.6 same.c 1,2,3 - "TODO 11.6 is not implemented yet"

# the solution through a symbolic link to the course root: $PWD is the link's path,
# the grader's working directory the physical one; every check passes
ln -s "$root" "$root.link"
out=$(cd "$root.link" && CHECK_ONLY="$PLANTED_CHECKS" "$tmp/grade" 2>&1)
rm -f "$root.link"
if grep -qE '^[0-9]+ passed, 0 failed$' <<<"$out"; then
    verdict "the solution through a symbolic link to the course: $(tail -1 <<<"$out")" 1
else
    verdict "the solution through a symbolic link to the course passes" 0
    grep -A8 '^FAIL' <<<"$out" | sed 's/^/    /' | head -20
fi

planted_end
