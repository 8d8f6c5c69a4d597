#!/usr/bin/env python3
"""cwnd, pacing rate and smoothed RTT over time: Linux's BBR (the emulator's sender namespace,
`ss -ti` every 100 ms) beside satpep's (`satpep sim`, flows.csv every 100 ms), per path and PER,
run RUN of each. Time 0 = first sample with more than 100 bytes acknowledged (past iperf3's
37-byte cookie).
Usage: plot.py OUT_DIR PNG [RUN=1]   (OUT_DIR as scenarios/bbr/run.sh writes it)"""
import csv, sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

out, png = sys.argv[1], sys.argv[2]
run = sys.argv[3] if len(sys.argv) > 3 else "1"


def emu(d):
    rows = list(csv.DictReader(open(f"{d}/extra/ss.csv")))
    best = {}
    for r in rows:
        best[r["lport"]] = max(best.get(r["lport"], 0), int(r["bytes_acked"] or 0))
    port = max(best, key=best.get)
    rows = [r for r in rows if r["lport"] == port]
    t0 = next(float(r["t_mono_s"]) for r in rows if int(r["bytes_acked"]) > 100)
    t = [float(r["t_mono_s"]) - t0 for r in rows]
    cw = [int(r["cwnd"]) * int(r["mss"]) / 1e6 for r in rows]
    pr = [float(r["pacing_rate_bps"] or "nan") / 1e6 for r in rows]
    rtt = [float(r["rtt_ms"] or "nan") for r in rows]
    return t, cw, pr, rtt


def sim(d):
    rows = [r for r in csv.DictReader(open(f"{d}/flows.csv")) if r["flow"] == "bulk"]
    t0 = next(float(r["time_s"]) for r in rows if int(r["snd_una_bytes"]) > 100)
    t = [float(r["time_s"]) - t0 for r in rows]
    cw = [int(r["cwnd_bytes"]) / 1e6 for r in rows]
    pr = [float(r["pacing_rate_bps"] or "nan") / 1e6 for r in rows]
    rtt = [float(r["srtt_ms"] or "nan") for r in rows]
    return t, cw, pr, rtt


PATHS = (("deploy", "deployment path (PER both ways)"), ("split", "emu_split path (PER forward)"))
PERS = (("0", "PER 0"), ("0.001", "PER 1e-3"), ("0.01", "PER 1e-2"))
fig, axes = plt.subplots(3, 6, figsize=(24, 10), sharex=True)
for pi, (path, path_label) in enumerate(PATHS):
    for ei, (per, per_label) in enumerate(PERS):
        col = pi * 3 + ei
        c = f"{out}/{path}/bbr-per{per}"
        for name, fn, kind, colour in (("Linux BBR (emu, ss -ti)", emu, "emu", "C0"),
                                       ("satpep BBR (sim)", sim, "sim", "C3")):
            try:
                t, cw, pr, rtt = fn(f"{c}/{kind}-{run}")
            except (OSError, StopIteration, KeyError, ValueError) as e:
                print(f"skip {c}/{kind}-{run}: {e}", file=sys.stderr)
                continue
            for row, ys in enumerate((cw, pr, rtt)):
                axes[row][col].plot(t, ys, color=colour, lw=0.8, label=name)
        axes[0][col].set_title(f"{path_label}\n{per_label}", fontsize=9)
        axes[2][col].set_xlabel("time since first data ACK (s)")
        for ax in axes[:, col]:
            ax.set_xlim(0, 40)
            ax.grid(alpha=0.3)
axes[0][0].set_ylabel("cwnd (MB)")
axes[1][0].set_ylabel("pacing rate (Mb/s)")
axes[2][0].set_ylabel("smoothed RTT (ms)")
for ax in axes[1]:
    ax.set_ylim(0, 80)
for ax in axes[2]:
    ax.set_ylim(500, 2000)
axes[0][0].legend(fontsize=8, loc="upper right")
fig.tight_layout()
fig.savefig(png, dpi=90)
print(png)
