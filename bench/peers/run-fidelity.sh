#!/bin/sh
# Fidelity baselines of the peers against analytic models:
#   window: goodput vs W/RTT          (W = 65535 B receive window, RTT 560 ms)
#   rate:   goodput vs C * MSS/(MSS+hdr)   (C = 2 Mb/s, MSS 1000)
#   loss:   goodput vs Mathis MSS/RTT * sqrt(3/(2p))   (p = 0.01, RTT 100 ms)
# ns-2: bench/peers/ns2/fidelity.tcl; ns-3: bench/peers/ns3/fidelity.cc, run
# twice: "ns3-default" (ns-3's own TCP defaults) and "ns3-ns2like" (ACK every
# segment, no SACK, no timestamps, classic NewReno recovery, MinRto 200 ms,
# initial window 2: as close to ns-2's one-way Agent/TCP/Newreno as ns-3 gets).
# Usage: bench/peers/run-fidelity.sh [SEEDS]   (default seeds for loss: 1 2 3)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
seeds=${*:-1 2 3}
[ -x "$here/ns3/build/fidelity" ] || "$here/build-ns3.sh"
f3="$here/ns3/build/fidelity"
ns2like="--delAck=1 --sack=0 --ts=0 --recovery=classic --minRto=0.2 --iw=2"
awk 'BEGIN{
  printf "# expected window: W/RTT = 65535*8/0.56 = %.1f bps; whole 1448 B segments (45): 65160*8/0.56 = %.1f bps\n", 65535*8/0.56, 65160*8/0.56;
  printf "# expected rate: 2e6*1000/1040 = %.1f bps (ns-2, 40 B hdr); 2e6*1000/1042 = %.1f bps (ns-3, +2 B PPP)\n", 2e6*1000/1040, 2e6*1000/1042;
  printf "# expected loss (Mathis, C=sqrt(3/2)): 1448*8/0.1*sqrt(1.5/0.01) = %.1f bps\n", 1448*8/0.1*sqrt(1.5/0.01) }'
for s in window rate; do
    ns "$here/ns2/fidelity.tcl" $s Newreno
    "$f3" --scenario=$s
    # shellcheck disable=SC2086
    "$f3" --scenario=$s $ns2like
done
"$f3" --scenario=window --delAck=1
for seed in $seeds; do
    for a in Reno Newreno Sack1; do ns "$here/ns2/fidelity.tcl" loss $a "$seed" 2>&1 | grep '^ns2'; done
    "$f3" --scenario=loss --seed="$seed"
    # shellcheck disable=SC2086
    "$f3" --scenario=loss --seed="$seed" $ns2like
    "$f3" --scenario=loss --seed="$seed" --sack=0 --recovery=classic
done
