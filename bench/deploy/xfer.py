#!/usr/bin/env python3
"""Deterministic TCP transfers for the deployment tests (docs/deploy.md, "Test topology").

  xfer.py serve --port 5001 [--cc cubic] [--peers FILE]
      Serves requests: a client sends one line `GET <bytes>\\n`; the server answers with
      exactly that many bytes of the deterministic stream below and closes. Every connection's
      peer address (as the server's socket sees it) is appended to FILE as `<ip> <port>`.

  xfer.py get --host H --port 5001 --size N [--timeout S]
      One transfer; prints JSON: connect_s (SYN to established), ttfb_s (from the start of
      connect to the first response byte), total_s (to the last byte), goodput_mbps
      (payload bits / total_s), sha256 of what arrived and whether it equals the expected one.

  xfer.py many --host H --port 5001 --size N --count K --concurrency C
      K transfers, C at a time; prints JSON with counts of failures (errors, short reads,
      timeouts) and sha256 mismatches, and TTFB/total percentiles.

  xfer.py page --host H --port 5001 [--objects 30] [--connections 6]
      A web page as a browser loads it: the page (30 000 bytes) on one connection, then the
      other objects (sizes drawn once from random.Random(35), log-uniform between 5 KB and
      200 KB; 1 642 892 bytes in all with the defaults) over `connections` kept-alive connections,
      each fetching its share in turn (`KEEP <bytes>` requests). Prints JSON: page_load_s
      (start to the last object's last byte), bytes, objects, failures, sha256 mismatches.

  xfer.py hold-serve --port P
      Accepts connections and keeps them open, idle (one thread for all).

  xfer.py hold --host H --port P --count N --seconds S
      Opens N idle connections, prints JSON (opened, errors, seconds to open them), holds them
      S seconds, closes them.

  xfer.py syn-flood --src A [--sources K] --host H --port P --count N
      Sends N SYNs through a raw socket from the K consecutive addresses starting at A (K = 1
      by default), SYN i from address A + i mod K and source port 1024 + (i div K) mod 64000:
      every SYN opens a distinct connection while N <= 64000 K. The gateway tests' hostile
      load. Needs root. Prints JSON: sent, failed (sendto errors), distinct.

  xfer.py forge-ah --src A --host H --count N
      Sends N compacted ACKs in AH-framed IP-in-IP (crate::auth's layout) from A to H whose
      integrity check values are random: forgeries a keyed expander must count and drop.

  xfer.py capture-ah --iface IF --src A --count N --seconds S --out FILE [--proto 51]
      Records up to N AH packets from A leaving IF (the emulator's TUN device), one hex line
      each: genuine tunnel packets, to be replayed.

  xfer.py replay --file FILE
      Sends the recorded packets again, byte for byte, through a raw socket: replays a keyed
      tunnel endpoint must count and drop.

`get` and `many` take `--rcvbuf BYTES` (the client socket's SO_RCVBUF, set before connect):
a receiver with a small window, as paper 004's.

The stream: 64 KiB chunks; chunk i is the 8-byte big-endian i followed by the first
65 528 bytes of a fixed block drawn from random.Random(2026). Every byte depends on its
position modulo 64 KiB and every chunk on its index, so a lost, duplicated or misplaced
segment changes the sha256; generating it costs a copy, not a hash per byte.
"""

import argparse
import hashlib
import json
import random
import socket
import socketserver
import statistics
import struct
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

CHUNK = 65536
_BLOCK = random.Random(2026).randbytes(CHUNK)
MAX_REQUEST = 1 << 40


def chunks(size):
    """The first `size` bytes of the stream, in pieces of at most CHUNK bytes."""
    i = 0
    while size > 0:
        c = struct.pack(">Q", i) + _BLOCK[8:]
        yield c[: min(size, CHUNK)]
        size -= CHUNK
        i += 1


