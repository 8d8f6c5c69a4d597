"""Seed fuzz/corpus/middleboxes from real traffic: the packets of satpep traces (trace.pcapng of
`satpep sim` runs) as the target's records [port, delta_ms, header_len, len_hi, len_lo, bytes].
Usage: python3 fuzz/seed_middleboxes.py OUT_DIR NAME TRACE.pcapng [max_packets]
Name seeds `seed_*`: only those are tracked (fuzz/.gitignore), the fuzzer's finds are not."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scenarios", "linux_profile"))
from pcapng import packets  # noqa: E402

out_dir, name, trace = sys.argv[1], sys.argv[2], sys.argv[3]
limit = int(sys.argv[4]) if len(sys.argv) > 4 else 400
ifaces, records, last = [], bytearray(), None
for n, (iface, t, data) in enumerate(packets(trace)):
    if n >= limit:
        break
    if iface not in ifaces:
        ifaces.append(iface)
    delta = 0 if last is None else min(255, int((t - last) * 1000))
    last = t
    ihl = (data[0] & 0x0F) * 4 if data else 0
    hlen = ihl + ((data[ihl + 12] >> 4) * 4 if len(data) > ihl + 12 and data[9] == 6 else 0)
    records += bytes([ifaces.index(iface) & 3, delta, min(hlen, len(data), 255)])
    records += struct.pack(">H", len(data)) + data
os.makedirs(out_dir, exist_ok=True)
with open(os.path.join(out_dir, name), "wb") as f:
    f.write(records)
print(f"{name}: {min(n + 1, limit)} packets, {len(records)} bytes")
