#!/usr/bin/env python3
"""Goodput of one run dir of compare.sh (emu or sim), as one JSON line.

As scenarios/linux_profile/analyze.py, for several flows: from the ACKs on interface `ret` of
trace.pcapng, every connection whose ACK number passes 100 kB is a data connection (iperf3's
control connection carries a few hundred bytes); t0 is the first ACK of any of them that
acknowledges more than 100 bytes; goodput = the sum over them of (ACK number at t0 + WINDOW -
ACK number at t0) x 8 / WINDOW. Also: queue drops on `fwd`, retransmissions and RTOs (sim:
summary.json; emu: the sender namespace's nstat counters), and for emu the largest window the
receiver advertised (`ss` snd_wnd).
Usage: analyze.py RUN_DIR KIND(emu|sim) WINDOW_S
"""
import bisect, csv, json, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../scenarios/linux_profile"))
from analyze import acks  # noqa: E402

FIRST = 100
DATA = 100_000


def ack_at(pts, t):
    """Highest ACK number released at or before t (0 before the first)."""
    i = bisect.bisect_right([p[0] for p in pts], t)
    return max((a for _, a in pts[:i]), default=0)


def goodput(path, window):
    conns = [p for p in acks(path).values() if max(a for _, a in p) > DATA]
    t0 = min(next(t for t, a in p if a > FIRST) for p in conns)
    total = sum(ack_at(p, t0 + window) - ack_at(p, t0) for p in conns)
    return total * 8 / window, t0, len(conns)


def main():
    d, kind, window = sys.argv[1], sys.argv[2], float(sys.argv[3])
    s = json.load(open(f"{d}/summary.json"))
    link = {l["name"]: l for l in s["links"]}
    g, t0, n = goodput(f"{d}/trace.pcapng", window)
    r = {"dir": d, "kind": kind, "goodput_bps": g, "t0_s": t0, "connections": n,
         "fwd_queue_drops": link["fwd"]["queue_drops"], "ret_queue_drops": link["ret"]["queue_drops"]}
    if kind == "sim":
        r["retrans"] = sum(f["retransmissions"] for f in s["flows"])
        r["rto"] = sum(f["rto_expirations"] for f in s["flows"])
        r["spurious_rtos"] = sum(f.get("spurious_rtos", 0) for f in s["flows"])
    else:
        r["lateness_p99_us"] = s["lateness"]["p99_us"]
        nst = {}
        for line in open(f"{d}/extra/nstat.txt"):
            p = line.split()
            if len(p) >= 2 and p[1].isdigit():
                nst[p[0]] = int(p[1])
        r["retrans"] = nst.get("TcpRetransSegs", 0)
        r["rto"] = nst.get("TcpExtTCPTimeouts", 0)
        r["spurious_rtos"] = nst.get("TcpExtTCPSpuriousRTOs", 0)
        r["nstat"] = {k: v for k, v in nst.items() if k.startswith(("TcpExtTCP", "TcpRetrans"))}
        with open(f"{d}/extra/ss.csv") as f:
            w = [int(row["snd_wnd"]) for row in csv.DictReader(f) if row["snd_wnd"]]
        r["max_rwnd_bytes"] = max(w, default=None)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
