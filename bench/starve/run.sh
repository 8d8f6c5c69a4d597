#!/usr/bin/env bash
# Issue 13's "flows that never connect at 3 000 flows and more": counts, drop rates, SYN attempts,
# and the same dumbbell in ns-2 2.35 (docs/validation.md, "Flows that deliver nothing").
#
#   bench/starve/run.sh [N ...]            default: 1000 3000 5000
#   env: SATPEP (default target/release/satpep), NS2_MAX (largest N run in ns-2, default 3000),
#        KEEP=DIR keeps the output folders, CASES="bench cub10 ..." runs only those satpep cases
#
# Cases, all 60 s, every queue drop-tail:
#   bench      bench/starve/bench_dumbbell.toml: the dumbbell of `satpep bench` on which the issue
#              counted (CUBIC, one host pair for all flows, 8 MB buffers), flow i at i*10 ms
#   cub10      the bench's TCP (CUBIC, 8 MB buffers) on scenarios/scale/dumbbell_100k.toml (own host
#              pair and access link per flow, so access delays can differ), flow i at i*10 ms
#   cub10-jit  cub10 with s_i's access delay ((i*7919) mod 1000)*10 us: 0-9.99 ms, different per flow
#   nr10       scenarios/scale/dumbbell_100k.toml (NewReno, own host pair each), flow i at i*10 ms
#   nr10-jit   nr10 with the jitter of cub10-jit
#   nr05       the scale scenario as written: flow i at i*0.5 ms
#   ns2p10     nr10 with tcp.profile = "ns2" and mss 1448 (initial RTO 3 s)
#   ns2p10-jit ns2p10 with the jitter of nr10-jit
#   ns-2       bench/starve/ns2_starve.tcl, same topology and starts as ns2p10 (window 724 packets
#              = 1 MB), jitter 0 and 1
# Output: `R label flows= zero= never_connected= drop_rate= ...` per satpep case (analyze.py), and
# `ns2 ...` lines.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
satpep=${SATPEP:-"$root/target/release/satpep"}
[ -x "$satpep" ] || (cd "$root" && cargo build --release -p satpep)
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 3000 5000)
keep=${KEEP:-}
work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
jit='link.2.delay="{i*7919%1000*10}us"'

one() { # label N rto interval file extra-sets...
    local label=$1 n=$2 rto=$3 iv=$4 file=$5
    shift 5
    case " ${CASES:-$label} " in *" $label "*) ;; *) return 0 ;; esac
    local d="$work/$label-$n"
    "$satpep" sim -q "$file" --set "flow.0.count=$n" --set output.series=true \
        --set "output.interval=$iv" "$@" --out "$d" > /dev/null
    python3 "$here/analyze.py" "$d" "$label-$n" "$rto" 60
    [ -n "$keep" ] || rm -rf "$d"
}

for n in "${sizes[@]}"; do
    scale=(--set "node.2.count=$n" --set "node.3.count=$n")
    for l in 2 3 4 5; do scale+=(--set "link.$l.count=$n"); done
    sc="$root/scenarios/scale/dumbbell_100k.toml"
    one bench "$n" 1 200ms "$here/bench_dumbbell.toml"
    cub=(--set defaults.tcp.cc=cubic --set defaults.tcp.send_buffer=8MB --set defaults.tcp.recv_buffer=8MB)
    one cub10 "$n" 1 500ms "$sc" "${scale[@]}" --set 'flow.0.start="{i*10}ms"' "${cub[@]}"
    one cub10-jit "$n" 1 500ms "$sc" "${scale[@]}" --set 'flow.0.start="{i*10}ms"' "${cub[@]}" --set "$jit"
    one nr10 "$n" 1 500ms "$sc" "${scale[@]}" --set 'flow.0.start="{i*10}ms"'
    one nr10-jit "$n" 1 500ms "$sc" "${scale[@]}" --set 'flow.0.start="{i*10}ms"' --set "$jit"
    one nr05 "$n" 1 500ms "$sc" "${scale[@]}"
    ns2p=(--set defaults.tcp.profile=ns2 --set defaults.tcp.mss=1448)
    one ns2p10 "$n" 3 500ms "$sc" "${scale[@]}" --set 'flow.0.start="{i*10}ms"' "${ns2p[@]}"
    one ns2p10-jit "$n" 3 500ms "$sc" "${scale[@]}" --set 'flow.0.start="{i*10}ms"' "${ns2p[@]}" --set "$jit"
    if [ "$n" -le "${NS2_MAX:-3000}" ]; then
        for j in 0 1; do
            (cd "$work" && ns "$here/ns2_starve.tcl" "$n" 10 60 724 "$j") | sed "s/^ns2 /ns2 jitter=$j /" | grep -v '^starved' || true
        done
    fi
done
