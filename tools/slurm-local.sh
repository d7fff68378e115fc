#!/usr/bin/env bash
# A single-node Slurm on this machine, for CI and for trying the sbatch scripts on a
# laptop: munged + slurmctld + slurmd, one partition "local" with all of this
# machine's CPUs. Debian packages: slurm-wlm munge (sudo make deps-slurm).
#
#   sudo tools/slurm-local.sh start    start (or keep) it; returns once the node is idle
#   sudo tools/slurm-local.sh stop     stop the daemons this script started
#   tools/slurm-local.sh status        one line: up or down
#
# Idempotent: start on a running cluster only waits for the node, stop on a stopped
# one does nothing. It writes /etc/slurm/slurm.conf only when there is none or when
# the one there was written by this script, so it never replaces a real site's.
set -euo pipefail

conf=/etc/slurm/slurm.conf
marker="# written by tools/slurm-local.sh"
state=/var/lib/course-slurm
node=$(hostname -s)

say() { echo "slurm-local: $*"; }
die() { echo "slurm-local: error: $*" >&2; exit 1; }

need_root() {
    [ "$(id -u)" -eq 0 ] || die "needs root to start daemons and write $conf (run it with sudo)"
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null ||
        die "slurm-wlm and munge are not installed (sudo apt-get install slurm-wlm munge)"
}

node_state() { sinfo -h -n "$node" -o %T 2>/dev/null | head -1; }

write_conf() {
    if [ -f "$conf" ] && ! grep -qF "$marker" "$conf"; then
        say "$conf exists and was not written by this script: using it as it is"
        return
    fi
    local cpus mem
    # The node advertises at least 16 CPUs (config_overrides: slurmd believes the
    # file, not the hardware), so scripts written for real nodes (8 CPUs per task,
    # several tasks) run here too; their tasks share the real cores.
    cpus=$(nproc)
    [ "$cpus" -ge 16 ] || cpus=16
    # leave a quarter of the memory to the system; Slurm wants MiB
    mem=$(awk '/MemTotal/ { printf "%d", $2 / 1024 * 0.75 }' /proc/meminfo)
    mkdir -p /etc/slurm
    cat >"$conf" <<EOF
$marker: a single-node cluster for tests
ClusterName=course-local
SlurmctldHost=$node
SlurmUser=root
AuthType=auth/munge
# a requeued job waits cred_expire seconds before it may start again (default 120)
AuthInfo=cred_expire=10
# no cgroups in containers and CI machines: track processes by parent id
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ReturnToService=2
SlurmdParameters=config_overrides
JobRequeue=1
MinJobAge=600
KillWait=10
DefMemPerCPU=$((mem / cpus))
NodeName=$node CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
    if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then return; fi
    if [ ! -s /etc/munge/munge.key ]; then
        say "creating a munge key"
        mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null ||
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
        chown munge:munge /etc/munge/munge.key
        chmod 400 /etc/munge/munge.key
    fi
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    runuser -u munge -- /usr/sbin/munged
    munge -n </dev/null | unmunge >/dev/null || die "munged started but does not answer"
}

start() {
    need_root
    start_munge
    write_conf
    mkdir -p "$state/ctld" "$state/d" /var/log/slurm
    pgrep -x slurmctld >/dev/null || slurmctld
    pgrep -x slurmd >/dev/null || slurmd
    local s i
    for i in $(seq 60); do
        s=$(node_state)
        case "$s" in
        idle | mixed | allocated) say "up: node $node is $s (partition local, $(nproc) real CPUs)"; return ;;
        down* | drain* | fail*) scontrol update nodename="$node" state=resume 2>/dev/null || true ;;
        esac
        sleep 1
    done
    tail -5 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
    die "node $node did not become idle within 60 s (state: ${s:-none}); the logs are above"
}

stop() {
    need_root
    local p
    for p in slurmd slurmctld; do
        if pgrep -x $p >/dev/null; then pkill -x $p; fi
    done
    for _ in $(seq 20); do
        pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || break
        sleep 0.5
    done
    say "stopped"
}

status() {
    local s
    s=$(node_state)
    if [ -n "$s" ]; then echo "up: node $node is $s"; else echo "down"; return 1; fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
*) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
