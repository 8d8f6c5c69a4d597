#!/bin/sh
# The deployment test topology (docs/deploy.md, "Test topology"), namespaces only:
#
#   spd-client ──veth── spd-term ══ satpep emu (scenarios/deploy/geo_20_2.toml) ══ spd-gw ──veth── spd-server
#   10.77.1.2/24    10.77.1.1/24                                         10.77.2.1/24    10.77.2.2/24
#
# `up` (re)creates the four namespaces, the two veth pairs, addresses, default routes of the
# end hosts toward their routers, forwarding in the routers and socket buffers for a long fat
# path; `down` removes them (killing whatever still runs inside). Both are idempotent: `up`
# removes an existing topology of the same prefix first, `down` of nothing does nothing.
# The satellite hop between spd-term and spd-gw is not made here: `satpep emu` attaches to
# those two namespaces (`netns` in the scenario) and routes the LANs across the hop.
#
# SPD_PREFIX (default `spd`) names the namespaces `$SPD_PREFIX-client` etc.; the addresses are
# the same for every prefix (namespaces do not share addresses).
set -eu

P=${SPD_PREFIX:-spd}
NAMESPACES="$P-client $P-term $P-gw $P-server"

# Socket buffers up to 64 MiB: Linux's default 4 MiB send buffer caps one flow at about
# 53 Mb/s at 600 ms RTT; the same values satpep emu writes into the namespaces it creates.
TCP_RMEM="4096 131072 67108864"
TCP_WMEM="4096 16384 67108864"

in_ns() { ns=$1; shift; ip netns exec "$ns" "$@"; }

down() {
    for ns in $NAMESPACES; do
        [ -e "/var/run/netns/$ns" ] || continue
        for _ in 1 2 3; do
            pids=$(ip netns pids "$ns" 2>/dev/null || true)
            [ -z "$pids" ] && break
            # shellcheck disable=SC2086
            kill -9 $pids 2>/dev/null || true
            sleep 0.05
        done
        ip netns del "$ns"
    done
}

sysctls() {
    ns=$1
    in_ns "$ns" sh -c "
        echo '$TCP_RMEM' > /proc/sys/net/ipv4/tcp_rmem
        echo '$TCP_WMEM' > /proc/sys/net/ipv4/tcp_wmem
        echo 1 > /proc/sys/net/ipv4/tcp_no_metrics_save
        echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6
        echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6
        echo $2 > /proc/sys/net/ipv4/ip_forward"
    ip -n "$ns" link set lo up
}

# A veth pair: $1 in namespace $2 with address $3, $4 in namespace $5 with address $6.
pair() {
    ip link add "$1" netns "$2" type veth peer name "$4" netns "$5"
    ip -n "$2" addr add "$3" dev "$1"
    ip -n "$5" addr add "$6" dev "$4"
    ip -n "$2" link set "$1" up
    ip -n "$5" link set "$4" up
}

up() {
    down
    for ns in $NAMESPACES; do
        ip netns add "$ns"
    done
    sysctls "$P-client" 0
    sysctls "$P-term" 1
    sysctls "$P-gw" 1
    sysctls "$P-server" 0
    pair lan0 "$P-client" 10.77.1.2/24 lan0 "$P-term" 10.77.1.1/24
    pair lan0 "$P-server" 10.77.2.2/24 lan0 "$P-gw" 10.77.2.1/24
    ip -n "$P-client" route add default via 10.77.1.1
    ip -n "$P-server" route add default via 10.77.2.1
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    *)
        echo "usage: $0 up|down   (SPD_PREFIX=$P: namespaces $NAMESPACES)" >&2
        exit 2
        ;;
esac
