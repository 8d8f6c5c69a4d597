#!/usr/bin/env python3
"""Writes the trace files of geo_fade.toml (run from this folder; the output is committed).

traces/acm.mahi      Mahimahi packet-delivery trace, period 10 s: one 1500-byte opportunity
                     per ms for 5 s (12 Mb/s, clear sky), then one per 2 ms for 5 s (6 Mb/s, the
                     modem's adaptive coding stepping down in a fade). 7 500 lines, 9 Mb/s mean.
traces/handover.txt  one-way delay steps: 250 ms, then 280 ms from 12 s to 18 s (a longer path,
                     e.g. a move to another gateway), then 250 ms again. Illustrative values.
traces/rain.txt      loss steps: 2 % of packets lost from 25 s to 27 s (deep fade at the edge
                     of the margin), then none.
"""

with open("traces/acm.mahi", "w") as f:
    for ms in range(1, 5001):
        f.write(f"{ms}\n")
    for ms in range(5002, 10001, 2):
        f.write(f"{ms}\n")

with open("traces/handover.txt", "w") as f:
    f.write("# time_ms one_way_delay_ms\n0 250\n12000 280\n18000 250\n")

with open("traces/rain.txt", "w") as f:
    f.write("# time_ms loss_probability\n25000 0.02\n27000 0\n")
