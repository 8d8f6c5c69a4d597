"""Packets of a satpep trace: `trace.pcapng` (one interface per captured link) or `<link>.pcapng`
(`output.pcap_per_link = true`); classic pcap too, for run folders written before pcapng.
Standard library only, so the analysis scripts run on any python3."""
import struct


def packets(path, interface=None):
    """Yield (interface name, time in s, captured bytes) per packet, in file order; with
    `interface`, only that interface's packets (a classic pcap has one unnamed interface, None)."""
    data = open(path, "rb").read()
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        yield from (p for p in _pcapng(data) if interface is None or p[0] == interface)
    elif interface is None:
        yield from _pcap(data)
    else:
        raise ValueError(f"{path}: classic pcap has no interface names (asked for {interface!r})")


def _pcapng(data):
    off, end, ifaces = 0, "<", []
    while off + 12 <= len(data):
        if data[off:off + 4] == b"\x0a\x0d\x0d\x0a":  # section header: byte order, new interfaces
            end = "<" if data[off + 8:off + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            ifaces = []
        btype, blen = struct.unpack(end + "II", data[off:off + 8])
        if blen < 12 or off + blen > len(data):
            raise ValueError(f"truncated pcapng block at byte {off}")
        body = data[off + 8:off + blen - 4]
        if btype == 1:  # interface description: if_name (2) and if_tsresol (9)
            name, div, i = None, 1e6, 8
            while i + 4 <= len(body):
                code, ln = struct.unpack(end + "HH", body[i:i + 4])
                val = body[i + 4:i + 4 + ln]
                if code == 0:
                    break
                if code == 2:
                    name = val.decode()
                if code == 9:
                    div = 2.0 ** (val[0] & 0x7F) if val[0] & 0x80 else 10.0 ** val[0]
                i += 4 + ln + (-ln % 4)
            ifaces.append((name, div))
        elif btype == 6:  # enhanced packet
            iface, hi, lo, incl, _orig = struct.unpack(end + "IIIII", body[:20])
            name, div = ifaces[iface]
            yield name, ((hi << 32) | lo) / div, body[20:20 + incl]
        off += blen


def _pcap(data):
    magic = struct.unpack("<I", data[:4])[0]
    end, div = ("<", 1e9) if magic == 0xA1B23C4D else ("<", 1e6) if magic == 0xA1B2C3D4 else (">", 1e9)
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack(end + "IIII", data[off:off + 16])
        yield None, sec + frac / div, data[off + 16:off + 16 + incl]
        off += 16 + incl
