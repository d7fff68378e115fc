#!/usr/bin/env bash
# Tests of datasets/fetch.sh without the internet: a local "mirror" of small files
# served through file:// URLs, a source list written here with their sums, and an
# address that refuses connections. Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
fetch=$PWD/datasets/fetch.sh
passed=0 failed=0
ok() { echo "PASS  $1"; passed=$((passed + 1)); }
bad() { echo "FAIL  $1"; [ -n "${2:-}" ] && sed 's/^/        /' <<<"$2"; failed=$((failed + 1)); }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/mirror/cifar-10-batches-bin" "$tmp/mirror/wikitext-2"
printf 'idx file' >"$tmp/mirror/a.gz"
printf 'batch' >"$tmp/mirror/cifar-10-batches-bin/data_batch_1.bin"
tar -czf "$tmp/mirror/c.tar.gz" -C "$tmp/mirror" cifar-10-batches-bin
sum() { sha256sum "$1" | cut -d' ' -f1; }
cat >"$tmp/sources.txt" <<SRC
# test list
plain  a.gz  $(sum "$tmp/mirror/a.gz")  -  file://$tmp/mirror/missing.gz  file://$tmp/mirror/a.gz
packed  c.tar.gz  $(sum "$tmp/mirror/c.tar.gz")  tar  file://$tmp/mirror/c.tar.gz
wrong  a.gz  $(printf '0%.0s' {1..64})  -  file://$tmp/mirror/a.gz
offline  x.gz  $(sum "$tmp/mirror/a.gz")  -  http://127.0.0.1:9/x.gz
fashion-mnist  f.gz  $(sum "$tmp/mirror/a.gz")  -  file://$tmp/mirror/a.gz
SRC
run() { FETCH_SOURCES="$tmp/sources.txt" FETCH_DEBIAN_FMNIST="$tmp/debian" "$fetch" --dir "$tmp/data" "$@" 2>&1; }

out=$(run plain packed)
if [ $? -eq 0 ] && cmp -s "$tmp/data/plain/a.gz" "$tmp/mirror/a.gz" &&
    [ -f "$tmp/data/packed/cifar-10-batches-bin/data_batch_1.bin" ]; then
    ok "downloads, verifies (trying the next mirror when one fails) and unpacks"
else bad "download, verify and unpack" "$out"; fi

out=$(run plain packed)
if [ $? -eq 0 ] && ! grep -q downloading <<<"$out" && grep -q 'there and verified' <<<"$out"; then
    ok "a second run downloads nothing (idempotent)"
else bad "the second run downloaded again" "$out"; fi

printf 'damaged' >"$tmp/data/plain/a.gz"
out=$(run plain)
if [ $? -eq 0 ] && cmp -s "$tmp/data/plain/a.gz" "$tmp/mirror/a.gz"; then
    ok "a damaged local file is downloaded again"
else bad "a damaged local file was kept" "$out"; fi

out=$(run wrong)
rc=$?
if [ $rc -ne 0 ] && grep -q 'wrong SHA-256' <<<"$out" && [ ! -e "$tmp/data/wrong/a.gz" ] &&
    [ ! -e "$tmp/data/wrong/a.gz.part" ]; then
    ok "a download with the wrong sum is deleted and fails (exit $rc)"
else bad "a download with the wrong sum was not rejected (exit $rc)" "$out"; fi

start=$SECONDS
out=$(run offline)
rc=$?
if [ $rc -ne 0 ] && grep -q 'No network?' <<<"$out" && [ $((SECONDS - start)) -lt 30 ]; then
    ok "no network: fails in $((SECONDS - start)) s with advice (exit $rc)"
else bad "no network: exit $rc after $((SECONDS - start)) s" "$out"; fi

mkdir -p "$tmp/debian" && printf x >"$tmp/debian/train-images-idx3-ubyte.gz"
out=$(run fashion-mnist)
if [ $? -eq 0 ] && [ ! -e "$tmp/data/fashion-mnist" ] && grep -q "Debian's copy" <<<"$out"; then
    ok "Debian's Fashion-MNIST is used where it is, not copied"
else bad "Debian's Fashion-MNIST was not used in place" "$out"; fi

out=$(run nonsense)
if [ $? -ne 0 ] && grep -q "unknown data set 'nonsense'" <<<"$out"; then
    ok "an unknown data set name is refused"
else bad "an unknown data set name was not refused" "$out"; fi

# the real list: every line a known set, a 64-digit sum, a known unpack, https/http URLs
bad_lines=$(grep -v '^#' datasets/sources.txt | awk 'NF && !($1 ~ /^(mnist|fashion-mnist|cifar10|wikitext-2)$/ &&
    length($3) == 64 && $3 !~ /[^0-9a-f]/ && $4 ~ /^(-|tar|zip)$/ && NF >= 5 && $5 ~ /^https?:\/\//)')
sets=$(grep -v '^#' datasets/sources.txt | awk 'NF { print $1 }' | sort -u | tr '\n' ' ')
if [ -z "$bad_lines" ] && [ "$sets" = "cifar10 fashion-mnist mnist wikitext-2 " ]; then
    ok "datasets/sources.txt: MNIST, Fashion-MNIST, CIFAR-10, WikiText-2 with SHA-256 sums"
else bad "datasets/sources.txt has malformed lines or misses a set ($sets)" "$bad_lines"; fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
