#!/usr/bin/env bash
# The emulator's speed beside a bare TUN forwarder (docs/performance.md, "Emulator"): iperf3
# TCP CUBIC with 1 and 4 streams, and UDP, between two namespaces through 250 ms each way at
# 10 Gb/s, for
#   bare      bench/emu/tunfwd -d 250 (plain TUN devices)
#   bare-gso  bench/emu/tunfwd -o -d 250 (IFF_VNET_HDR, super-packets passed through)
#   main      a satpep binary from before offloads ($SATPEP_MAIN, if given)
#   plain     satpep emu --no-offload
#   offload   satpep emu (offloads)
# Prints one markdown row per run: receiver throughput, sender retransmits (UDP: loss),
# release lateness p50/p99/max (satpep's, and the bare forwarder's measured the same way) and, for satpep, where it comes from, from summary.json (p99 of the
# loop's wake-up delay after timed waits; p99 and max of the time per pass; max of what the
# thread did not run of a pass; the loop's CPU time as a share of a core), with the load
# average at the start and the machine's steal time during the run (ms of vCPU time the
# hypervisor took, both CPUs, /proc/stat).
#
#   sudo bash bench/emu/run.sh [RUNS] [MODES] [TESTS]
#   e.g. SATPEP_MAIN=/tmp/satpep-main sudo -E bash bench/emu/run.sh 3 "bare plain offload" "tcp1 tcp4 udp"
#
# SCENARIO: the path for the satpep modes (default bench/emu/fast.toml; bench/emu/trunk.toml
# models a 2.5 Gb/s forward link). EMU_FLAGS: more `satpep emu` flags for the plain and offload modes (e.g. "--rt-priority 50",
# "--spin 20us", "--no-realtime"). KEEP=DIR: keep every summary.json there. TCP_RATE: pace
# each TCP stream (iperf3 -b, e.g. 1G). PIN=1: satpep on CPU 0, the hosts' programs on CPU 1.
#
# Needs root, iperf3, cc, python3, and target/release/satpep (cargo build --release -p satpep).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-2}
MODES=${2:-"bare bare-gso main plain offload"}
TESTS=${3:-"tcp1 tcp4 udp"}
SATPEP=${SATPEP:-target/release/satpep}
# The path (satpep modes only): fast.toml's 10 Gb/s links are never the bottleneck, so TCP
# fills whatever is slowest, the emulator included; trunk.toml's 2.5 Gb/s forward link is.
SCENARIO=${SCENARIO:-bench/emu/fast.toml}
SECS=${SECS:-10}   # measured seconds, after OMIT seconds of ramp-up
OMIT=${OMIT:-5}
UDP_RATE=${UDP_RATE:-2G}
TCP_RATE=${TCP_RATE:+-b $TCP_RATE} # e.g. TCP_RATE=1G: iperf3 paces each TCP stream to 1 Gb/s
WORK=$(mktemp -d /tmp/satpep-emu-bench.XXXXXX)
trap 'cleanup; rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/tunfwd" bench/emu/tunfwd.c

# Socket buffers: one stream at 3 Gb/s over 500 ms holds 190 MB in flight, so up to 512 MiB
# for one stream, 128 MiB each for four (all sockets of the machine share net.ipv4.tcp_mem,
# here 1.5 GB before "memory pressure", when receivers prune their out-of-order queues and
# renege on SACKs: four streams at 512 MiB each collapsed into retransmission storms).
# iperf3's -w cannot go past net.core.{r,w}mem_max, which a namespace may not raise, so the
# kernel's autotuning sizes the buffers within tcp_rmem/tcp_wmem.
sysctls() {
	local max=536870912
	[[ $1 == tcp4 ]] && max=134217728
	echo "sysctl -qw net.ipv4.tcp_rmem=\"4096 131072 $max\" net.ipv4.tcp_wmem=\"4096 16384 $max\""
}

client_args() {
	case $1 in
	tcp1) echo "-C cubic -t $SECS -O $OMIT -J $TCP_RATE" ;;
	tcp4) echo "-C cubic -P 4 -t $SECS -O $OMIT -J $TCP_RATE" ;;
	udp) echo "-u -b $UDP_RATE -l 1448 -t $SECS -J" ;; # no -O: iperf3 miscounts UDP loss with it
	esac
}

# Steal time of all CPUs so far (ms; /proc/stat counts USER_HZ ticks of 10 ms).
steal_ms() { awk '/^cpu /{print $9 * 10}' /proc/stat; }

cleanup() {
	[[ -n ${FWD:-} ]] && kill "$FWD" 2>/dev/null && wait "$FWD" 2>/dev/null || true
	FWD=
	ip netns del tfa 2>/dev/null || true
	ip netns del tfb 2>/dev/null || true
}

# iperf3 JSON → "throughput_gbps retransmits_or_loss"
parse_iperf() {
	python3 - "$1" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
try:
    j = json.loads(text[text.index("{"):])
except Exception:
    print("fail -"); sys.exit()
end = j.get("end", {})
udp = j.get("start", {}).get("test_start", {}).get("protocol") == "UDP"
if udp and "sum" in end:
    # Receiver throughput and loss (iperf3 ≥ 3.16 also has sum_received; older only sum).
    bps = end.get("sum_received", end["sum"])["bits_per_second"]
    print(f'{bps/1e9:.2f} {end["sum"].get("lost_percent", 0):.1f}%')
elif "sum_received" in end:
    print(f'{end["sum_received"]["bits_per_second"]/1e9:.2f} {end["sum_sent"].get("retransmits", "-")}')
else:
    print("fail -")
EOF
}

