#!/usr/bin/env bash
# Downloads the course's data sets on a login node (compute nodes have no internet),
# checks each file against the SHA-256 sum written in datasets/sources.txt, and
# unpacks it into $DATA_DIR/<data set>/ (default: datasets/data), where the programs
# look. Safe to run again: what is there and verified is not downloaded twice.
#
#   datasets/fetch.sh [--dir DIR] [--force] [NAME...]   NAME: mnist fashion-mnist cifar10
#                                                       wikitext-2 (default: all)
#   datasets/fetch.sh --list                            what it would fetch, and from where
#
# Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist), when installed, is
# used where it is, not copied (--force downloads Zalando's files anyway).
# FETCH_SOURCES=FILE reads another list in the same format (a local mirror; tests).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sources=${FETCH_SOURCES:-$root/datasets/sources.txt}
dir=${DATA_DIR:-$root/datasets/data}
debian_fmnist=${FETCH_DEBIAN_FMNIST:-/usr/share/datasets/fashion-mnist}
force= list= names=()

die() { echo "fetch: error: $*" >&2; exit 1; }
say() { echo "fetch: $*"; }

while [ $# -gt 0 ]; do
    case "$1" in
    --dir) dir=${2:?--dir needs a directory}; shift 2 ;;
    --force) force=1; shift ;;
    --list) list=1; shift ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) names+=("$1"); shift ;;
    esac
done

[ -r "$sources" ] || die "cannot read the list of sources $sources"
known=$(grep -v '^#' "$sources" | awk 'NF { print $1 }' | uniq | tr '\n' ' ')
[ ${#names[@]} -gt 0 ] || read -ra names <<<"$known"
for n in "${names[@]}"; do
    [[ " $known " == *" $n "* ]] || die "unknown data set '$n' (known: $known)"
done

if [ -n "$list" ]; then
    grep -v '^#' "$sources" | awk -v want=" ${names[*]} " 'NF && index(want, " " $1 " ") {
        printf "%-14s %-28s %s\n", $1, $2, $5 }'
    exit 0
fi

command -v sha256sum >/dev/null || die "sha256sum is missing (coreutils)"
if command -v curl >/dev/null; then
    download() { curl -fsSL --connect-timeout 10 --retry 2 -o "$2" "$1"; }
    reachable() { curl -fsSI --connect-timeout 5 -o /dev/null "$1" 2>/dev/null ||
                  curl -fsS --connect-timeout 5 -r 0-0 -o /dev/null "$1" 2>/dev/null; }
elif command -v wget >/dev/null; then
    download() { wget -q --timeout=10 --tries=3 -O "$2" "$1"; }
    reachable() { wget -q --spider --timeout=5 --tries=1 "$1"; }
else
    die "neither curl nor wget is installed (sudo apt-get install curl)"
fi

verified() { # $1: file, $2: expected sum
    [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

# fetch_file SET FILE SUM URL...: into $dir/SET/FILE, verified, via a temporary name
fetch_file() {
    local set=$1 file=$2 sum=$3 dest url tmp got
    shift 3
    dest="$dir/$set/$file"
    if verified "$dest" "$sum"; then say "$set/$file: there and verified"; return; fi
    mkdir -p "$dir/$set" || die "cannot create $dir/$set"
    tmp="$dest.part"
    for url in "$@"; do
        if ! reachable "$url"; then
            say "$set/$file: cannot reach $url"
            continue
        fi
        say "$set/$file: downloading $url"
        if ! download "$url" "$tmp"; then
            rm -f "$tmp"
            say "$set/$file: the download from $url failed"
            continue
        fi
        got=$(sha256sum "$tmp" | cut -d' ' -f1)
        if [ "$got" != "$sum" ]; then
            rm -f "$tmp"
            say "$set/$file: wrong SHA-256 from $url (got $got, want $sum): deleted"
            continue
        fi
        mv -f "$tmp" "$dest"
        say "$set/$file: downloaded and verified"
        return
    done
    die "could not get $set/$file from any source ($*). No network? Compute nodes have none: run 'make datasets' on a login node, then pass the directory with --data or DATA_DIR."
}

# unpack SET FILE HOW: the archive's contents next to it, once (a stamp names the sum)
unpack() {
    local set=$1 file=$2 how=$3 sum=$4 stamp="$dir/$1/.unpacked-$2"
    [ "$how" = - ] && return
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then return; fi
    case "$how" in
    tar) tar -xzf "$dir/$set/$file" -C "$dir/$set" || die "unpacking $dir/$set/$file failed" ;;
    zip)
        command -v unzip >/dev/null || die "unzip is missing (sudo apt-get install unzip)"
        unzip -qo "$dir/$set/$file" -d "$dir/$set" || die "unpacking $dir/$set/$file failed" ;;
    *) die "unknown way to unpack '$how' in $sources" ;;
    esac
    echo "$sum" >"$stamp"
    say "$set/$file: unpacked into $dir/$set"
}

for n in "${names[@]}"; do
    if [ "$n" = fashion-mnist ] && [ -z "$force" ] && [ -r "$debian_fmnist/train-images-idx3-ubyte.gz" ]; then
        say "fashion-mnist: Debian's copy in $debian_fmnist is used where it is (--force downloads anyway)"
        continue
    fi
    while read -r set file sum how urls; do
        # shellcheck disable=SC2086 # the URLs, one word each
        fetch_file "$set" "$file" "$sum" $urls
        unpack "$set" "$file" "$how" "$sum"
    done < <(grep -v '^#' "$sources" | awk -v n="$n" 'NF && $1 == n')
done
say "done: data sets in $dir (the programs find them there; elsewhere use --data $dir or DATA_DIR=$dir)"
