#!/usr/bin/env bash
# Records a measured run as figure data: the run's JSON lines go to
# docs/figures/data/NAME.jsonl, and NAME.source beside it says on which machine, on
# which date and with which command they were measured (every figure prints this).
#
#   tools/figures/record.sh NAME -- COMMAND [ARGS...]
#
# Where an argument of COMMAND contains {}, the command writes the metrics file
# itself and {} is replaced by its path (--metrics {}); otherwise every line of the
# command's output that starts with '{' is kept. MACHINE="..." overrides the
# machine's description (the default: CPU model, cores, OS, GPUs where nvidia-smi is);
# NOTE="..." adds a line of remarks. Then add a line for the figure to
# docs/figures/figures.list and run `make figures` (docs/figures/README.md).
set -euo pipefail
cd "$(dirname "$0")/../.."

usage() {
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

[ $# -ge 3 ] && [ "$2" = "--" ] || usage
name=$1
shift 2
case "$name" in
*[!A-Za-z0-9._-]* | .* | "") echo "record.sh: '$name' is not a usable name (letters, digits, . _ - only)" >&2; exit 2 ;;
esac

data_dir=docs/figures/data
mkdir -p "$data_dir"
data=$data_dir/$name.jsonl
tmp=$(mktemp "$data_dir/.$name.XXXXXX")
trap 'rm -f "$tmp"' EXIT

machine_description() {
    local cpu os gpus
    cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
    os=$(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/os-release 2>/dev/null)
    gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c |
           sed -E 's/^ *([0-9]+) (.*)/\1x \2/' | paste -sd, - || true)
    printf '%s, %s cores, %s%s' "${cpu:-unknown CPU}" "$(nproc)" "${os:-unknown OS}" \
        "${gpus:+, GPU: $gpus}"
}

# The command as typed, with {} standing for the data file's final path.
uses_file=no shown=() args=()
for a in "$@"; do
    if [[ $a == *"{}"* ]]; then
        uses_file=yes
        args+=("${a//\{\}/$tmp}")
        shown+=("${a//\{\}/$data}")
    else
        args+=("$a")
        shown+=("$a")
    fi
done
# As one would type it: ARGS="..." quoted, other words as they are.
command_line=$(for a in "${shown[@]}"; do
    if [[ $a == *[[:space:]\"]* ]]; then
        if [[ $a == *=* && ${a%%=*} != *[[:space:]]* ]]; then printf '%s="%s" ' "${a%%=*}" "${a#*=}"
        else printf '"%s" ' "$a"; fi
    else printf '%s ' "$a"; fi
done)
command_line=${command_line% }

date=$(date -u +%Y-%m-%d)
commit=$(git rev-parse --short HEAD 2>/dev/null || true)
[ -z "$commit" ] || git diff --quiet HEAD 2>/dev/null || commit="$commit with local changes"
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
echo "record.sh: running $command_line" >&2
if [ $uses_file = yes ]; then
    "${args[@]}"
else
    "${args[@]}" | tee /dev/stderr | grep '^{' >"$tmp" || true
fi
if ! [ -s "$tmp" ]; then
    echo "record.sh: the command wrote no JSON lines: nothing recorded ($data unchanged)" >&2
    exit 1
fi
mv "$tmp" "$data"
{
    echo "machine: ${MACHINE:-$(machine_description)}"
    echo "date: $date"
    echo "command: $command_line"
    echo "load: $load (1, 5, 15 min load average when the run started)"
    [ -z "$commit" ] || echo "commit: $commit"
    [ -z "${NOTE:-}" ] || echo "note: $NOTE"
} >"$data_dir/$name.source"
echo "record.sh: wrote $data ($(wc -l <"$data") lines) and $data_dir/$name.source" >&2
