#!/usr/bin/env bash
# Paper 002's emulator tests (its Fig 3, "NEP tests: RTT measurements"): a real Linux TCP flow
# (iperf3, from the ST to the gateway, window 64 kB so the ST queue stays empty, as the paper
# tuned its NEP runs) over the emulated DVB-RCS return link of single.toml, with pure CRA, pure
# VBDC and pure RBDC (γ = 0.1); beside it the same scenario in `satpep sim` (64 kB receive
# buffer) and the RTT of `satpep model dama` (eqs. 3–4). Results in docs/reproductions/roseti.md.
#   sudo scenarios/roseti/emu.sh [OUT]        (default OUT: results/roseti_emu; needs iperf3)
# Prints a markdown table: RTT TCP saw (p10 / median / p90 of the samples) and goodput.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-results/roseti_emu}"
cargo build --release -q -p satpep
bin=target/release/satpep
sc=scenarios/roseti/single.toml
rm -rf "$out"
mkdir -p "$out"
echo "| scheme | model RTT (ms) | sim RTT p10 / median / p90 (ms) | emu RTT p10 / median / p90 (ms) | sim goodput (kb/s) | emu goodput (kb/s) |"
echo "| --- | --- | --- | --- | --- | --- |"
for scheme in cra vbdc rbdc; do
    case $scheme in
    cra) sets=(cra_slots=32 vbdc_max_slots=0 rbdc_max_slots=0) alpha=11 ;;
    vbdc) sets=(cra_slots=0 vbdc_max_slots=32 rbdc_max_slots=0) alpha=0 ;;
    rbdc) sets=(cra_slots=0 vbdc_max_slots=0 rbdc_max_slots=32 rbdc_gamma=0.1) alpha=0 ;;
    esac
    args=(--set duration=30s --set stop_when_done=false --set 'flow.ftp.app={ kind = "bulk", duration = "30s" }'
        --set defaults.tcp.recv_buffer=64KB)
    for s in "${sets[@]}"; do args+=(--set "dama.rcs.terminal.$s"); done
    "$bin" sim "$sc" --out "$out/sim-$scheme" "${args[@]}" >/dev/null
    # iperf3's client sends: it runs at the flow's sender (st), behind the DAMA return link.
    "$bin" emu "$sc" --out "$out/emu-$scheme" "${args[@]}" --server-on gw --server 'iperf3 -s -1' --client-on st \
        --client 'iperf3 -c {server} -t 30 -w 64K -i 0.2 -C reno -J' >/dev/null 2>&1 || true
    model=$("$bin" model dama --alpha "$alpha" | awk '/^given/ {print $3}')
    python3 - "$out" "$scheme" "$model" <<'PY'
import csv, json, sys
out, scheme, model = sys.argv[1], sys.argv[2], sys.argv[3]
def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]
def fmt(v):
    return f"{q(v, .1):.0f} / {q(v, .5):.0f} / {q(v, .9):.0f}" if v else "—"
sim_rtt = [float(r["rtt_ms"]) for r in csv.DictReader(open(f"{out}/sim-{scheme}/rtt.csv"))]
sim = json.load(open(f"{out}/sim-{scheme}/summary.json"))["flows"][0]
ip = json.load(open(f"{out}/emu-{scheme}/client.log"))
emu_rtt = [s["rtt"] / 1000 for i in ip["intervals"] for s in i["streams"] if s.get("rtt")]
emu_bps = ip["end"]["sum_received"]["bits_per_second"]
with open(f"{out}/emu-{scheme}/rtt.csv", "w") as f:
    f.write("time_s,rtt_ms\n")
    for i in ip["intervals"]:
        for s in i["streams"]:
            f.write(f"{s['end']:.3f},{s['rtt'] / 1000:.1f}\n")
print(f"| {scheme.upper()} | {model} | {fmt(sim_rtt)} | {fmt(emu_rtt)} | {sim['goodput_bps'] / 1e3:.0f} | {emu_bps / 1e3:.0f} |")
PY
done
