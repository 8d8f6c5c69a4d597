#!/usr/bin/env python3
"""Many connections and many terminals through the accelerated PEP, in `satpep sim`
(docs/accel.md, "Scale"): writes a scenario, runs it, prints JSON.

  bench/accel/scale.py connections N [--response BYTES]
      N clients' connections at once through one terminal of the deployment path (20/2 Mb/s,
      600 ms, PER 1e-3), each fetching BYTES (default 200 000) at 2 s: every byte delivered?
      completion times, the simulator's peak memory (ru_maxrss), the middleboxes' counters.

  bench/accel/scale.py terminals N [--seconds S]
      N terminals behind one gateway sharing a 20 Mb/s forward link (300 ms each way, PER
      1e-3; each terminal its own 2 Mb/s / N return link), one download per terminal for S
      seconds (default 60) from 2 s; the gateway's rate per terminal is the forward link's
      share (20 Mb/s / N: the capacity an operator grants it). Per-terminal goodput and Jain's
      fairness index (sum x)^2 / (N sum x^2).

--congestion C sets every end's controller (default rate: each terminal's share is then
configured; with probe each connection must find its share).

--max-streams M sets every end's `max_streams` (default 10 000, the daemons' default): quinn
keeps state for every stream a terminal may open, so a gateway's memory per terminal grows
with it.

Environment: SATPEP (default target/release/satpep).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SATPEP = os.environ.get("SATPEP", str(ROOT / "target/release/satpep"))
TCP = """[defaults.tcp]
profile = "linux"
cc = "cubic"
recovery = "sack"
window_scaling = true
timestamps = true
recv_buffer = "16MB"
send_buffer = "16MB"
"""


def link(name, a, b, rate, delay, per=None, queue=1000):
    err = f'\nerror = {{ model = "per", per = {per} }}' if per else ""
    return (f'\n[[link]]\nname = "{name}"\nfrom = "{a}"\nto = "{b}"\nrate = "{rate}"\n'
            f'delay = "{delay}"\nqueue = {{ limit_packets = {queue} }}{err}\n')


MAX_STREAMS = 10_000
CONGESTION = "rate"


def accel(role, address, forward, ret, gateway=None):
    gw = f', gateway = "{gateway}"' if gateway else ""
    return (f'{{ kind = "accel", role = "{role}", address = "{address}"{gw}, '
            f'forward = "{forward}", return = "{ret}", rtt = "600ms", '
            f'max_streams = {MAX_STREAMS}, congestion = "{CONGESTION}" }}')


def run(text, seconds):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "scale.toml"
        path.write_text(text)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        p = subprocess.run([SATPEP, "sim", str(path), "--quiet", "--out", f"{d}/out"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"satpep sim failed: {p.stderr}")
        rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        summary = json.loads((Path(d) / "out/summary.json").read_text())
    return summary, max(rss_kb, before)


def connections(n, response):
    text = f'name = "accel_connections"\nseed = 1\nduration = "600s"\n\n{TCP}\n[output]\nseries = false\n'
    text += '\n[[node]]\nname = "cli"\naddress = "10.77.1.2"\n'
    text += ('\n[[node]]\nname = "term"\nkind = "router"\naddress = "10.77.0.2"\nmiddlebox = '
             + accel("terminal", "10.77.0.2", "20Mbps", "2Mbps", "10.77.0.1") + "\n")
    text += ('\n[[node]]\nname = "gw"\nkind = "router"\naddress = "10.77.0.1"\nmiddlebox = '
             + accel("gateway", "10.77.0.1", "20Mbps", "2Mbps") + "\n")
    text += '\n[[node]]\nname = "srv"\naddress = "10.77.2.2"\n'
    text += link("cli-term", "cli", "term", "1Gbps", "100us", queue=100000)
    text += link("term-cli", "term", "cli", "1Gbps", "100us", queue=100000)
    text += link("forward", "gw", "term", "20Mbps", "300ms", per=0.001)
    text += link("return", "term", "gw", "2Mbps", "300ms", per=0.001)
    text += link("gw-srv", "gw", "srv", "1Gbps", "100us", queue=100000)
    text += link("srv-gw", "srv", "gw", "1Gbps", "100us", queue=100000)
    for i in range(n):
        text += (f'\n[[flow]]\nname = "c{i}"\nfrom = "cli"\nto = "srv"\nstart = "2s"\n'
                 f'app = {{ kind = "request_response", request = "100B", response = "{response}B" }}\n')
    summary, rss_kb = run(text, 600)
    flows = summary["flows"]
    done = [f["completion_time_s"] for f in flows if f["completion_time_s"] is not None]
    mbs = {m["node"]: m["counters"] for m in summary.get("middleboxes", [])}
    return {
        "connections": n,
        "response_bytes": response,
        "completed": len(done),
        "all_bytes": all(f["bytes_delivered"] == response for f in flows),
        "first_done_s": min(done) if done else None,
        "last_done_s": max(done) if done else None,
        "aggregate_mbps": n * response * 8 / max(done) / 1e6 if done else None,
        "max_rss_mb": rss_kb / 1024,
        "terminal": mbs.get("term"),
        "gateway": mbs.get("gw"),
    }


def terminals(n, seconds):
    share = 20_000_000 // n
    ret = 2_000_000 // n
    text = (f'name = "accel_terminals"\nseed = 1\nduration = "{seconds + 2}s"\n\n{TCP}'
            '\n[output]\nseries = false\n')
    text += ('\n[[node]]\nname = "gw"\nkind = "router"\naddress = "10.77.0.1"\nmiddlebox = '
             + accel("gateway", "10.77.0.1", f"{share}bps", f"{ret}bps") + "\n")
    text += '\n[[node]]\nname = "beam"\nkind = "router"\naddress = "10.77.0.3"\n'
    text += '\n[[node]]\nname = "srv"\naddress = "10.77.2.2"\n'
    text += link("forward", "gw", "beam", "20Mbps", "300ms", per=0.001)
    text += link("return", "beam", "gw", "1Gbps", "1us", queue=100000)
    text += link("gw-srv", "gw", "srv", "1Gbps", "100us", queue=100000)
    text += link("srv-gw", "srv", "gw", "1Gbps", "100us", queue=100000)
    for i in range(n):
        t, c = f"t{i}", f"c{i}"
        a, b = divmod(i, 250)
        text += (f'\n[[node]]\nname = "{t}"\nkind = "router"\naddress = "10.{100 + a}.{b}.1"\n'
                 f'middlebox = ' + accel("terminal", f"10.{100 + a}.{b}.1", f"{share}bps",
                                          f"{ret}bps", "10.77.0.1") + "\n")
        text += f'\n[[node]]\nname = "{c}"\naddress = "10.{110 + a}.{b}.2"\n'
        text += link(f"{t}-{c}", t, c, "1Gbps", "100us", queue=10000)
        text += link(f"{c}-{t}", c, t, "1Gbps", "100us", queue=10000)
        text += link(f"beam-{t}", "beam", t, "1Gbps", "1us", queue=10000)
        text += link(f"{t}-beam", t, "beam", f"{ret}bps", "300ms", per=0.001)
        text += (f'\n[[flow]]\nname = "d{i}"\nfrom = "{c}"\nto = "srv"\nstart = "2s"\n'
                 f'app = {{ kind = "request_response", request = "100B", response = "1GB" }}\n')
    summary, rss_kb = run(text, seconds)
    got = [f["bytes_delivered"] * 8 / seconds / 1e6 for f in summary["flows"]]
    jain = sum(got) ** 2 / (n * sum(x * x for x in got)) if any(got) else 0.0
    return {
        "terminals": n,
        "seconds": seconds,
        "share_bps": share,
        "aggregate_mbps": sum(got),
        "min_mbps": min(got),
        "max_mbps": max(got),
        "jain": jain,
        "max_rss_mb": rss_kb / 1024,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-streams", type=int, default=10_000)
    ap.add_argument("--congestion", default="rate",
                    help="every end's controller: rate (default), probe, bbr, cubic, new_reno")
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("connections")
    c.add_argument("n", type=int)
    c.add_argument("--response", type=int, default=200_000)
    t = sub.add_parser("terminals")
    t.add_argument("n", type=int)
    t.add_argument("--seconds", type=int, default=60)
    a = ap.parse_args()
    global MAX_STREAMS, CONGESTION
    MAX_STREAMS = a.max_streams
    CONGESTION = a.congestion
    r = connections(a.n, a.response) if a.what == "connections" else terminals(a.n, a.seconds)
    print(json.dumps(r, indent=1))


if __name__ == "__main__":
    main()
