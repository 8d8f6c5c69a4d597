#!/usr/bin/env bash
# satpep's `tcp.profile = "ns2"` against ns-2 2.35 on a slow-return-link sweep.
#
# Usage: bench/peers/compare-ns2-return.sh [SEEDS]        (default 20 seeds: 1..SEEDS)
#   env: SATPEP=path/to/satpep (default target/release/satpep, built if missing)
#        JOBS=2 (parallel runs), AGENTS="Newreno Reno", RATES="9600 19200 ... 430000" (bit/s)
#        SIMTIME=120, T_MEAS=20 (goodput over [T_MEAS, SIMTIME] s)
#        KEEP=DIR keeps every satpep output folder and ns-2 line under DIR
#        FORMAT=md prints only the markdown table of docs/validation.md §1b (bench/doc_blocks.py
#        reruns it there and CI checks it: crates/cli/tests/validation_doc.rs)
#
# Path (bench/peers/ns2/slow_return.tcl = scenarios/validation/slow_return.toml): three bulk
# flows s -> d over a 2 Mb/s, 250 ms forward link (drop-tail, ns-2 limit 50 = satpep 49
# waiting), ACKs over a return link of RATE, 250 ms (same queue). MSS 1000, no timestamps, no
# SACK (40-byte ACKs, no link framing in either), one ACK per segment, window 64 packets =
# 64 000 B, ns-2 ssthresh_ starts at window_ (satpep initial_ssthresh 64000B).
# ns-2 agent Newreno / Reno <-> satpep recovery newreno / reno, cc reno, profile ns2.
#
# The model has no randomness, so the seed picks the three flows' start times, uniform in
# [0, 1) s (Python's random.Random(seed)), the same in both simulators.
# Per rate x agent it prints: mean aggregate goodput of each (in-order payload of the three
# flows over [T_MEAS, SIMTIME]), the difference, a 95 % interval of the difference of means
# (unpaired), the mean number of RTO expirations and fast retransmits (sum of the three flows,
# whole run), and the mean queue drops on the return (ACK) and forward (data) links.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tcl="$here/ns2/slow_return.tcl"
toml="$root/scenarios/validation/slow_return.toml"
satpep=${SATPEP:-"$root/target/release/satpep"}
simtime=${SIMTIME:-120}
t_meas=${T_MEAS:-20}

starts() { python3 -c 'import random,sys; r=random.Random(int(sys.argv[1])); print(" ".join("%.6f" % r.uniform(0, 1) for _ in range(3)))' "$1"; }

