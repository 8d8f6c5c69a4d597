#!/bin/sh
# Issue 35's comparison on the deployment test topology (docs/accel.md): every mode measured
# by run.sh, one after another in one script run, into one table.
#
#   sudo bench/deploy/compare-accel.sh            # all modes (about 25 minutes)
#   sudo ONLY='accel accel-per1e-2' bench/deploy/compare-accel.sh
#
# Modes (names for ONLY):
#   nopep-cubic, nopep-bbr     no PEP, the server's sockets on CUBIC / BBR
#   kernel-bbr                 the kernel split engine at the gateway, satellite leg BBR
#   pepsal                     PEPsal 2.0.2 at the gateway (bench/peers/pepsal-gateway.sh
#                              builds it from PEPSAL_SRC; a row says so when it cannot)
#   accel                      the accelerated PEP (term-accel.toml + gw-accel.toml), rate mode
#   accel-per1e-2              the same with PER 1e-2 on the hop both ways
#   accel-ret64k               the same with a 64 kb/s return link (configured as such)
#   accel-probe, accel-cubic, accel-bbr   other controllers on the satellite connection
#
# Environment: SATPEP, OUT (default results/accel-<time>), and run.sh's (TTFB_RUNS, …).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SATPEP=${SATPEP:-$ROOT/target/release/satpep}
OUT=${OUT:-$ROOT/results/accel-$(date +%Y%m%d-%H%M%S)}
ONLY=${ONLY:-nopep-cubic nopep-bbr kernel-bbr pepsal accel accel-per1e-2 accel-ret64k accel-probe accel-cubic accel-bbr}
mkdir -p "$OUT/conf"
cp -r "$HERE/keys" "$OUT/conf/"

# A variant of an accelerated end's configuration: $1 the file, $2 its name in $OUT/conf,
# then sed expressions.
variant() {
    src=$1
    dst=$OUT/conf/$2
    shift 2
    cp "$src" "$dst"
    for e in "$@"; do
        sed -i "$e" "$dst"
    done
    echo "$dst"
}
accel_cmds() {
    TERM_CMD="$SATPEP terminal --config $1"
    GW_CMD="$SATPEP gateway --config $2"
}

one() {
    name=$1
    shift
    case " $ONLY " in *" $name "*) ;; *) return 0 ;; esac
    echo "== $name" >&2
    # shellcheck disable=SC2068
    if env "$@" OUT="$OUT/$name" SATPEP="$SATPEP" "$HERE/run.sh" >"$OUT/$name.txt" 2>&1; then
        grep '^| ' "$OUT/$name.txt" | tail -n 1 >>"$OUT/rows.md"
    else
        echo "| $name | failed: see $OUT/$name.txt | | | | |" >>"$OUT/rows.md"
        tail -n 5 "$OUT/$name.txt" >&2
    fi
}

: >"$OUT/rows.md"
one nopep-cubic MODE="no PEP, server CUBIC" CC=cubic
one nopep-bbr MODE="no PEP, server BBR" CC=bbr
one kernel-bbr MODE="kernel split engine, satellite leg BBR" \
    GATEWAY_CMD="$SATPEP gateway --config $HERE/gw-kernel-bbr.toml"
case " $ONLY " in
*" pepsal "*)
    # Built once before the run (PEPsal's source: PEPSAL_SRC, see the script).
    if sh "$ROOT/bench/peers/pepsal-gateway.sh" build >"$OUT/pepsal-build.log" 2>&1; then
        one pepsal MODE="PEPsal 2.0.2, integrated mode at the gateway" \
            GATEWAY_CMD="exec sh $ROOT/bench/peers/pepsal-gateway.sh run"
    else
        echo "| PEPsal 2.0.2 | not built: see $OUT/pepsal-build.log | | | | |" >>"$OUT/rows.md"
    fi
    ;;
esac
accel_cmds "$HERE/term-accel.toml" "$HERE/gw-accel.toml"
one accel MODE="accelerated PEP, rate mode" TERMINAL_CMD="$TERM_CMD" GATEWAY_CMD="$GW_CMD"
one accel-per1e-2 MODE="accelerated PEP, rate mode, PER 1e-2" TERMINAL_CMD="$TERM_CMD" \
    GATEWAY_CMD="$GW_CMD" EMU_SET="link.forward.error.per=1e-2 link.return.error.per=1e-2"
accel_cmds "$(variant "$HERE/term-accel.toml" term-64k.toml 's/^return = .*/return = "64kbps"/')" \
    "$(variant "$HERE/gw-accel.toml" gw-64k.toml 's/^return = .*/return = "64kbps"/')"
one accel-ret64k MODE="accelerated PEP, rate mode, return link 64 kb/s" TERMINAL_CMD="$TERM_CMD" \
    GATEWAY_CMD="$GW_CMD" EMU_SET="link.return.rate=64kbps"
for cc in probe cubic bbr; do
    accel_cmds "$(variant "$HERE/term-accel.toml" "term-$cc.toml" "s/^congestion = .*/congestion = \"$cc\"/")" \
        "$(variant "$HERE/gw-accel.toml" "gw-$cc.toml" "s/^congestion = .*/congestion = \"$cc\"/")"
    one "accel-$cc" MODE="accelerated PEP, $cc controller" TERMINAL_CMD="$TERM_CMD" GATEWAY_CMD="$GW_CMD"
done

{
    echo "| mode | TTFB 1 KB (s) | 1 MB (s) | 100 MB (s) | goodput 100 MB (Mb/s) | page (s) |"
    echo "|---|---|---|---|---|---|"
    cat "$OUT/rows.md"
} >"$OUT/table.md"
cat "$OUT/table.md"
echo "table: $OUT/table.md"
