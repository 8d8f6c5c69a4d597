#!/usr/bin/env bash
# Table 2 and Figs 8–9 of Lee, Yum & Wan: receiver buffer 64 KB, 1 MB, 2 MB, 4 MB without the
# gateway and 64 KB with TCP-SuperCharger; goodput over 25–40 s. Writes OUT/table2.csv,
# OUT/lee_fig8_throughput.png, OUT/lee_fig9_window.png and each run's own plots.
# Usage: scenarios/lee/table2.sh [OUT] [satpep]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-out/lee/table2}
satpep=${2:-"$here/../../target/release/satpep"}
gw='node.gateway.middlebox={ kind = "supercharger" }'
run() { # dir buffer [--set ...]
    local dir=$1 buf=$2; shift 2
    "$satpep" sim -q "$here/table2.toml" --out "$out/$dir" --plot \
        --set "defaults.tcp.recv_buffer=$buf" "$@"
}
run gw-64KB 65535 --set "$gw"
run 64KB 65535
run 1MB 1024KiB
run 2MB 2048KiB
run 4MB 4096KiB
cargo run -q --release -p satpep-sim --example lee -- table2 "$out"
