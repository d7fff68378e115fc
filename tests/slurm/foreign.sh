#!/usr/bin/env bash
# `make test` beside a Slurm that is not the project's own (issue 30: an instructor on a
# cluster's login node saw 9 checks fail with "invalid partition specified: local"),
# without any Slurm: tests/slurm/run.sh against stand-in commands (sinfo, scontrol,
# sbatch, srun, slurmctld, slurmd) that say what a foreign cluster says and write down
# every call. It must skip every Slurm test with the reason, exit 0, and neither submit
# a job nor start a daemon:
#   - a foreign Slurm that answers (cluster "bigiron", default partition "batch");
#   - a foreign slurm.conf whose daemons are down (as root, run.sh would otherwise start
#     them with that site's configuration).
# Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
. tests/lib-checks.sh # pass, fail, skip, show, checks_summary

tmp=$(mktemp -d /tmp/slurm-foreign_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
for cmd in sinfo scontrol sbatch srun squeue scancel slurmctld slurmd munged; do
    cat >"$tmp/bin/$cmd" <<EOS
#!/usr/bin/env bash
echo "$cmd \$*" >>"$tmp/calls"
case "$cmd \${FAKE_SLURM:-up}" in
"sinfo up") case " \$* " in *" -o %P "*) echo "batch*"; echo gpu ;; *) echo "batch* up infinite 4 idle n[1-4]" ;; esac ;;
"scontrol up") [ "\$1 \$2" = "show config" ] && echo "ClusterName             = bigiron" ;;
*) echo "$cmd: cannot reach the cluster (stand-in)" >&2; exit 1 ;;
esac
EOS
    chmod +x "$tmp/bin/$cmd"
done
total=$(ls tests/slurm/test-*.sh | wc -l)

check() { # $1: what, $2: the reason expected in every SKIP line
    local out=$tmp/out rc submitted
    rc=$(cat "$tmp/rc")
    submitted=$(grep -E '^(sbatch|srun|slurmctld|slurmd|munged) ' "$tmp/calls" 2>/dev/null | head -3)
    if [ "$rc" -eq 0 ] && [ "$(tail -1 "$out")" = "0 passed, 0 failed, $total skipped" ] &&
        [ "$(grep -c "^SKIP  test-.*: .*$2" "$out")" -eq "$total" ] && [ -z "$submitted" ]; then
        pass "$1: all $total Slurm tests skipped with the reason, exit 0, nothing submitted or started"
    else
        fail "$1: exit $rc; calls: ${submitted:-none}"
        sed 's/^/        /' "$out" | tail -5
    fi
}

: >"$tmp/calls"
FAKE_SLURM=up PATH="$tmp/bin:$PATH" tests/slurm/run.sh >"$tmp/out" 2>&1
echo $? >"$tmp/rc"
check "a foreign Slurm that answers (cluster bigiron)" "cluster 'bigiron', not the project's single-node one"

printf 'ClusterName=bigiron\nSlurmctldHost=head\nPartitionName=batch Default=YES\n' >"$tmp/slurm.conf"
: >"$tmp/calls"
FAKE_SLURM=down SLURM_CONF="$tmp/slurm.conf" PATH="$tmp/bin:$PATH" tests/slurm/run.sh >"$tmp/out" 2>&1
echo $? >"$tmp/rc"
check "a foreign slurm.conf, its daemons down" "is not the project's own and does not answer"

checks_summary
