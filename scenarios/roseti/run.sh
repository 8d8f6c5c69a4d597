#!/usr/bin/env bash
# The Roseti–Kristiansen DVB-RCS experiments (docs/reproductions/roseti.md), one command each:
#   scenarios/roseti/run.sh fig5a|fig5b|fig6|fig7|nst|all [OUT]     (default OUT: results/roseti)
# Each writes CSVs and PNGs under OUT. The theory beside them: `satpep model dama`.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec cargo run --release -q -p satpep-sim --example roseti -- "${1:-all}" "${2:-results/roseti}"
