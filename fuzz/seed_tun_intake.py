"""Seed fuzz/corpus/tun_intake (records [host, delta_ms, len_hi, len_lo, bytes]; even host: gw's
offloading device, bytes start with a virtio_net_hdr; odd: term's plain device), with what the
devices hand over: a TSO super-packet as Linux writes it (NEEDS_CSUM, GSO_TCPV4, the pseudo-header
sum in the TCP checksum field), a pure ACK with a partial checksum, a run of full segments from
term that gw's device gets back coalesced, and the packets of a simulated trace (a middleboxes
seed, real traffic of `satpep sim`). Usage: python3 fuzz/seed_tun_intake.py OUT_DIR"""
import os
import struct
import sys

GW, TERM = bytes([10, 0, 0, 1]), bytes([10, 0, 1, 1])


def fold(s):
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def ones(data):
    if len(data) % 2:
        data += b"\0"
    return fold(sum(struct.unpack(f">{len(data) // 2}H", data)))


def ip_tcp(src, dst, sport, dport, seq, ack, flags, payload=b"", ident=1, partial=False):
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0)
    pseudo = src + dst + struct.pack(">BBH", 0, 6, len(tcp) + len(payload))
    # Linux with checksum offload leaves the (uncomplemented) pseudo-header sum in the field.
    c = ones(pseudo) if partial else ~ones(pseudo + tcp + payload) & 0xFFFF
    tcp = tcp[:16] + struct.pack(">H", c) + tcp[18:]
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), ident, 0x4000, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack(">H", ~ones(ip) & 0xFFFF) + ip[12:]
    return ip + tcp + payload


def vnet(flags, gso_type, gso_size, csum=(20, 16)):
    return struct.pack("<BBHHHH", flags, gso_type, 40, gso_size, csum[0], csum[1])


def record(host, delta, data):
    return bytes([host, delta]) + struct.pack(">H", len(data)) + data


out_dir = sys.argv[1]
os.makedirs(out_dir, exist_ok=True)
seeds = {}

# gw: handshake, then a 3 × 1448-byte TSO super-packet, then a partial-checksum ACK; term answers.
payload = bytes(i % 251 for i in range(3 * 1448))
r = record(0, 0, vnet(0, 0, 0) + ip_tcp(GW, TERM, 5001, 80, 0x1000, 0, 0x02))
r += record(1, 210, ip_tcp(TERM, GW, 80, 5001, 0x9000, 0x1001, 0x12))
r += record(0, 210, vnet(1, 1, 1448) + ip_tcp(GW, TERM, 5001, 80, 0x1001, 0x9001, 0x18, payload, 2, True))
r += record(0, 1, vnet(1, 0, 0) + ip_tcp(GW, TERM, 5001, 80, 0x1001 + len(payload), 0x9001, 0x10, b"", 3, True))
seeds["seed_tso_super_packet"] = r

# term: 16 full segments back to back toward gw (which gets them joined), gw's ACKs between.
r = b""
for i in range(16):
    r += record(1, 0, ip_tcp(TERM, GW, 80, 5001, 0x9001 + 1000 * i, 0x1001, 0x10, bytes([i]) * 1000, 100 + i))
    if i % 4 == 3:
        r += record(0, 2, vnet(0, 0, 0) + ip_tcp(GW, TERM, 5001, 80, 0x1001, 0x9001 + 1000 * (i + 1), 0x10))
seeds["seed_segments_to_coalesce"] = r

# The packets of a simulated trace (addresses of that scenario: most are unroutable here).
trace = open(os.path.join(os.path.dirname(__file__), "corpus/middleboxes/seed_lossy_default"), "rb").read()
r, n = b"", 0
while len(trace) >= 5 and n < 200:
    port, delta, _hlen, ln = trace[0], trace[1], trace[2], struct.unpack(">H", trace[3:5])[0]
    pkt, trace = trace[5 : 5 + ln], trace[5 + ln :]
    r += record(1, delta, pkt) if port % 2 else record(0, delta, bytes(10) + pkt)
    n += 1
seeds["seed_sim_trace"] = r

# A packet with IHL 0 and protocol 4 from term: header_len recursed on it for ever (a stack
# overflow the campaign found).
seeds["seed_ihl0_ipip"] = record(1, 0, bytes([0x40] + [0] * 8 + [4] + [0] * 50))

for name, data in seeds.items():
    with open(os.path.join(out_dir, name), "wb") as f:
        f.write(data)
    print(f"{name}: {len(data)} bytes")
