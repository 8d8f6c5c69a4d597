#!/usr/bin/env bash
# How often a SYN dies at the bottleneck, against the bottleneck's overall drop rate: the cub10 case
# of run.sh (CUBIC, own host pair per flow, flow i at i*10 ms) at N flows, without and with the
# per-flow access-delay jitter, capturing flows FIRST..FIRST+K-1 on their access link s_i-r1 (every
# SYN sent) and on r2-d_i (every SYN that crossed the bottleneck).
#
#   bench/starve/syn_drops.sh [N [FIRST [K]]]     default: 3000 1000 300
#   env: SATPEP (default target/release/satpep)
# Prints per case: SYNs sent, SYNs that crossed, the SYN drop fraction, the bottleneck's drop rate,
# and how many of the K flows sent at least 1, 2, 3, ... SYNs (ge=...): the ratio of successive
# counts is the chance that a flow's next SYN dies given that all its earlier ones did; and the
# instants (s) at which the flow with the most SYNs sent them (captured on its access link).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
satpep=${SATPEP:-"$root/target/release/satpep"}
n=${1:-3000} first=${2:-1000} k=${3:-300}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pcap=$(python3 -c "import sys; f,k=int(sys.argv[1]),int(sys.argv[2]); print('[' + ','.join(f'\"s{i}-r1\",\"r2-d{i}\"' for i in range(f, f+k)) + ']')" "$first" "$k")
sets=(--set "node.2.count=$n" --set "node.3.count=$n" --set "flow.0.count=$n")
for l in 2 3 4 5; do sets+=(--set "link.$l.count=$n"); done
sets+=(--set defaults.tcp.cc=cubic --set defaults.tcp.send_buffer=8MB --set defaults.tcp.recv_buffer=8MB
    --set 'flow.0.start="{i*10}ms"' --set "output.pcap=$pcap")
for case in cub10 cub10-jit; do
    extra=()
    [ "$case" = cub10-jit ] && extra=(--set 'link.2.delay="{i*7919%1000*10}us"')
    "$satpep" sim -q "$root/scenarios/scale/dumbbell_100k.toml" "${sets[@]}" "${extra[@]}" --out "$work/$case" > /dev/null
    tshark -r "$work/$case/trace.pcapng" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0' \
        -T fields -e frame.interface_name -e frame.time_epoch 2>/dev/null |
        awk -v c="$case" -v n="$n" -v k="$k" -v f="$first" '/^s/ {s++; per[$1]++; at[$1] = at[$1] sprintf(" %.3f", $2)} /^r2-/ {r++}
            END {for (i in per) for (j = 1; j <= per[i]; j++) ge[j]++
                 printf "S %s-%d flows=%d..%d syn_sent=%d syn_crossed=%d syn_drop=%.3f ge=", c, n, f, f+k-1, s, r, 1-r/s
                 for (j = 1; j in ge; j++) printf "%s%d", (j > 1 ? "," : ""), ge[j]
                 m = 0; for (i in per) if (per[i] > m || (per[i] == m && i < w)) { m = per[i]; w = i }
                 printf " most_syns=%s:%s", w, at[w]}'
    python3 -c 'import json,sys; b=[l for l in json.load(open(sys.argv[1]))["links"] if l["name"]=="bottleneck"][0]; print(" bottleneck_drop_rate=%.3f" % (b["queue_drops"]/(b["queue_drops"]+b["delivered_packets"])))' "$work/$case/summary.json"
    rm -rf "${work:?}/$case"
done
