#!/usr/bin/env bash
# make image: the toolkit in a container image built from Debian's packages alone.
#
#   tools/image/build.sh [RECIPE]     (default: solutions/11-containers/image.conf)
#
# 1. a Debian 12 root from mmdebstrap with the recipe's packages (IMAGE_PACKAGES),
#    kept as a tarball named after its inputs: unchanged packages, no download again;
# 2. the toolkit's tracked files copied to /opt/course and built there by the recipe's
#    image_build, run inside the root with ch-run -w (root or not, the same way);
# 3. the environment (IMAGE_ENVIRONMENT) where each runtime reads it, the mount points
#    /data and /scratch, and /etc/dl-course-image: the image's digest (tools/image/
#    digest.sh: every path, mode and content but that file's own), the toolkit's commit
#    and the package list;
# 4. exported under build/image/: root/ (ch-run runs the directory), dl-course.sqsh
#    (Enroot's format: SquashFS with /etc/rc and /etc/environment; Pyxis takes it with
#    srun --container-image=...), dl-course.def (Apptainer: bootstrap from root/).
# Nothing is rebuilt when the recipe, the packages and the toolkit's files are the
# same as last time (build/image/stamp). Sizes and times are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
course=$PWD
recipe=${1:-solutions/11-containers/image.conf}
out=${IMAGE_OUT:-build/image}
suite=bookworm
mirror=${IMAGE_MIRROR:-http://deb.debian.org/debian}
IMAGE_ARCH=${IMAGE_ARCH:-x86-64-v3}   # the clusters' CPUs, not this machine's (-march)
IMAGE_JOBS=${IMAGE_JOBS:-$(nproc)}
export IMAGE_ARCH IMAGE_JOBS

die() { echo "make image: error: $*" >&2; exit 1; }
for tool in mmdebstrap ch-run mksquashfs git; do
    command -v "$tool" >/dev/null ||
        die "$tool is not installed (sudo apt-get install mmdebstrap charliecloud-runtime squashfs-tools git, or sudo make deps)"
done
[ -r "$recipe" ] || die "no recipe $recipe"
# shellcheck source=/dev/null
. "$recipe"
[ -n "${IMAGE_PACKAGES:-}" ] || die "$recipe sets no IMAGE_PACKAGES (TODO 11.1)"
declare -F image_build >/dev/null || die "$recipe defines no image_build (TODO 11.2)"
[ "${#IMAGE_ENVIRONMENT[@]}" -gt 0 ] 2>/dev/null || die "$recipe sets no IMAGE_ENVIRONMENT (TODO 11.3)"
export USER=${USER:-$(id -un)}   # ch-run wants it

t_start=$(date +%s)
mkdir -p "$out/cache"
# ------------------------------------------------------------ 1. the Debian root
# shellcheck disable=SC2086 # a list of package names
pkgs=$(printf '%s\n' $IMAGE_PACKAGES | LC_ALL=C sort -u | paste -sd, -)
# documentation, manual pages and translations are not needed in a runtime image
# (copyright files stay: the licences go with the packages)
mmopts=(--variant=essential --include="$pkgs"
        --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*'
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
        --dpkgopt='path-exclude=/usr/share/info/*')
base_key=$(printf '%s\n' "$suite" "$mirror" "${mmopts[@]}" | sha256sum | cut -c1-16)
base="$out/cache/base-$base_key.tar"
if [ -s "$base" ]; then
    echo "base: $base (cached: the same packages)"
else
    echo "base: mmdebstrap $suite with $pkgs"
    t0=$(date +%s)
    rm -f "$out"/cache/base-*.tar
    mmdebstrap --format=tar "${mmopts[@]}" "$suite" "$base.tmp" "$mirror" >"$out/cache/mmdebstrap.log" 2>&1 ||
        { tail -20 "$out/cache/mmdebstrap.log" >&2; die "mmdebstrap failed (log: $out/cache/mmdebstrap.log)"; }
    mv "$base.tmp" "$base"
    echo "base: built in $(( $(date +%s) - t0 )) s"
fi

# ------------------------------------------------------------ 2. the toolkit inside
# what goes in: the tracked files as they are now (edits included), and the recipe
files=$(git ls-files -z --cached --others --exclude-standard | tr '\0' '\n' | LC_ALL=C sort |
        while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done)
tree_key=$( { echo "$base_key $IMAGE_ARCH"; cat "$recipe" tools/image/build.sh tools/image/digest.sh;
              printf '%s\n' "$files" | tr '\n' '\0' | xargs -0 sha256sum; } | sha256sum | cut -c1-16)
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$tree_key" ] && [ -f "$out/root/etc/dl-course-image" ] &&
   [ -f "$out/dl-course.sqsh" ] && [ -f "$out/dl-course.def" ]; then
    echo "image: unchanged since the last build (cached, $(( $(date +%s) - t_start )) s)"
    tools/image/report.sh "$out"
    exit 0
fi
rm -f "$out/stamp"
root="$out/root"
rm -rf "$root"
mkdir -p "$root"
# (not its device files: a user may not make them, and every runtime brings the host's /dev)
tar -xf "$base" -C "$root" --exclude='./dev/*'
mkdir -p "$root/opt/course" "$root/data" "$root/scratch" "$root/ch"
printf '%s\n' "$files" | tr '\n' '\0' | tar --null -T - -cf - | tar -xf - -C "$root/opt/course"
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+edits"

echo "build: the toolkit inside the image (ARCH=$IMAGE_ARCH, $IMAGE_JOBS jobs)"
t0=$(date +%s)
# the recipe's build step, in the image: its compiler, its libraries, its paths
# (-t: a /tmp of its own, not the host's)
ch-run -w -t --unset-env='*' --set-env=IMAGE_ARCH="$IMAGE_ARCH" --set-env=IMAGE_JOBS="$IMAGE_JOBS" \
    --set-env=PATH=/usr/local/bin:/usr/bin:/bin --set-env=HOME=/tmp \
    -c /opt/course "$root" -- bash -c "$(declare -f image_build); image_build" >"$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log" >&2; die "the build inside the image failed (log: $out/build.log)"; }
