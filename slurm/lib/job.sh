# Shared job helpers, sourced by every slurm/NN-name.sbatch after `cd` to the course
# root. They keep the site out of the lesson scripts: the site profile (partition,
# modules, container, scratch) is chosen at submission (tools/submit.sh exports
# COURSE_SITE) and applied here.
#
#   job_setup NN-name   load the site profile and its modules, pick the binary
#                       (the participant's build, or the solution's when
#                       SOLUTION=1), choose the run directory, print a header
#   job_load_modules, job_run_dir NAME   its parts without a lesson's binary
#   job_run CMD...      launch CMD through srun (inside the site's container, if any),
#                       each task with the job's --cpus-per-task
#   job_launcher [nompi] set JOB_LAUNCH to what job_run puts before CMD (for a
#                       script that runs the program itself); nompi: without
#                       --mpi=pmix (GPU ranks that meet through NCCL, lesson 06)
#   job_monitor_start DIR  start build/tools/node-monitor beside the job, one on each
#                       node (srun --overlap; outside Slurm: here), each writing
#                       DIR/monitor-JOB-HOST.jsonl every second (lesson 10)
#   job_monitor_stop    stop it (it ends after a whole line) and wait;
#                       `trap job_monitor_stop EXIT` stops it however the script ends
#
# After job_setup:
#   JOB_BIN        the lesson's program: build/lessons/NN-name/train or build/solutions/...
#   COURSE_RUN_DIR where the lesson writes metrics, checkpoints and other output:
#                  $SITE_SCRATCH/dl-course/NN-name when the site has a scratch
#                  directory, else runs/NN-name in the course directory
#   COURSE_DEVICE  cpu or cuda, from the site profile (cuda unless it says otherwise)
#   JOB_ID         $SLURM_JOB_ID, or "local" when the script runs outside Slurm

job_die() {
    echo "error: $*" >&2
    exit 1
}

# Reads slurm/sites/$COURSE_SITE.env (default: generic) into SITE_* variables.
job_load_site() {
    local site=${COURSE_SITE:-generic}
    local profile="slurm/sites/$site.env"
    [ -f "$profile" ] || job_die "no site profile $profile (profiles: $(cd slurm/sites && ls *.env | sed 's/\.env$//' | tr '\n' ' '))"
    # shellcheck source=/dev/null
    . "$profile"
    COURSE_SITE=$site
    # an event or a person may override the profile without editing it
    SITE_SCRATCH=${COURSE_SCRATCH_DIR:-${SITE_SCRATCH:-}}
    SITE_PARTITION=${COURSE_PARTITION:-${SITE_PARTITION:-}}
    SITE_GPU_PARTITION=${COURSE_PARTITION:-${SITE_GPU_PARTITION:-$SITE_PARTITION}}
    SITE_ACCOUNT=${COURSE_ACCOUNT:-${SITE_ACCOUNT:-}}
    SITE_RESERVATION=${COURSE_RESERVATION:-${SITE_RESERVATION:-}}
}

job_setup() {
    local lesson=$1
    [ -f slurm/lib/job.sh ] || job_die "not in the course directory (cwd: $PWD); submit with make submit"
    job_load_site
    job_load_modules

    local kind=lessons
    case "${SOLUTION:-}" in 1 | yes | true) kind=solutions ;; esac
    JOB_BIN="${COURSE_BUILD:-build}/$kind/$lesson/train"
    [ -x "$JOB_BIN" ] || job_die "$JOB_BIN is not built: run 'make' on the login node first (make submit does it for you)"
    job_run_dir "$lesson"
    export JOB_BIN

    echo "job $JOB_ID: lesson $lesson ($kind) on $(hostname -s), site $COURSE_SITE, $(date '+%F %T')"
    echo "tasks ${SLURM_NTASKS:-1}, cpus per task ${SLURM_CPUS_PER_TASK:-?}, gpus ${SLURM_GPUS_ON_NODE:-${CUDA_VISIBLE_DEVICES:-none}}, output to $COURSE_RUN_DIR"
}

# The site's modules (SITE_MODULES), loaded with `module load`.
job_load_modules() {
    [ -n "${SITE_MODULES:-}" ] || return 0
    if command -v module >/dev/null 2>&1 || type module >/dev/null 2>&1; then
        # shellcheck disable=SC2086 # a list of module names
        module load $SITE_MODULES || job_die "module load $SITE_MODULES failed (fix SITE_MODULES in slurm/sites/$COURSE_SITE.env)"
    else
        job_die "site $COURSE_SITE asks for modules ($SITE_MODULES) but this node has no module command"
    fi
}

