#!/usr/bin/env bash
# The `satpep emu --client` command of run.sh: runs in the sender's (srv) namespace.
#   emu_client.sh SERVER_ADDR CC SECONDS EXTRA_DIR [IPERF_ARGS [SYSCTLS]]
# IPERF_ARGS: more iperf3 client options (e.g. "-P 3"); SYSCTLS: space-separated key=value
# settings written in the namespace first (e.g. "net.ipv4.tcp_sack=0").
# Records the namespace's TCP settings, samples `ss -ti` every 100 ms while iperf3 sends for
# SECONDS with congestion control CC, then the namespace's TCP counters (nstat: HyStart exits,
# timeouts, loss probes, recoveries...). iperf3's JSON goes to stdout (client.log).
set -u
srv=$1 cc=$2 secs=$3 x=$4 iperf_args=${5:-} sysctls=${6:-}
here=$(dirname "$0")
# The namespace's default congestion control becomes CC before any socket exists. iperf3 sets
# TCP_CONGESTION only after connect(), so its data socket first runs the default (BBR on this
# machine), whose init turns on Linux's internal pacing (sk_pacing_status = SK_PACING_NEEDED),
# and pacing stays on after the switch: the "reno" measured would be Reno paced at
# tcp_pacing_ca_ratio (120 %) x cwnd / SRTT, which no Reno host without fq or BBR does.
sysctl -qw net.ipv4.tcp_congestion_control="$cc" ||
    echo "emu_client.sh: cannot make $cc the namespace's default (tcp_allowed_congestion_control?)" >&2
for kv in $sysctls; do
    sysctl -qw "$kv" || echo "emu_client.sh: cannot set $kv" >&2
done
{
    echo "# uname -r: $(uname -r)"
    echo "# namespace: $(ip netns identify $$ 2>/dev/null)"
    sysctl -a 2>/dev/null | grep -E '^net\.(ipv4\.tcp_|core\.(default_qdisc|rmem|wmem))'
    for p in /sys/module/tcp_cubic/parameters/*; do echo "tcp_cubic.$(basename "$p") = $(cat "$p")"; done
    echo "# tc qdisc show"; tc qdisc show
    echo "# ip -d link show satpep0"; ip -d link show satpep0
} >"$x/sysctl.txt" 2>&1
python3 "$here/ss_sample.py" "$x/ss.csv" 0.1 &
s=$!
# shellcheck disable=SC2086 # IPERF_ARGS is a list of options
iperf3 -c "$srv" -C "$cc" -t "$secs" -J $iperf_args
rc=$?
kill -TERM $s; wait $s
nstat -asz >"$x/nstat.txt" 2>&1
exit $rc
