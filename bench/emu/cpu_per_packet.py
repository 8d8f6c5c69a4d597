#!/usr/bin/env python3
"""The emulator loop's CPU per wire packet in each summary.json that `bench/emu/run.sh` kept
(KEEP=DIR): loop_cpu_s over path.rx_packets, with the segments per written super-packet and
the p99 release lateness beside it. Runs are listed in the order they ran.

    python3 bench/emu/cpu_per_packet.py DIR
"""
import glob
import json
import re
import sys


def order(path):
    m = re.match(r"(\d+)-", path.split("/")[-1])
    return int(m.group(1)) if m else 0


def main(d):
    print("| run | test | wire packets | loop CPU (ns per packet) | segments per super-packet written | lateness p99 (µs) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for f in sorted(glob.glob(f"{d}/*-summary.json"), key=order):
        j = json.load(open(f))
        n = j["path"]["rx_packets"]
        sup = max(1, j["path"]["tx_super_packets"])
        test = f.split("/")[-1].split("-")[1]
        print(
            f"| {order(f)} | {test} | {n} | {j['loop_cpu_s'] * 1e9 / max(1, n):.0f} "
            f"| {n / sup:.1f} | {j['lateness']['p99_us']:.0f} |"
        )


if __name__ == "__main__":
    main(sys.argv[1])
