#!/usr/bin/env python3
"""First-reported holes (relative sequence numbers, in segments of 1448 B) of the bulk connection,
from SACK-bearing ACKs on interface `ret` of trace.pcapng: checks that emu and sim with the same
seed lose (nearly) the same segments. Usage: holes.py RUN_DIR [N=15]"""
import struct, sys

from pcapng import packets

d = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 15
conns = {}
for _, _t, pkt in packets(f"{d}/trace.pcapng", "ret"):
    if len(pkt) < 20 or pkt[9] != 6:
        continue
    ihl = (pkt[0] & 15) * 4
    tcp = pkt[ihl:]
    sp, dp, _seq, ack = struct.unpack(">HHII", tcp[:12])
    doff = (tcp[12] >> 4) * 4
    c = conns.setdefault((sp, dp), {"base": None, "holes": [], "maxack": 0})
    if c["base"] is None:
        c["base"] = ack
    rel = (ack - c["base"]) % (1 << 32)
    c["maxack"] = max(c["maxack"], rel)
    opts, i = tcp[20:doff], 0
    while i < len(opts):
        k = opts[i]
        if k == 0:
            break
        if k == 1:
            i += 1
            continue
        ln = opts[i + 1]
        if k == 5 and rel not in c["holes"]:
            c["holes"].append(rel)
        i += max(ln, 2)
c = max(conns.values(), key=lambda c: c["maxack"])
print(" ".join(str(h // 1448) for h in c["holes"][:n]))
