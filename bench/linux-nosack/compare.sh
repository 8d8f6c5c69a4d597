#!/usr/bin/env bash
# satpep's `tcp.profile = "linux"` without SACK beside real Linux TCP with net.ipv4.tcp_sack = 0,
# carried by `satpep emu` (issue 37), on two paths:
#   asym_430k   scenarios/linux_profile/asym_430k.toml: 3 Reno flows, 10 Mb/s / 430 kb/s, 600-packet queue
#   window_4mb  scenarios/linux_profile/window_4mb.toml: 1 Reno flow, 24 Mb/s, 1 s RTT, 4 MB window
#   geo_4flows_small_queue (with CASES=...): 4 Reno flows, 10 Mb/s GEO, 100-packet queue
#   sudo bench/linux-nosack/compare.sh [RUNS] [OUT]      (defaults: 2, results/linux-nosack)
# Per case and run i (seed i): `satpep emu` with `iperf3 -C reno -t $SECS` (-P 3 / -P 4 for 3 / 4 flows)
# from srv to term, tcp_sack = 0 in both namespaces, the receiver's window set through its
# tcp_rmem (RMEM_ASYM, RMEM_4MB: chosen so that Linux advertises about what the scenario's
# recv_buffer gives satpep; the largest window Linux advertised is in each result); and
# `satpep sim` of the same scenario. Goodput from the ACKs on the return link over WINDOW s
# (bench/linux-nosack/analyze.py), for both drivers alike. It reuses run.sh's machinery
# (scenarios/linux_profile/: emu_client.sh samples `ss -ti` every 100 ms, records sysctls and
# nstat). Runs already under OUT are kept. Env: SATPEP_BIN (skip the build), SECS (default 42),
# WINDOW (default 40), CASES (default "asym_430k window_4mb"), SIM_SET (extra sim --set's),
# MAX_LOAD (wait for the 1-min load average to fall below it, default 1.5).
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-2}"
out="${2:-results/linux-nosack}"
secs="${SECS:-42}"
window="${WINDOW:-40}"
max_load="${MAX_LOAD:-1.5}"
here=bench/linux-nosack
lp=scenarios/linux_profile
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -z "${SATPEP_BIN:-}" ]; then
    cargo build --release -q -p satpep
    cp target/release/satpep "$out/satpep"
    SATPEP_BIN="$out/satpep"
fi
bin="$SATPEP_BIN"
{
    echo "date: $(date -u +%FT%TZ)"
    echo "git: $(git rev-parse HEAD) $(git status --porcelain -- crates | wc -l) modified paths under crates/"
    echo "uname -r: $(uname -r)  iperf3: $(iperf3 --version | head -1)"
    echo "runs: $runs  iperf3 -t $secs  goodput window: $window s  SIM_SET: ${SIM_SET:-}"
} >>"$out/env.txt"
sim_set=()
for kv in ${SIM_SET:-}; do sim_set+=(--set "$kv"); done

wait_quiet() {
    while :; do
        local l
        l=$(cut -d' ' -f1 /proc/loadavg)
        if awk -v l="$l" -v m="$max_load" 'BEGIN { exit !(l < m) }'; then return; fi
        echo "load $l >= $max_load, waiting 30 s" >&2
        sleep 30
    done
}

# Receive buffers: Linux advertises about rmem x its truesize ratio (tcp_win_from_space): a
# calibration run advertised 748 672 B with 1 200 000 and 4 186 112 B with 6 700 000 (0.62),
# so these give about 720 KB and 4 MB.
# geo_4flows_small_queue keeps the emulator's tcp_rmem (autotuning up to 64 MiB).
declare -A rmem=([asym_430k]="${RMEM_ASYM:-1154000}" [window_4mb]="${RMEM_4MB:-6400000}" [geo_4flows_small_queue]="")
declare -A par=([asym_430k]="-P 3" [window_4mb]="" [geo_4flows_small_queue]="-P 4")
allowed_before=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
case " $allowed_before " in
*" reno "*) ;;
*)
    trap 'sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed_before"' EXIT
    sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed_before reno"
    ;;
esac
for c in ${CASES:-asym_430k window_4mb}; do
    sc=$lp/$c.toml
    for i in $(seq 1 "$runs"); do
        d="$out/$c/sim-$i"
        if [ ! -f "$d/result.json" ]; then
            rm -rf "$d"
            "$bin" sim "$sc" --seed "$i" "${sim_set[@]}" --out "$d" -q >/dev/null
            python3 $here/analyze.py "$d" sim "$window" >"$d/result.json"
        fi
        d="$out/$c/emu-$i"
        [ -f "$d/result.json" ] && continue
        wait_quiet
        echo "$(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg): emu $c run $i" >&2
        rm -rf "$d" "$d.extra" "$d.stdout"
        rm_set=""
        [ -n "${rmem[$c]}" ] && rm_set="'net.ipv4.tcp_rmem=4096 ${rmem[$c]} ${rmem[$c]}'"
        mkdir -p "$d.extra"
        "$bin" emu "$sc" --seed "$i" --out "$d" --duration "$((secs + 30))s" --quiet \
            --server-on term \
            --server "sysctl -qw net.ipv4.tcp_sack=0 $rm_set; iperf3 -s -1 -J" \
            --client-on srv \
            --client "$PWD/$lp/emu_client.sh {server} reno $secs $d.extra '${par[$c]}' net.ipv4.tcp_sack=0" \
            >"$d.stdout" 2>&1 || echo "emu exit $? ($d)" >&2
        mkdir -p "$d"
        mv "$d.extra" "$d/extra"
        mv "$d.stdout" "$d/emu.stdout"
        python3 $here/analyze.py "$d" emu "$window" >"$d/result.json" ||
            { echo "analysis failed: $d" >&2; rm -f "$d/result.json"; }
    done
done
python3 $here/report.py "$out" | tee "$out/table.md"
