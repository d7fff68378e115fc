# Two hosts on one machine, for the tests that run a job across nodes (sourced by
# tests/dist/lesson06.sh and lesson09.sh): two network namespaces joined by a veth pair,
# each a host with an address of its own, and mpirun starting one rank on each over
# TCP only (no shared memory), its remote shell `ip netns exec`. Needs root and iproute2.
#
#   . tests/dist/two_hosts.sh
#   if two_hosts_up "$scratch"; then
#       two_hosts_mpirun PROGRAM OPTIONS... >out 2>&1    # 2 ranks, one on each host
#   else
#       echo "skipped: $TWO_HOSTS_WHY"
#   fi
#   two_hosts_down                                     # (also in an EXIT trap)

# Makes the hosts; scratch: a directory for the remote shell and the host file.
# Returns 1 with TWO_HOSTS_WHY set where they cannot be made.
two_hosts_up() {
    local scratch=$1 tag=$$
    TWO_HOSTS_DIR=$scratch TWO_HOSTS_NS1=course-h1-$tag TWO_HOSTS_NS2=course-h2-$tag
    TWO_HOSTS_NET=10.$((200 + tag % 50)).$((tag % 250)) # a /24 unlikely to be in use
    local ns1=$TWO_HOSTS_NS1 ns2=$TWO_HOSTS_NS2 net=$TWO_HOSTS_NET
    if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
        TWO_HOSTS_WHY="needs root and iproute2 for network namespaces"
        return 1
    fi
    if ! { ip netns add "$ns1" && ip netns add "$ns2" &&
        ip link add "v1-$tag" type veth peer name "v2-$tag" &&
        ip link set "v1-$tag" netns "$ns1" && ip link set "v2-$tag" netns "$ns2" &&
        ip -n "$ns1" addr add "$net.1/24" dev "v1-$tag" && ip -n "$ns2" addr add "$net.2/24" dev "v2-$tag" &&
        ip -n "$ns1" link set "v1-$tag" up && ip -n "$ns2" link set "v2-$tag" up &&
        ip -n "$ns1" link set lo up && ip -n "$ns2" link set lo up; } 2>"$scratch/ip.err"; then
        TWO_HOSTS_WHY="cannot make network namespaces here ($(head -1 "$scratch/ip.err"))"
        return 1
    fi
    # mpirun's remote shell: run the command inside the namespace that owns the address
    cat >"$scratch/agent" <<AGENT
#!/bin/sh
case "\$1" in $net.1) ns=$ns1 ;; $net.2) ns=$ns2 ;; *) echo "no such host: \$1" >&2; exit 1 ;; esac
shift
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
    chmod +x "$scratch/agent"
    printf '%s slots=1\n%s slots=1\n' "$net.1" "$net.2" >"$scratch/hosts"
}

# mpirun -n 2 across the hosts (at most 300 s): the program and its options follow.
two_hosts_mpirun() {
    local net=$TWO_HOSTS_NET
    timeout 300 ip netns exec "$TWO_HOSTS_NS1" mpirun -n 2 --hostfile "$TWO_HOSTS_DIR/hosts" \
        --mca plm_rsh_agent "$TWO_HOSTS_DIR/agent" --mca btl self,tcp \
        --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" \
        -x OMP_NUM_THREADS "$@"
}

two_hosts_down() {
    [ -n "${TWO_HOSTS_NS1:-}" ] && ip netns del "$TWO_HOSTS_NS1" 2>/dev/null
    [ -n "${TWO_HOSTS_NS2:-}" ] && ip netns del "$TWO_HOSTS_NS2" 2>/dev/null
    return 0
}
