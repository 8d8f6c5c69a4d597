#!/usr/bin/env bash
# Samaraweera 1999, figures 3–12 (docs/reproductions/samaraweera.md): CSV + PNG into the directory
# given (default out/samaraweera). About 10 s on two cores.
#   scenarios/samaraweera/run.sh [out-dir]
# One run of the scenario itself, e.g. ACK compaction with spacing at 9.6 kb/s, with the CLI:
#   satpep sim scenarios/samaraweera/samaraweera.toml --plot \
#     --set link.return.queue.kind=ack_compaction --set node.hub.middlebox.spacing=true
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-out/samaraweera}
cd "$here/../.."
cargo run --release -q -p satpep-sim --example samaraweera -- "$out"
