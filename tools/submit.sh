#!/usr/bin/env bash
# Submits a lesson's sbatch script with a site's settings (what `make submit` runs).
#
#   tools/submit.sh N|NAME|SCRIPT [--site NAME] [--solution] [--nodes N] [--dry] [-- PROGRAM ARGS...]
#
# N is a lesson number (1 or 01: slurm/01-*.sbatch), NAME a script in slurm/ without
# .sbatch (mpi-check), SCRIPT a path to an .sbatch file. The site profile
# slurm/sites/NAME.env (default: $COURSE_SITE, else generic) gives partition,
# account, reservation, GPU syntax (per node) and GPUs a node; what it leaves empty is
# not passed. A script that asks for more GPUs a node than the site's nodes have runs
# fewer tasks a node (one per GPU), with a note. COURSE_PARTITION, COURSE_ACCOUNT, COURSE_RESERVATION and COURSE_SCRATCH_DIR
# override it for one submission. The script's own lines `#COURSE gpus=N` (GPUs the
# lesson needs) and `#COURSE needs=TARGET` (what to build, relative to the build
# directory; default KIND/NN-name/train) or `#COURSE make=GOAL` (a make goal that builds
# it, with the same BUILD and ARCH: slurm/gpu-check.sbatch's gpu-report-build) tell this
# tool what to add.
#
# A lesson whose directory holds its own job script (lessons/06-ddp/ddp.sbatch: TODOs
# in it) is submitted with that script, the participant's (or the solution's with
# --solution). --nodes N (make submit 6 NODES=1) runs a multi-node script on N nodes
# with the same tasks and GPUs per node: lesson 06's 2 x 4 GPUs become 1 x 4 GPUs.
# COURSE_SBATCH_OPTIONS adds sbatch options for one submission, which override the
# script's #SBATCH lines (e.g. "--nodes=1 --ntasks-per-node=2").
#
# It builds what the job runs (on the login node, for the site's CPU type), then
# prints the job id and the output file; with --dry it prints the sbatch command
# line instead and submits nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

target= site=${COURSE_SITE:-generic} solution= dry= nodes= nodes_given= program_args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --site) site=${2:?--site needs a name}; shift 2 ;;
    --solution) solution=1; shift ;;
    --nodes) nodes=${2:-} nodes_given=1; shift $(($# > 1 ? 2 : 1)) ;;
    --dry) dry=1; shift ;;
    --) shift; program_args=("$@"); break ;;
    -h | --help) usage ;;
    -*) echo "submit: unknown option $1" >&2; usage ;;
    *) [ -z "$target" ] || usage; target=$1; shift ;;
    esac
done
[ -n "$target" ] || { echo "submit: give a lesson number, e.g. make submit 1" >&2; exit 2; }
[ -z "$nodes_given" ] || [[ "$nodes" =~ ^[1-9][0-9]{0,3}$ ]] ||
    { echo "submit: NODES (--nodes) must be a number of nodes, 1 or more; got '$nodes'" >&2; exit 2; }

