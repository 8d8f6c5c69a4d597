#!/usr/bin/env bash
# satpep's `tcp.profile = "ns2"` against ns-2 2.35: several bulk flows through one GEO
# bottleneck with a small drop-tail queue, access delays jittered by seed.
#
# Usage: bench/peers/compare-ns2-multiflow.sh [SEEDS]        (default 20 seeds: 1..SEEDS)
#   env: SATPEP=path/to/satpep (default target/release/satpep, built if missing)
#        JOBS=2 (parallel runs), AGENTS="Newreno Sack1 DelAck", QLIM=20 (ns-2's limit)
#        SIMTIME=1000, T_MEAS=10 (goodput over [T_MEAS, SIMTIME] s), START_MAX=10 (s)
#        LOSE_FIRST=1 loses the first flow's first packet on its access link: ns-2's packet 0
#        (ErrorModel/List index 0), satpep's SYN (error model list [1]); default 0
#        SATPEP_SET="key=value ..." extra --set for satpep (diagnostics: e.g.
#        "defaults.tcp.syn_rto_ssthresh=false" to see a behaviour's share)
#        KEEP=DIR keeps every satpep output folder and ns-2 line under DIR
#        FORMAT=md prints only the markdown table of docs/validation.md §1b (bench/doc_blocks.py
#        reruns it there)
#
# Path (bench/peers/ns2/multiflow_geo.tcl = scenarios/validation/multiflow_geo.toml): four
# senders, each on its own 100 Mb/s access link to r0, share a 10 Mb/s, 250 ms bottleneck
# r0 -> r1 with a drop-tail queue; ACKs return over 10 Mb/s, 250 ms. MSS 1000, no timestamps,
# windows of 1000 packets (1 000 000 B), initial ssthresh = window.
# Agents: ns-2 Newreno + TCPSink <-> satpep recovery newreno, sack = false;
#         ns-2 Sack1 + TCPSink/Sack1 <-> recovery sack;
#         DelAck: ns-2 Newreno + TCPSink/DelAck (ACK every second packet, 100 ms timer) <->
#         recovery newreno, sack = false, delack_segments = 2 (the profile's 100 ms timer).
# Queue limits: ns-2's DropTail limit L holds L - 1 waiting packets plus the one being sent
# (drop-tail.cc DropTail::enque: drop when q_->length() + 1 >= qlim_; queue.cc Queue::recv
# hands the packet it sends to the link, out of q_), satpep's limit_packets counts only the
# waiting ones: this script gives ns-2 QLIM and satpep QLIM - 1.
# The seed draws, with Python's random.Random(seed), each flow's start (uniform 0-START_MAX s)
# and its access delay (uniform 1-25 ms each way, whole ms), the same in both simulators.
# Per agent it prints the mean aggregate goodput of each, the difference with a 95 % interval
# (paired by seed: a seed is the same topology in both, and seeds differ far more among
# themselves than the two simulators do on one seed), the mean bottleneck drops per run and
# their difference, mean timeouts, fast retransmits and retransmitted packets per run (sums
# over the flows).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tcl="$here/ns2/multiflow_geo.tcl"
toml="$root/scenarios/validation/multiflow_geo.toml"
satpep=${SATPEP:-"$root/target/release/satpep"}
simtime=${SIMTIME:-1000}
t_meas=${T_MEAS:-10}
qlim=${QLIM:-20}
start_max=${START_MAX:-10}
lose_first=${LOSE_FIRST:-0}
nflows=4