echo "build: $(( $(date +%s) - t0 )) s"

# ------------------------------------------------------------ 3. environment, metadata
# The same KEY=VALUE lines for each runtime: ch-run --set-env reads /ch/environment,
# Enroot /etc/environment, Apptainer the definition's %environment (below).
printf '%s\n' "${IMAGE_ENVIRONMENT[@]}" >"$root/ch/environment"
printf '%s\n' "${IMAGE_ENVIRONMENT[@]}" >"$root/etc/environment"
# Enroot's entry point: the start command's words are its arguments
cat >"$root/etc/rc" <<'RC'
#!/bin/sh
# Enroot's entry point (its image format): run the command given, or a login shell.
if [ $# -gt 0 ]; then exec "$@"; fi
exec /bin/bash -l
RC
chmod 0755 "$root/etc/rc"
chroot_pkgs=$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Package} ${Version}\n' | LC_ALL=C sort)
printf '%s\n' "$chroot_pkgs" >"$root/opt/course/IMAGE-PACKAGES"
digest=$(tools/image/digest.sh "$root")
{
    echo "digest $digest"
    echo "commit $commit"
    echo "built $(date -u +%FT%TZ)"
    echo "debian $suite $(cat "$root/etc/debian_version")"
    echo "arch $IMAGE_ARCH"
    echo "packages $(printf '%s\n' "$chroot_pkgs" | wc -l) (/opt/course/IMAGE-PACKAGES)"
} >"$root/etc/dl-course-image"

# ------------------------------------------------------------ 4. exports
echo "export: SquashFS for Enroot/Pyxis"
t0=$(date +%s)
rm -f "$out/dl-course.sqsh"
mksquashfs "$root" "$out/dl-course.sqsh" -noappend -all-root -comp gzip -quiet -processors "$IMAGE_JOBS" >/dev/null
echo "export: $(( $(date +%s) - t0 )) s"
{
    echo "Bootstrap: localimage"
    echo "From: $course/$root"
    echo
    echo "%labels"
    echo "    org.dl-course.digest $digest"
    echo "    org.dl-course.commit $commit"
    echo
    echo "%environment"
    for kv in "${IMAGE_ENVIRONMENT[@]}"; do echo "    export $kv"; done
    echo
    echo "%runscript"
    echo '    exec "$@"'
    echo
    echo "%test"
    echo "    test -x /opt/course/build/solutions/01-cpu-cnn/grade"
    echo "    grep -q '^digest sha256:' /etc/dl-course-image"
} >"$out/dl-course.def"
echo "$tree_key" >"$out/stamp"
echo "image: built in $(( $(date +%s) - t_start )) s"
tools/image/report.sh "$out"
