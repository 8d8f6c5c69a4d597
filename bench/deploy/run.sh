#!/bin/sh
# Measures the deployment test topology (docs/deploy.md, "Test topology"): client — terminal —
# satpep emu (scenarios/deploy/geo_20_2.toml: 20/2 Mb/s, 600 ms RTT, PER 1e-3 both ways) —
# gateway — server, with the server's sockets on CUBIC.
#
#   sudo bench/deploy/run.sh            # no PEP: the baseline
#   sudo TERMINAL_CMD='satpep terminal --config term.toml' \
#        GATEWAY_CMD='satpep gateway --config gw.toml' bench/deploy/run.sh
#
# Figures: time to first byte of a 1 KB response (from the start of connect: handshake plus
# request and response, about 2 RTT without a PEP), download times of 1 MB and 100 MB, and
# goodput (payload bits / download time). Written to $OUT/results.json and printed as a
# markdown table.
#
# Environment:
#   TERMINAL_CMD / GATEWAY_CMD  shell commands run in the terminal / gateway namespace (in the
#                               background, from after the emulator is up to the end)
#   SATPEP        satpep binary (default target/release/satpep)
#   OUT           output directory (default results/deploy-<time>)
#   SPD_PREFIX    namespace prefix (default spd; see topology.sh)
#   TTFB_RUNS, MB1_RUNS, MB100_RUNS, PAGE_RUNS   repetitions (default 5, 3, 1, 3); a page is
#                 xfer.py's web-like load: 30 objects of 5–200 KB over 6 connections
#   BULK_SIZE     bytes of the "100 MB" download (default 100000000; bench/accel/per-sweep.sh
#                 takes less where end-to-end TCP would need many minutes)
#   CC            congestion control of the server's sockets (default cubic)
#   RCVBUF        the client's receive buffer in bytes (default: the kernel's autotuning);
#                 65536 gives paper 004's unscaled 64 KiB window
#   MODE          the mode's name in the table (default: no PEP, or the daemons' commands)
#   KEEP=1        leave the topology and the emulator up at the end
#   EMU_SET       overrides of the emulated hop, space-separated `key=value` as `satpep emu
#                 --set` takes them (e.g. EMU_SET='link.forward.error.per=1e-2
#                 link.return.rate=64kbps')
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
P=${SPD_PREFIX:-spd}
SATPEP=${SATPEP:-$ROOT/target/release/satpep}
OUT=${OUT:-$ROOT/results/deploy-$(date +%Y%m%d-%H%M%S)}
TTFB_RUNS=${TTFB_RUNS:-5}
MB1_RUNS=${MB1_RUNS:-3}
MB100_RUNS=${MB100_RUNS:-1}
BULK_SIZE=${BULK_SIZE:-100000000}
PAGE_RUNS=${PAGE_RUNS:-3}
CC=${CC:-cubic}
PORT=5001
SERVER=10.77.2.2

mkdir -p "$OUT"
PIDS=""
cleanup() {
    status=$?
    for pid in $PIDS; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in $PIDS; do
        wait "$pid" 2>/dev/null || true
    done
    if [ "${KEEP:-0}" != 1 ]; then
        SPD_PREFIX=$P "$HERE/topology.sh" down
    fi
    exit "$status"
}
trap cleanup EXIT INT TERM

SPD_PREFIX=$P "$HERE/topology.sh" up
EMU_ARGS=""
for kv in ${EMU_SET:-}; do
    EMU_ARGS="$EMU_ARGS --set $kv"
done
# shellcheck disable=SC2086
"$SATPEP" emu "$ROOT/scenarios/deploy/geo_20_2.toml" \
    --set "node.term.netns=$P-term" --set "node.gw.netns=$P-gw" $EMU_ARGS \
    --quiet --no-status --out "$OUT/emu" &
PIDS="$PIDS $!"

# The path is up when a ping crosses it (each try waits up to 2 s; the RTT is 600 ms).
up=0
for _ in $(seq 20); do
    if ip netns exec "$P-client" ping -n -c 1 -W 2 "$SERVER" >/dev/null 2>&1; then
        up=1
        break
    fi
    sleep 0.2
done
[ "$up" = 1 ] || { echo "run.sh: no ping from $P-client to $SERVER across the emulator" >&2; exit 1; }

if [ -n "${TERMINAL_CMD:-}" ]; then
    ip netns exec "$P-term" sh -c "$TERMINAL_CMD" >"$OUT/terminal.log" 2>&1 &
    PIDS="$PIDS $!"
fi
if [ -n "${GATEWAY_CMD:-}" ]; then
    ip netns exec "$P-gw" sh -c "$GATEWAY_CMD" >"$OUT/gateway.log" 2>&1 &
    PIDS="$PIDS $!"
fi
# A daemon that refused to start (a bad config, another instance holding the same name) would
# leave a no-PEP path measured under its mode's name: stop instead.
sleep 1
for pid in $PIDS; do
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "run.sh: a daemon exited at start; see $OUT/terminal.log and $OUT/gateway.log" >&2
        tail -n 3 "$OUT"/terminal.log "$OUT"/gateway.log >&2 2>/dev/null || true
        exit 1
    fi
