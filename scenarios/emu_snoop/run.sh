#!/usr/bin/env bash
# Snoop on real Linux TCP (docs/emulator.md, "Snoop on real Linux TCP"): RUNS downloads of a
# 20 MiB file with curl from python3 -m http.server across snoop.toml in `satpep emu` (Linux's
# default congestion control in the namespaces), each checked byte for byte, and the ACK stream
# on the return link searched for stalls: spans of more than 1.5 s without cumulative-ACK
# progress (stalls.py), and the receiver's count of segments PAWS discarded (nstat
# TcpExtPAWSEstab in the client's namespace).
#   sudo scenarios/emu_snoop/run.sh [RUNS] [OUT]     (defaults: 10, results/emu_snoop)
# Env: SATPEP_BIN (skip the build; use this binary), SET (extra `--set` overrides,
# space-separated, e.g. "node.gw.middlebox.cache_packets=4000"). Prints one markdown table row
# per run and a summary line.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-10}"
out="${2:-results/emu_snoop}"
here=scenarios/emu_snoop
set_args=()
for kv in ${SET:-}; do set_args+=(--set "$kv"); done
if [ -z "${SATPEP_BIN:-}" ]; then
    cargo build --release -q -p satpep
    SATPEP_BIN=target/release/satpep
fi
mkdir -p "$out/www"
out=$(cd "$out" && pwd)
python3 - "$out/www/blob" <<'PY'
import hashlib, os, sys
# 20 MiB from a seeded generator, incompressible, the same every time.
data = bytearray()
h = b"satpep"
while len(data) < 20 * 1024 * 1024:
    h = hashlib.sha256(h).digest()
    data += h
open(sys.argv[1], "wb").write(data[: 20 * 1024 * 1024])
PY
want=$(sha256sum "$out/www/blob" | cut -d' ' -f1)
echo "| run | download (s, emulated) | bytes equal | stalls > 1.5 s | longest stall (s) | dupACKs suppressed / forwarded | local rtx (dupACK / timer) | sender rtx | PAWS discards at the receiver |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for i in $(seq 1 "$runs"); do
    d="$out/run-$i"
    rm -rf "$d" "$out/got-$i"
    "$SATPEP_BIN" emu "$here/snoop.toml" "${set_args[@]}" --out "$d" -q --no-status --server-on srv --client-on term \
        --server "exec python3 -m http.server 8000 --bind 0.0.0.0 --directory $out/www" \
        --client-delay 1500ms --duration 300s \
        --client "nstat -n; curl -sS --max-time 300 -o $out/got-$i http://{server}:8000/blob; nstat -az TcpExtPAWSEstab >$d.nstat" \
        >/dev/null 2>&1 || true
    mv "$d.nstat" "$d/receiver.nstat" 2>/dev/null || true
    got=$(sha256sum "$out/got-$i" 2>/dev/null | cut -d' ' -f1 || true)
    python3 "$here/stalls.py" "$d" "$i" "$([ "$got" = "$want" ] && echo yes || echo NO)"
    rm -f "$out/got-$i"
done | tee "$out/runs.md"
python3 "$here/stalls.py" --summary "$out/runs.md"