# --one RATE AGENT SEED SIM OUTDIR : one run, one line
#   "R rate agent sim seed goodput timeouts fastrtx ret_drops fwd_drops"
if [ "${1:-}" = "--one" ]; then
    rate=$2 agent=$3 seed=$4 sim=$5 outdir=$6
    case $agent in Reno) rec=reno ;; Newreno) rec=newreno ;; *) echo "agent $agent?" >&2; exit 2 ;; esac
    read -r a b c < <(starts "$seed")
    if [ "$sim" = ns2 ]; then
        line=$(cd "$outdir" && ns "$tcl" "$rate" "$agent" "$seed" "$simtime" "$t_meas" "$a" "$b" "$c" | grep '^ns2 ')
        [ -n "${KEEP:-}" ] && echo "$line" > "$outdir/ns2-$rate-$agent-$seed.txt"
        v() { sed -n "s/.* $1=\([0-9.-]*\).*/\1/p" <<<"$line"; }
        gp=$(v goodput_bps) to=$(v timeouts) fr=$(v fastrtx) rd=$(v ret_drops) fd=$(v fwd_drops)
    else
        d="$outdir/$sim-$rate-$agent-$seed"
        "$satpep" sim -q "$toml" --out "$d" --seed "$seed" --set "duration=${simtime}s" \
            --set defaults.tcp.profile=ns2 --set defaults.tcp.cc=reno --set "defaults.tcp.recovery=$rec" \
            --set "link.ret.rate=${rate}bps" \
            --set "flow.f1.start=${a}s" --set "flow.f2.start=${b}s" --set "flow.f3.start=${c}s"
        gp=$(awk -F, -v t0="$t_meas" -v t1="$simtime" 'NR>1 && $1+0==t0 {a[$2]=$11} NR>1 && $1+0==t1 {b[$2]=$11}
            END {s=0; for (f in b) s+=b[f]-a[f]; printf "%.1f", s*8/(t1-t0)}' "$d/flows.csv")
        read -r to fr rd fd < <(python3 -c 'import json,sys
s=json.load(open(sys.argv[1])); L={l["name"]: l for l in s["links"]}
print(sum(f["rto_expirations"] for f in s["flows"]), sum(f["fast_retransmits"] for f in s["flows"]), L["ret"]["queue_drops"], L["fwd"]["queue_drops"])' "$d/summary.json")
        [ -n "${KEEP:-}" ] || rm -rf "$d"
    fi
    echo "R $rate $agent $sim $seed $gp $to $fr $rd $fd"
    exit 0
fi

nseeds=${1:-20}
rates=${RATES:-"9600 19200 28800 64000 128000 256000 430000"}
agents=${AGENTS:-"Newreno Reno"}
exec 3>&1
[ -x "$satpep" ] || (cd "$root" && cargo build --release -p satpep)
if [ "${FORMAT:-}" = md ]; then exec >/dev/null; fi  # the markdown table goes to the saved stdout
out=${KEEP:-$(mktemp -d)}
mkdir -p "$out"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$out"' EXIT
echo "# compare-ns2-return: $nseeds seeds, goodput over [$t_meas, $simtime] s, $("$satpep" --version 2>/dev/null || echo satpep ?), ns-2 $(dpkg-query -W -f='${Version}' ns2 2>/dev/null || echo '?')"
{
    for a in $agents; do for r in $rates; do
        for s in $(seq 1 "$nseeds"); do for sim in ns2 satpep; do echo "$r $a $s $sim"; done; done
    done; done
} | xargs -P "${JOBS:-2}" -L 1 sh -c '"$0" --one "$1" "$2" "$3" "$4" "'"$out"'"' "$here/compare-ns2-return.sh" > "$out/raw.txt"

awk -v rates="$rates" -v agents="$agents" '
$1=="R" { k=$2" "$3; n[k,$4]++; g[k,$4]+=$6; g2[k,$4]+=$6*$6; to[k,$4]+=$7; fr[k,$4]+=$8; rd[k,$4]+=$9; fd[k,$4]+=$10 }
function m(a,k,s) { return n[k,s] ? a[k,s]/n[k,s] : -1 }
function var(k,s,  mu,v) { if (n[k,s]<2) return 0; mu=g[k,s]/n[k,s]; v=(g2[k,s]-n[k,s]*mu*mu)/(n[k,s]-1); return v>0?v:0 }
END {
  printf "%-8s %-8s %3s %11s %11s %8s %6s %7s %7s %7s %7s %9s %9s %8s %8s\n", "ret_bps","agent","n","ns2_bps","satpep_bps","diff%","ci95%","ns2_RTO","sat_RTO","ns2_FR","sat_FR","ns2_ackdr","sat_ackdr","ns2_fdr","sat_fdr"
  na=split(agents, ags, " "); nr=split(rates, rs, " ")
  for (j=1;j<=na;j++) for (i=1;i<=nr;i++) { k=rs[i]" "ags[j]; if (!n[k,"ns2"]) continue
    a=m(g,k,"ns2"); b=m(g,k,"satpep"); nn=n[k,"ns2"]
    ci = (nn>1 && a>0) ? 196*sqrt(var(k,"ns2")/nn + var(k,"satpep")/n[k,"satpep"])/a : 0
    printf "%-8s %-8s %3d %11.0f %11.0f %+8.2f %6.2f %7.2f %7.2f %7.2f %7.2f %9.1f %9.1f %8.1f %8.1f\n", rs[i], ags[j], nn, a, b, (a>0 ? 100*(b-a)/a : 0), ci, m(to,k,"ns2"), m(to,k,"satpep"), m(fr,k,"ns2"), m(fr,k,"satpep"), m(rd,k,"ns2"), m(rd,k,"satpep"), m(fd,k,"ns2"), m(fd,k,"satpep") }
}' "$out/raw.txt"

[ "${FORMAT:-}" = md ] || exit 0
# Markdown for docs/validation.md: one row per return rate and agent (aggregate goodput of the
# three flows in b/s, the difference with its 95 % interval, whether it is within the issue's
# 5 %, mean timeouts, fast retransmits and ACKs dropped at the return queue per run).
awk -v rates="$rates" -v agents="$agents" '
$1=="R" { k=$2" "$3; n[k,$4]++; g[k,$4]+=$6; g2[k,$4]+=$6*$6; to[k,$4]+=$7; fr[k,$4]+=$8; rd[k,$4]+=$9 }
function m(a,k,s) { return n[k,s] ? a[k,s]/n[k,s] : -1 }
function var(k,s,  mu,v) { if (n[k,s]<2) return 0; mu=g[k,s]/n[k,s]; v=(g2[k,s]-n[k,s]*mu*mu)/(n[k,s]-1); return v>0?v:0 }
function th(x,  s, r) { s=sprintf("%.0f", x); r=""; while (length(s)>3) { r=" " substr(s, length(s)-2) r; s=substr(s, 1, length(s)-3) } return s r }
function num(x, d) { x=sprintf("%." d "f", x); sub(/^-/, "−", x); return x }
function sgn(x, d) { return (x>=0 ? "+" : "") num(x, d) }
function kbps(r) { return (r % 1000 ? sprintf("%.1f", r/1000) : sprintf("%d", r/1000)) " kb/s" }
END {
  print "| return link | agent | seeds | ns-2 b/s | satpep `ns2` b/s | diff % (±95 %) | within 5 % | RTO ns-2 / satpep | FR ns-2 / satpep | ACK drops ns-2 / satpep |"
  print "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  na=split(agents, ags, " "); nr=split(rates, rs, " ")
  for (i=1;i<=nr;i++) for (j=1;j<=na;j++) { k=rs[i]" "ags[j]; if (!n[k,"ns2"]) continue
    a=m(g,k,"ns2"); b=m(g,k,"satpep"); nn=n[k,"ns2"]; d=(a>0 ? 100*(b-a)/a : 0)
    ci = (nn>1 && a>0) ? 196*sqrt(var(k,"ns2")/nn + var(k,"satpep")/n[k,"satpep"])/a : 0
    ok = (d >= -5 && d <= 5) ? "yes" : "**no**"
    dd = sgn(d, 2) " (±" num(ci, 2) ")"; if (ok != "yes") dd = "**" dd "**"
    printf "| %s | %s | %d | %s | %s | %s | %s | %s / %s | %s / %s | %s / %s |\n", (j==1 ? kbps(rs[i]) : ""), (ags[j]=="Newreno" ? "NewReno" : ags[j]), nn, th(a), th(b), dd, ok, num(m(to,k,"ns2"), 2), num(m(to,k,"satpep"), 2), num(m(fr,k,"ns2"), 2), num(m(fr,k,"satpep"), 2), num(m(rd,k,"ns2"), 1), num(m(rd,k,"satpep"), 1) }
}' <(sort "$out/raw.txt") >&3  # sorted: sums in one order whatever order the runs ended in
