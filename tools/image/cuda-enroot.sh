#!/usr/bin/env bash
# The course for GPU nodes as an Enroot image (for srun --container-image=... with
# Pyxis), from NVIDIA's CUDA image. Written and dry-checked (DRY=1 prints the
# commands; tests/container/run.sh runs it so), not run here: it needs Enroot and
# nvcr.io (or the site's mirror), which the machines that build the course do not have.
# On a login or build node with Enroot, from the course's directory:
#   tools/image/cuda-enroot.sh $SCRATCH/dl-course-cuda.sqsh
#   srun --gres=gpu:1 --container-image=$SCRATCH/dl-course-cuda.sqsh \
#       --container-mounts=$SCRATCH:/scratch --no-container-mount-home \
#       /opt/course/build/solutions/02-gpu-cnn/train --device cuda
# (GPUs: Enroot's NVIDIA hook gives the container the job's GPUs and the host's driver,
# driven by NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES, which NVIDIA's
# CUDA images set.)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: tools/image/cuda-enroot.sh OUT.sqsh   (DRY=1: print the commands)}
base='docker://nvcr.io#nvidia/cuda:13.0.0-devel-ubuntu24.04'
name=dl-course-cuda-$$
run() { if [ -n "${DRY:-}" ]; then printf '+'; printf ' %q' "$@"; echo; else "$@"; fi; }
[ -n "${DRY:-}" ] || command -v enroot >/dev/null || { echo "error: enroot is not installed here" >&2; exit 1; }

# the same steps as tools/image/build.sh, inside NVIDIA's image: packages, the course
# copied to /opt/course, built (sm_80, sm_90), the environment, the digest
build='export DEBIAN_FRONTEND=noninteractive
apt-get update && apt-get install -y --no-install-recommends make pkg-config zlib1g-dev \
    libopenblas-openmp-dev libopenmpi-dev openmpi-bin && rm -rf /var/lib/apt/lists/*
mkdir -p /opt/course /data /scratch && cp -a /mnt/course/. /opt/course/ && cd /opt/course && rm -rf build
make -j"$(nproc)" ARCH=x86-64-v3 CUDA_ARCH="80 90" build/libcourse.a \
    build/solutions/02-gpu-cnn/train build/solutions/06-ddp/train build/tests/check_gpu
printf "%s\n" LANG=C.UTF-8 COURSE_ROOT=/opt/course ARCH=x86-64-v3 PMIX_MCA_gds=hash \
    OMPI_MCA_btl_vader_single_copy_mechanism=none >>/etc/environment
printf "digest %s\ncommit %s\n" "$(tools/image/digest.sh /)" "$COURSE_COMMIT" >/etc/dl-course-image'

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run enroot import --output "$tmp/base.sqsh" "$base"
run enroot create --name "$name" "$tmp/base.sqsh"
run enroot start --root --rw --mount "$PWD:/mnt/course" \
    --env COURSE_COMMIT="$(git rev-parse HEAD 2>/dev/null || echo unknown)" "$name" bash -c "$build"
run enroot export --output "$out" "$name"
run enroot remove --force "$name"