def expected_sha256(size):
    h = hashlib.sha256()
    for c in chunks(size):
        h.update(c)
    return h.hexdigest()


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        sock = self.request
        sock.settimeout(self.server.timeout_s)
        # Each write leaves at once (no Nagle wait behind an unacknowledged segment).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = sock.getpeername()
        with self.server.lock:
            if self.server.peers:
                with open(self.server.peers, "a", encoding="ascii") as f:
                    f.write(f"{peer[0]} {peer[1]}\n")
        pending = b""
        while True:
            # One request line: `GET <bytes>` (answer, then close) or `KEEP <bytes>` (answer,
            # then read the next request on the same connection).
            while b"\n" not in pending and len(pending) < 64:
                got = sock.recv(64 - len(pending))
                if not got:
                    return
                pending += got
            line, _, pending = pending.partition(b"\n")
            parts = line.split()
            if len(parts) != 2 or parts[0] not in (b"GET", b"KEEP") or not parts[1].isdigit():
                return
            size = int(parts[1])
            if size > MAX_REQUEST:
                return
            for c in chunks(size):
                sock.sendall(c)
            if parts[0] == b"GET":
                break
        sock.shutdown(socket.SHUT_WR)
        # Wait for the client's close, so that the last bytes are not reset away.
        while sock.recv(4096):
            pass


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, addr, cc, peers, timeout_s):
        self.cc = cc
        self.peers = peers
        self.timeout_s = timeout_s
        self.lock = threading.Lock()
        super().__init__(addr, Handler)

    def server_bind(self):
        if self.cc:
            # The listening socket's congestion control is inherited by accepted ones.
            self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, self.cc.encode())
        super().server_bind()


def get(host, port, size, timeout, cc=None, rcvbuf=None):
    """One transfer; returns a dict (see the module doc)."""
    r = {"size": size, "ok": False}
    t0 = time.monotonic()
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            # Before connect: the window scale offered in the SYN follows this buffer.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if cc:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        sock.settimeout(timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with sock:
            sock.connect((host, port))
            t_conn = time.monotonic()
            r["local"] = "%s %d" % sock.getsockname()
            sock.sendall(b"GET %d\n" % size)
            h = hashlib.sha256()
            got = 0
            t_first = None
            buf = bytearray(1 << 20)
            view = memoryview(buf)
            while True:
                n = sock.recv_into(view)
                if n == 0:
                    break
                if t_first is None:
                    t_first = time.monotonic()
                h.update(view[:n])
                got += n
            t_end = time.monotonic()
        r.update(
            connect_s=t_conn - t0,
            ttfb_s=(t_first - t0) if t_first is not None else None,
            total_s=t_end - t0,
            received=got,
            goodput_mbps=got * 8 / (t_end - t0) / 1e6,
            sha256=h.hexdigest(),
        )
        r["sha256_ok"] = got == size and r["sha256"] == expected_sha256(size)
        r["ok"] = r["sha256_ok"]
    except OSError as e:
        r["error"] = f"{type(e).__name__}: {e}"
        r["total_s"] = time.monotonic() - t0
    return r


def pct(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def many(host, port, size, count, concurrency, timeout, rcvbuf=None):
    expected = expected_sha256(size)
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda _: get(host, port, size, timeout, rcvbuf=rcvbuf), range(count)))
    wall = time.monotonic() - t0
    errors = [r for r in results if "error" in r or r.get("received") != size]
    mismatches = [
        r for r in results if "error" not in r and r.get("received") == size and r["sha256"] != expected
    ]
    ttfb = [r["ttfb_s"] for r in results if r.get("ttfb_s") is not None]
    total = [r["total_s"] for r in results if "error" not in r]
    return {
        "count": count,
        "concurrency": concurrency,
        "size": size,
        "ok": sum(1 for r in results if r["ok"]),
        "failures": len(errors),
        "mismatches": len(mismatches),
        "errors": sorted({r.get("error", "short read %s" % r.get("received")) for r in errors})[:10],
        "locals": sorted({r["local"].split()[0] for r in results if "local" in r}),
        "ttfb_p50_s": statistics.median(ttfb) if ttfb else None,
        "ttfb_min_s": min(ttfb) if ttfb else None,
        "ttfb_max_s": max(ttfb) if ttfb else None,
        "total_p50_s": statistics.median(total) if total else None,
        "total_p99_s": pct(total, 0.99),
        "wall_s": wall,
    }


