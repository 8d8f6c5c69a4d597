#!/usr/bin/env bash
# Runs the fidelity checks of docs/validation.md and prints goodput over each measurement window
# (from flows.csv: delivered bytes at t1 minus at t0). Usage: scenarios/validation/run.sh [satpep]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
satpep=${1:-"$here/../../target/release/satpep"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
goodput() { # dir t0 t1
    awk -F, -v t0="$2" -v t1="$3" 'NR>1 && $1+0==t0 {a=$11} NR>1 && $1+0==t1 {b=$11}
        END {printf "%.0f", (b-a)*8/(t1-t0)}' "$1/flows.csv"
}
run() { # name file t0 t1 [--set ...]
    local name=$1 file=$2 t0=$3 t1=$4; shift 4
    "$satpep" sim -q "$here/$file" --out "$out/$name" "$@"
    printf '%-22s %12s b/s\n' "$name" "$(goodput "$out/$name" "$t0" "$t1")"
}
run window window.toml 10 60
run window-delack2 window.toml 10 60 --set defaults.tcp.delack_segments=2
run rate rate.toml 20 60
for cc in "reno reno" "reno newreno" "reno sack"; do
    set -- $cc
    for seed in 1 2 3; do
        run "loss-$2-seed$seed" loss.toml 10 1000 --seed "$seed" --set "defaults.tcp.recovery=$2"
    done
done