# "STARTS|DELAYS" for a seed: space-separated seconds and milliseconds.
draw() { python3 -c 'import random,sys; r=random.Random(int(sys.argv[1])); n=int(sys.argv[2])
s=["%.6f" % r.uniform(0, float(sys.argv[3])) for _ in range(n)]; d=[str(r.randint(1, 25)) for _ in range(n)]
print(" ".join(s) + "|" + " ".join(d))' "$1" "$nflows" "$start_max"; }

# --one AGENT SEED SIM OUTDIR : one run, one line
#   "R agent sim seed goodput drops timeouts fastrtx rexmit_pkts"
if [ "${1:-}" = "--one" ]; then
    agent=$2 seed=$3 sim=$4 outdir=$5
    IFS='|' read -r starts delays < <(draw "$seed")
    if [ "$sim" = ns2 ]; then
        line=$(cd "$outdir" && ns "$tcl" "$agent" "$seed" "$simtime" "$t_meas" "$qlim" "$starts" "$delays" "$lose_first" | grep '^ns2 ')
        [ -n "${KEEP:-}" ] && echo "$line" > "$outdir/ns2-$agent-$seed.txt"
        v() { sed -n "s/.* $1=\([0-9.-]*\).*/\1/p" <<<"$line"; }
        gp=$(v goodput_bps) dr=$(v drops) to=$(v timeouts) fr=$(v fastrtx) rx=$(v rexmit_pkts)
    else
        case $agent in
            Newreno) set -- --set defaults.tcp.recovery=newreno --set defaults.tcp.sack=false ;;
            Sack1) set -- --set defaults.tcp.recovery=sack --set defaults.tcp.sack=true ;;
            DelAck) set -- --set defaults.tcp.recovery=newreno --set defaults.tcp.sack=false \
                --set defaults.tcp.delack_segments=2 ;;
            *) echo "agent $agent?" >&2; exit 2 ;;
        esac
        read -ra st <<<"$starts"; read -ra dl <<<"$delays"
        for i in $(seq 1 "$nflows"); do
            set -- "$@" --set "flow.f$i.start=${st[$((i - 1))]}s" \
                --set "link.a$i.delay=${dl[$((i - 1))]}ms" --set "link.a${i}r.delay=${dl[$((i - 1))]}ms"
        done
        [ "$lose_first" = 1 ] && set -- "$@" --set 'link.a1.error={model="list",packets=[1]}'
        for kv in ${SATPEP_SET:-}; do set -- "$@" --set "$kv"; done
        d="$outdir/$sim-$agent-$seed"
        "$satpep" sim -q "$toml" --out "$d" --seed "$seed" --set "duration=${simtime}s" \
            --set defaults.tcp.profile=ns2 --set "link.bottleneck.queue.limit_packets=$((qlim - 1))" "$@"
        gp=$(awk -F, -v t0="$t_meas" -v t1="$simtime" 'NR>1 && $1+0==t0 {a[$2]=$11} NR>1 && $1+0==t1 {b[$2]=$11}
            END {s=0; for (f in b) s+=b[f]-a[f]; printf "%.1f", s*8/(t1-t0)}' "$d/flows.csv")
        read -r dr to fr rx < <(python3 -c 'import json,sys
s=json.load(open(sys.argv[1])); L={l["name"]: l for l in s["links"]}; F=s["flows"]
print(L["bottleneck"]["queue_drops"], sum(f["rto_expirations"] for f in F), sum(f["fast_retransmits"] for f in F), sum(f["retransmissions"] for f in F))' "$d/summary.json")
        [ -n "${KEEP:-}" ] || rm -rf "$d"
    fi
    echo "R $agent $sim $seed $gp $dr $to $fr $rx"
    exit 0
fi

nseeds=${1:-20}
agents=${AGENTS:-"Newreno Sack1 DelAck"}
exec 3>&1
[ -x "$satpep" ] || (cd "$root" && cargo build --release -p satpep)
if [ "${FORMAT:-}" = md ]; then exec >/dev/null; fi  # the markdown table goes to the saved stdout
out=${KEEP:-$(mktemp -d)}
mkdir -p "$out"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$out"' EXIT
echo "# compare-ns2-multiflow: $nseeds seeds, $nflows flows starting in [0, $start_max) s$([ "$lose_first" = 1 ] && echo ", first flow's first packet lost"), ns-2 queue limit $qlim, goodput over [$t_meas, $simtime] s, $("$satpep" --version 2>/dev/null || echo satpep ?), ns-2 $(dpkg-query -W -f='${Version}' ns2 2>/dev/null || echo '?')"
{
    for a in $agents; do for s in $(seq 1 "$nseeds"); do for sim in ns2 satpep; do echo "$a $s $sim"; done; done; done
} | xargs -P "${JOBS:-2}" -L 1 sh -c '"$0" --one "$1" "$2" "$3" "'"$out"'"' "$here/compare-ns2-multiflow.sh" > "$out/raw.txt"

# Means per agent and simulator, from the sorted lines (sums in one order whatever order the
# runs ended in).
stats='
$1=="R" { k=$2; n[k,$3]++; g[k,$3]+=$5; dr[k,$3]+=$6; to[k,$3]+=$7; fr[k,$3]+=$8; rx[k,$3]+=$9; gs[k,$3,$4]=$5 }
function m(a,k,s) { return n[k,s] ? a[k,s]/n[k,s] : -1 }
# 95 % interval of the mean paired difference (same seed = same starts and delays in both), in
# % of ns-2 mean goodput.
function ci(k,  a, s, x, sx, sx2, c, mu, v) {
  a=m(g,k,"ns2"); for (s=1; s<=nseeds; s++) if ((k,"ns2",s) in gs && (k,"satpep",s) in gs) {
    x=gs[k,"satpep",s]-gs[k,"ns2",s]; sx+=x; sx2+=x*x; c++ }
  if (c<2 || a<=0) return 0; mu=sx/c; v=(sx2-c*mu*mu)/(c-1); return 196*sqrt((v>0?v:0)/c)/a }
function pct(b, a) { return a>0 ? 100*(b-a)/a : 0 }
'
awk -v agents="$agents" -v nseeds="$nseeds" "$stats"'
END {
  printf "%-8s %3s %11s %11s %8s %6s %8s %8s %8s %7s %7s %7s %7s %8s %8s\n", "agent","n","ns2_bps","satpep_bps","diff%","ci95%","ns2_drop","sat_drop","drop%","ns2_RTO","sat_RTO","ns2_FR","sat_FR","ns2_rtx","sat_rtx"
  na=split(agents, ags, " ")
  for (j=1;j<=na;j++) { k=ags[j]; if (!n[k,"ns2"]) continue
    a=m(g,k,"ns2"); b=m(g,k,"satpep")
    printf "%-8s %3d %11.0f %11.0f %+8.2f %6.2f %8.1f %8.1f %+8.2f %7.2f %7.2f %7.2f %7.2f %8.1f %8.1f\n", k, n[k,"ns2"], a, b, pct(b,a), ci(k), m(dr,k,"ns2"), m(dr,k,"satpep"), pct(m(dr,k,"satpep"), m(dr,k,"ns2")), m(to,k,"ns2"), m(to,k,"satpep"), m(fr,k,"ns2"), m(fr,k,"satpep"), m(rx,k,"ns2"), m(rx,k,"satpep") }
}' <(sort "$out/raw.txt")

[ "${FORMAT:-}" = md ] || exit 0
# Markdown for docs/validation.md: one row per agent.
awk -v agents="$agents" -v nseeds="$nseeds" "$stats"'
function th(x,  s, r) { s=sprintf("%.0f", x); r=""; while (length(s)>3) { r=" " substr(s, length(s)-2) r; s=substr(s, 1, length(s)-3) } return s r }
function num(x, d) { x=sprintf("%." d "f", x); sub(/^-/, "−", x); return x }
function sgn(x, d) { return (x>=0 ? "+" : "") num(x, d) }
END {
  print "| agent | seeds | ns-2 b/s | satpep `ns2` b/s | diff % (±95 %, paired) | within 5 % | drops ns-2 / satpep | drops diff % | within 10 % | RTO ns-2 / satpep | FR ns-2 / satpep | retransmitted ns-2 / satpep |"
  print "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  na=split(agents, ags, " ")
  for (j=1;j<=na;j++) { k=ags[j]; if (!n[k,"ns2"]) continue
    a=m(g,k,"ns2"); b=m(g,k,"satpep"); d=pct(b,a); dd=pct(m(dr,k,"satpep"), m(dr,k,"ns2"))
    ok=(d>=-5 && d<=5) ? "yes" : "**no**"; okd=(dd>=-10 && dd<=10) ? "yes" : "**no**"
    name=(k=="Newreno" ? "NewReno" : (k=="Sack1" ? "SACK" : "NewReno, delayed ACKs"))
    printf "| %s | %d | %s | %s | %s (±%s) | %s | %s / %s | %s | %s | %s / %s | %s / %s | %s / %s |\n", name, n[k,"ns2"], th(a), th(b), sgn(d, 2), num(ci(k), 2), ok, num(m(dr,k,"ns2"), 1), num(m(dr,k,"satpep"), 1), sgn(dd, 2), okd, num(m(to,k,"ns2"), 2), num(m(to,k,"satpep"), 2), num(m(fr,k,"ns2"), 2), num(m(fr,k,"satpep"), 2), num(m(rx,k,"ns2"), 1), num(m(rx,k,"satpep"), 1) }
}' <(sort "$out/raw.txt") >&3
