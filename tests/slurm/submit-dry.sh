#!/usr/bin/env bash
# `make submit N DRY=1` for every site profile, without Slurm: the printed sbatch line
# must carry what the profile sets (partition, GPU syntax, account, reservation),
# nothing it leaves empty, and be the exact command a shell can run. Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
. tests/lib-checks.sh # pass, fail, skip, show, checks_summary
expect() { # $1: description, $2: command output, $3: regex that must match, $4: regex that must not
    if grep -qE -- "$3" <<<"$2" && { [ -z "${4:-}" ] || ! grep -qE -- "$4" <<<"$2"; }; then
        pass "$1"
    else
        fail "$1"; echo "        got: $2"
    fi
}
dry() { tools/submit.sh --dry "$@" 2>&1; }  # --dry first: after "--" it would go to the program

expect "generic: GPU lesson asks --gpus-per-node=1, no partition, account or reservation" \
    "$(dry 2 --site generic)" '^sbatch .*--gpus-per-node=1 .*slurm/02-gpu-cnn\.sbatch *$' '--partition|--account|--reservation'
expect "generic: CPU lesson asks for no GPU" "$(dry 1 --site generic)" 'slurm/01-cpu-cnn\.sbatch' 'gpu'
expect "lrz-ai: CPU lesson on lrz-cpu, GPU lesson on lrz-v100x2 with --gres" \
    "$(dry 1 --site lrz-ai; dry 0 --site lrz-ai)" '--partition=lrz-cpu .*01-cpu-cnn[^$]*' ''
expect "lrz-ai: GPU lesson on lrz-v100x2 with --gres=gpu:1" "$(dry 0 --site lrz-ai)" '--gres=gpu:1 --partition=lrz-v100x2'
expect "jsc: develbooster" "$(dry 1 --site jsc)" '--partition=develbooster'
expect "gwdg-grete: --gpus-per-node=1 on grete:shared (-G is per job)" "$(dry 2 --site gwdg-grete)" \
    '--gpus-per-node=1 --partition=grete:shared' '-G '
expect "generic: lesson 04 asks one GPU, with its own job script" \
    "$(dry 4 --site generic)" '^sbatch .*--gpus-per-node=1 .*lessons/04-transformer/transformer\.sbatch *$'
expect "local: no GPU request even for a GPU lesson" "$(dry 2 --site local)" '--partition=local' 'gpu:|-G '
expect "account and reservation from the environment are passed" \
    "$(COURSE_ACCOUNT=training2410 COURSE_RESERVATION=dl-course dry 1 --site jsc)" \
    '--account=training2410 --reservation=dl-course'
expect "SOLUTION=1 and program arguments reach the job" \
    "$(dry 1 --site generic --solution -- --epochs 2)" 'SOLUTION=1 slurm/01-cpu-cnn\.sbatch --epochs 2$'
expect "jsc: no submission without a project account" \
    "$(env -u COURSE_ACCOUNT tools/submit.sh 1 --site jsc 2>&1)" 'site jsc needs a project account'
expect "an unknown site is refused" "$(dry 1 --site nowhere)" 'no site profile slurm/sites/nowhere\.env'
expect "an unknown lesson is refused" "$(dry 42 --site generic)" 'no slurm/42-\*\.sbatch'

# Lesson 06 on one node, then two: the same job script (the participant's, with TODOs
# 6.9-6.11), NODES=1 overriding its --nodes=2 while tasks and GPUs stay per node.
script=solutions/06-ddp/ddp.sbatch
if grep -qx '#SBATCH --nodes=2' "$script" && grep -qx '#SBATCH --ntasks-per-node=4' "$script" &&
    grep -qx '#COURSE gpus=4' "$script"; then
    pass "lesson 06's job script: 2 nodes, 4 tasks and 4 GPUs per node"
else
    fail "lesson 06's job script $script does not ask for 2 nodes of 4 tasks and 4 GPUs"
fi
expect "lesson 06: 2 nodes (the script's), 4 GPUs per node, no --nodes on the command line" \
    "$(dry 6 --site generic --solution)" '^sbatch .*--gpus-per-node=4 .*solutions/06-ddp/ddp\.sbatch *$' '--nodes'
expect "lesson 06, NODES=1: sbatch --nodes=1 before the same script, 4 GPUs on the node" \
    "$(dry 6 --site generic --solution --nodes 1)" '^sbatch .*--gpus-per-node=4 .*--nodes=1 solutions/06-ddp/ddp\.sbatch *$'
expect "lesson 06, NODES=1 through make, with the participant's script and ARGS" \
    "$(make -s --no-print-directory submit 6 NODES=1 DRY=1 SITE=jsc ARGS='--epochs 1' 2>&1)" \
    '^sbatch .*--partition=develbooster .*--nodes=1 lessons/06-ddp/ddp\.sbatch --epochs 1$'
