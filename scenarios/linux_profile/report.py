#!/usr/bin/env python3
"""Markdown table of run.sh's results: mean goodput emu (real Linux) vs sim (profile linux).
Usage: report.py OUT_DIR"""
import glob, json, math, os, statistics as st, sys

out = sys.argv[1]
T_CRIT = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23,
          12: 2.18, 15: 2.13, 20: 2.09, 30: 2.04}


def tcrit(df):
    return T_CRIT.get(df) or T_CRIT[min(T_CRIT, key=lambda k: abs(k - df))]


def mean_sd(xs):
    return (st.mean(xs), st.stdev(xs) if len(xs) > 1 else 0.0) if xs else (float("nan"), 0.0)


def load(c, kind):
    rs = []
    for f in sorted(glob.glob(f"{c}/{kind}-*/result.json")):
        try:
            rs.append(json.load(open(f)))
        except Exception:
            pass
    return rs


print("| cc | PER | paired runs (seeds) | emu goodput Mb/s (mean ± sd) | sim goodput Mb/s, same seeds | "
      "diff sim vs emu, paired (95 % CI) | sim, all seeds (n) | retx emu / sim | RTOs emu / sim | "
      "fwd error drops emu / sim | iperf3 recv Mb/s | emu lateness p99 max (µs) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for cc in ("cubic", "reno", "bbr"):
    for per in ("0", "0.001", "0.01"):
        c = f"{out}/{cc}-per{per}"
        if not os.path.isdir(c):
            continue
        e_all, s_all = load(c, "emu"), load(c, "sim")
        sims = {r["seed"]: r for r in s_all}
        e = [r for r in e_all if r["seed"] in sims]
        s = [sims[r["seed"]] for r in e]
        ge, gs = [r["goodput_bps"] / 1e6 for r in e], [r["goodput_bps"] / 1e6 for r in s]
        (me, se), (ms, ss) = mean_sd(ge), mean_sd(gs)
        d = [b - a for a, b in zip(ge, gs)]
        if len(d) > 1:
            half = tcrit(len(d) - 1) * st.stdev(d) / math.sqrt(len(d)) / me * 100
            ci = f"{st.mean(d) / me * 100:+.1f} % (±{half:.1f})"
        elif d:
            ci = f"{d[0] / me * 100:+.1f} %"
        else:
            ci = "–"
        ma, sa = mean_sd([r["goodput_bps"] / 1e6 for r in s_all])
        rx = lambda rs, k: st.mean([r[k] for r in rs if r.get(k) is not None]) if rs else float("nan")
        rto_e = st.mean([r.get("nstat", {}).get("TcpExtTCPTimeouts", 0) for r in e]) if e else float("nan")
        late = max((r.get("lateness_p99_us") or 0) for r in e) if e else float("nan")
        ipf = st.mean([r["iperf_recv_bps"] / 1e6 for r in e if r.get("iperf_recv_bps")]) if e else float("nan")
        per_s = {"0": "0", "0.001": "1e-3", "0.01": "1e-2"}[per]
        seeds = ",".join(str(r["seed"]) for r in e)
        print(f"| {cc} | {per_s} | {len(e)} ({seeds}) | {me:.3f} ± {se:.3f} | {ms:.3f} ± {ss:.3f} | {ci} | "
              f"{ma:.3f} ± {sa:.3f} ({len(s_all)}) | {rx(e, 'retrans'):.1f} / {rx(s, 'retrans'):.1f} | "
              f"{rto_e:.1f} / {rx(s, 'rto'):.1f} | {rx(e, 'fwd_error_drops'):.1f} / {rx(s, 'fwd_error_drops'):.1f} | "
              f"{ipf:.3f} | {late:.0f} |")
print()
print("Goodput: ACK-number progress of the bulk connection over 40 s from its first data ACK, from "
      "interface ret (the return link) of trace.pcapng (model time, same code for both drivers). Paired: emu run with "
      "seed i beside sim run with seed i (the forward link's PER draws come from the same seeded "
      "stream in both drivers, so the loss pattern is nearly the same, shifted by iperf3's few "
      "control packets); CI from the paired t distribution. Retx, RTOs, drops: means over the paired "
      "runs. emu retx: iperf3 sender retransmits; emu RTOs: nstat TcpExtTCPTimeouts of the sender's "
      "namespace; sim: summary retransmissions, rto_expirations.")
