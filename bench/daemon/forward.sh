#!/bin/bash
# Cost of putting satpep in a router's forwarding path (docs/performance.md, "Daemons"):
# client — router — server namespaces joined by veth pairs, the router forwarding plainly, then
# with `satpep gateway` in pass-through mode, then as a split-TCP relay. For each: iperf3 TCP
# throughput (one CUBIC stream, 5 s) and the round-trip time of 2000 pings 5 ms apart (p50, p99),
# whose difference from plain forwarding is the latency the daemon adds (twice: both ways), and
# the packets per second of small UDP datagrams (100 bytes of payload, offered at 400 Mb/s)
# that reach the server: the daemon's per-packet cost, since it handles every one. The sender
# (iperf3) is what limits that rate on a small machine, so for the daemon the last column
# divides the datagrams delivered by the daemon's own CPU time over the UDP run (utime + stime
# from /proc/PID/stat): packets per second per core of daemon CPU.
#
#   bash bench/daemon/forward.sh [path/to/satpep]      (root; needs ip, iperf3, ping, python3)
set -euo pipefail
SATPEP=${1:-target/release/satpep}
P=spbf$$
C=${P}c G=${P}g S=${P}s
DIR=$(mktemp -d)
cleanup() {
  for n in $C $G $S; do
    pids=$(ip netns pids $n 2>/dev/null || true); [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
  done
  sleep 0.2
  for n in $C $G $S; do ip netns del $n 2>/dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT
for n in $C $G $S; do ip netns add $n; ip -n $n link set lo up; done
ip -n $G link add vgc type veth peer name vc netns $C
ip -n $G link add vgs type veth peer name vs netns $S
ip -n $C addr add 10.88.1.2/24 dev vc; ip -n $C link set vc up; ip -n $C route add default via 10.88.1.1
ip -n $G addr add 10.88.1.1/24 dev vgc; ip -n $G link set vgc up
ip -n $G addr add 10.88.2.1/24 dev vgs; ip -n $G link set vgs up
ip -n $S addr add 10.88.2.2/24 dev vs; ip -n $S link set vs up; ip -n $S route add default via 10.88.2.1
ip netns exec $G sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'
ip netns exec $S iperf3 -s -D >/dev/null

measure() {
  local label=$1 pid=${2:-}
  local gbps
  gbps=$(ip netns exec $C iperf3 -c 10.88.2.2 -t 5 -C cubic -J | python3 -c \
    'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))')
  local rtts
  rtts=$(ip netns exec $C ping -n -q -i 0.005 -c 2000 10.88.2.2 >/dev/null 2>&1; \
         ip netns exec $C ping -n -i 0.005 -c 2000 10.88.2.2 | python3 -c '
import re, sys
v = sorted(float(m.group(1)) for m in re.finditer(r"time=([0-9.]+)", sys.stdin.read()))
print("%.0f %.0f" % (v[len(v)//2] * 1000, v[int(len(v)*0.99)] * 1000))')
  local t0=0 t1=0 udp
  [ -n "$pid" ] && t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  udp=$(ip netns exec $C iperf3 -c 10.88.2.2 -u -l 100 -b 400M -t 3 -J)
  [ -n "$pid" ] && t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  local pps per_core
  read -r pps per_core < <(echo "$udp" | python3 -c '
import json, sys
e = json.load(sys.stdin)["end"]["sum"]
got = e["packets"] - e["lost_packets"]
cpu = (int(sys.argv[2]) - int(sys.argv[1])) / int(sys.argv[3])
print("%.0f %s" % (got / e["seconds"] / 1000, "%.0f" % (got / cpu / 1000) if cpu > 0 else "–"))
' "$t0" "$t1" "$(getconf CLK_TCK)")
  printf "| %s | %s | %s | %s | %s | %s |\n" "$label" "$gbps" ${rtts} "$pps" "$per_core"
}

echo "| path through the router | TCP Gb/s | ping RTT p50 µs | p99 µs | UDP kpackets/s delivered | kpackets per second of daemon CPU |"
echo "|---|---|---|---|---|---|"
measure "kernel forwarding only"
for mode in pass_through split_tcp; do
  cat > "$DIR/gw.toml" <<CONF
name = "bench"
interfaces = ["vgc", "vgs"]
middlebox = { kind = "$mode" }
log_every_s = 0
CONF
  ip netns exec $G "$SATPEP" gateway --config "$DIR/gw.toml" --state-dir "$DIR/state" 2>"$DIR/gw.log" &
  gw=$!
  sleep 1
  measure "satpep gateway, $mode" $gw
  kill -TERM $gw; wait $gw || true
done
echo
echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%d)"