PAGE_SIZE = 30_000


def page_objects(count):
    """The page's other objects: `count` - 1 sizes, log-uniform in 5 KB .. 200 KB."""
    rng = random.Random(35)
    return [int(5_000 * (40 ** rng.random())) for _ in range(count - 1)]


def page(host, port, objects, connections, timeout):
    """Load the page, then its objects over `connections` kept-alive connections."""
    sizes = page_objects(objects)
    t0 = time.monotonic()
    failures = []
    mismatches = 0

    def fetch(sock, size):
        sock.sendall(b"KEEP %d\n" % size)
        h = hashlib.sha256()
        left = size
        while left:
            b = sock.recv(min(left, 1 << 20))
            if not b:
                raise OSError("short read")
            h.update(b)
            left -= len(b)
        return h.hexdigest() == expected_sha256(size)

    def connect():
        s = socket.create_connection((host, port), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def worker(share, sock=None):
        nonlocal mismatches
        try:
            sock = sock or connect()
            with sock:
                for size in share:
                    if not fetch(sock, size):
                        mismatches += 1
        except OSError as e:
            failures.append(f"{type(e).__name__}: {e}")

    first = None
    try:
        first = connect()
        if not fetch(first, PAGE_SIZE):
            mismatches += 1
    except OSError as e:
        failures.append(f"{type(e).__name__}: {e}")
    t_page = time.monotonic()
    shares = [sizes[i::connections] for i in range(connections)]
    threads = [
        threading.Thread(target=worker, args=(shares[i], first if i == 0 else None))
        for i in range(connections)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t_end = time.monotonic()
    return {
        "objects": objects,
        "connections": connections,
        "bytes": PAGE_SIZE + sum(sizes),
        "page_s": t_page - t0,
        "page_load_s": t_end - t0,
        "failures": len(failures),
        "errors": sorted(set(failures))[:5],
        "mismatches": mismatches,
        "ok": not failures and mismatches == 0,
    }


def hold_serve(port):
    """Accept connections and keep them open, idle; close the ones the peer closed or reset,
    so that connections a gateway test resets (a SYN flood's) do not use up descriptors."""
    import selectors
    sel = selectors.DefaultSelector()
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("0.0.0.0", port))
    lsock.listen(4096)
    lsock.setblocking(False)
    sel.register(lsock, selectors.EVENT_READ)
    print(f"holding on {port}", flush=True)
    while True:
        for key, _ in sel.select():
            if key.fileobj is lsock:
                while True:
                    try:
                        conn = lsock.accept()[0]
                    except BlockingIOError:
                        break
                    except OSError:
                        # Out of descriptors: leave the rest in the backlog for now.
                        time.sleep(0.01)
                        break
                    conn.setblocking(False)
                    sel.register(conn, selectors.EVENT_READ)
                continue
            conn = key.fileobj
            try:
                data = conn.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                sel.unregister(conn)
                conn.close()


def hold(host, port, count, seconds):
    socks, errors = [], set()
    t0 = time.monotonic()
    for _ in range(count):
        try:
            socks.append(socket.create_connection((host, port), timeout=10))
        except OSError as e:
            errors.add(f"{type(e).__name__}: {e}")
    print(json.dumps({"opened": len(socks), "errors": sorted(errors)[:10],
                      "seconds": time.monotonic() - t0}), flush=True)
    time.sleep(seconds)
    for s in socks:
        s.close()


def _checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(int.from_bytes(b[i:i + 2], "big") for i in range(0, len(b), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def syn_flood(src, dst, port, count, sources=1):
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    base = struct.unpack("!I", socket.inet_aton(src))[0]
    srcs = [struct.pack("!I", base + k) for k in range(sources)]
    d4 = socket.inet_aton(dst)
    sent = failed = 0
    for i in range(count):
        s4 = srcs[i % sources]
        sport = 1024 + (i // sources) % 64000
        seq = (i * 2654435761) & 0xFFFFFFFF
        tcp = struct.pack("!HHIIBBHHH", sport, port, seq, 0, 5 << 4, 0x02, 64240, 0, 0)
        pseudo = s4 + d4 + struct.pack("!BBH", 0, 6, len(tcp))
        tcp = tcp[:16] + struct.pack("!H", _checksum(pseudo + tcp)) + tcp[18:]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40, i & 0xFFFF, 0, 64, 6, 0, s4, d4)
        ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
        try:
            sock.sendto(ip + tcp, (dst, 0))
            sent += 1
        except OSError:
            failed += 1
            time.sleep(0.001)
    print(json.dumps({"sent": sent, "failed": failed, "distinct": min(count, 64000 * sources)}))


def forge_ah(src, dst, count):
    import os
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    s4, d4 = socket.inet_aton(src), socket.inet_aton(dst)
    inner_src, inner_dst = socket.inet_aton("10.77.1.2"), socket.inet_aton("10.77.2.2")
    for i in range(count):
        tcp = struct.pack("!HHIIBBHHH", 40000, 5001, 1, 1000 + i, 5 << 4, 0x10, 65535, 0, 0)
        pseudo = inner_src + inner_dst + struct.pack("!BBH", 0, 6, len(tcp))
        tcp = tcp[:16] + struct.pack("!H", _checksum(pseudo + tcp)) + tcp[18:]
        inner = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40, i, 0, 64, 6, 0, inner_src, inner_dst)
        inner = inner[:10] + struct.pack("!H", _checksum(inner)) + inner[12:] + tcp
        trailer = struct.pack("!BH", 3, 3000)
        # AH: next header 4, length 5, reserved, SPI (epoch) ahead of any real one, sequence,
        # 16 random bytes of ICV.
        ah = struct.pack("!BBHII", 4, 5, 0, 4_000_000_000, i + 1) + os.urandom(16)
        total = 20 + len(ah) + len(inner) + len(trailer)
        outer = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, i, 0x4000, 64, 51, 0, s4, d4)
        outer = outer[:10] + struct.pack("!H", _checksum(outer)) + outer[12:]
        sock.sendto(outer + ah + inner + trailer, (dst, 0))
    print(json.dumps({"sent": count}))


def capture_ah(iface, src, count, seconds, out, proto=51):
    """Record up to `count` AH packets (IP protocol 51, or `proto`) from `src` (`any`: from
    anywhere) that leave `iface` (a TUN device: raw IPv4, no link header), one hex line each,
    for at most `seconds`."""
    # ETH_P_ALL: bound to ETH_P_IP, a TUN device's outgoing packets were not seen here.
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0003))
    sock.bind((iface, 0))
    sock.settimeout(0.2)
    s4 = None if src == "any" else socket.inet_aton(src)
    got = []
    end = time.monotonic() + seconds
    while len(got) < count and time.monotonic() < end:
        try:
            pkt, addr = sock.recvfrom(65535)
        except socket.timeout:
            continue
        outgoing = addr[2] == socket.PACKET_OUTGOING
        if outgoing and len(pkt) >= 20 and pkt[9] == proto and s4 in (None, pkt[12:16]):
            got.append(pkt)
    with open(out, "w") as f:
        for pkt in got:
            f.write(pkt.hex() + "\n")
    print(json.dumps({"captured": len(got)}))


