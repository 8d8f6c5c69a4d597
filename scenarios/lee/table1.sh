#!/usr/bin/env bash
# Table 1 / §5 of Lee, Yum & Wan: the WINDS channel-release anomaly. A 64 KB (and 512 KB, 1 MB)
# TCP flow with and without 400 kb/s of background traffic; RTT and goodput over 240–360 s (after slow start at 5.78 s per round trip).
# Writes OUT/table1.csv and OUT/lee_table1_winds.png. Usage: scenarios/lee/table1.sh [OUT] [satpep]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-out/lee/table1}
satpep=${2:-"$here/../../target/release/satpep"}
"$satpep" sim -q "$here/table1.toml" --out "$out" --plot
cargo run -q --release -p satpep-sim --example lee -- table1 "$out"
