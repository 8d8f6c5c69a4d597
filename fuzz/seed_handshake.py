"""Seed fuzz/corpus/middleboxes with one clean connection as a gateway between an Internet host
(arriving on port 0) and a satellite-side receiver (port 1) sees it: a SYN offering window
scaling, a SYN-ACK offering none (so the SuperCharger negotiates scaling on the receiver's
behalf, `add_wscale`), 40 data segments of 1000 bytes 2 ms apart and the receiver's ACKs every
second segment (so the spoofing gateway queues and, with `satellite_rate`, paces). The traces of
seed_middleboxes.py show each packet at every hop, which never completes a handshake for a
middlebox. Usage: python3 fuzz/seed_handshake.py OUT_DIR"""
import os
import struct
import sys

A, B = bytes([10, 0, 0, 9]), bytes([10, 1, 0, 2])  # Internet host, satellite-side receiver
AP, BP = 80, 5001


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def tcp(src, dst, sport, dport, seq, ack, flags, win, opts=b"", payload=b""):
    opts += b"\x01" * (-len(opts) % 4)
    off = (20 + len(opts)) // 4
    hdr = struct.pack(">HHIIBBHHH", sport, dport, seq, ack, off << 4, flags, win, 0, 0) + opts
    seg = hdr + payload
    c = csum(src + dst + struct.pack(">BBH", 0, 6, len(seg)) + seg)
    seg = seg[:16] + struct.pack(">H", c) + seg[18:]
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(seg), 0, 0x4000, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack(">H", csum(ip)) + ip[12:]
    return ip + seg, 20 + len(hdr)


SYN, ACK = 0x02, 0x10
MSS = b"\x02\x04\x05\xb4"
recs = [
    (0, 0, tcp(A, B, AP, BP, 1000, 0, SYN, 65535, MSS + b"\x01\x03\x03\x07")),
    (1, 250, tcp(B, A, BP, AP, 5000, 1001, SYN | ACK, 65535, MSS)),
    (0, 250, tcp(A, B, AP, BP, 1001, 5001, ACK, 512)),
]
for i in range(40):
    recs.append((0, 2, tcp(A, B, AP, BP, 1001 + 1000 * i, 5001, ACK, 512, payload=bytes([i]) * 1000)))
    if i % 2:
        recs.append((1, 0, tcp(B, A, BP, AP, 5001, 1001 + 1000 * (i + 1), ACK, 65535)))
out = bytearray()
for port, delta, (pkt, hlen) in recs:
    out += bytes([port, delta, hlen]) + struct.pack(">H", len(pkt)) + pkt
os.makedirs(sys.argv[1], exist_ok=True)
with open(os.path.join(sys.argv[1], "seed_handshake_no_wscale"), "wb") as f:
    f.write(out)
print(f"seed_handshake_no_wscale: {len(recs)} packets, {len(out)} bytes")
