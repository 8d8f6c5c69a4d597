#!/usr/bin/env bash
# Fuzzing campaign of issue 15 (docs/robustness.md, "Fuzzing campaign"): runs each target for at
# least SECONDS and, for the packet parsers, at least 10^7 executions, and prints one Markdown
# row per target: executions, wall seconds, executions per second, crashes, coverage
# (edges / features) and corpus size at the end.
#
#   bash fuzz/campaign.sh [SECONDS] [TARGET…]        (needs `cargo +nightly fuzz`; default 600 s)
#
# New inputs go to a scratch corpus (the committed fuzz/corpus/<target> is read, never written),
# so a campaign leaves the repository as it was. `-s none`: satpep forbids unsafe code outside
# the emulator's system calls, so AddressSanitizer finds nothing libFuzzer's own checks and
# Rust's bounds checks do not, at several times the cost per execution.
set -euo pipefail
cd "$(dirname "$0")"

SECONDS_MIN=${1:-600}
shift || true
PARSERS=" wire_ipv4_tcp vj_decompress tunnel ack_expander real_packets "
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(wire_ipv4_tcp vj_decompress tunnel ack_expander real_packets middleboxes link_trace scenario_load tun_intake)
SCRATCH=$(mktemp -d /tmp/satpep-fuzz.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT

cargo +nightly fuzz build -s none >/dev/null 2>&1 || cargo +nightly fuzz build -s none
echo "| target | executions | wall (s) | exec/s | crashes | coverage start → end (edges / features) | corpus end |"
echo "|---|---|---|---|---|---|---|"
for t in "${TARGETS[@]}"; do
    runs=0
    [[ "$PARSERS" == *" $t "* ]] && runs=10000000
    mkdir -p "$SCRATCH/$t"
    log="$SCRATCH/$t.log"
    start=$(date +%s)
    # -runs bounds the executions from above only with -max_total_time unset, so two passes:
    # the first for the time, the second (same corpus) until the count is reached.
    set +e
    cargo +nightly fuzz run -s none "$t" "$SCRATCH/$t" "corpus/$t" -- \
        -max_total_time="$SECONDS_MIN" -print_final_stats=1 >"$log" 2>&1
    status=$?
    set -e
    # `|| true`: a crash prints no final stats, and under pipefail the failed grep would end
    # the script before the row and the copy of the log below.
    done_runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
    done_runs=${done_runs:-0}
    if [ "$status" -eq 0 ] && [ "$done_runs" -lt "$runs" ]; then
        set +e
        cargo +nightly fuzz run -s none "$t" "$SCRATCH/$t" "corpus/$t" -- \
            -runs=$((runs - done_runs)) -print_final_stats=1 >>"$log" 2>&1
        status=$?
        set -e
        more=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
        done_runs=$((done_runs + ${more:-0}))
    fi
    wall=$(($(date +%s) - start))
    first=$(grep -m1 -o 'INITED cov: [0-9]* ft: [0-9]*' "$log" || true)
    first=$(echo "$first" | sed 's/INITED cov: \([0-9]*\) ft: \([0-9]*\)/\1 \/ \2/')
    last=$(grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*' "$log" | tail -1 || true)
    cov=$(echo "$last" | sed 's/cov: \([0-9]*\) ft: \([0-9]*\) corp: \([0-9]*\)/\1 \/ \2/')
    corp=$(echo "$last" | sed 's/.*corp: \([0-9]*\)/\1/')
    crashes=0
    [ "$status" -eq 0 ] || crashes="1 (exit $status: see $log)"
    echo "| \`$t\` | $done_runs | $wall | $((done_runs / (wall > 0 ? wall : 1))) | $crashes | ${first:-?} → ${cov:-?} | ${corp:-?} |"
    if [ "$status" -ne 0 ]; then
        cp "$log" "/tmp/satpep-fuzz-$t.log"
    fi
done
