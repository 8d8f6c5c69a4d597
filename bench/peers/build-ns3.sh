#!/bin/sh
# Build the ns-3 peer programs against Debian's libns3-dev (3.37).
# Output binaries go to bench/peers/ns3/build/ (not committed).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="$here/ns3/build"
mkdir -p "$out"
libs="-lns3-core -lns3-network -lns3-internet -lns3-point-to-point -lns3-applications -lns3-traffic-control"
for prog in dumbbell fidelity; do
    [ -f "$here/ns3/$prog.cc" ] || continue
    g++ -std=c++17 -O2 -DNDEBUG -I/usr/include "$here/ns3/$prog.cc" -o "$out/$prog" $libs
done
