# Lesson 11: what of the host a container sees, for each runtime. Sourced by
# containers.sbatch and by the tests; TODO 11.4 is here (README.md, part 2).
#
#   . lessons/11-containers/binds.sh
#   container_setup charliecloud build/image/root "$DATA" "$SCRATCH"
#   srun "${CONTAINER_SRUN[@]}" "${CONTAINER_RUN[@]}" /opt/course/build/solutions/01-cpu-cnn/train ...
#
# Runtimes: charliecloud (ch-run, the image a directory, fully unprivileged), pyxis
# (Enroot through srun --container-*, the image a SquashFS file), apptainer (apptainer
# exec, the image a SIF file).

# container_path_ok RUNTIME NAME PATH: whether PATH can be a mount's source for
# RUNTIME, else a message naming it and status 1. Every runtime reads SRC:DST, so a
# ':' in SRC would move the split; Pyxis's and Apptainer's lists end a mount at a ','.
# Either would cut the mount somewhere else, silently.
container_path_ok() {
    local runtime=$1 name=$2 path=$3 c=
    case $path in *:*) c=: ;; esac
    case $runtime:$path in pyxis:*,* | apptainer:*,*) c=, ;; esac
    [ -z "$c" ] && return 0
    echo "container_binds: the $name directory '$path' has a '$c' in it, and $runtime's mounts" \
        "(SRC:DST$([ "$runtime" = charliecloud ] || echo ",SRC:DST")) would be split there: give a path" \
        "without ',' or ':' (a symbolic link to it, say)" >&2
    return 1
}

# container_binds RUNTIME DATA SCRATCH: sets the array CONTAINER_BINDS to the options
# that show the host's DATA directory read-only at /data, its SCRATCH directory
# writable at /scratch, and nothing else of the host: no home directory, and a /tmp
# of the container's own.
container_binds() {
    local runtime=$1 data=$2 scratch=$3
    # given: a path the mount lists would split is refused first
    container_path_ok "$runtime" data "$data" && container_path_ok "$runtime" scratch "$scratch" || return 1
#ifdef SOLUTION
    case $runtime in
    charliecloud)
        # -b binds (this ch-run has no read-only flag: /data is as writable as the host
        # lets the user write the data, which on a cluster is not at all); the image
        # itself is read-only, $HOME is not bound unless --home; -t: a private /tmp
        CONTAINER_BINDS=(-b "$data:/data" -b "$scratch:/scratch" -t) ;;
    pyxis)
        # SRC:DST[:FLAGS], the mounts separated by commas ('+' joins the flags of one
        # mount: ro+rprivate); the home directory may be mounted by the site's Pyxis or
        # Enroot settings: say no
        CONTAINER_BINDS=("--container-mounts=$data:/data:ro,$scratch:/scratch" --no-container-mount-home) ;;
    apptainer)
        # --contain: an empty /tmp and home of the container's own, not the host's;
        # SRC:DST[:ro], the binds separated by commas
        CONTAINER_BINDS=(--contain --bind "$data:/data:ro,$scratch:/scratch") ;;
    *)
        echo "container_binds: unknown runtime '$runtime' (charliecloud, pyxis, apptainer)" >&2
        return 1 ;;
    esac
#else
    # TODO 11.4: for each runtime, the options (see README.md, TODO 11.4, for each
    # runtime's syntax):
    #   charliecloud: -b "$data:/data" -b "$scratch:/scratch", and -t (a private /tmp)
    #   pyxis:        one --container-mounts=SRC:DST:ro,SRC:DST with both binds (/data
    #                 read-only: ro; a comma between the two mounts, never '+': that
    #                 joins the flags of one mount), and --no-container-mount-home
    #   apptainer:    --contain, and one --bind SRC:DST:ro,SRC:DST with both binds
    #                 (/data read-only: ro; a comma between the two)
    # as words of the array: CONTAINER_BINDS=(-b "$data:/data" ...). An unknown runtime:
    # a message on stderr and a non-zero status (return 1). Then remove the next two lines.
    echo "TODO 11.4 is not done yet: see lessons/11-containers/README.md, section TODO 11.4" >&2
    return 3
#endif
}

# container_setup RUNTIME IMAGE DATA SCRATCH: the arrays CONTAINER_SRUN (options srun
# itself takes: Pyxis's), CONTAINER_RUN (the words before the program: ch-run's or
# apptainer's) and CONTAINER_PREPARE (a command to run once before them, or none), with
# the binds, the image's environment, /scratch as the working directory and, where
# COURSE_DEVICE=cuda, the GPUs (README.md, GPU passthrough).
container_setup() {
    local runtime=$1 image=$2 data=$3 scratch=$4 gpus=
    [ "${COURSE_DEVICE:-cpu}" = cuda ] && gpus=yes
    container_binds "$runtime" "$data" "$scratch" || return
    CONTAINER_SRUN=() CONTAINER_RUN=() CONTAINER_PREPARE=()
    case $runtime in
    charliecloud)
        # --set-env: the image's /ch/environment. GPUs: ch-run has no flag for them; the
        # host's driver libraries are copied into the (directory) image, on the node
        CONTAINER_RUN=(ch-run --set-env "${CONTAINER_BINDS[@]}" -c /scratch "$image" --)
        if [ -n "$gpus" ]; then CONTAINER_PREPARE=(ch-fromhost --nvidia "$image"); fi ;;
    pyxis)
        # Enroot reads /etc/environment itself. GPUs: Enroot's NVIDIA hook, for a
        # container whose environment names them (Pyxis passes srun's on); NVIDIA's CUDA
        # images set these, Debian's does not. all: the job's (Slurm limits the devices)
        CONTAINER_SRUN=(--container-image="$image" "${CONTAINER_BINDS[@]}" --container-workdir=/scratch)
        if [ -n "$gpus" ]; then
            export NVIDIA_VISIBLE_DEVICES=${NVIDIA_VISIBLE_DEVICES:-all}
            export NVIDIA_DRIVER_CAPABILITIES=${NVIDIA_DRIVER_CAPABILITIES:-compute,utility}
        fi ;;
    apptainer)
        # --nv: the host's NVIDIA libraries and /dev/nvidia* bound in
        CONTAINER_RUN=(apptainer exec "${CONTAINER_BINDS[@]}" --pwd /scratch)
        if [ -n "$gpus" ]; then CONTAINER_RUN+=(--nv); fi
        CONTAINER_RUN+=("$image") ;;
    esac
}
