#!/usr/bin/env python3
"""cwnd over time: real Linux (ss -ti in the emulator's sender namespace) beside satpep's
`linux` profile (sim's flows.csv), lossless and PER 1e-2, CUBIC and Reno, run RUN of each.
Time 0 = first sample at which more than 100 bytes are acknowledged (past iperf3's 37-byte
cookie; both sampled every 100 ms).
Usage: plot.py OUT_DIR PNG [RUN=1]"""
import csv, sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

out, png = sys.argv[1], sys.argv[2]
run = sys.argv[3] if len(sys.argv) > 3 else "1"
MSS = 1448


def emu(d):
    rows = list(csv.DictReader(open(f"{d}/extra/ss.csv")))
    best = {}
    for r in rows:
        best[r["lport"]] = max(best.get(r["lport"], 0), int(r["bytes_acked"] or 0))
    port = max(best, key=best.get)
    rows = [r for r in rows if r["lport"] == port]
    t0 = next(float(r["t_mono_s"]) for r in rows if int(r["bytes_acked"]) > 100)
    t = [float(r["t_mono_s"]) - t0 for r in rows]
    cw = [int(r["cwnd"]) * int(r["mss"]) / MSS for r in rows]
    ss = [int(r["ssthresh"]) * int(r["mss"]) / MSS if r["ssthresh"] else float("nan") for r in rows]
    return t, cw, ss


def sim(d):
    rows = list(csv.DictReader(open(f"{d}/flows.csv")))
    t0 = next(float(r["time_s"]) for r in rows if int(r["snd_una_bytes"]) > 100)
    t = [float(r["time_s"]) - t0 for r in rows]
    cw = [int(r["cwnd_bytes"]) / MSS for r in rows]
    ss = [int(r["ssthresh_bytes"]) / MSS if r["ssthresh_bytes"] else float("nan") for r in rows]
    return t, cw, ss


fig, axes = plt.subplots(2, 2, figsize=(13, 8), sharex=True)
for i, per in enumerate(("0", "0.01")):
    for j, cc in enumerate(("cubic", "reno")):
        ax = axes[i][j]
        c = f"{out}/{cc}-per{per}"
        for (name, fn, col) in (("Linux (emu, ss -ti)", emu, "C0"), ("satpep profile=linux (sim)", sim, "C3")):
            kind = "emu" if fn is emu else "sim"
            try:
                t, cw, ss = fn(f"{c}/{kind}-{run}")
            except Exception as e:  # noqa: BLE001
                ax.text(0.5, 0.5 if kind == "emu" else 0.4, f"{kind}: {e}", transform=ax.transAxes, ha="center")
                continue
            ax.plot(t, cw, color=col, lw=1.2, label=f"{name} cwnd")
            ax.plot(t, ss, color=col, lw=0.8, ls="--", label=f"{name} ssthresh")
        ax.set_title(f"{cc}, PER {'0' if per == '0' else '1e-2'} on the forward link (seed {run})")
        ax.set_xlim(-1, 41)
        ax.grid(alpha=0.3)
        if j == 0:
            ax.set_ylabel("segments of 1448 B")
        if i == 1:
            ax.set_xlabel("s since the first data ACK")
        if per == "0":
            ax.axhline(1667, color="grey", lw=0.6, ls=":")  # BDP + queue = 833 + 833 packets
handles = {}
for ax in axes.flat:
    for h, l in zip(*ax.get_legend_handles_labels()):
        handles.setdefault(l, h)
fig.legend(list(handles.values()), list(handles.keys()), loc="lower center", ncol=4, fontsize=8)
fig.suptitle("cwnd: real Linux TCP via satpep emu vs satpep sim (tcp.profile = linux); "
             "20/2 Mb/s, 500 ms RTT, queue 833 pkts (dotted: BDP + queue)")
fig.tight_layout(rect=(0, 0.04, 1, 1))
fig.savefig(png, dpi=110)
print(png)
