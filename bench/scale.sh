#!/usr/bin/env bash
# Scale figures of docs/performance.md ("Scale"): set-up time and memory of the GEO dumbbell of
# scenarios/scale/dumbbell_100k.toml at N host pairs (one flow each), and the whole 60 s run.
#
#   bench/scale.sh [N ...]          default: 1000 10000 100000
#
# Prints one line per N: whole-process wall and user CPU, peak RSS, the run's own wall time (the
# "events in X s wall" line), and set-up + output = whole - run.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/satpep
[ -x "$bin" ] || cargo build --release -p satpep
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000 100000)
printf '%8s %10s %10s %10s %12s %10s %12s %14s\n' flows "wall s" "user s" "peak MB" events "run s" "set-up+out s" "KB/flow (RSS)"
for n in "${sizes[@]}"; do
    out=$(mktemp -d)
    rmdir "$out"
    sets=(--set "node.2.count=$n" --set "node.3.count=$n" --set "flow.0.count=$n")
    for l in 2 3 4 5; do sets+=(--set "link.$l.count=$n"); done
    /usr/bin/time -f '%e %U %M' -o "$out.time" "$bin" sim scenarios/scale/dumbbell_100k.toml \
        "${sets[@]}" --out "$out" > "$out.log"
    read -r wall user rss < "$out.time"
    line=$(grep ' events in ' "$out.log")
    events=$(awk '{print $1}' <<< "$line")
    run=$(awk '{for (i = 1; i <= NF; i++) if ($i == "in") print $(i + 1)}' <<< "$line")
    awk -v n="$n" -v w="$wall" -v u="$user" -v r="$rss" -v e="$events" -v t="$run" 'BEGIN {
        printf "%8d %10.2f %10.2f %10.0f %12d %10.2f %12.2f %14.1f\n", n, w, u, r / 1024, e, t,
            w - t, r / n }' 
    rm -rf "$out" "$out.time" "$out.log"
done
