#!/usr/bin/env python3
"""Plot bench/accel/per-sweep.sh's goodput against PER: sim as lines, emu as markers.

  bench/accel/plot-per-sweep.py SIM.csv EMU.csv OUT.png

PER 0 is drawn at 1e-4 (a log axis has no 0) and labelled so.
"""

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NAMES = {"e2e": "end to end, CUBIC", "split": "split TCP at the gateway",
         "accel": "accelerated PEP (rate)"}
COLOURS = {"e2e": "tab:red", "split": "tab:orange", "accel": "tab:blue"}


def read(path):
    rows = [r for r in csv.DictReader(l for l in open(path) if not l.startswith("#"))]
    out = {}
    for r in rows:
        per = float(r["per"]) or 1e-4
        out.setdefault(r["mode"], []).append((per, float(r["goodput_mbps"])))
    return out


def main():
    sim, emu = read(sys.argv[1]), read(sys.argv[2])
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for mode, name in NAMES.items():
        if mode in sim:
            xs, ys = zip(*sorted(sim[mode]))
            ax.plot(xs, ys, "-", color=COLOURS[mode], label=f"{name}, sim")
        if mode in emu:
            xs, ys = zip(*sorted(emu[mode]))
            ax.plot(xs, ys, "o", color=COLOURS[mode], mfc="none", label=f"{name}, emu")
    ax.axhline(20 * 1448 / 1500, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([1e-4, 1e-3, 1e-2, 5e-2])
    ax.set_xticklabels(["0", "1e-3", "1e-2", "5e-2"])
    ax.set_xlabel("packet error rate, both ways")
    ax.set_ylabel("goodput (Mb/s)")
    ax.set_title("20/2 Mb/s, 600 ms GEO path: sim (lines) and emu (circles)")
    ax.legend(fontsize=7, loc="lower left")
    ax.grid(True, which="both", lw=0.3)
    fig.tight_layout()
    fig.savefig(sys.argv[3], dpi=110)


if __name__ == "__main__":
    main()
