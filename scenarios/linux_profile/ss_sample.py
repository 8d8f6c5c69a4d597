#!/usr/bin/env python3
"""Sample `ss -tin` for TCP sockets to port 5201 (iperf3) every INTERVAL seconds into a CSV.

Run inside the sender's network namespace (run.sh starts it from `satpep emu --client`, which runs
in the first flow's opening host). Usage: ss_sample.py OUT.csv [INTERVAL=0.1]. Stops on SIGTERM.
Columns: t_mono_s (CLOCK_MONOTONIC), lport, cwnd (segments), ssthresh (segments, empty before
the first reduction), rtt_ms, rttvar_ms, rto_ms, mss, retrans_out, retrans_total, lost, sacked,
unacked, bytes_acked, bytes_retrans, delivery_rate_bps, pacing_rate_bps, ca (cc name), snd_wnd
(bytes, the peer's window), notsent (bytes written but not yet sent), app_limited (1 when the last
rate sample was application-limited), busy_ms / rwnd_limited_ms / sndbuf_limited_ms (cumulative
time sending, and limited by the receiver's window or the send buffer: tcpi_busy_time etc.),
sndbuf (skmem tb: the send buffer's size) and wmem_queued (skmem w: bytes queued, sent or not).
"""
import re, signal, subprocess, sys, time

out = sys.argv[1]
interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.1
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)

RATE = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}


def ms(s):
    """`busy:120ms`, `rwnd_limited:40ms(33.3%)` → milliseconds as text ('' when absent)."""
    m = re.match(r"([\d.]+)ms", s)
    return m.group(1) if m else ""


def rate(s):
    m = re.match(r"([\d.]+)([KMG]?)bps", s)
    return str(int(float(m.group(1)) * RATE[m.group(2)])) if m else ""


cols = ["t_mono_s", "lport", "cwnd", "ssthresh", "rtt_ms", "rttvar_ms", "rto_ms", "mss",
        "retrans_out", "retrans_total", "lost", "sacked", "unacked", "bytes_acked",
        "bytes_retrans", "delivery_rate_bps", "pacing_rate_bps", "ca", "snd_wnd", "notsent",
        "app_limited", "busy_ms", "rwnd_limited_ms", "sndbuf_limited_ms", "sndbuf",
        "wmem_queued"]
with open(out, "w") as f:
    f.write(",".join(cols) + "\n")
    nxt = time.monotonic()
    while not stop:
        t = time.monotonic()
        try:
            txt = subprocess.run(["ss", "-tinmH", "state", "established", "dport", "=", ":5201"],
                                 capture_output=True, text=True, timeout=2).stdout
        except Exception:
            txt = ""
        lines = txt.splitlines()
        i = 0
        while i < len(lines):
            head = lines[i].split()
            info = lines[i + 1] if i + 1 < len(lines) and lines[i + 1][:1].isspace() else ""
            i += 2 if info else 1
            if len(head) < 4:
                continue
            lport = head[2].rsplit(":", 1)[-1]
            kv = {}
            toks = info.split()
            for j, tok in enumerate(toks):
                if ":" in tok:
                    k, v = tok.split(":", 1)
                    kv[k] = v
                elif tok in ("delivery_rate", "pacing_rate") and j + 1 < len(toks):
                    kv[tok] = toks[j + 1]
            ca = toks[0] if toks and ":" not in toks[0] else ""
            if toks and toks[0].startswith("skmem:"):  # `-m` puts skmem:(...) first
                ca = toks[1] if len(toks) > 1 and ":" not in toks[1] else ""
            skmem = dict(re.findall(r"([a-z]+)(\d+)", kv.get("skmem", "")))
            rtt, rttvar = (kv.get("rtt", "/").split("/") + [""])[:2]
            rtr = kv.get("retrans", "0/0").split("/")
            row = [f"{t:.6f}", lport, kv.get("cwnd", ""), kv.get("ssthresh", ""), rtt, rttvar,
                   kv.get("rto", ""), kv.get("mss", ""), rtr[0], rtr[-1], kv.get("lost", "0"),
                   kv.get("sacked", "0"), kv.get("unacked", "0"), kv.get("bytes_acked", "0"),
                   kv.get("bytes_retrans", "0"), rate(kv.get("delivery_rate", "")),
                   rate(kv.get("pacing_rate", "")), ca, kv.get("snd_wnd", ""),
                   kv.get("notsent", "0"), "1" if "app_limited" in toks else "0",
                   ms(kv.get("busy", "")), ms(kv.get("rwnd_limited", "")),
                   ms(kv.get("sndbuf_limited", "")), skmem.get("tb", ""), skmem.get("w", "")]
            f.write(",".join(row) + "\n")
        f.flush()
        nxt += interval
        time.sleep(max(0.0, nxt - time.monotonic()))
