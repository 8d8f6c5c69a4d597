#!/usr/bin/env bash
# satpep's BBR (`cc = "bbr"`, profile linux) beside Linux's BBR carried by `satpep emu`
# (iperf3 -C bbr, `ss -ti` sampled every 100 ms), on the deployment test path (deploy.toml: PER
# on both directions) and on scenarios/emu_split/'s path (split.toml: PER on the forward
# direction), PER 0, 1e-3 and 1e-2, with scenarios/linux_profile/run.sh's machinery.
#   sudo scenarios/bbr/run.sh [RUNS] [OUT]      (defaults: 1, results/bbr)
# Writes OUT/{deploy,split}/table.md (goodput emu vs sim, report.py) and OUT/bbr.png (cwnd,
# pacing rate and RTT over time, both drivers: plot.py). Env as linux_profile/run.sh (MAX_LOAD…).
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-1}"
out="${2:-results/bbr}"
mkdir -p "$out"
SCENARIO=scenarios/bbr/deploy.toml PER_LINKS="fwd ret" CCS=bbr \
    scenarios/linux_profile/run.sh "$runs" "$out/deploy"
SATPEP_BIN="$out/deploy/satpep" SCENARIO=scenarios/bbr/split.toml PER_LINKS=fwd CCS=bbr \
    scenarios/linux_profile/run.sh "$runs" "$out/split"
python3 scenarios/bbr/plot.py "$out" "$out/bbr.png"
