#!/bin/sh
# Speed benchmark of the peers: ns-2 (Debian ns2 2.35) and ns-3 (Debian 3.37)
# on the dumbbell of bench/peers/ns2/dumbbell.tcl and bench/peers/ns3/dumbbell.cc.
#
# Usage: bench/peers/run-bench.sh [RUNS] [SIMTIME_S] [FLOWS...]
#   defaults: 3 runs, 60 s simulated, flows 1 10 100.
# For every (simulator, N) it runs RUNS times under /usr/bin/time, and prints
# one line per run: sim, flows, wall seconds (whole process), max RSS (KiB),
# user+sys CPU seconds (cpu_s: the robust figure on a loaded machine),
# delivered data packets, µs of wall time per delivered packet, and the
# program's own line. Summaries (median wall, median µs/packet) follow.
# Raw output goes to bench/peers/results/bench-<date>.txt (not committed).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
runs=${1:-3}
simtime=${2:-60}
shift 2 2>/dev/null || shift $#
flows=${*:-1 10 100}
[ -x "$here/ns3/build/dumbbell" ] || "$here/build-ns3.sh"
mkdir -p "$here/results"
out="$here/results/bench-$(date +%Y%m%d-%H%M%S).txt"
tmp=$(mktemp)
echo "# nproc=$(nproc) cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) runs=$runs simtime=$simtime" | tee "$out"
for n in $flows; do
    for sim in ns2 ns3; do
        for r in $(seq "$runs"); do
            if [ "$sim" = ns2 ]; then
                /usr/bin/time -f 'TIME %e %M %U %S' -o "$tmp.t" ns "$here/ns2/dumbbell.tcl" "$n" "$simtime" >"$tmp" 2>&1
            else
                /usr/bin/time -f 'TIME %e %M %U %S' -o "$tmp.t" "$here/ns3/build/dumbbell" --flows="$n" --simTime="$simtime" >"$tmp" 2>&1
            fi
            line=$(grep "^$sim flows=" "$tmp")
            wall=$(awk '/^TIME/{print $2}' "$tmp.t")
            rss=$(awk '/^TIME/{print $3}' "$tmp.t")
            cpu=$(awk '/^TIME/{print $4+$5}' "$tmp.t")
            pk=$(echo "$line" | sed 's/.*delivered_pkts=\([0-9]*\).*/\1/')
            us=$(awk -v w="$wall" -v p="$pk" 'BEGIN{printf "%.3f", w*1e6/p}')
            echo "RUN sim=$sim flows=$n run=$r wall_s=$wall maxrss_kib=$rss delivered=$pk us_per_pkt=$us cpu_s=$cpu | $line" | tee -a "$out"
        done
    done
done
echo "# medians (wall s, us/pkt):" | tee -a "$out"
grep '^RUN' "$out" | awk '{
    split($2,a,"="); split($3,b,"="); split($5,w,"="); split($8,u,"="); split($7,d,"=");
    k=a[2]" "b[2]; n[k]++; W[k,n[k]]=w[2]; U[k,n[k]]=u[2]; D[k]=d[2]; keys[k]=1 }
END { for (k in keys) {
        m=n[k]; for(i=1;i<=m;i++){ws[i]=W[k,i]; us[i]=U[k,i]}
        for(i=1;i<=m;i++)for(j=i+1;j<=m;j++){ if(ws[j]<ws[i]){t=ws[i];ws[i]=ws[j];ws[j]=t} if(us[j]<us[i]){t=us[i];us[i]=us[j];us[j]=t} }
        printf "MEDIAN %s runs=%d wall_s=%s us_per_pkt=%s delivered=%s\n", k, m, ws[int((m+1)/2)], us[int((m+1)/2)], D[k] } }' | sort -k2,2 -k3,3n | tee -a "$out"
rm -f "$tmp" "$tmp.t"
