#!/usr/bin/env python3
"""Congestion-avoidance growth of cwnd, in segments per RTT (RTT = each sample's smoothed RTT),
over stretches of at least 2 s without a change of ssthresh or retransmissions, with
cwnd >= ssthresh, cwnd not decreasing and (Linux) no lost/SACKed/retransmitted segment
outstanding (CA, not recovery): Linux (ss.csv) vs satpep (flows.csv), per run.
Usage: ca_slope.py CASE_DIR [RUNS...]"""
import csv, glob, statistics as st, sys

MSS = 1448


def stretches(samples):
    """samples: [(t, cwnd_segs, ssthresh, retx, rtt_s)] -> growth per RTT of each stretch."""
    out, cur = [], []
    for s in samples:
        rec = isinstance(s[3], tuple) and s[3][1]
        if cur and (s[2] != cur[-1][2] or s[3] != cur[-1][3] or s[2] is None or s[1] < s[2] or rec
                    or s[1] < cur[-1][1]):
            if len(cur) > 1 and cur[-1][0] - cur[0][0] >= 2.0:
                out.append(cur)
            cur = []
        if s[2] is not None and s[1] >= s[2] and not rec:
            cur.append(s)
    if len(cur) > 1 and cur[-1][0] - cur[0][0] >= 2.0:
        out.append(cur)
    return [(c[-1][1] - c[0][1]) / (c[-1][0] - c[0][0]) * st.mean(x[4] for x in c) for c in out]


def emu(d):
    rows = list(csv.DictReader(open(f"{d}/extra/ss.csv")))
    best = {}
    for r in rows:
        best[r["lport"]] = max(best.get(r["lport"], 0), int(r["bytes_acked"]))
    p = max(best, key=best.get)
    # Recovery (lost, SACKed or retransmitted segments outstanding) counts as a change.
    return [(float(r["t_mono_s"]), int(r["cwnd"]) * int(r["mss"]) / MSS,
             int(r["ssthresh"]) * int(r["mss"]) / MSS if r["ssthresh"] else None,
             (int(r["retrans_total"]), int(r["lost"]) + int(r["sacked"]) + int(r["retrans_out"]) > 0),
             float(r["rtt_ms"]) / 1000) for r in rows if r["lport"] == p]


def sim(d):
    return [(float(r["time_s"]), int(r["cwnd_bytes"]) / MSS,
             int(r["ssthresh_bytes"]) / MSS if r["ssthresh_bytes"] else None,
             int(r["retransmissions"]), float(r["srtt_ms"] or 500) / 1000)
            for r in csv.DictReader(open(f"{d}/flows.csv"))]


c = sys.argv[1]
runs = sys.argv[2:] or sorted({p.rsplit("-", 1)[1] for p in glob.glob(f"{c}/emu-*")})
allv = {"emu": [], "sim": []}
for i in runs:
    line = [f"run {i}:"]
    for k, fn in (("emu", emu), ("sim", sim)):
        try:
            v = stretches(fn(f"{c}/{k}-{i}"))
        except Exception as e:  # noqa: BLE001
            v = []
        allv[k] += v
        line.append(f"{k} median {st.median(v):.2f} seg/RTT over {len(v)} stretches" if v else f"{k} -")
    print(" ".join(line))
for k, v in allv.items():
    if v:
        print(f"all {k}: median {st.median(v):.2f} seg/RTT, {len(v)} stretches")
