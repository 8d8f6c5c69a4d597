#!/usr/bin/env python3
"""Mean throughput delivered by geo_fade.toml's forward link in each phase of its schedule,
from a run's links.csv.

    satpep sim scenarios/time_varying/geo_fade.toml --out /tmp/fade
    python3 scenarios/time_varying/phases.py /tmp/fade
"""
import csv
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "."
links = [r for r in csv.DictReader(open(f"{out}/links.csv")) if r["link"] == "forward"]

# Windows of delivery time (s). Deliveries lag the schedule by the 250-280 ms propagation
# delay, so each window holds about 0.3 s of the phase before it; the outage's window starts
# 0.3 s in, after the packets already in flight have landed.
PHASES = [
    (10, 15, "12 Mb/s phase of acm.mahi"),
    (15, 20, "6 Mb/s phase; delay 280 ms from 12 s to 18 s"),
    (20, 25, "12 Mb/s phase"),
    (25, 27, "6 Mb/s phase; 2 % loss (rain.txt)"),
    (32.3, 35, "outage 32-35 s"),
    (35.3, 40, "after the outage"),
]
print("| delivered during (s) | schedule | forward throughput (Mb/s) |")
print("|---|---|---|")
for a, b, what in PHASES:
    v = [float(r["throughput_bps"]) for r in links if a <= float(r["time_s"]) < b]
    print(f"| {a}–{b} | {what} | {sum(v) / len(v) / 1e6:.2f} |")