def replay(path):
    """Send again, byte for byte, every packet `capture-ah` recorded in `path`."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    sent = 0
    with open(path) as f:
        for line in f:
            pkt = bytes.fromhex(line.strip())
            sock.sendto(pkt, (socket.inet_ntoa(pkt[16:20]), 0))
            sent += 1
    print(json.dumps({"sent": sent}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--bind", default="0.0.0.0")
    s.add_argument("--port", type=int, default=5001)
    s.add_argument("--cc", help="TCP congestion control of the sending sockets (e.g. cubic)")
    s.add_argument("--peers", help="append each connection's peer address to this file")
    s.add_argument("--timeout", type=float, default=600.0)
    for name in ("get", "many"):
        c = sub.add_parser(name)
        c.add_argument("--host", required=True)
        c.add_argument("--port", type=int, default=5001)
        c.add_argument("--size", type=int, required=True)
        c.add_argument("--timeout", type=float, default=600.0, help="per socket operation (s)")
        c.add_argument("--rcvbuf", type=int, help="SO_RCVBUF of the client's socket (bytes)")
        if name == "many":
            c.add_argument("--count", type=int, required=True)
            c.add_argument("--concurrency", type=int, default=1)
    w = sub.add_parser("page")
    w.add_argument("--host", required=True)
    w.add_argument("--port", type=int, default=5001)
    w.add_argument("--objects", type=int, default=30)
    w.add_argument("--connections", type=int, default=6)
    w.add_argument("--timeout", type=float, default=60.0)
    h = sub.add_parser("hold-serve")
    h.add_argument("--port", type=int, required=True)
    h = sub.add_parser("hold")
    h.add_argument("--host", required=True)
    h.add_argument("--port", type=int, required=True)
    h.add_argument("--count", type=int, required=True)
    h.add_argument("--seconds", type=float, required=True)
    f = sub.add_parser("syn-flood")
    f.add_argument("--src", required=True)
    f.add_argument("--sources", type=int, default=1)
    f.add_argument("--host", required=True)
    f.add_argument("--port", type=int, required=True)
    f.add_argument("--count", type=int, required=True)
    g = sub.add_parser("forge-ah")
    g.add_argument("--src", required=True)
    g.add_argument("--host", required=True)
    g.add_argument("--count", type=int, required=True)
    c = sub.add_parser("capture-ah")
    c.add_argument("--iface", required=True)
    c.add_argument("--src", required=True)
    c.add_argument("--count", type=int, required=True)
    c.add_argument("--seconds", type=float, required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--proto", type=int, default=51, help="IP protocol (17: UDP, e.g. QUIC)")
    r = sub.add_parser("replay")
    r.add_argument("--file", required=True)
    a = ap.parse_args()
    if a.cmd == "page":
        r = page(a.host, a.port, a.objects, a.connections, a.timeout)
        print(json.dumps(r))
        sys.exit(0 if r["ok"] else 1)
    elif a.cmd == "capture-ah":
        capture_ah(a.iface, a.src, a.count, a.seconds, a.out, a.proto)
    elif a.cmd == "replay":
        replay(a.file)
    elif a.cmd == "forge-ah":
        forge_ah(a.src, a.host, a.count)
    elif a.cmd == "hold-serve":
        hold_serve(a.port)
    elif a.cmd == "hold":
        hold(a.host, a.port, a.count, a.seconds)
    elif a.cmd == "syn-flood":
        syn_flood(a.src, a.host, a.port, a.count, a.sources)
    elif a.cmd == "serve":
        with Server((a.bind, a.port), a.cc, a.peers, a.timeout) as srv:
            print(f"serving on {a.bind}:{a.port}", flush=True)
            srv.serve_forever()
    elif a.cmd == "get":
        r = get(a.host, a.port, a.size, a.timeout, rcvbuf=a.rcvbuf)
        print(json.dumps(r))
        sys.exit(0 if r["ok"] else 1)
    else:
        r = many(a.host, a.port, a.size, a.count, a.concurrency, a.timeout, rcvbuf=a.rcvbuf)
        print(json.dumps(r))
        sys.exit(0 if r["failures"] == 0 and r["mismatches"] == 0 else 1)


if __name__ == "__main__":
    main()
