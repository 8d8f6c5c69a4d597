#!/usr/bin/env python3
"""One satpep run of bench/starve/run.sh: flows that deliver nothing, and what the bottleneck's drop
rate predicts for them.

Usage: analyze.py OUTDIR LABEL INITIAL_RTO_S DURATION_S

A flow whose SYN and every retry die sends them at t0, t0 + R, t0 + 3R, t0 + 7R, ... (R the initial
RTO, doubling; RFC 6298 §5.5). With p(t) the bottleneck's drop fraction in the series interval
holding t (drops / (drops + delivered packets) from links.csv), a flow never connects with
probability prod_k p(t_k) if each attempt is an independent draw; the sum over flows is the count
that independent drops predict. Prints one line `R ...` (see run.sh for the fields).
"""
import bisect
import csv
import json
import sys

out, label, rto, dur = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
s = json.load(open(f"{out}/summary.json"))
flows = s["flows"]
bn = next(l for l in s["links"] if l["name"] == "bottleneck")
p_run = bn["queue_drops"] / (bn["queue_drops"] + bn["delivered_packets"])

# Bottleneck series: per-interval drop fraction and the sampled queue.
t, q, drops, thr = [], [], [], []
with open(f"{out}/links.csv") as f:
    for r in csv.DictReader(f):
        if r["link"] == "bottleneck":
            t.append(float(r["time_s"]))
            q.append(int(r["queue_packets"]))
            drops.append(int(r["queue_drops"]))
            thr.append(float(r["throughput_bps"]))
pk = bn["delivered_bytes"] / max(bn["delivered_packets"], 1)  # mean packet size on the bottleneck
p_bin = [0.0]
for i in range(1, len(t)):
    dd = drops[i] - drops[i - 1]
    delivered = thr[i] * (t[i] - t[i - 1]) / 8 / pk
    p_bin.append(dd / (dd + delivered) if dd + delivered > 0 else 0.0)


def at(x):
    """Index of the series interval (t[i-1], t[i]] holding time x."""
    return min(max(bisect.bisect_left(t, x), 1), len(t) - 1)


def attempts(t0):
    ts, k = [], 0
    while True:
        x = t0 + rto * (2**k - 1)
        if x >= dur:
            return ts
        ts.append(x)
        k += 1


zero = [f for f in flows if f["bytes_delivered"] == 0]
# Never connected: every segment sent was a SYN, i.e. exactly the schedule's attempts went out.
never = [f for f in zero if f["segments_sent"] == len(attempts(f["start_s"]))]
pred = 0.0
pred_flat = 0.0
for f in flows:
    a = attempts(f["start_s"])
    pr = 1.0
    for x in a:
        pr *= p_bin[at(x)]
    pred += pr
    pred_flat += p_run ** len(a)
full = sum(1 for f in never for x in attempts(f["start_s"]) if q[at(x)] >= 990)
natt = sum(len(attempts(f["start_s"])) for f in never)
pn = [p_bin[at(x)] for f in never for x in attempts(f["start_s"])]
print(
    f"R {label} flows={len(flows)} zero={len(zero)} never_connected={len(never)} "
    f"drop_rate={p_run:.3f} syn_attempts_of_never={natt} of_which_queue_full={full} "
    f"mean_p_at_their_attempts={(sum(pn) / len(pn)) if pn else 0:.3f} "
    f"predicted_never_p_t={pred:.1f} predicted_never_p_run={pred_flat:.1f}"
)
for f in never[:8]:
    a = attempts(f["start_s"])
    print(
        f"  never {label} {f['name']} start={f['start_s']:.3f} sent={f['segments_sent']} "
        "attempts=" + ",".join(f"{x:.2f}(q={q[at(x)]},p={p_bin[at(x)]:.2f})" for x in a)
    )