if [[ "$target" =~ ^[0-9]+$ ]]; then
    num=$(printf '%02d' $((10#$target)))
    script=$(ls slurm/"$num"-*.sbatch 2>/dev/null | head -1 || true)
    [ -n "$script" ] || { echo "submit: no slurm/$num-*.sbatch (scripts: $(ls slurm/*.sbatch | xargs -n1 basename | tr '\n' ' '))" >&2; exit 1; }
elif [ -f "$target" ]; then
    script=$target
elif [ -f "slurm/$target.sbatch" ]; then
    script=slurm/$target.sbatch
else
    echo "submit: no such script: $target (scripts: $(ls slurm/*.sbatch | xargs -n1 basename | tr '\n' ' '))" >&2
    exit 1
fi
lesson=$(basename "$script" .sbatch)
kind=lessons
[ -n "$solution" ] && kind=solutions
# the participant's own job script, where the lesson has one
own=$(ls "$kind/$lesson"/*.sbatch 2>/dev/null | head -1 || true)
[ -n "$own" ] && script=$own

# shellcheck source=../slurm/lib/job.sh
. slurm/lib/job.sh
COURSE_SITE=$site
job_load_site

gpus=$(sed -nE 's/^#COURSE +gpus=([0-9]+).*/\1/p' "$script" | head -1)
needs=$(sed -nE 's/^#COURSE +needs=([^ ]+).*/\1/p' "$script" | head -1)
needs=${needs:-$kind/$lesson/train}
goal=$(sed -nE 's/^#COURSE +make=([^ ]+).*/\1/p' "$script" | head -1)

# A binary built with -march=native on the login node may not run on the compute
# nodes: sites with another ARCH get their own build directory.
arch=${SITE_ARCH:-native}
build=build
[ "$arch" = native ] || build="build/arch-$arch"

partition=$SITE_PARTITION
args=(--parsable)
if [ "${gpus:-0}" -gt 0 ]; then
    partition=${SITE_GPU_PARTITION:-$SITE_PARTITION}
    # A script's GPUs (and tasks: one rank per GPU) are per node. A site whose nodes
    # have fewer GPUs gets what a node holds: fewer tasks a node, on the same nodes.
    shape=${SITE_GPUS_PER_NODE:-}
    if [ -n "$shape" ] && [ "$gpus" -gt "$shape" ]; then
        tasks=$(sed -nE 's/^#SBATCH +--ntasks-per-node[= ]([0-9]+).*/\1/p' "$script" | head -1)
        note="note: site $site has $shape GPUs a node${partition:+ (partition $partition)}, $lesson asks for $gpus"
        if [ -n "$tasks" ] && [ "$tasks" -gt "$shape" ]; then
            args+=(--ntasks-per-node="$shape")
            note+=": it runs $shape tasks a node (one per GPU) instead of $tasks"
        fi
        echo "$note" >&2
        gpus=$shape
    fi
    if [ -n "${SITE_GPU_REQUEST:-}" ]; then
        # -G N / --gpus=N are N GPUs for the whole job: on 2 nodes, 8 ranks would share
        # 4 GPUs (NCCL refuses). The scripts' counts are per node.
        case "$SITE_GPU_REQUEST" in -G* | --gpus[=\ ]*)
            echo "submit: SITE_GPU_REQUEST '$SITE_GPU_REQUEST' in slurm/sites/$site.env asks for GPUs for the whole job; a script's #COURSE gpus=N is per node: use --gpus-per-node=%d (or --gres=gpu:%d)" >&2
            exit 1 ;;
        esac
        # the profile's format, e.g. --gres=gpu:%d or -G %d ("--": a format that
        # begins with "-" is not an option of printf)
        # shellcheck disable=SC2059
        request=$(printf -- "$SITE_GPU_REQUEST" "$gpus") ||
            { echo "submit: bad SITE_GPU_REQUEST '$SITE_GPU_REQUEST' in slurm/sites/$site.env" >&2; exit 1; }
        read -ra gpu_args <<<"$request"
        args+=("${gpu_args[@]}")
    fi
fi
[ -n "$partition" ] && args+=(--partition="$partition")
[ -n "$SITE_ACCOUNT" ] && args+=(--account="$SITE_ACCOUNT")
[ -n "$SITE_RESERVATION" ] && args+=(--reservation="$SITE_RESERVATION")
args+=(--job-name="$lesson" --chdir="$PWD" --output="logs/%x-%j.out" --error="logs/%x-%j.out")
exports="ALL,COURSE_SITE=$site,COURSE_BUILD=$build,SOLUTION=${solution:-0}"
for v in COURSE_SCRATCH_DIR COURSE_DEVICE; do  # the others are sbatch options already
    [ -n "${!v:-}" ] && exports+=",$v=${!v}"
done
args+=(--export="$exports")
# sbatch's own --nodes overrides the script's #SBATCH --nodes; tasks and GPUs stay per node
[ -n "$nodes" ] && args+=(--nodes="$nodes")
# shellcheck disable=SC2206 # options, split on purpose
[ -n "${COURSE_SBATCH_OPTIONS:-}" ] && args+=($COURSE_SBATCH_OPTIONS)
cmd=(sbatch "${args[@]}" "$script" "${program_args[@]}")

if [ -n "$dry" ]; then
    # quoted only where the shell needs it, so it can be pasted
    words=()
    for a in "${cmd[@]}"; do
        if [[ "$a" =~ ^[A-Za-z0-9_@%+=:,./-]+$ ]]; then words+=("$a"); else words+=("'${a//\'/\'\\\'\'}'"); fi
    done
    echo "${words[*]}"
    exit 0
fi

if [ -n "${SITE_ACCOUNT_REQUIRED:-}" ] && [ -z "$SITE_ACCOUNT" ]; then
    echo "submit: site $site needs a project account: COURSE_ACCOUNT=<project> make submit ..., or set SITE_ACCOUNT in slurm/sites/$site.env" >&2
    exit 1
fi
command -v sbatch >/dev/null || { echo "submit: sbatch not found: run this on the cluster's login node (or --dry to see the command)" >&2; exit 1; }
[ -n "$goal" ] || goal=$build/$needs
make --no-print-directory BUILD="$build" ARCH="$arch" "$goal" >&2 ||
    { echo "submit: make BUILD=$build $goal failed; fix the build first" >&2; exit 1; }
mkdir -p logs
job=$("${cmd[@]}") || { echo "submit: sbatch refused the job (the message is above)" >&2; exit 1; }
job=${job%%;*}  # --parsable prints "id" or "id;cluster"
echo "submitted job $job: $lesson ($kind) on site $site"
echo "output:  logs/$lesson-$job.out   (watch: squeue -j $job; tail -f logs/$lesson-$job.out)"
if [ -n "$SITE_SCRATCH" ]; then results=$SITE_SCRATCH/dl-course/$lesson; else results=runs/$lesson; fi
echo "results: $results"
