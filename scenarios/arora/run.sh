#!/usr/bin/env bash
# Reproduces docs/reproductions/arora.md: runs every point and writes CSV + PNG.
# Usage: scenarios/arora/run.sh [OUTDIR]   (default: out/arora)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/../../out/arora"}
cd "$here/../.."
cargo run --release -q -p satpep-sim --example arora -- "$out"