done
ip netns exec "$P-server" python3 "$HERE/xfer.py" serve --port $PORT --cc "$CC" \
    --peers "$OUT/peers.txt" >"$OUT/server.log" 2>&1 &
PIDS="$PIDS $!"
sleep 1

# One transfer of $1 bytes; a failed one (error, short read, sha256 mismatch) ends the run.
get() {
    if ! r=$(ip netns exec "$P-client" python3 "$HERE/xfer.py" get --host $SERVER --port $PORT --size "$1" ${RCVBUF:+--rcvbuf "$RCVBUF"}); then
        echo "$r" >>"$OUT/transfers.jsonl"
        echo "run.sh: the transfer of $1 bytes failed: $r" >&2
        exit 1
    fi
    echo "$r" >>"$OUT/transfers.jsonl"
    echo "$r"
}
: >"$OUT/transfers.jsonl"
for _ in $(seq "$TTFB_RUNS"); do get 1000; sleep 0.5; done
for _ in $(seq "$MB1_RUNS"); do get 1000000; sleep 0.5; done
for _ in $(seq "$MB100_RUNS"); do get "$BULK_SIZE"; done
: >"$OUT/pages.jsonl"
for _ in $(seq "$PAGE_RUNS"); do
    if ! r=$(ip netns exec "$P-client" python3 "$HERE/xfer.py" page --host $SERVER --port $PORT); then
        echo "$r" >>"$OUT/pages.jsonl"
        echo "run.sh: a page load failed: $r" >&2
        exit 1
    fi
    echo "$r" >>"$OUT/pages.jsonl"
    echo "$r"
    sleep 0.5
done

python3 - "$OUT" "${TERMINAL_CMD:-}" "${GATEWAY_CMD:-}" "${RCVBUF:-}" "${EMU_SET:-}" "${MODE:-}" "$BULK_SIZE" <<'EOF'
import json, statistics, sys
out, term, gw, rcvbuf, emu_set, mode, bulk = sys.argv[1:8]
bulk = int(bulk)
rows = [json.loads(l) for l in open(f"{out}/transfers.jsonl")]
pages = [json.loads(l) for l in open(f"{out}/pages.jsonl")]
peers = sorted({l.split()[0] for l in open(f"{out}/peers.txt")})
def by(size): return [r for r in rows if r["size"] == size]
bad = [r for r in rows if not r["ok"]]
def med(xs): return statistics.median(xs) if xs else None
res = {
    "mode": mode or ("no PEP" if not (term or gw) else f"terminal: {term or '-'}; gateway: {gw or '-'}")
        + (f"; client receive buffer {rcvbuf} B" if rcvbuf else "")
        + (f"; hop: {emu_set}" if emu_set else ""),
    "failed_transfers": len(bad),
    "server_saw": peers,
    "ttfb_1kB_s": [r["ttfb_s"] for r in by(1000)],
    "connect_1kB_s": [r["connect_s"] for r in by(1000)],
    "total_1MB_s": [r["total_s"] for r in by(1000000)],
    "bulk_bytes": bulk,
    "total_100MB_s": [r["total_s"] for r in by(bulk)],
    "goodput_100MB_mbps": [r["goodput_mbps"] for r in by(bulk)],
    "page_load_s": [p["page_load_s"] for p in pages],
}
json.dump(res, open(f"{out}/results.json", "w"), indent=1)
f = lambda xs, d=3: "–" if not xs else (f"{med(xs):.{d}f}" + (f" ({min(xs):.{d}f}–{max(xs):.{d}f}, n={len(xs)})" if len(xs) > 1 else ""))
print()
print(f"| mode | TTFB 1 KB (s) | 1 MB (s) | 100 MB (s) | goodput 100 MB (Mb/s) | page (s) |")
print(f"|---|---|---|---|---|---|")
print(f"| {res['mode']} | {f(res['ttfb_1kB_s'])} | {f(res['total_1MB_s'], 2)} | {f(res['total_100MB_s'], 1)} | {f(res['goodput_100MB_mbps'], 2)} | {f(res['page_load_s'], 2)} |")
print()
print(f"medians (min–max, n runs); failed transfers: {len(bad)}; the server saw {', '.join(peers)}")
print(f"results: {out}/results.json")
EOF

# Stop the emulator (SIGTERM: it writes summary.json) and say whether it kept time.
EMU=$(echo $PIDS | cut -d' ' -f1)
kill -TERM "$EMU"
wait "$EMU" || true
PIDS=$(echo $PIDS | cut -s -d' ' -f2-)
python3 - "$OUT/emu/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
late = s["lateness"]
links = ", ".join(f"{l['name']} {l['error_drops']} error / {l['queue_drops']} queue drops" for l in s["links"])
print(f"emulator: {s['sim_time_s']:.0f} s; release lateness p50 {late['p50_us']:.1f} µs, p99 {late['p99_us']:.1f} µs, max {late['max_us']:.0f} µs; {links}; unroutable {s['path']['unroutable']}")
EOF
