#!/usr/bin/env bash
# The digest of an image root: sha256 over every path (sorted), its type, mode and
# symlink target, then every regular file's content; /etc/dl-course-image, which holds
# the digest, is left out. Owners are left out too (root or a build user's, the same
# image). One file system only (-xdev): /proc, /sys and other mounts are not the image.
# Prints "sha256:<64 hex digits>".
#   tools/image/digest.sh ROOT
set -euo pipefail
root=${1:?usage: digest.sh ROOT}
[ -d "$root" ] || { echo "digest.sh: $root is not a directory" >&2; exit 1; }
cd "$root"
export LC_ALL=C
{
    find . -xdev -path ./etc/dl-course-image -prune -o -printf '%y %m %p -> %l\n' | sort
    find . -xdev -path ./etc/dl-course-image -prune -o -type f -print0 | sort -z | xargs -0 -r sha256sum
} | sha256sum | sed 's/^\([0-9a-f]*\).*/sha256:\1/'
