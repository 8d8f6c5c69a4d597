#!/usr/bin/env bash
# satpep's simulated `tcp.profile = "linux"` beside real Linux TCP carried by `satpep emu`, on one
# GEO-like path (geo.toml: 20 Mb/s forward / 2 Mb/s return, 250 ms each way, ~1 BDP drop-tail
# queues, 64 MB buffers), for PER in {0, 1e-3, 1e-2} on the forward link and cc in {cubic, reno}.
#   sudo scenarios/linux_profile/run.sh [RUNS] [OUT]     (defaults: 5, results/linux_profile)
# Per case and run i (seed = i): `satpep emu` with iperf3 -C <cc> -t 42 in the sender's namespace
# (ss -ti sampled every 100 ms, sysctls, uname -r and nstat counters recorded in emu-i/extra/),
# and `satpep sim` with --set defaults.tcp.profile=linux --set defaults.tcp.cc=<cc>. Runs already
# present under OUT are kept (re-running with a larger RUNS adds runs). Each round of emulator
# runs waits until the 1-min load average is below $MAX_LOAD (default 1.2), checking every 60 s.
# Prints the markdown table (report.py) and draws the cwnd plot (plot.py) at the end.
# Env: SATPEP_BIN (skip the build; use this binary), MAX_LOAD, SECS (iperf3 -t, default 42),
#      WINDOW (goodput window in s after the first data ACK, default 40), SIM_RUNS (simulator
#      runs per case, default RUNS; the table then compares RUNS emu runs with SIM_RUNS sim runs),
#      CASES (emulator cases to run, e.g. "cubic:0.01 reno:0.001"; default all six),
#      SIM_SET (extra `--set` overrides for the simulator runs, space-separated, e.g.
#      "defaults.tcp.rack=false defaults.tcp.tlp=false" for the model without RACK-TLP),
#      SCENARIO (default geo.toml; links named fwd and ret, hosts srv and term, flow bulk),
#      CCS (congestion controls of the cases, default "cubic reno"), PER_LINKS (links whose
#      error.per each case sets, default "fwd").
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-5}"
out="${2:-results/linux_profile}"
secs="${SECS:-42}"
window="${WINDOW:-40}"
max_load="${MAX_LOAD:-1.2}"
sim_runs="${SIM_RUNS:-$runs}"
[ "$sim_runs" -ge "$runs" ] || sim_runs=$runs
here=scenarios/linux_profile
sc=${SCENARIO:-$here/geo.toml}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -z "${SATPEP_BIN:-}" ]; then
    cargo build --release -q -p satpep
    # A copy, so that other people's rebuilds during the measurement do not change the binary.
    cp target/release/satpep "$out/satpep"
    SATPEP_BIN="$out/satpep"
fi
bin="$SATPEP_BIN"
{
    echo "date: $(date -u +%FT%TZ)"
    echo "git: $(git rev-parse HEAD) $(git status --porcelain -- crates | wc -l) modified paths under crates/"
    echo "satpep: $bin $("$bin" --version 2>/dev/null || true)"
    echo "uname -r: $(uname -r)"
    echo "iperf3: $(iperf3 --version | head -1)"
    echo "runs: emu $runs, sim $sim_runs  iperf3 -t $secs  goodput window: $window s"
} >>"$out/env.txt"

wait_quiet() {
    while :; do
        local l
        l=$(cut -d' ' -f1 /proc/loadavg)
        if awk -v l="$l" -v m="$max_load" 'BEGIN { exit !(l < m) }'; then return; fi
        echo "load $l >= $max_load, waiting 60 s" >&2
        sleep 60
    done
}

