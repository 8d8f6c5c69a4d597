#!/usr/bin/env bash
# One offloaded iperf3 CUBIC run through bench/emu/fast.toml with the kernel's view of both
# hosts: where segments were lost (docs/performance.md, "On a quiet machine the loop is the
# bottleneck"). Prints throughput, retransmits and the loop's pass/lateness figures, then the
# non-zero loss-related nstat counters of both namespaces and the sender's TUN device
# counters (TX dropped: super-packets the device's ring had no room for).
#
#   sudo bash bench/emu/counters.sh OUT [STREAMS] [EMU_FLAGS]
#
# Needs root, iperf3, nstat (iproute2), python3 and target/release/satpep (or $SATPEP).
set -u
cd "$(dirname "$0")/../.."
o=$1 P=${2:-1}
SATPEP=${SATPEP:-target/release/satpep}
SCENARIO=${SCENARIO:-bench/emu/fast.toml}
rm -rf "$o" "$o.x"
mkdir -p "$o.x"
max=536870912
[ "$P" -gt 1 ] && max=134217728
S="sysctl -qw net.ipv4.tcp_rmem=\"4096 131072 $max\" net.ipv4.tcp_wmem=\"4096 16384 $max\""
x=$(cd "$o.x" && pwd)
"$SATPEP" emu "$SCENARIO" --out "$o" --quiet ${3:-} --server-on term --client-on gw \
    --server "$S; nstat -n; iperf3 -s -1; nstat -asz > $x/srv.nstat; ip -s -s link > $x/srv.link" \
    --client "$S; nstat -n; iperf3 -c {server} -C cubic -P $P -t 10 -O 5 -J > $x/iperf.json;
              nstat -asz > $x/cli.nstat; ip -s -s link > $x/cli.link; sleep 2" >"$x/emu.out" 2>&1
python3 - "$o" "$x" <<'PY'
import json, sys
o, x = sys.argv[1:3]
s = json.load(open(o + "/summary.json"))
e = json.load(open(x + "/iperf.json"))["end"]
print("Gb/s %.2f retransmits %s | pass p99 %.0f µs max %.0f µs, not run max %.0f µs, lateness p99 %.0f µs"
      % (e["sum_received"]["bits_per_second"] / 1e9, e["sum_sent"].get("retransmits"),
         s["pass_time"]["p99_us"], s["pass_time"]["max_us"], s["pass_lost"]["max_us"],
         s["lateness"]["p99_us"]))
PY
for f in cli srv; do
    [ $f = cli ] && echo "== nstat, the sender (gw)" || echo "== nstat, the receiver (term)"
    grep -v -E " 0 " "$x/$f.nstat" | grep -E "Prune|Collaps|Ofo|Drop|Backlog|Retrans|Lost|Sack|Reneg|Memory|Loss|Timeout" || true
done
echo "== the sender's TUN device"
grep -A7 satpep0 "$x/cli.link" | head -8
