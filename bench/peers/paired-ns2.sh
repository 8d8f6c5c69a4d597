#!/bin/sh
# Paired speed benchmark: satpep against ns-2 2.35 on the same dumbbell, same TCP variant, same
# load, in one run, counted the way ns-2 counts.
#
# Usage: bench/peers/paired-ns2.sh [SIMTIME_S] [FLOWS...]     (default: 60 s; 1 10 100 1000)
#   env: SATPEP=path (default target/release/satpep), RUNS=1 (runs per simulator and N;
#        the table shows the run with the least CPU of each)
#
# Scenario (bench/peers/ns2/dumbbell_newreno.tcl; satpep: `satpep bench --peer ns2`, the
# same topology written as a scenario): N senders s_i -> r0 -> r1 -> N receivers d_i, access
# links 1 Gb/s 0 s, r0->r1 100 Mb/s 250 ms, r1->r0 10 Mb/s 250 ms, every queue 1000 packets,
# NewReno with ns-2's defaults (satpep: tcp.profile = "ns2"), 1448-byte segments, 8 MiB
# windows, flow i starts at i ms, 60 simulated seconds, no traces or series.
#
# Delivered packets: in-order data at the receivers in 1448-byte segments (ns-2: TCPSink
# bytes_ / 1488; satpep: summary bytes_delivered / 1448). The two simulators' dynamics are not
# identical (ns-2 has no handshake, windows in packets...), so they deliver different counts:
# the per-packet figures divide each simulator's own CPU time by its own count.
#
# Columns, per simulator: CPU seconds of the whole process (user + sys, /usr/bin/time), CPU
# seconds of the event loop alone (both from /proc/self/stat, 10 ms ticks: ns-2 around `$ns run`,
# satpep around `Simulation::run`, after loading and building), delivered packets, µs of CPU per
# delivered packet both ways, and the ratio ns-2 / satpep (> 1: satpep faster).
# CPU, not wall time: the machine may be shared (wall time is printed for reference).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
satpep=${SATPEP:-"$root/target/release/satpep"}
runs=${RUNS:-1}
simtime=${1:-60}
shift 1 2>/dev/null || true
flows=${*:-1 10 100 1000}
[ -x "$satpep" ] || (cd "$root" && cargo build --release -p satpep)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# paired-ns2: $(date -u +%Y-%m-%dT%H:%MZ), nproc=$(nproc),$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# satpep $(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo '?'), ns-2 $(dpkg-query -W -f='${Version}' ns2 2>/dev/null || echo '?'), ${simtime} s simulated"
printf '%-6s %-6s %9s %9s %9s %10s %10s %10s\n' sim flows wall_s cpu_s sim_cpu_s pkts us/pkt sim_us/pkt
for n in $flows; do
    for sim in ns2 satpep; do
        best=""
        for r in $(seq "$runs"); do
            if [ "$sim" = ns2 ]; then
                /usr/bin/time -f 'TIME %e %U %S %M' -o "$tmp/t" ns "$here/ns2/dumbbell_newreno.tcl" "$n" "$simtime" >"$tmp/o" 2>&1
                pk=$(sed -n 's/.*delivered_pkts=\([0-9]*\).*/\1/p' "$tmp/o")
                [ -n "$pk" ] || { echo "ns failed:" >&2; cat "$tmp/o" >&2; exit 1; }
                simcpu=$(sed -n 's/.*sim_cpu_s=\([0-9.]*\).*/\1/p' "$tmp/o")
            else
                /usr/bin/time -f 'TIME %e %U %S %M' -o "$tmp/t" "$satpep" bench --peer ns2 --flows "$n" --seconds "$simtime" --json >"$tmp/o" 2>&1
                pk=$(sed -n 's/.*"in_order_packets":\([0-9]*\).*/\1/p' "$tmp/o")
                [ -n "$pk" ] || { echo "satpep failed:" >&2; cat "$tmp/o" >&2; exit 1; }
                simcpu=$(sed -n 's/.*"run_cpu_s":\([0-9.e-]*\).*/\1/p' "$tmp/o" | awk '{printf "%.3f", $1}')
            fi
            line=$(awk -v p="$pk" -v sc="$simcpu" '/^TIME/{c=$3+$4; printf "%s %.3f %s %s %.3f %.3f %s", $2, c, sc, p, c*1e6/p, sc*1e6/p, $5}' "$tmp/t")
            if [ -z "$best" ] || awk -v a="$line" -v b="$best" 'BEGIN{split(a,x," "); split(b,y," "); exit !(x[2] < y[2])}'; then
                best=$line
            fi
        done
        echo "$sim $n $best" >>"$tmp/all"
        echo "$best" | awk -v s="$sim" -v n="$n" '{printf "%-6s %-6s %9s %9s %9s %10s %10s %10s  (max RSS %d MB)\n", s, n, $1, $2, $3, $4, $5, $6, $7/1024}'
    done
done
echo
echo "# ns-2 / satpep, CPU per delivered packet (> 1: satpep faster)"
printf '%-6s %14s %14s\n' flows whole_process sim_only
awk '{k=$2; if ($1=="ns2") {w[k]=$7; s[k]=$8} else {printf "%-6s %14.2f %14.2f\n", k, w[k]/$7, s[k]/$8}}' "$tmp/all"
