#!/usr/bin/env python3
"""Markdown table: Linux runs of one run.sh output directory against two models' runs of the
same seeds (e.g. before and after a model change), and optionally another directory's Linux
runs of those seeds (e.g. before a harness change). docs/validation.md §1c.

Usage: compare.py LINUX_DIR BEFORE_DIR AFTER_DIR [OLD_LINUX_DIR]
  LINUX_DIR: its emu-N runs are the reference; BEFORE_DIR, AFTER_DIR: their sim-N runs (a
  directory may be both, e.g. LINUX_DIR = BEFORE_DIR); OLD_LINUX_DIR: its emu-N runs, shown
  as a column. Paired differences with a 95 % t interval, as report.py."""
import json, math, statistics as st, sys

T_CRIT = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 9: 2.26, 19: 2.09}
linux, before, after = sys.argv[1:4]
old = sys.argv[4] if len(sys.argv) > 4 else None


def res(d, case, kind, s):
    try:
        return json.load(open(f"{d}/{case}/{kind}-{s}/result.json"))
    except (OSError, ValueError):
        return None


def mbps(rs):
    return [r["goodput_bps"] / 1e6 for r in rs]


def diff(ref, model):
    d = [b - a for a, b in zip(mbps(ref), mbps(model))]
    me = st.mean(mbps(ref))
    if len(d) < 2:
        return f"{d[0] / me * 100:+.1f} %"
    t = T_CRIT.get(len(d) - 1) or 2.0
    return f"{st.mean(d) / me * 100:+.1f} % (±{t * st.stdev(d) / math.sqrt(len(d)) / me * 100:.1f})"


head = ["cc", "PER", "paired runs"] + (["Linux Mb/s, old runs"] if old else []) + [
    "Linux Mb/s", "model before", "diff before (95 %)", "model after", "diff after (95 %)",
    "fast recoveries Linux / before / after"]
print("| " + " | ".join(head) + " |")
print("| " + " | ".join("---" for _ in head) + " |")
for cc in ("cubic", "reno"):
    for per in ("0", "0.001", "0.01"):
        case = f"{cc}-per{per}"
        seeds = [s for s in range(1, 1000) if res(linux, case, "emu", s)
                 and res(before, case, "sim", s) and res(after, case, "sim", s)]
        if not seeds:
            continue
        L = [res(linux, case, "emu", s) for s in seeds]
        B = [res(before, case, "sim", s) for s in seeds]
        A = [res(after, case, "sim", s) for s in seeds]
        row = [cc, {"0": "0", "0.001": "10⁻³", "0.01": "10⁻²"}[per], str(len(seeds))]
        if old:
            o = [r for r in (res(old, case, "emu", s) for s in seeds) if r]
            row.append(f"{st.mean(mbps(o)):.3f}" + ("" if len(o) == len(seeds) else f" ({len(o)} runs)")
                       if o else "–")
        fr = lambda rs: st.mean(r.get("fast_retransmits", 0) for r in rs)
        lr = st.mean(r.get("nstat", {}).get("TcpExtTCPSackRecovery", 0) for r in L)
        row += [f"{st.mean(mbps(L)):.3f}", f"{st.mean(mbps(B)):.3f}", diff(L, B),
                f"{st.mean(mbps(A)):.3f}", f"**{diff(L, A)}**", f"{lr:.1f} / {fr(B):.1f} / {fr(A):.1f}"]
        print("| " + " | ".join(row) + " |")
