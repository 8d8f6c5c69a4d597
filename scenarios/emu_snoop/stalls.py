#!/usr/bin/env python3
"""One markdown row per Snoop run of run.sh: the download's emulated duration (from the first
ACK of data to the last cumulative-ACK advance on the return link `ret`), its stalls (spans of
more than 1.5 s without cumulative-ACK progress) and Snoop's counters from summary.json.
Usage: stalls.py RUN_DIR N EQUAL | stalls.py --summary runs.md"""
import json, os, statistics, sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "linux_profile"))
from analyze import acks  # noqa: E402

STALL_S = 1.5


def row(d, n, equal):
    s = json.load(open(f"{d}/summary.json"))
    conns = acks(f"{d}/trace.pcapng")
    pts = max(conns.values(), key=lambda p: max(a for _, a in p))
    best, last, stalls = pts[0][1], pts[0][0], []
    t0 = next(t for t, a in pts if a > 100)
    for t, a in pts:
        if a > best:
            if t - last > STALL_S:
                stalls.append(t - last)
            best, last = a, t
    c = next(m["counters"] for m in s["middleboxes"] if m["kind"] == "snoop")
    paws = "?"
    if os.path.exists(f"{d}/receiver.nstat"):
        for line in open(f"{d}/receiver.nstat"):
            if line.startswith("TcpExtPAWSEstab"):
                paws = line.split()[1]
    print(f"| {n} | {last - t0:.1f} | {equal} | {len(stalls)} | {max(stalls, default=0):.1f} | "
          f"{c['dupacks_suppressed']} / {c['dupacks_forwarded']} | "
          f"{c['local_rtx_dupack']} / {c['local_rtx_timeout']} | {c['sender_rtx']} | {paws} |")


def summary(path):
    rows = [l.split("|")[1:-1] for l in open(path) if l.startswith("| ") and l[2].isdigit()]
    secs = [float(r[1]) for r in rows]
    longest = [float(r[4]) for r in rows]
    paws = [int(r[8]) for r in rows if len(r) > 8 and r[8].strip().isdigit()]
    print(f"{len(rows)} runs: download median {statistics.median(secs):.1f} s "
          f"(min {min(secs):.1f}, max {max(secs):.1f}); bytes equal in "
          f"{sum(r[2].strip() == 'yes' for r in rows)}; longest stall {max(longest):.1f} s; "
          f"runs with a stall over 5 s: {sum(x > 5 for x in longest)}; PAWS discards "
          f"{sum(paws)} in {len(paws)} runs")


if __name__ == "__main__":
    if sys.argv[1] == "--summary":
        summary(sys.argv[2])
    else:
        row(*sys.argv[1:4])