sim_set=()
for kv in ${SIM_SET:-}; do sim_set+=(--set "$kv"); done
per_set() { # $1: PER; prints the --set arguments of every link in PER_LINKS
    local l
    for l in ${PER_LINKS:-fwd}; do printf '%s\n' --set "link.$l.error.per=$1"; done
}
cases=()
for per in 0 0.001 0.01; do for cc in ${CCS:-cubic reno}; do cases+=("$cc:$per"); done; done
# CASES="cubic:0.01 reno:0.01 ..." restricts the emulator runs to those cases (e.g. to add runs
# where the variance is; the lossless cases repeat to within 0.01 %).
emu_cases=(${CASES:-${cases[@]}})
# The simulator first (not timing-sensitive): runs 1..max(RUNS, SIM_RUNS).
for i in $(seq 1 "$sim_runs"); do
    for k in "${cases[@]}"; do
        cc=${k%%:*} per=${k#*:} c="$out/${k%%:*}-per${k#*:}"
        if [ ! -f "$c/sim-$i/result.json" ]; then
            mkdir -p "$c"
            mapfile -t ps < <(per_set "$per")
            "$bin" sim "$sc" --seed "$i" "${ps[@]}" \
                --set defaults.tcp.profile=linux --set "defaults.tcp.cc=$cc" "${sim_set[@]}" \
                --out "$c/sim-$i" -q >/dev/null
            python3 $here/analyze.py "$c/sim-$i" sim "$window" >"$c/sim-$i/result.json"
        fi
    done
done
# Each sender namespace makes the tested cc its default before iperf3 starts (emu_client.sh):
# iperf3 picks its cc only after connect(), and a socket that started under BBR keeps BBR's
# pacing. A namespace may only choose among tcp_allowed_congestion_control, which only the
# initial namespace sets: add the cases' cc to it for the run, and put it back afterwards.
allowed_before=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
allowed=$allowed_before
for k in "${emu_cases[@]}"; do
    case " $allowed " in *" ${k%%:*} "*) ;; *) allowed="$allowed ${k%%:*}" ;; esac
done
if [ "$allowed" != "$allowed_before" ]; then
    trap 'sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed_before"' EXIT
    sysctl -qw net.ipv4.tcp_allowed_congestion_control="$allowed"
fi
# The emulator: rounds of one run per case, each round after the machine is quiet.
for i in $(seq 1 "$runs"); do
    round_checked=0
    for k in "${emu_cases[@]}"; do
        cc=${k%%:*} per=${k#*:} c="$out/${k%%:*}-per${k#*:}"
        [ -f "$c/emu-$i/result.json" ] && continue
        if [ $round_checked = 0 ]; then wait_quiet; round_checked=1; fi
        echo "$(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg): emu $cc PER $per run $i" >&2
        # emu wants a new or empty --out: the client's records and emu's output are written
        # beside it during the run and moved in afterwards.
        rm -rf "$c/emu-$i" "$c/emu-$i.extra" "$c/emu-$i.stdout"
        mkdir -p "$c/emu-$i.extra"
        mapfile -t ps < <(per_set "$per")
        "$bin" emu "$sc" --seed "$i" "${ps[@]}" --out "$c/emu-$i" \
            --duration 75s --quiet --server-on term --server 'iperf3 -s -1 -J' --client-on srv \
            --client "$PWD/$here/emu_client.sh {server} $cc $secs $c/emu-$i.extra" \
            >"$c/emu-$i.stdout" 2>&1 || echo "emu exit $? ($c/emu-$i)" >&2
        mkdir -p "$c/emu-$i"
        mv "$c/emu-$i.extra" "$c/emu-$i/extra"
        mv "$c/emu-$i.stdout" "$c/emu-$i/emu.stdout"
        cut -d' ' -f1-3 /proc/loadavg >"$c/emu-$i/loadavg_after"
        python3 $here/analyze.py "$c/emu-$i" emu "$window" >"$c/emu-$i/result.json" ||
            { echo "analysis failed: $c/emu-$i" >&2; rm -f "$c/emu-$i/result.json"; }
    done
done
python3 $here/report.py "$out" | tee "$out/table.md"
if [ -d "$out/cubic-per0" ]; then python3 $here/plot.py "$out" "$out/cwnd.png"; fi
