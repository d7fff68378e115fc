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

# container_binds RUNTIME DATA SCRATCH: sets the array CONTAINER_BINDS to the options
# that show the host's DATA directory read-only at /data, its SCRATCH directory
# writable at /scratch, and nothing else of the host: no home directory, and a /tmp
# of the container's own.
container_binds() {
    local runtime=$1 data=$2 scratch=$3
#ifdef SOLUTION
    case $runtime in
    charliecloud)
        # -b binds (this ch-run has no read-only flag: /data is as writable as the host
        # lets the user write the data, which on a cluster is not at all); the image
        # itself is read-only, $HOME is not bound unless --home; -t: a private /tmp
        CONTAINER_BINDS=(-b "$data:/data" -b "$scratch:/scratch" -t) ;;
    pyxis)
        # flags after the second colon; the home directory may be mounted by the site's
        # Pyxis or Enroot settings: say no
        CONTAINER_BINDS=("--container-mounts=$data:/data:ro,$scratch:/scratch" --no-container-mount-home) ;;
    apptainer)
        # --contain: an empty /tmp and home of the container's own, not the host's
        CONTAINER_BINDS=(--contain --bind "$data:/data:ro,$scratch:/scratch") ;;
    *)
        echo "container_binds: unknown runtime '$runtime' (charliecloud, pyxis, apptainer)" >&2
        return 1 ;;
    esac
#else
    # TODO 11.4: for each runtime, the options (see README.md, TODO 11.4, for each
    # runtime's syntax):
    #   charliecloud: -b "$data:/data" -b "$scratch:/scratch", and -t (a private /tmp)
    #   pyxis:        one --container-mounts=... with both binds (/data read-only: ro),
    #                 and --no-container-mount-home
    #   apptainer:    --contain, and one --bind with both binds (/data read-only: ro)
    # as words of the array: CONTAINER_BINDS=(-b "$data:/data" ...). An unknown runtime:
    # a message on stderr, return 1. Then remove the next two lines.
    echo "TODO 11.4 is not done yet: see lessons/11-containers/README.md, section TODO 11.4" >&2
    return 3
#endif
}

# container_setup RUNTIME IMAGE DATA SCRATCH: the arrays CONTAINER_SRUN (options srun
# itself takes: Pyxis's) and CONTAINER_RUN (the words before the program: ch-run's or
# apptainer's), with the binds, the image's environment, /scratch as the working
# directory and, where COURSE_DEVICE=cuda, the GPUs (README.md, GPU passthrough).
container_setup() {
    local runtime=$1 image=$2 data=$3 scratch=$4
    container_binds "$runtime" "$data" "$scratch" || return
    CONTAINER_SRUN=() CONTAINER_RUN=()
    case $runtime in
    charliecloud)
        # --set-env: the image's /ch/environment. GPUs: the host's driver libraries
        # must be in the image first (ch-fromhost --nvidia IMAGE, once, before the job)
        CONTAINER_RUN=(ch-run --set-env "${CONTAINER_BINDS[@]}" -c /scratch "$image" --) ;;
    pyxis)
        # Enroot reads /etc/environment itself; GPUs come through its NVIDIA hook
        CONTAINER_SRUN=(--container-image="$image" "${CONTAINER_BINDS[@]}" --container-workdir=/scratch) ;;
    apptainer)
        CONTAINER_RUN=(apptainer exec "${CONTAINER_BINDS[@]}" --pwd /scratch)
        [ "${COURSE_DEVICE:-cpu}" = cuda ] && CONTAINER_RUN+=(--nv)
        CONTAINER_RUN+=("$image") ;;
    esac
}
