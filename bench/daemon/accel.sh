#!/bin/bash
# Throughput of the accelerated PEP per core of daemon CPU (docs/accel.md, "Cost"), measured
# as kernel_split.sh measures the kernel engine: client — terminal — gateway — server
# namespaces joined by veth pairs (no emulator, no delay: the daemons are the bottleneck),
# iperf3 (port 5201, intercepted by the terminal) with one and with four CUBIC streams (5 s),
# through plain forwarding and then through `satpep terminal` + `satpep gateway` with
# `[split] engine = "accel"`. Each daemon's CPU is its utime + stime from /proc/PID/stat over
# the run; Gb/s per core = Gb/s / (the two daemons' CPU seconds / wall seconds). The last
# column is the whole machine's busy CPU (from /proc/stat), iperf3 and the kernel included.
#
#   bash bench/daemon/accel.sh [path/to/satpep] [runs] [congestion]   (root; ip, iperf3, nft)
#
# The satellite connection is configured for 10 Gb/s and a 1 ms round trip, so its rate
# controller is not what limits.
set -euo pipefail
SATPEP=${1:-target/release/satpep}
RUNS=${2:-3}
CC=${3:-rate}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
P=spac$$
C=${P}c T=${P}t G=${P}g S=${P}s
DIR=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; done
  for n in $C $T $G $S; do
    ps=$(ip netns pids $n 2>/dev/null || true); [ -n "$ps" ] && kill -9 $ps 2>/dev/null || true
  done
  sleep 0.2
  for n in $C $T $G $S; do ip netns del $n 2>/dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT
for n in $C $T $G $S; do ip netns add $n; ip -n $n link set lo up; done
ip -n $T link add tc type veth peer name ct netns $C
ip -n $T link add tg type veth peer name gt netns $G
ip -n $G link add gs type veth peer name sg netns $S
ip -n $C addr add 10.85.1.2/24 dev ct; ip -n $C link set ct up; ip -n $C route add default via 10.85.1.1
ip -n $T addr add 10.85.1.1/24 dev tc; ip -n $T link set tc up
ip -n $T addr add 10.85.0.2/24 dev tg; ip -n $T link set tg up; ip -n $T route add 10.85.2.0/24 via 10.85.0.1
ip -n $G addr add 10.85.0.1/24 dev gt; ip -n $G link set gt up; ip -n $G route add 10.85.1.0/24 via 10.85.0.2
ip -n $G addr add 10.85.2.1/24 dev gs; ip -n $G link set gs up
ip -n $S addr add 10.85.2.2/24 dev sg; ip -n $S link set sg up; ip -n $S route add default via 10.85.2.1
for n in $T $G; do ip netns exec $n sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'; done
ip netns exec $S iperf3 -s -D >/dev/null
HZ=$(getconf CLK_TCK)

sys_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }
cpu_of() { local s=0; for p in "$@"; do s=$((s + $(awk '{print $14+$15}' /proc/$p/stat))); done; echo $s; }

measure() { # label streams [daemon pids...]
  local label=$1 streams=$2; shift 2
  local t0=0 t1=0 s0 s1 b0 a0 b1 a1 gbps
  [ $# -gt 0 ] && t0=$(cpu_of "$@")
  read -r b0 a0 < <(sys_ticks)
  s0=$(date +%s.%N)
  gbps=$(ip netns exec $C iperf3 -c 10.85.2.2 -t 5 -P "$streams" -C cubic -J | python3 -c \
    'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))')
  s1=$(date +%s.%N)
  read -r b1 a1 < <(sys_ticks)
  [ $# -gt 0 ] && t1=$(cpu_of "$@")
  python3 - "$label" "$streams" "$gbps" "$t0" "$t1" "$s0" "$s1" "$HZ" "$b0" "$a0" "$b1" "$a1" "$(nproc)" <<'PY'
import sys
label, streams, gbps = sys.argv[1], sys.argv[2], float(sys.argv[3])
t0, t1, s0, s1, hz, b0, a0, b1, a1, ncpu = map(float, sys.argv[4:])
wall = s1 - s0
machine = (b1 - b0) / (a1 - a0) * ncpu
if t1 > t0:
    cores = (t1 - t0) / hz / wall
    print("| %s | %s | %.2f | %.2f | %.2f | %.2f |" % (label, streams, gbps, cores, gbps / cores, machine))
else:
    print("| %s | %s | %.2f | – | – | %.2f |" % (label, streams, gbps, machine))
PY
}

FP_T=$(grep -o 'sha256:[0-9a-f]*' "$ROOT/bench/deploy/keys/README.md" | sed -n 2p)
FP_G=$(grep -o 'sha256:[0-9a-f]*' "$ROOT/bench/deploy/keys/README.md" | sed -n 1p)
common="forward = \"10Gbps\"
return = \"10Gbps\"
rtt = \"1ms\"
congestion = \"$CC\"
mtu = 1472"
cat > "$DIR/term.toml" <<CONF
name = "bt"
interfaces = ["tc"]
log_every_s = 0
[split]
engine = "accel"
ports = [5201]
[split.accel]
gateway = "10.85.0.1:4433"
certificate = "$ROOT/bench/deploy/keys/terminal.crt"
key = "$ROOT/bench/deploy/keys/terminal.key"
peers = ["$FP_G"]
$common
CONF
cat > "$DIR/gw.toml" <<CONF
name = "bg"
interfaces = ["gs"]
log_every_s = 0
[split]
engine = "accel"
[split.accel]
listen = "0.0.0.0:4433"
certificate = "$ROOT/bench/deploy/keys/gateway.crt"
key = "$ROOT/bench/deploy/keys/gateway.key"
peers = ["$FP_T"]
allow = ["10.85.2.0/24"]
$common
CONF

echo "load before: $(uptime)"
echo
echo "| path | streams | Gb/s | daemons' CPU (cores) | Gb/s per daemon core | machine busy (cores) |"
echo "|---|---|---|---|---|---|"
for run in $(seq "$RUNS"); do
  for n in 1 4; do measure "kernel forwarding only" $n; done
  ip netns exec $G "$SATPEP" gateway --config "$DIR/gw.toml" --state-dir "$DIR/sg" 2>"$DIR/gw.log" &
  g=$!
  ip netns exec $T "$SATPEP" terminal --config "$DIR/term.toml" --state-dir "$DIR/st" 2>"$DIR/term.log" &
  t=$!
  pids=("$g" "$t")
  sleep 1.5
  for n in 1 4; do measure "satpep terminal + gateway, accel ($CC)" $n $t $g; done
  kill -TERM $t $g; wait $t $g || true
  pids=()
done
echo
echo "load after: $(uptime)"
echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%d)"
