#!/bin/bash
# Throughput of the gateway's kernel split engine per core of daemon CPU (docs/performance.md,
# "Daemons"; docs/deploy.md, "Cost of being in the path"): client — router — server
# namespaces joined by veth pairs; iperf3 with one and with four CUBIC streams (5 s) through
# the router forwarding plainly, then through `satpep gateway` with `[split] engine =
# "kernel"`. The daemon's CPU is its utime + stime from /proc/PID/stat over the run: Gb/s per
# core = Gb/s / (CPU seconds / wall seconds). That CPU is what the relay's system calls cost
# (splice, epoll, and the TCP transmit work they do inline); segments the kernel receives in
# softirq context are charged to whatever runs then, as for plain forwarding, so the last
# column also gives the whole machine's busy CPU (from /proc/stat) over the same run.
#
#   bash bench/daemon/kernel_split.sh [path/to/satpep] [runs]     (root; ip, iperf3, nft)
set -euo pipefail
SATPEP=${1:-target/release/satpep}
RUNS=${2:-3}
P=spks$$
C=${P}c G=${P}g S=${P}s
DIR=$(mktemp -d)
gw=
cleanup() {
  [ -n "$gw" ] && kill -TERM "$gw" 2>/dev/null && wait "$gw" 2>/dev/null || true
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
ip -n $C addr add 10.86.1.2/24 dev vc; ip -n $C link set vc up; ip -n $C route add default via 10.86.1.1
ip -n $G addr add 10.86.1.1/24 dev vgc; ip -n $G link set vgc up
ip -n $G addr add 10.86.2.1/24 dev vgs; ip -n $G link set vgs up
ip -n $S addr add 10.86.2.2/24 dev vs; ip -n $S link set vs up; ip -n $S route add default via 10.86.2.1
ip netns exec $G sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'
ip netns exec $S iperf3 -s -D >/dev/null
HZ=$(getconf CLK_TCK)

# machine-wide busy and total jiffies
sys_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }

measure() { # label streams [daemon pid]
  local label=$1 streams=$2 pid=${3:-}
  local t0=0 t1=0 s0 s1 b0 a0 b1 a1
  [ -n "$pid" ] && t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  read -r b0 a0 < <(sys_ticks)
  s0=$(date +%s.%N)
  local gbps
  gbps=$(ip netns exec $C iperf3 -c 10.86.2.2 -t 5 -P "$streams" -C cubic -J | python3 -c \
    'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))')
  s1=$(date +%s.%N)
  read -r b1 a1 < <(sys_ticks)
  [ -n "$pid" ] && t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  python3 - "$label" "$streams" "$gbps" "$t0" "$t1" "$s0" "$s1" "$HZ" "$b0" "$a0" "$b1" "$a1" "$(nproc)" <<'PY'
import sys
label, streams, gbps = sys.argv[1], sys.argv[2], float(sys.argv[3])
t0, t1, s0, s1, hz, b0, a0, b1, a1, ncpu = map(float, sys.argv[4:])
wall = s1 - s0
machine = (b1 - b0) / (a1 - a0) * ncpu
if t1 > t0:
    cores = (t1 - t0) / hz / wall
    print("| %s | %s | %.2f | %.2f | %.1f | %.2f |" % (label, streams, gbps, cores, gbps / cores, machine))
else:
    print("| %s | %s | %.2f | – | – | %.2f |" % (label, streams, gbps, machine))
PY
}

cat > "$DIR/gw.toml" <<CONF
name = "bench"
interfaces = ["vgc", "vgs"]
log_every_s = 0
[split]
engine = "kernel"
ports = [5201]
congestion_control = { satellite = "cubic", terrestrial = "cubic" }
CONF

echo "load before: $(uptime)"
echo
echo "| path through the router | streams | Gb/s | daemon CPU (cores) | Gb/s per daemon core | machine busy (cores) |"
echo "|---|---|---|---|---|---|"
for run in $(seq "$RUNS"); do
  for n in 1 4; do measure "kernel forwarding only" $n; done
  ip netns exec $G "$SATPEP" gateway --config "$DIR/gw.toml" --state-dir "$DIR/state" 2>"$DIR/gw.log" &
  gw=$!
  sleep 1
  for n in 1 4; do measure "satpep gateway, kernel split engine" $n $gw; done
  kill -TERM $gw; wait $gw || true
  gw=
done
echo
echo "load after: $(uptime)"
echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%d)"