for bad in 0 x ''; do
    expect "NODES='$bad' is refused with a message" "$(dry 6 --nodes $bad)" "NODES .*got '$bad'" '^sbatch'
done

# Each site's real node shape (issue 30): lrz-ai's GPU partition (lrz-v100x2) has 2 GPUs
# a node, so lesson 06's 4 tasks and 4 GPUs a node become 2 and 2, on the same 2 nodes;
# gwdg-grete asks for GPUs per node, never -G (GPUs for the whole job: on 2 nodes 8
# ranks would share 4 GPUs).
expect "lrz-ai, lesson 06: 2 tasks and 2 GPUs a node (its nodes' shape), with a note" \
    "$(dry 6 --site lrz-ai --solution)" \
    '^sbatch .*--ntasks-per-node=2 --gres=gpu:2 --partition=lrz-v100x2 .*solutions/06-ddp/ddp\.sbatch *$' 'gpu:4'
expect "lrz-ai, lesson 06: the note says what changed" "$(dry 6 --site lrz-ai --solution)" \
    '^note: site lrz-ai has 2 GPUs a node .* asks for 4: it runs 2 tasks a node'
expect "lrz-ai, lesson 07: 2 GPUs fit a node: unchanged" "$(dry 7 --site lrz-ai --solution)" \
    '^sbatch .*--gres=gpu:2 --partition=lrz-v100x2 ' 'ntasks-per-node|^note'
expect "gwdg-grete, lesson 06 on 2 nodes: 4 GPUs a node" "$(dry 6 --site gwdg-grete --solution)" \
    '^sbatch .*--gpus-per-node=4 --partition=grete:shared .*solutions/06-ddp/ddp\.sbatch *$' '-G |ntasks-per-node'
