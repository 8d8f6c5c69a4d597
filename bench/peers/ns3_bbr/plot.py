#!/usr/bin/env python3
"""cwnd, pacing rate, RTT and data delivered over time: ns-3's TcpBbr beside satpep's BBR on
scenarios/bbr/deploy.toml, PER 0 / 1e-3 / 1e-2, one seed (100 ms samples from both; time from the
start of the run, when both send their SYN). ns-3 3.37 traces no smoothed RTT: its row shows the
last RTT sample instead.
Usage: plot.py OUT PNG [SEED=1] [CC=bbr] [NS3_LABEL="ns-3 3.37"]
(OUT as bench/peers/ns3_bbr/run.sh writes it)"""
import csv, sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

out, png = sys.argv[1], sys.argv[2]
seed = sys.argv[3] if len(sys.argv) > 3 else "1"
cc = sys.argv[4] if len(sys.argv) > 4 else "bbr"
ns3_label = sys.argv[5] if len(sys.argv) > 5 else "ns-3 3.37"


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def ns3(tag):
    rows = list(csv.DictReader(open(f"{out}/ns3-{tag}.csv")))
    t = [num(r["t_s"]) for r in rows]
    return (t, [num(r["cwnd_bytes"]) / 1e6 for r in rows], [num(r["pacing_bps"]) / 1e6 for r in rows],
            [num(r["rtt_ms"]) or float("nan") for r in rows], [num(r["rx_bytes"]) / 1e6 for r in rows])


def sim(tag):
    rows = [r for r in csv.DictReader(open(f"{out}/sim-{tag}/flows.csv")) if r["flow"] == "bulk"]
    t = [num(r["time_s"]) for r in rows]
    got = "delivered_bytes" if rows and "delivered_bytes" in rows[0] else "snd_una_bytes"
    return (t, [num(r["cwnd_bytes"]) / 1e6 for r in rows], [num(r["pacing_rate_bps"]) / 1e6 for r in rows],
            [num(r["srtt_ms"]) for r in rows], [num(r[got]) / 1e6 for r in rows])


PERS = (("0", "PER 0"), ("0.001", "PER 1e-3"), ("0.01", "PER 1e-2"))
fig, axes = plt.subplots(4, 3, figsize=(15, 12), sharex=True)
for col, (per, label) in enumerate(PERS):
    tag = f"{cc}-per{per}-seed{seed}"
    for name, fn, colour in ((f"{ns3_label} Tcp{cc.capitalize()}", ns3, "C0"), (f"satpep {cc} (sim)", sim, "C3")):
        try:
            series = fn(tag)
        except (OSError, KeyError, ValueError) as e:
            print(f"skip {name} {tag}: {e}", file=sys.stderr)
            continue
        t = series[0]
        for row in range(4):
            axes[row][col].plot(t, series[row + 1], color=colour, lw=0.8, label=name)
    axes[0][col].set_title(f"deploy.toml, {label}, seed {seed}", fontsize=10)
    axes[3][col].set_xlabel("time since the SYN (s)")
    for ax in axes[:, col]:
        ax.set_xlim(0, 44)
        ax.grid(alpha=0.3)
axes[0][0].set_ylabel("cwnd (MB)")
axes[1][0].set_ylabel("pacing rate (Mb/s)")
axes[2][0].set_ylabel("RTT (ms): satpep SRTT, ns-3 last sample")
axes[3][0].set_ylabel("data delivered / acknowledged (MB)")
for ax in axes[0]:
    ax.set_ylim(0, 6)
for ax in axes[1]:
    ax.set_ylim(0, 80)
for ax in axes[2]:
    ax.set_ylim(500, 2000)
axes[0][0].legend(fontsize=8, loc="upper right")
fig.tight_layout()
fig.savefig(png, dpi=80)
print(png)
