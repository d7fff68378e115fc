#!/usr/bin/env bash
# Syntax check of an Apptainer definition file, without Apptainer: the header
# (Bootstrap: first, a known agent, From: where the agent needs one; a localimage's
# path present), known %sections, each at most once, their scripts (%post,
# %environment, %runscript, %test, %setup, %startscript) through bash -n, %labels as
# "KEY VALUE" lines, %files as "SRC [DST]" lines.
#   tools/image/check-apptainer-def.sh FILE.def
# One line per check, last line "N passed, M failed".
set -u
def=${1:?usage: check-apptainer-def.sh FILE.def}
name=$(basename "$def")
passed=0 failed=0
result() { # $1: 0 ok; $2: name; $3: what went wrong
    if [ "$1" -eq 0 ]; then echo "PASS  $name: $2"; passed=$((passed + 1))
    else echo "FAIL  $name: $2"; printf '%s\n' "$3" | sed 's/^/        /'; failed=$((failed + 1)); fi
}
[ -r "$def" ] || { result 1 "readable" "cannot read $def"; echo "$passed passed, $failed failed"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the header: "Key: value" lines up to the first section
awk '/^%/ { exit } { print }' "$def" | grep -vE '^[[:space:]]*(#.*)?$' >"$tmp/header"
first=$(head -1 "$tmp/header")
agent=$(sed -nE 's/^Bootstrap:[[:space:]]*([^[:space:]]+)[[:space:]]*$/\1/p' <<<"$first")
result "$([ -n "$agent" ]; echo $?)" "the header starts with Bootstrap: (here: ${agent:-none})" "first line: $first"
case $agent in
localimage | docker | docker-daemon | docker-archive | oras | library | shub | scratch | debootstrap | yum | zypper | busybox | oci | oci-archive) ok=0 ;;
*) ok=1 ;;
esac
result $ok "a known bootstrap agent" "Bootstrap: $agent"
from=$(sed -nE 's/^From:[[:space:]]*([^[:space:]]+)[[:space:]]*$/\1/p' "$tmp/header")
bad=$(grep -vE '^[A-Za-z][A-Za-z]*:[[:space:]]*[^[:space:]].*$' "$tmp/header")
result "$([ -z "$bad" ]; echo $?)" "header lines are Key: value" "$bad"
if [ "$agent" != scratch ]; then
    result "$([ -n "$from" ]; echo $?)" "From: names the base (${from:-none})" "no From: line"
fi
[ "$agent" = localimage ] && result "$([ -e "$from" ]; echo $?)" "the local image $from exists" "no $from (make image)"

# sections
sections=$(grep -oE '^%[a-z]+' "$def")
unknown=$(grep -vxE '%(setup|files|environment|post|runscript|startscript|test|labels|help|arguments|app[a-z]+)' <<<"$sections")
result "$([ -z "$unknown" ]; echo $?)" "known sections only ($(tr '\n' ' ' <<<"$sections"))" "unknown: $unknown"
twice=$(sort <<<"$sections" | uniq -d)
result "$([ -z "$twice" ]; echo $?)" "each section at most once" "twice: $twice"
body() { awk -v s="$1" '/^%/ { on = ($1 == s); next } on { print }' "$def"; }
for s in %setup %post %environment %runscript %startscript %test; do
    grep -qx "$s" <<<"$sections" || continue
    body "$s" >"$tmp/script"
    out=$(bash -n "$tmp/script" 2>&1)
    result $? "$s is valid shell" "$out"
done
if grep -qx %labels <<<"$sections"; then
    bad=$(body %labels | grep -vE '^[[:space:]]*(#.*)?$' | grep -vE '^[[:space:]]*[^[:space:]]+[[:space:]]+[^[:space:]]')
    result "$([ -z "$bad" ]; echo $?)" "%labels: KEY VALUE lines" "$bad"
fi
if grep -qx %files <<<"$sections"; then
    bad=$(body %files | grep -vE '^[[:space:]]*(#.*)?$' | grep -vE '^[[:space:]]*[^[:space:]]+([[:space:]]+[^[:space:]]+)?[[:space:]]*$')
    result "$([ -z "$bad" ]; echo $?)" "%files: SRC [DST] lines" "$bad"
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