for env in slurm/sites/*.env; do # every profile asks for GPUs per node
    request=$(. "$env"; printf -- "${SITE_GPU_REQUEST:-}" 4)
    case "$request" in
    -G* | --gpus=* | "--gpus "*) fail "site $(basename "$env" .env): '$request' asks GPUs for the whole job, not per node" ;;
    *) pass "site $(basename "$env" .env): GPUs asked per node (${request:-none: no GPUs})" ;;
    esac
done
perjob=slurm/sites/zz-test-perjob-$$.env
trap 'rm -f "$perjob"' EXIT
printf 'SITE_GPU_PARTITION=gpu\nSITE_GPU_REQUEST="-G %%d"\n' >"$perjob"
expect "a profile with -G (GPUs for the whole job) is refused with what to write instead" \
    "$(dry 6 --site "$(basename "$perjob" .env)" --solution)" 'for the whole job.*--gpus-per-node=%d' '^sbatch'
rm -f "$perjob"

# Lesson 07: 2 GPUs of one node, one stage per GPU; its own job script (no TODOs in it),
# the participant's copy or the solution's.
script=solutions/07-pipeline/pipeline.sbatch
if grep -qx '#SBATCH --nodes=1' "$script" && grep -qx '#SBATCH --ntasks-per-node=2' "$script" &&
    grep -qx '#COURSE gpus=2' "$script" && cmp -s "$script" lessons/07-pipeline/pipeline.sbatch; then
    pass "lesson 07's job script: 1 node, 2 tasks and 2 GPUs, the same for participants and solution"
else
    fail "lesson 07's job script $script does not ask for 1 node of 2 tasks and 2 GPUs, or differs from lessons/07-pipeline's"
fi
expect "lesson 07: 2 GPUs on one node, with its own job script" \
    "$(dry 7 --site generic --solution)" '^sbatch .*--gpus-per-node=2 .*solutions/07-pipeline/pipeline\.sbatch *$' '--nodes'
expect "lesson 07 through make, with the participant's script and ARGS" \
    "$(make -s --no-print-directory submit 7 DRY=1 SITE=gwdg-grete ARGS='--schedule 1f1b' 2>&1)" \
    '^sbatch .*--gpus-per-node=2 --partition=grete:shared .*lessons/07-pipeline/pipeline\.sbatch --schedule 1f1b$'

# make submit gpu-check (issue 41): make gpu-report in a job, with each site's GPU request
# per node (4 GPUs, one task each, or what the site's nodes hold), NODES=2 on two nodes.
script=slurm/gpu-check.sbatch
if grep -qx '#SBATCH --nodes=1' "$script" && grep -qx '#SBATCH --ntasks-per-node=4' "$script" &&
    grep -qx '#COURSE gpus=4' "$script" && grep -qx '#COURSE make=gpu-report-build' "$script"; then
    pass "gpu-check's job script: 1 node, 4 tasks and 4 GPUs a node, built by make gpu-report-build"
else
    fail "$script does not ask for 1 node of 4 tasks and 4 GPUs, or does not name make gpu-report-build"
fi
expect "generic, gpu-check: 4 GPUs a node, the script on its own" "$(dry gpu-check --site generic)" \
    '^sbatch .*--gpus-per-node=4 .*--job-name=gpu-check .*slurm/gpu-check\.sbatch *$' '--nodes|--partition'
expect "jsc, gpu-check: --gres=gpu:4 on develbooster" "$(COURSE_ACCOUNT=training2410 dry gpu-check --site jsc)" \
    '^sbatch .*--gres=gpu:4 --partition=develbooster --account=training2410 .*slurm/gpu-check\.sbatch *$'
expect "lrz-ai, gpu-check: 2 tasks and 2 GPUs a node (its nodes' shape)" "$(dry gpu-check --site lrz-ai)" \
    '^sbatch .*--ntasks-per-node=2 --gres=gpu:2 --partition=lrz-v100x2 .*slurm/gpu-check\.sbatch *$' 'gpu:4'
expect "gwdg-grete, gpu-check: --gpus-per-node=4 on grete:shared" "$(dry gpu-check --site gwdg-grete)" \
    '^sbatch .*--gpus-per-node=4 --partition=grete:shared .*slurm/gpu-check\.sbatch *$' '-G '
expect "local, gpu-check: no GPU request (CPU ranks)" "$(dry gpu-check --site local)" \
    '^sbatch .*--partition=local .*slurm/gpu-check\.sbatch *$' 'gpus-per|gres|-G '
expect "make submit gpu-check SITE=gwdg-grete NODES=2 DRY=1: --nodes=2 before the script" \
    "$(make -s --no-print-directory submit gpu-check SITE=gwdg-grete NODES=2 DRY=1 2>&1)" \
    '^sbatch .*--gpus-per-node=4 --partition=grete:shared .*--nodes=2 slurm/gpu-check\.sbatch *$'
expect "make submit gpu-check SITE=jsc DRY=1 through make" \
    "$(COURSE_ACCOUNT=x make -s --no-print-directory submit gpu-check SITE=jsc DRY=1 2>&1)" \
    '^sbatch .*--gres=gpu:4 --partition=develbooster .*slurm/gpu-check\.sbatch *$' '--nodes'

# The printed line is the exact command: read back by the shell, it gives the same
# words, odd program arguments included.
odd=(--epochs "5 x" "it's" '' 'a"b' '$HOME')
for env in slurm/sites/*.env; do
    site=$(basename "$env" .env)
    line=$(env -u COURSE_ACCOUNT -u COURSE_RESERVATION -u COURSE_PARTITION \
        tools/submit.sh 2 --dry --site "$site" -- "${odd[@]}" 2>&1)
    rc=$?
    words=()
    eval "words=($line)" 2>/dev/null
    n=${#words[@]}
    tail=("${words[@]:n-${#odd[@]}}")
    request=$(. "$env"; printf -- "${SITE_GPU_REQUEST:-}" 1)
    if [ $rc -ne 0 ] || [ "${words[0]:-}" != sbatch ] || [ "${tail[*]}" != "${odd[*]}" ] ||
        [ "${#tail[@]}" -ne "${#odd[@]}" ] || [ "${tail[3]}" != '' ] ||
        [ "${words[n-${#odd[@]}-1]}" != slurm/02-gpu-cnn.sbatch ]; then
        fail "submit --dry, site $site: not a command line that gives back the program's arguments (exit $rc)"
        echo "        $line"
        continue
    fi
    if [ -n "$request" ] && [[ " ${words[*]} " != *" $request "* ]]; then
        fail "submit --dry, site $site: the GPU lesson's request '$request' is missing"
        echo "        $line"
    elif [[ "$line" == *--account* || "$line" == *--reservation* ]]; then
        fail "submit --dry, site $site: an empty account or reservation was passed"
        echo "        $line"
    else
        pass "submit --dry, site $site: the exact sbatch command${request:+, GPU as '$request'}"
    fi
done

line=$(COURSE_ACCOUNT=training2410 COURSE_RESERVATION="my event" tools/submit.sh 3 --dry --site jsc 2>&1)
words=()
eval "words=($line)" 2>/dev/null
if [[ " ${words[*]} " == *" --account=training2410 "* && " ${words[*]} " == *" --reservation=my event "* ]]; then
    pass "submit --dry: COURSE_ACCOUNT and COURSE_RESERVATION are passed"
else
    fail "submit --dry: COURSE_ACCOUNT/COURSE_RESERVATION missing"
    echo "        $line"
fi
checks_summary
