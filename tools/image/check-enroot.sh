#!/usr/bin/env bash
# Checks a SquashFS file against Enroot's image format as far as that can be done
# without Enroot (its doc/image-format.md): a SquashFS file that unsquashfs reads;
# /etc/rc a shell script (Enroot runs it with the start command's words as its
# arguments: it must run them); /etc/environment KEY=VALUE lines; /etc/fstab, if
# there, lines of at least two fields; a shell; files owned by root (Enroot maps the
# user to them); the course's mount points and its /etc/dl-course-image, whose digest
# must be that of the directory the file was made from (when given).
#   tools/image/check-enroot.sh FILE.sqsh [ROOT_DIR]
# One line per check, last line "N passed, M failed".
set -u
sqsh=${1:?usage: check-enroot.sh FILE.sqsh [ROOT_DIR]}
root=${2:-}
passed=0 failed=0
check() { # $1: name; $2..: command that must succeed
    local name=$1
    shift
    local out
    if out=$("$@" 2>&1); then echo "PASS  enroot: $name"; passed=$((passed + 1))
    else echo "FAIL  enroot: $name"; [ -n "$out" ] && sed 's/^/        /' <<<"$out"; failed=$((failed + 1)); fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check "a SquashFS file unsquashfs reads ($(du -h --apparent-size "$sqsh" 2>/dev/null | cut -f1))" unsquashfs -s "$sqsh"
unsquashfs -lls "$sqsh" >"$tmp/list" 2>/dev/null
entry() { grep -E "^$1 +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +squashfs-root/$2( |$)" "$tmp/list"; }
check "/etc/rc is an executable file" entry '-rwx[^ ]*' etc/rc
check "/etc/environment is a file" entry '-[^ ]*' etc/environment
check "a shell: /bin/sh (or /usr/bin/sh through the /bin link)" \
    sh -c "grep -qE 'squashfs-root/(usr/)?bin/sh( |\$)' '$tmp/list'"
check "mount points /data and /scratch" sh -c "grep -qE '^d.* squashfs-root/data\$' '$tmp/list' && grep -qE '^d.* squashfs-root/scratch\$' '$tmp/list'"
check "every file owned by root (mksquashfs -all-root)" sh -c "! awk 'NR > 3 && \$2 != \"root/root\"' '$tmp/list' | grep -q ."
unsquashfs -q -n -d "$tmp/x" "$sqsh" etc/rc etc/environment etc/dl-course-image etc/fstab >/dev/null 2>&1
check "/etc/rc is a shell script (#! and sh -n)" sh -c "head -1 '$tmp/x/etc/rc' | grep -q '^#!' && sh -n '$tmp/x/etc/rc'"
check "/etc/rc runs the command it is given (sh /etc/rc echo ...)" \
    sh -c "[ \"\$(sh '$tmp/x/etc/rc' echo enroot-start-ok)\" = enroot-start-ok ]"
check "/etc/environment: KEY=VALUE lines" \
    sh -c "! grep -vE '^([A-Za-z_][A-Za-z0-9_]*=.*|#.*|)\$' '$tmp/x/etc/environment' | grep -q ."
if [ -f "$tmp/x/etc/fstab" ]; then
    check "/etc/fstab: lines of at least two fields" \
        sh -c "! grep -vE '^(#.*|[[:space:]]*|[^[:space:]]+[[:space:]]+[^[:space:]]+.*)\$' '$tmp/x/etc/fstab' | grep -q ."
fi
check "/etc/dl-course-image names a digest" grep -qE '^digest sha256:[0-9a-f]{64}$' "$tmp/x/etc/dl-course-image"
if [ -n "$root" ]; then
    want=$(sed -n 's/^digest //p' "$root/etc/dl-course-image" 2>/dev/null)
    check "the same image as $root (its digest)" \
        sh -c "[ -n '$want' ] && grep -qx 'digest $want' '$tmp/x/etc/dl-course-image'"
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