run_bare() { # $1 test, $2 tunfwd flags → prints "gbps retx p50 p99 max" (lateness in µs)
	cleanup
	# SCHED_FIFO like satpep's loop: on this shared machine a forwarder under the normal
	# scheduler is delayed by milliseconds, its TUN queues overflow and TCP retransmits.
	chrt -f 10 "$WORK/tunfwd" $2 -d 250 tfa0 tfb0 >"$WORK/fwd.out" 2>"$WORK/fwd.err" &
	FWD=$!
	for _ in $(seq 50); do grep -q ready "$WORK/fwd.out" 2>/dev/null && break; sleep 0.1; done
	for ns in tfa tfb; do ip netns add $ns; done
	ip link set tfa0 netns tfa
	ip link set tfb0 netns tfb
	for x in "tfa 10.9.0.1" "tfb 10.9.1.1"; do
		set -- $x
		ip netns exec $1 sh -c "sysctl -qw net.ipv6.conf.all.disable_ipv6=1;
			$(sysctls "$T"); ip link set lo up; ip link set ${1}0 mtu 1500 txqueuelen 1000 up; ip addr add $2/32 dev ${1}0;
			ip route add default dev ${1}0"
	done
	ip netns exec tfb iperf3 -s -1 >/dev/null 2>&1 &
	local srv=$!
	sleep 0.5
	ip netns exec tfa iperf3 -c 10.9.1.1 $(client_args "$T") >"$WORK/iperf.json" 2>&1 || true
	kill $srv 2>/dev/null || true
	wait $srv 2>/dev/null || true
	cleanup # tunfwd prints its release lateness when stopped
	local late
	late=$(sed -n 's/^lateness: p50 \([0-9]*\) us p99 \([0-9]*\) us max \([0-9]*\) us.*/\1 \2 \3/p' "$WORK/fwd.err")
	echo "$(parse_iperf "$WORK/iperf.json") ${late:-- - -}"
}

run_emu() { # $1 binary, $2 extra flags → prints "gbps retx p50 p99 max wake_p99 pass_p99 pass_max lost_max cpu%"
	local out="$WORK/emu" pin_emu="" pin_host=""
	rm -rf "$out"
	if [[ ${PIN:-0} == 1 ]]; then
		pin_emu="taskset -c 0"
		pin_host="taskset -c 1"
	fi
	$pin_emu "$1" emu "$SCENARIO" --out "$out" --quiet $2 --server-on term --client-on gw \
		--server "$(sysctls "$T"); exec $pin_host iperf3 -s -1" \
		--client "$(sysctls "$T"); exec $pin_host iperf3 -c {server} $(client_args "$T")" >/dev/null 2>&1 || true
	local r
	r=$(parse_iperf "$out/client.log")
	if [[ -n ${KEEP:-} ]]; then # keep each run's summary.json and iperf3 output
		mkdir -p "$KEEP"
		local n=$(($(ls "$KEEP" | wc -l) / 2 + 1))
		cp "$out/summary.json" "$KEEP/$n-$T-summary.json" 2>/dev/null || true
		cp "$out/client.log" "$KEEP/$n-$T-client.log" 2>/dev/null || true
	fi
	python3 - "$out/summary.json" "$r" <<'EOF'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
    l = s["lateness"]
    w = s.get("wake_lateness", {})
    p = s.get("pass_time", {})
    o = s.get("pass_lost", {})
    f = lambda d, k: f'{d[k]:.0f}' if k in d else "-"
    cpu = f'{100 * s["loop_cpu_s"] / s["sim_time_s"]:.0f}' if "loop_cpu_s" in s else "-"
    print(sys.argv[2], f'{l["p50_us"]:.0f} {l["p99_us"]:.0f} {l["max_us"]:.0f}',
          f(w, "p99_us"), f(p, "p99_us"), f(p, "max_us"), f(o, "max_us"), cpu)
except Exception:
    print(sys.argv[2], "- - - - - - - -")
EOF
}

echo "| mode | test | load (1 min) | throughput (Gb/s) | retransmits / UDP loss | lateness p50 (µs) | p99 (µs) | max (µs) | wake-up delay p99 (µs) | pass p99 (µs) | pass max (µs) | not run, max (µs) | loop CPU (% of a core) | steal (ms) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for run in $(seq "$RUNS"); do
	for T in $TESTS; do
		for M in $MODES; do
			load=$(cut -d' ' -f1 /proc/loadavg)
			steal0=$(steal_ms)
			case $M in
			bare) r="$(run_bare "$T" "") - - - - -" ;;
			bare-gso) r="$(run_bare "$T" -o) - - - - -" ;;
			main) [[ -n ${SATPEP_MAIN:-} ]] || continue; r=$(run_emu "$SATPEP_MAIN" "") ;;
			plain) r=$(run_emu "$SATPEP" "--no-offload ${EMU_FLAGS:-}") ;;
			offload) r=$(run_emu "$SATPEP" "${EMU_FLAGS:-}") ;;
			esac
			set -- $r
			echo "| $M | $T | $load | $1 | $2 | $3 | $4 | $5 | $6 | $7 | $8 | $9 | ${10} | $(($(steal_ms) - steal0)) |"
		done
	done
done
