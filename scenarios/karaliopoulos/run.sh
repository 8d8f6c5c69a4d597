#!/usr/bin/env bash
# Reproduces docs/reproductions/karaliopoulos.md: runs every point and writes CSV + PNG.
# Usage: scenarios/karaliopoulos/run.sh [OUTDIR]   (default: out/karaliopoulos)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/../../out/karaliopoulos"}
cd "$here/../.."
cargo run --release -q -p satpep-sim --example karaliopoulos -- "$out"
