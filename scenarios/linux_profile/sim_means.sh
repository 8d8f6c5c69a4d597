#!/usr/bin/env bash
# The simulator side of run.sh alone: mean goodput (analyze.py, the same 40 s window) and fast
# recoveries of the `linux` profile on geo.toml over seeds 1..RUNS, without emulator runs.
#   scenarios/linux_profile/sim_means.sh CC PER [RUNS] [SET...]     (RUNS default 20)
# e.g. `sim_means.sh reno 0.001 20` for the "model" column of docs/validation.md's Reno rows.
# Env: SATPEP_BIN (default target/release/satpep).
set -euo pipefail
cd "$(dirname "$0")/../.."
cc=$1 per=$2 runs=${3:-20}
shift $(($# < 3 ? $# : 3))
bin=${SATPEP_BIN:-target/release/satpep}
sets=()
for kv in "$@"; do sets+=(--set "$kv"); done
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
for i in $(seq 1 "$runs"); do
    "$bin" sim scenarios/linux_profile/geo.toml --seed "$i" --set "link.fwd.error.per=$per" \
        --set defaults.tcp.profile=linux --set "defaults.tcp.cc=$cc" "${sets[@]}" \
        --out "$d/$i" -q >/dev/null
    python3 scenarios/linux_profile/analyze.py "$d/$i" sim 40
    rm -rf "${d:?}/$i"
done | python3 -c '
import json, statistics as st, sys
rs = [json.loads(l) for l in sys.stdin]
print("%s PER %s: %d runs, goodput %.3f Mb/s, fast recoveries %.2f" % (sys.argv[1], sys.argv[2], len(rs),
      st.mean(r["goodput_bps"] for r in rs) / 1e6, st.mean(r["fast_retransmits"] for r in rs)))' "$cc" "$per"
