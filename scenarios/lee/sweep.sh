#!/usr/bin/env bash
# Beyond the paper: utilisation over 65–80 s for RTT 100 ms – 2 s × rate 2 – 200 Mb/s, 64 KB
# receiver window, without and with the gateway. Writes OUT/sweep.csv and
# OUT/lee_sweep_utilisation.png. Usage: scenarios/lee/sweep.sh [OUT] [satpep]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-out/lee/sweep}
satpep=${2:-"$here/../../target/release/satpep"}
for rtt in 100 250 500 1000 2000; do
    half=$((rtt / 2))
    "$satpep" sim -q "$here/sweep.toml" --out "$out/rtt-$(printf %04d "$rtt")" \
        --set "link.forward.delay=${half}ms" --set "link.return.delay=${half}ms"
done
cargo run -q --release -p satpep-sim --example lee -- sweep "$out"
