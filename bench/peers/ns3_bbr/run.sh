#!/usr/bin/env bash
# satpep's BBR (`cc = "bbr"`, profile linux) beside ns-3's TcpBbr (Debian's ns-3 3.37) on the
# deployment test path, scenarios/bbr/deploy.toml (20 Mb/s / 2 Mb/s, 300 ms each way, 1000-packet
# drop-tail queues, PER on both directions), PER 0, 1e-3 and 1e-2. TcpCubic / satpep's cubic run
# beside them as a reference (the same TCP stacks without BBR). docs/bbr-ns3.md has the results.
#
# Usage: bench/peers/ns3_bbr/run.sh [SEEDS] [OUT]        (defaults: 3, results/ns3_bbr)
#   env: SATPEP=path/to/satpep (default target/release/satpep, built with cargo if missing)
#        CCS="bbr cubic" (congestion controls), PERS="0 0.001 0.01", JOBS=2 (parallel runs)
#        NS3_BUILD=DIR: an ns-3 CMake build directory (DIR/include, DIR/lib/libns3.VERSION-*.so)
#        to build against instead of Debian's 3.37, e.g. an upstream release configured with
#        -DNS3_ENABLED_MODULES="core;network;internet;point-to-point;applications;traffic-control"
#        (docs/bbr-ns3.md); use another OUT for it
# Needs: apt-get install -y ns3 libns3-dev (ns-3 3.37), g++, python3.
#
# Seeds: satpep `sim --seed S`, ns-3 `--run=S` (RngRun; RngSeed 1), S = 1..SEEDS. Same law, not the
# same random draws: compare means.
# Goodput, both the same way (satpep's summary.json flows[0].goodput_bps): bytes delivered in
# order to the receiving application × 8 / (completion − start), start = 0 (the SYN), completion =
# when the receiver has every byte the sending application wrote (it writes for 42 s), or the end
# of the run (44 s) when that never comes; with 64 MB buffers it never comes, so this is bytes
# delivered in 44 s × 8 / 44 s.
# Retransmissions: satpep's flows[0].retransmissions; ns-3: data segments sent whose end is not
# beyond the highest end sent before (bench/peers/ns3_bbr/bbr.cc), i.e. the same count.
# Writes OUT/ns3-CC-perP-seedS.{txt,csv} (the program's line; 100 ms samples), OUT/sim-CC-perP-seedS/
# (satpep's output), OUT/bbr ns-3 program, and prints the markdown table (report.py; plot.py draws
# cwnd / pacing rate / RTT of seed 1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# --one KIND CC PER SEED OUT: one run (used through xargs below).
if [ "${1:-}" = "--one" ]; then
    kind=$2 cc=$3 per=$4 seed=$5 out=$6
    tag="$cc-per$per-seed$seed"
    if [ "$kind" = ns3 ]; then
        case $cc in bbr) nscc=Bbr ;; cubic) nscc=Cubic ;; *) echo "no ns-3 cc for $cc" >&2; exit 2 ;; esac
        if [ ! -s "$out/ns3-$tag.txt" ]; then
            nice "$out/bbr" --cc=$nscc --per="$per" --run="$seed" --trace="$out/ns3-$tag.csv" \
                >"$out/ns3-$tag.txt.tmp"
            mv "$out/ns3-$tag.txt.tmp" "$out/ns3-$tag.txt"
        fi
    else
        [ -s "$out/sim-$tag/summary.json" ] ||
            nice "$SATPEP_BIN" sim "$SCENARIO" --seed "$seed" \
                --set "defaults.tcp.cc=$cc" \
                --set "link.fwd.error.per=$per" --set "link.ret.error.per=$per" \
                --set "output.pcap=[]" \
                --out "$out/sim-$tag" -q >/dev/null
    fi
    exit 0
fi

root=$(cd "$here/../../.." && pwd)
seeds=${1:-3}
out=${2:-$root/results/ns3_bbr}
ccs=${CCS:-bbr cubic}
pers=${PERS:-0 0.001 0.01}
jobs=${JOBS:-2}
satpep=${SATPEP:-$root/target/release/satpep}
scenario=$root/scenarios/bbr/deploy.toml
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [ -n "${NS3_BUILD:-}" ]; then
    core=$(ls "$NS3_BUILD"/lib/libns3.*-core*.so | head -1)
    v=$(basename "$core" | sed 's/^libns3\.\([0-9.]*\)-core\(.*\)\.so$/\1/')
    sfx=$(basename "$core" | sed 's/^libns3\.[0-9.]*-core\(.*\)\.so$/\1/')
    ns3flags=(-std=c++20 -I"$NS3_BUILD/include" -L"$NS3_BUILD/lib" -Wl,-rpath,"$NS3_BUILD/lib")
    for m in core network internet point-to-point applications traffic-control stats bridge; do
        ns3flags+=("-lns3.$v-$m$sfx")
    done
    ns3src="$NS3_BUILD/lib/libns3.$v-internet$sfx.so"
    ns3label="ns-3 $v"
else
    if [ ! -f /usr/include/ns3/tcp-bbr.h ]; then
        echo "ns-3 headers missing: apt-get update && apt-get install -y ns3 libns3-dev" >&2
        exit 1
    fi
    # Debian's ns3-*.pc files name libgsl.so (libgsl-dev) in their Libs: link the modules by name.
    ns3flags=(-std=c++17 -lns3-core -lns3-network -lns3-internet -lns3-point-to-point
        -lns3-applications -lns3-traffic-control)
    ns3src=/usr/include/ns3/tcp-bbr.h
    ns3label="ns-3 3.37"
fi
if [ ! -x "$out/bbr" ] || [ "$here/bbr.cc" -nt "$out/bbr" ] || [ "$ns3src" -nt "$out/bbr" ]; then
    echo "building $out/bbr" >&2
    nice g++ -O2 -DNDEBUG "$here/bbr.cc" -o "$out/bbr" "${ns3flags[@]}"
fi
if [ ! -x "$satpep" ]; then
    echo "building satpep (nice cargo build --release -p satpep)" >&2
    (cd "$root" && nice cargo build --release -p satpep)
fi
export SATPEP_BIN=$satpep SCENARIO=$scenario

for cc in $ccs; do for per in $pers; do for s in $(seq 1 "$seeds"); do
    printf '%s\n' "ns3 $cc $per $s" "sim $cc $per $s"
done; done; done | xargs -P "$jobs" -L 1 sh -c '"$0" --one "$@" "'"$out"'"' "$here/run.sh"

python3 "$here/report.py" "$out" "$seeds" "$ccs" "$pers"
if python3 -c 'import matplotlib' 2>/dev/null; then
    python3 "$here/plot.py" "$out" "$out/bbr-ns3.png" 1 bbr "$ns3label" >&2 || true
fi
