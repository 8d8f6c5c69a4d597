#!/usr/bin/env bash
# Split TCP on real Linux TCP beside the simulator (docs/emulator.md, "Split TCP on real Linux
# TCP"): the scenario split.toml end to end and with a split-TCP relay at the gateway, each in
# `satpep emu` (iperf3, Linux CUBIC per socket, 40 s) and in `satpep sim` (satpep's CUBIC, 40 s;
# once as configured, once with abc_segments = 2, RFC 3465's L = 2 slow start, as Linux grows).
#   sudo scenarios/emu_split/run.sh [OUT]      (default OUT: results/emu_split; needs iperf3)
# Prints one markdown table row per run: goodput at the receiver over the 40 s of sending.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-results/emu_split}"
cargo build --release -q -p satpep
bin=target/release/satpep
sc=scenarios/emu_split/split.toml

# --set arguments that put a split-TCP relay at the gateway whose halves use the hosts' TCP
# settings with slow-start limit $1.
relay() {
    local tcp="{ cc = \"cubic\", recovery = \"sack\", initial_window = 10, recv_buffer = \"16MB\", send_buffer = \"16MB\", abc_segments = $1 }"
    relay_args=(--set node.gw.middlebox.kind=split_tcp --set node.gw.middlebox.buffer_per_conn=16MB
        --set "node.gw.middlebox.tcp_connect=$tcp" --set "node.gw.middlebox.tcp_accept=$tcp")
}

rm -rf "$out"
mkdir -p "$out"
echo "| mode | driver | goodput (Mb/s) | satellite-hop error drops | sender retransmissions |"
echo "| --- | --- | --- | --- | --- |"
for mode in end-to-end split; do
    a1=() a2=(--set defaults.tcp.abc_segments=2)
    if [ "$mode" = split ]; then
        relay 1
        a1+=("${relay_args[@]}")
        relay 2
        a2+=("${relay_args[@]}")
    fi
    "$bin" sim "$sc" --out "$out/sim-$mode" "${a1[@]}" >/dev/null
    "$bin" sim "$sc" --out "$out/sim2-$mode" "${a2[@]}" >/dev/null
    "$bin" emu "$sc" --out "$out/emu-$mode" "${a1[@]}" --server-on term --client-on srv --server 'iperf3 -s -1' \
        --client 'iperf3 -c {server} -C cubic -t 40 -J' >/dev/null 2>&1 || true
    python3 - "$out" "$mode" <<'PY'
import json, sys
out, mode = sys.argv[1], sys.argv[2]
sat = lambda s: next(l for l in s["links"] if l["name"] == "sat")
for run, label in (("sim", "sim"), ("sim2", "sim, abc_segments = 2")):
    s = json.load(open(f"{out}/{run}-{mode}/summary.json"))
    f = s["flows"][0]
    print(f"| {mode} | {label} | {f['goodput_bps'] / 1e6:.2f} | {sat(s)['error_drops']} | {f['retransmissions']} |")
emu = json.load(open(f"{out}/emu-{mode}/summary.json"))
ip = json.load(open(f"{out}/emu-{mode}/client.log"))
bps = ip["end"]["sum_received"]["bits_per_second"]
rtx = ip["end"]["sum_sent"].get("retransmits", "?")
cc = ip["end"].get("sender_tcp_congestion", "?")
print(f"| {mode} | emu (Linux {cc}) | {bps / 1e6:.2f} | {sat(emu)['error_drops']} | {rtx} |")
PY
done