# job_run_dir NAME: COURSE_RUN_DIR (made), COURSE_DEVICE and JOB_ID, as job_setup sets
# them (a job script that runs no lesson program: slurm/gpu-check.sbatch).
job_run_dir() {
    local name=$1
    if [ -n "${SITE_SCRATCH:-}" ]; then
        COURSE_RUN_DIR="$SITE_SCRATCH/dl-course/$name"
    else
        COURSE_RUN_DIR="$PWD/runs/$name"
        case "$COURSE_RUN_DIR/" in "$HOME"/*)
            echo "note: site $COURSE_SITE sets no SITE_SCRATCH, so output goes to $COURSE_RUN_DIR, inside \$HOME" ;;
        esac
    fi
    mkdir -p "$COURSE_RUN_DIR" || job_die "cannot create $COURSE_RUN_DIR (check SITE_SCRATCH in slurm/sites/$COURSE_SITE.env)"
    COURSE_DEVICE=${COURSE_DEVICE:-${SITE_DEVICE:-cuda}}
    JOB_ID=${SLURM_JOB_ID:-local}
    export COURSE_RUN_DIR COURSE_DEVICE JOB_ID
}

# srun with the site's extra options and container; --mpi=pmix for multi-task jobs
# (Open MPI and Slurm meet through PMIx; no mpirun inside a Slurm job) unless the
# first argument is "nompi". --kill-on-bad-exit: a rank that fails ends the others.
# Sets the array JOB_LAUNCH to the words put before the program: empty outside Slurm.
job_launcher() {
    JOB_LAUNCH=(srun)
    if [ -z "${SLURM_JOB_ID:-}" ]; then  # outside Slurm (a login node test): run directly
        JOB_LAUNCH=()
        return 0
    fi
    if [ "${SLURM_NTASKS:-1}" -gt 1 ]; then
        [ "${1:-}" = nompi ] || JOB_LAUNCH+=(--mpi=pmix)
        JOB_LAUNCH+=(--kill-on-bad-exit=1)
    fi
    # Since Slurm 22.05 srun does not inherit the job's --cpus-per-task: without it each
    # task is bound to one core, and --threads 8 runs on one. Passed on explicitly, and
    # as SRUN_CPUS_PER_TASK for any other srun in the job script.
    if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
        JOB_LAUNCH+=(--cpus-per-task="$SLURM_CPUS_PER_TASK")
        export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK
    fi
    # shellcheck disable=SC2206 # options, split on purpose
    [ -n "${SITE_SRUN_OPTIONS:-}" ] && JOB_LAUNCH+=($SITE_SRUN_OPTIONS)
    job_container_options
    JOB_LAUNCH+=("${JOB_CONTAINER[@]}")
    return 0
}

# job_container_options: JOB_CONTAINER, srun's options for the site's container
# (pyxis/enroot, srun --container-*), empty without one. The course and scratch
# directories appear at the same paths inside, so every path printed stays valid.
job_container_options() {
    JOB_CONTAINER=()
    [ -n "${SITE_CONTAINER:-}" ] || return 0
    local mounts="$PWD:$PWD"
    [ -n "${SITE_SCRATCH:-}" ] && mounts+=",$SITE_SCRATCH:$SITE_SCRATCH"
    JOB_CONTAINER=(--container-image="$SITE_CONTAINER" --container-mounts="$mounts"
                   --container-workdir="$PWD")
}

# job_run CMD...: CMD through the launcher, in the foreground. A script that must
# signal the program runs "${JOB_LAUNCH[@]}" CMD... & itself (after job_launcher):
# then $! is the launcher's (or, outside Slurm, the program's) own pid, not that of
# a subshell running this function, which would die of the signal in its place.
job_run() {
    job_launcher
    "${JOB_LAUNCH[@]}" "$@"
}

# job_monitor_start DIR: the node monitor (tools/monitor/node_monitor.c: CPU, memory and
# each GPU, a JSON line per source every second) beside the job, in the background: one
# task on each of the job's nodes, a step of its own that shares the job's CPUs, memory
# and GPUs with the program's (--overlap; a step gets all of the job's GPUs unless it
# asks otherwise, so NVML sees them; --mem=0: the job's memory, shared, where the
# default, memory per CPU, is not free beside a step that holds it all). Outside Slurm
# it runs here.
# A monitor that is not built is a note, not a failure: the job runs without it.
job_monitor_start() {
    local dir=${1:?job_monitor_start needs the output directory}
    local bin=${COURSE_BUILD:-build}/tools/node-monitor
    JOB_MONITOR_PID=
    if [ ! -x "$bin" ]; then
        echo "note: $bin is not built (make $bin on the login node): no monitor for this job"
        return 0
    fi
    local launch=()
    if [ -n "${SLURM_JOB_ID:-}" ]; then
        local nodes=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}
        launch=(srun --overlap --nodes="$nodes" --ntasks="$nodes" --ntasks-per-node=1
                --cpus-per-task=1 --mem=0 --mpi=none --kill-on-bad-exit=0 --job-name=node-monitor)
        job_container_options
        launch+=("${JOB_CONTAINER[@]}")
    fi
    "${launch[@]}" "$bin" --out-dir "$dir" --tag "${JOB_ID:-${SLURM_JOB_ID:-local}}" &
    JOB_MONITOR_PID=$!
    echo "monitor: $bin on ${SLURM_JOB_NUM_NODES:-1} node(s), pid $JOB_MONITOR_PID, into $dir/monitor-${JOB_ID:-${SLURM_JOB_ID:-local}}-HOST.jsonl"
}

# job_monitor_stop: stops the monitor, then waits for it; nothing when none was
# started. Safe to call twice. Under Slurm SIGUSR1, which srun passes on to every node's
# monitor (SIGTERM to srun kills its tasks with no chance to finish a line); outside
# it SIGTERM.
job_monitor_stop() {
    [ -n "${JOB_MONITOR_PID:-}" ] || return 0
    local sig=TERM
    [ -n "${SLURM_JOB_ID:-}" ] && sig=USR1
    kill -"$sig" "$JOB_MONITOR_PID" 2>/dev/null || true
    wait "$JOB_MONITOR_PID" 2>/dev/null || true
    JOB_MONITOR_PID=
}
