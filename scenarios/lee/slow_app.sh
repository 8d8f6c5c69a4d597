#!/usr/bin/env bash
# Beyond the paper: the receiving application reads only 5 Mb/s (64 KB buffer, 24 Mb/s, RTT 1 s,
# 10 MB). With the gateway the forecast must follow the slow reader (zero segments beyond the
# receiver's window: the CI test slow_receiver_application_is_never_overrun_and_the_transfer_
# completes checks it); without, the 64 KB window is the limit. Writes OUT/slow_app.csv and
# OUT/lee_slow_app_{throughput,window}.png. Usage: scenarios/lee/slow_app.sh [OUT] [satpep]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-out/lee/slow_app}
satpep=${2:-"$here/../../target/release/satpep"}
common=(--set 'defaults.tcp.app_read_rate=5Mbps' --set 'flow.bulk.app={ kind = "bulk", bytes = "10MB" }'
        --set 'duration="200s"' --set 'stop_when_done=true')
"$satpep" sim -q "$here/table2.toml" --out "$out/gw" --plot "${common[@]}" \
    --set 'node.gateway.middlebox={ kind = "supercharger" }'
"$satpep" sim -q "$here/table2.toml" --out "$out/plain" --plot "${common[@]}"
cargo run -q --release -p satpep-sim --example lee -- slow "$out"
