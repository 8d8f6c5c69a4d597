#!/usr/bin/env python3
"""Markdown table of bench/peers/ns3_bbr/run.sh's runs: ns-3 (TcpBbr / TcpCubic) vs satpep (bbr /
cubic, profile linux) on scenarios/bbr/deploy.toml, mean over seeds.
Usage: report.py OUT SEEDS "CCS" "PERS"   (as run.sh calls it)"""
import json, statistics as st, sys

out, seeds = sys.argv[1], int(sys.argv[2])
ccs, pers = sys.argv[3].split(), sys.argv[4].split()
PER_LABEL = {"0": "0", "0.001": "1e-3", "0.01": "1e-2"}


def ns3(cc, per, s):
    line = open(f"{out}/ns3-{cc}-per{per}-seed{s}.txt").read().split()
    return dict(kv.split("=", 1) for kv in line if "=" in kv)


def sim(cc, per, s):
    j = json.load(open(f"{out}/sim-{cc}-per{per}-seed{s}/summary.json"))
    f = j["flows"][0]
    links = {l["name"]: l for l in j["links"]}
    return {"goodput_bps": f["goodput_bps"], "retransmissions": f["retransmissions"],
            "rtos": f["rto_expirations"], "fwd_error_drops": links["fwd"]["error_drops"],
            "fwd_queue_drops": links["fwd"]["queue_drops"]}


def mean(rs, k):
    return st.mean(float(r[k]) for r in rs)


print("| cc | PER | ns-3 goodput Mb/s (per seed) | satpep goodput Mb/s (per seed) | "
      "satpep − ns-3 | retransmissions ns-3 / satpep | RTOs ns-3 / satpep | "
      "fwd queue drops ns-3 / satpep | fwd error drops ns-3 / satpep |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for cc in ccs:
    for per in pers:
        n, m = [], []
        for s in range(1, seeds + 1):
            try:
                n.append(ns3(cc, per, s))
            except (OSError, ValueError) as e:
                print(f"missing ns-3 {cc} {per} seed {s}: {e}", file=sys.stderr)
            try:
                m.append(sim(cc, per, s))
            except (OSError, ValueError, KeyError) as e:
                print(f"missing satpep {cc} {per} seed {s}: {e}", file=sys.stderr)
        if not n or not m:
            continue
        gn, gm = mean(n, "goodput_bps") / 1e6, mean(m, "goodput_bps") / 1e6
        each = lambda rs: ", ".join(f"{float(r['goodput_bps']) / 1e6:.2f}" for r in rs)
        diff = f"{gm - gn:+.2f} Mb/s ({(gm - gn) / gn * 100:+.0f} %)" if gn > 0 else f"{gm - gn:+.2f} Mb/s"
        print(f"| {cc} | {PER_LABEL.get(per, per)} | {gn:.2f} ({each(n)}) | {gm:.2f} ({each(m)}) | "
              f"{diff} | {mean(n, 'retransmissions'):.0f} / {mean(m, 'retransmissions'):.0f} | "
              f"{mean(n, 'rtos'):.1f} / {mean(m, 'rtos'):.1f} | "
              f"{mean(n, 'fwd_queue_drops'):.0f} / {mean(m, 'fwd_queue_drops'):.0f} | "
              f"{mean(n, 'fwd_error_drops'):.0f} / {mean(m, 'fwd_error_drops'):.0f} |")
