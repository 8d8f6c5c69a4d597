#!/usr/bin/env python3
"""Goodput, retransmissions and drops of one run dir of run.sh (emu or sim), as one JSON line.

Goodput is measured the same way for both drivers, from interface `ret` (the return link) of
`trace.pcapng` (model timestamps, both drivers write it with the same code): the ACK stream of the bulk
connection (on `ret`: the connection whose ACK number advanced most, i.e. iperf3's data
connection, not its control connection). t0 = release of the first ACK that acknowledges more
than 100 bytes (iperf3 first sends a 37-byte cookie on the data connection, one RTT earlier);
goodput = (ACK number at t0 + WINDOW − ACK number at t0) × 8 / WINDOW. This excludes handshakes,
iperf3's control exchange and the teardown, which differ between iperf3 and satpep's bulk app.
Usage: analyze.py RUN_DIR KIND(emu|sim) WINDOW_S
"""
import json, os, struct, sys

from pcapng import packets


def acks(path):
    """{conn: [(t_s, ack_unwrapped_rel_to_synack_ack)]} for TCP packets captured on `ret`."""
    conns = {}
    for _, t, pkt in packets(path, "ret"):
        if len(pkt) < 20 or pkt[9] != 6:
            continue
        ihl = (pkt[0] & 15) * 4
        tcp = pkt[ihl:]
        if len(tcp) < 14:
            continue
        sp, dp, _seq, ack = struct.unpack(">HHII", tcp[:12])
        flags = tcp[13]
        key = (pkt[12:16], sp, pkt[16:20], dp)
        c = conns.setdefault(key, {"base": None, "last": None, "wrap": 0, "pts": []})
        if not flags & 0x10:  # no ACK flag
            continue
        if c["base"] is None:
            c["base"] = ack  # the SYN-ACK's ACK: ISN + 1
        if c["last"] is not None and ack < c["last"] and c["last"] - ack > 1 << 31:
            c["wrap"] += 1 << 32
        c["last"] = ack
        c["pts"].append((t, ack + c["wrap"] - c["base"]))
    return {k: v["pts"] for k, v in conns.items() if v["pts"]}


# More than iperf3's 37-byte cookie, which the client sends on the data connection one RTT
# before the test data: t0 is the first ACK of test data (satpep's bulk app sends no cookie).
FIRST = 100


def goodput(path, window):
    conns = acks(path)
    pts = max(conns.values(), key=lambda p: max(a for _, a in p))
    t0, a0 = next((t, a) for t, a in pts if a > FIRST)
    a1 = max(a for t, a in pts if t <= t0 + window)
    return (a1 - a0) * 8 / window, t0


def main():
    d, kind, window = sys.argv[1], sys.argv[2], float(sys.argv[3])
    s = json.load(open(f"{d}/summary.json"))
    link = {l["name"]: l for l in s["links"]}
    g, t0 = goodput(f"{d}/trace.pcapng", window)
    r = {"dir": d, "kind": kind, "seed": s["seed"], "goodput_bps": g, "t0_s": t0,
         "fwd_error_drops": link["fwd"]["error_drops"], "fwd_queue_drops": link["fwd"]["queue_drops"],
         "ret_queue_drops": link["ret"]["queue_drops"]}
    if kind == "sim":
        f = s["flows"][0]
        r.update(retrans=f["retransmissions"], rto=f["rto_expirations"],
                 fast_retransmits=f["fast_retransmits"], max_cwnd_bytes=f["max_cwnd_bytes"],
                 summary_goodput_bps=f["goodput_bps"])
    else:
        r["lateness_p99_us"] = s["lateness"]["p99_us"]
        try:
            ip = json.load(open(f"{d}/client.log"))
            r["retrans"] = ip["end"]["sum_sent"].get("retransmits")
            r["iperf_recv_bps"] = ip["end"]["sum_received"]["bits_per_second"]
            r["cc"] = ip["end"].get("sender_tcp_congestion")
        except Exception as e:  # noqa: BLE001
            r["retrans"] = None
            r["iperf_error"] = str(e)
        nst = {}
        if os.path.exists(f"{d}/extra/nstat.txt"):
            for line in open(f"{d}/extra/nstat.txt"):
                p = line.split()
                if len(p) >= 2 and p[1].isdigit():
                    nst[p[0]] = int(p[1])
        keep = ["TcpRetransSegs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes", "TcpExtTCPLossProbeRecovery",
                "TcpExtTCPSackRecovery", "TcpExtTCPRenoRecovery", "TcpExtTCPFastRetrans",
                "TcpExtTCPLostRetransmit", "TcpExtTCPSpuriousRTOs", "TcpExtTCPHystartTrainDetect",
                "TcpExtTCPHystartTrainCwnd", "TcpExtTCPHystartDelayDetect", "TcpExtTCPHystartDelayCwnd",
                "TcpExtTCPDSACKUndo", "TcpExtTCPLossUndo", "TcpExtTCPSACKReorder", "TcpExtTCPSlowStartRetrans",
                "TcpExtTCPDSACKRecv", "TcpExtTCPSpuriousRtxHostQueues", "TcpExtTCPRcvQDrop",
                "TcpExtTCPFullUndo", "TcpExtTCPPartialUndo"]
        r["nstat"] = {k: nst[k] for k in keep if k in nst}
    print(json.dumps(r))


if __name__ == "__main__":
    main()
