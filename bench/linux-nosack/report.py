#!/usr/bin/env python3
"""Markdown table of compare.sh's results: per case, Linux (emu) beside the `linux` profile (sim).
Usage: report.py OUT_DIR"""
import glob, json, statistics as st, sys

out = sys.argv[1]


def load(case, kind):
    return [json.load(open(f)) for f in sorted(glob.glob(f"{out}/{case}/{kind}-*/result.json"))]


def mean(rs, k):
    xs = [r[k] for r in rs if r.get(k) is not None]
    return st.mean(xs) if xs else float("nan")


print("| path | runs emu / sim | Linux goodput Mb/s (runs) | satpep `linux` Mb/s | sim vs Linux | "
      "retx Linux / sim | RTOs Linux / sim | spurious RTOs Linux / sim | fwd drops Linux / sim | "
      "Linux's largest window (B) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for case in sorted({p.split("/")[-2] for p in glob.glob(f"{out}/*/emu-*")} |
                   {p.split("/")[-2] for p in glob.glob(f"{out}/*/sim-*")}):
    e, s = load(case, "emu"), load(case, "sim")
    ge, gs = mean(e, "goodput_bps") / 1e6, mean(s, "goodput_bps") / 1e6
    runs = ", ".join(f"{r['goodput_bps'] / 1e6:.3f}" for r in e)
    print(f"| {case} | {len(e)} / {len(s)} | {ge:.3f} ({runs}) | {gs:.3f} | {100 * (gs / ge - 1):+.1f} % | "
          f"{mean(e, 'retrans'):.0f} / {mean(s, 'retrans'):.0f} | {mean(e, 'rto'):.1f} / {mean(s, 'rto'):.1f} | "
          f"{mean(e, 'spurious_rtos'):.1f} / {mean(s, 'spurious_rtos'):.1f} | "
          f"{mean(e, 'fwd_queue_drops'):.0f} / {mean(s, 'fwd_queue_drops'):.0f} | "
          f"{mean(e, 'max_rwnd_bytes'):.0f} |")
