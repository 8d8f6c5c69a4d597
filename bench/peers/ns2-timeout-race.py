#!/usr/bin/env python3
"""Where ns-2's timeouts and fast retransmits fall relative to the last new ACK.

Reads the sender traces that `NS2_TRACE=PREFIX ns bench/peers/ns2/fidelity.tcl ...` writes
(PREFIX.tcp: traced ack_, dupacks_, nrexmit_, ncwndcuts1_, maxseq_, backoff_) and prints, mean
per trace after t0 (default 10 s):

- timeouts outside fast recovery with no backoff, by (seconds since the last ACK that advanced
  ack_, duplicate ACKs counted before the timer fired);
- fast retransmits by seconds since the last new ACK, for gaps within 10 ms of 0.2 s.

A timeout 0.2 s after the last new ACK with 1 or 2 duplicate ACKs is the race described in
docs/validation.md: the timer restarted at that ACK (minrto_ 0.2 s) against the third
duplicate ACK, drawn by a limited-transmit segment one round trip (100.12 ms) later.

Usage: bench/peers/ns2-timeout-race.py [--t0 S] PREFIX.tcp...
"""
import collections
import sys


def scan(path, t0):
    to = collections.Counter()
    fr = collections.Counter()
    last = {}
    last_ack_t = 0.0
    dups = 0
    rec = None
    rto_t = None
    for line in open(path):
        p = line.split()
        if len(p) < 7:
            continue
        t, var, x = float(p[0]), p[5], float(p[6])
        prev = last.get(var)
        last[var] = x
        rising = prev is not None and x > prev
        if var == 'ack_' and rising:
            last_ack_t = t
            dups = 0
            if rec is not None and x >= rec:
                rec = None
        elif var == 'dupacks_' and x > 0:
            dups = int(x)
        elif var == 'nrexmit_' and rising:
            # Reno's timeout() zeroes dupacks_ before TcpAgent::timeout counts nrexmit_:
            # `dups` still holds the count from before.
            rto_t = t
            if t >= t0 and rec is None and last.get('backoff_') == 1:
                to[(round(t - last_ack_t, 3), dups)] += 1
            rec = None
        elif var == 'ncwndcuts1_' and rising and rto_t != t:
            # a window cut that is not a timeout's: a fast retransmit (no ECN here)
            rec = last.get('maxseq_')
            g = round(t - last_ack_t, 4)
            if t >= t0 and abs(g - 0.2) < 0.01:
                fr[g] += 1
    return to, fr


def main():
    args = sys.argv[1:]
    t0 = 10.0
    if args[:1] == ['--t0']:
        t0 = float(args[1])
        args = args[2:]
    if not args:
        sys.exit(__doc__)
    to_all = collections.Counter()
    fr_all = collections.Counter()
    for path in args:
        to, fr = scan(path, t0)
        to_all.update(to)
        fr_all.update(fr)
    n = len(args)
    print('# timeouts outside recovery, backoff 1: (gap_s, dupacks) mean per trace')
    for (g, d), c in sorted(to_all.items(), key=lambda kv: -kv[1]):
        if c / n >= 0.5:
            print(f'timeout gap={g:.3f} dupacks={d} {c / n:.1f}')
    print('# fast retransmits within 10 ms of 0.2 s after the last new ACK')
    for g, c in sorted(fr_all.items()):
        print(f'fastrtx gap={g:.4f} {c / n:.1f}')


if __name__ == '__main__':
    main()
