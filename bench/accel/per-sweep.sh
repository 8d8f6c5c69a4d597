#!/bin/sh
# Goodput against the packet error rate on the deployment test path (20/2 Mb/s, 600 ms; the
# same PER both ways) for end-to-end CUBIC, split TCP at the gateway and the accelerated PEP, in
# `satpep sim` (scenarios/accel/geo_20_2.toml) or in the emulator with the daemons
# (bench/deploy/run.sh). docs/accel.md, "In the simulator", shows both.
#
#   bench/accel/per-sweep.sh sim            # seconds; prints CSV
#   sudo bench/accel/per-sweep.sh emu       # about 25 minutes; prints CSV
#   bench/accel/per-sweep.sh table SIM.csv EMU.csv    # the markdown table of both
#
# CSV: where,mode,per,bytes,seconds,goodput_mbps. One download per point, from the start of
# connect to the last byte (xfer.py's total_s; in sim the flow's completion time), the client
# asking once the satellite connection is up (at 2 s in sim). End-to-end and split TCP take
# smaller downloads as the PER grows, or a point would take many minutes; the accelerated PEP
# always 100 MB. Each point is the same transfer in both.
#
# Environment: SATPEP (default target/release/satpep), PERS (default "0 1e-3 5e-3 1e-2 2e-2
# 5e-2"), MODES (default "e2e split accel").
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SATPEP=${SATPEP:-$ROOT/target/release/satpep}
PERS=${PERS:-"0 1e-3 5e-3 1e-2 2e-2 5e-2"}
MODES=${MODES:-"e2e split accel"}

# Bytes of one point's download.
size() { # mode per
    if [ "$1" = accel ]; then
        echo 100000000
        return
    fi
    case "$2" in
    0) echo 100000000 ;;
    1e-3) echo 20000000 ;;
    5e-3) echo 10000000 ;;
    1e-2 | 2e-2) echo 5000000 ;;
    *) echo 2000000 ;;
    esac
}

# The split relay of bench/deploy/gw-split.toml and the accelerated PEP of term-accel.toml and
# gw-accel.toml, as scenario middleboxes.
SPLIT='{ kind = "split_tcp", handshake = "after_listener", buffer_per_conn = "2MB", buffer_total = "480MB", tcp_accept = { profile = "linux", send_buffer = "4MB" }, tcp_connect = { profile = "linux" } }'
TERM_ACCEL='{ kind = "accel", role = "terminal", address = "10.77.0.2", gateway = "10.77.0.1", forward = "20Mbps", return = "2Mbps", rtt = "600ms" }'
GW_ACCEL='{ kind = "accel", role = "gateway", address = "10.77.0.1", forward = "20Mbps", return = "2Mbps", rtt = "600ms" }'

sim() {
    out=$(mktemp -d /tmp/satpep-per-sweep.XXXXXX)
    trap 'rm -rf "$out"' EXIT
    echo "where,mode,per,bytes,seconds,goodput_mbps"
    for mode in $MODES; do
        for per in $PERS; do
            bytes=$(size "$mode" "$per")
            set -- --set "link.forward.error.per=$per" --set "link.return.error.per=$per" \
                --set "flow.download.app.response=${bytes}B" --set flow.download.start=2s \
                --set duration=1000s
            case "$mode" in
            split) set -- "$@" --set "node.gw.middlebox=$SPLIT" ;;
            accel) set -- "$@" --set "node.term.middlebox=$TERM_ACCEL" --set "node.gw.middlebox=$GW_ACCEL" ;;
            esac
            "$SATPEP" sim "$ROOT/scenarios/accel/geo_20_2.toml" --quiet --out "$out/run" --force "$@" >/dev/null
            python3 - "$out/run/summary.json" "$mode" "$per" "$bytes" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
f = s["flows"][0]
t = f["completion_time_s"]
mode, per, size = sys.argv[2], sys.argv[3], int(sys.argv[4])
print(f"sim,{mode},{per},{size},{t:.3f},{size * 8 / t / 1e6:.2f}")
EOF
        done
    done
}

emu() {
    echo "where,mode,per,bytes,seconds,goodput_mbps"
    for mode in $MODES; do
        for per in $PERS; do
            bytes=$(size "$mode" "$per")
            out=$(mktemp -d /tmp/satpep-per-sweep.XXXXXX)
            case "$mode" in
            e2e) term="" gw="" ;;
            split) term="" gw="$SATPEP gateway --config $ROOT/bench/deploy/gw-split.toml" ;;
            accel)
                term="$SATPEP terminal --config $ROOT/bench/deploy/term-accel.toml"
                gw="$SATPEP gateway --config $ROOT/bench/deploy/gw-accel.toml"
                ;;
            esac
            TERMINAL_CMD=$term GATEWAY_CMD=$gw TTFB_RUNS=0 MB1_RUNS=0 PAGE_RUNS=0 MB100_RUNS=1 \
                BULK_SIZE=$bytes EMU_SET="link.forward.error.per=$per link.return.error.per=$per" \
                OUT=$out SATPEP=$SATPEP "$ROOT/bench/deploy/run.sh" >"$out/run.log" 2>&1 ||
                { echo "per-sweep.sh: $mode at PER $per failed; see $out/run.log" >&2; continue; }
            python3 - "$out/transfers.jsonl" "$mode" "$per" "$bytes" <<'EOF'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
mode, per, size = sys.argv[2], sys.argv[3], int(sys.argv[4])
assert r["size"] == size and r["ok"], r
print(f"emu,{mode},{per},{size},{r['total_s']:.3f},{size * 8 / r['total_s'] / 1e6:.2f}")
EOF
            rm -rf "$out"
        done
    done
}

table() {
    python3 - "$1" "$2" <<'EOF'
import csv, sys
rows = {}
for path in sys.argv[1:3]:
    for r in csv.DictReader(l for l in open(path) if not l.startswith("#")):
        rows[(r["where"], r["mode"], r["per"])] = r
names = {"e2e": "end to end, CUBIC", "split": "split TCP at the gateway", "accel": "accelerated PEP (rate)"}
pers = []
for (_, _, p) in rows:
    if p not in pers:
        pers.append(p)
print("| mode | PER | download | sim (Mb/s) | emu (Mb/s) | sim / emu |")
print("|---|---|---|---|---|---|")
for mode in names:
    for p in pers:
        s, e = rows.get(("sim", mode, p)), rows.get(("emu", mode, p))
        if not s:
            continue
        mb = int(s["bytes"]) / 1e6
        ev = f"{float(e['goodput_mbps']):.2f}" if e else "–"
        ratio = f"{float(s['goodput_mbps']) / float(e['goodput_mbps']):.2f}" if e else "–"
        print(f"| {names[mode]} | {p} | {mb:g} MB | {float(s['goodput_mbps']):.2f} | {ev} | {ratio} |")
EOF
}

case "${1:-}" in
sim) sim ;;
emu) emu ;;
table) table "$2" "$3" ;;
*)
    echo "usage: $0 sim|emu|table SIM.csv EMU.csv" >&2
    exit 2
    ;;
esac
