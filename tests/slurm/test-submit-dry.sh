#!/usr/bin/env bash
# tools/submit.sh --dry (make submit N DRY=1) for every site profile: the line it
# prints is the exact sbatch command (read back by the shell, it gives the same
# words, odd program arguments included), a GPU lesson asks for its GPU in the
# profile's syntax, and an empty account or reservation is not passed. Needs no Slurm.
set -u
cd "$(dirname "$0")/../.."
. tests/slurm/lib.sh

odd=(--epochs "5 x" "it's" '' 'a"b' '$HOME')
for env in slurm/sites/*.env; do
    site=$(basename "$env" .env)
    line=$(env -u COURSE_ACCOUNT -u COURSE_RESERVATION -u COURSE_PARTITION \
        tools/submit.sh 2 --dry --site "$site" -- "${odd[@]}" 2>&1)
    rc=$?
    words=()
    eval "words=($line)" 2>/dev/null
    n=${#words[@]}
    tail=("${words[@]:n-${#odd[@]}}")
    request=$(. "$env"; printf -- "${SITE_GPU_REQUEST:-}" 1)
    if [ $rc -ne 0 ] || [ "${words[0]:-}" != sbatch ] || [ "${tail[*]}" != "${odd[*]}" ] ||
        [ "${#tail[@]}" -ne "${#odd[@]}" ] || [ "${tail[3]}" != '' ] ||
        [ "${words[n-${#odd[@]}-1]}" != slurm/02-gpu-cnn.sbatch ]; then
        fail "submit --dry, site $site: not a command line that gives back the program's arguments (exit $rc)"
        echo "        $line"
        continue
    fi
    if [ -n "$request" ] && [[ " ${words[*]} " != *" $request "* ]]; then
        fail "submit --dry, site $site: the GPU lesson's request '$request' is missing"
        echo "        $line"
    elif [[ "$line" == *--account* || "$line" == *--reservation* ]]; then
        fail "submit --dry, site $site: an empty account or reservation was passed"
        echo "        $line"
    else
        pass "submit --dry, site $site: the exact sbatch command${request:+, GPU as '$request'}"
    fi
done

line=$(COURSE_ACCOUNT=training2410 COURSE_RESERVATION="my event" tools/submit.sh 3 --dry --site jsc 2>&1)
words=()
eval "words=($line)" 2>/dev/null
if [[ " ${words[*]} " == *" --account=training2410 "* && " ${words[*]} " == *" --reservation=my event "* ]]; then
    pass "submit --dry: COURSE_ACCOUNT and COURSE_RESERVATION are passed"
else
    fail "submit --dry: COURSE_ACCOUNT/COURSE_RESERVATION missing"
    echo "        $line"
fi
exit $status
