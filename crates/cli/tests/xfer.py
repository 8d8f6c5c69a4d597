#!/usr/bin/env python3
"""Byte-exact transfers for the daemon tests: a server that sends N deterministic bytes per
request and records the peer address it saw, and a client that runs K requests, C at a time,
and checks every byte with SHA-256.

    xfer.py serve PORT PEERS_FILE
    xfer.py fetch HOST PORT SIZE COUNT CONCURRENCY [TIMEOUT_S]   -> one JSON line on stdout
    xfer.py hold-serve PORT                 accept connections and keep them open, idle
    xfer.py hold HOST PORT N SECONDS        open N idle connections, hold them, report
    xfer.py syn-flood SRC DST PORT N        N SYNs from SRC (distinct source ports), raw socket

The content of a response of SIZE bytes is a 1 MiB block of SHA-256 in counter mode over the
size, repeated with each copy's index in its first 8 bytes (so a lost, doubled or misplaced
block changes the hash): both ends know it without sending it twice, and making it is cheap at
any size.
"""
import hashlib
import json
import socket
import socketserver
import sys
import threading
import time


BLOCK = 1 << 20
_bases = {}


def blocks(size):
    """The response of SIZE bytes, block by block."""
    base = _bases.get(size)
    if base is None:
        out = bytearray()
        i = 0
        while len(out) < BLOCK:
            out += hashlib.sha256(b"%d:%d" % (size, i)).digest()
            i += 1
        base = _bases[size] = bytes(out[:BLOCK])
    sent = 0
    i = 0
    while sent < size:
        b = (i.to_bytes(8, "big") + base[8:])[: size - sent]
        yield b
        sent += len(b)
        i += 1


def serve(port, peers_file):
    lock = threading.Lock()

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            line = self.rfile.readline(64)
            try:
                size = int(line.strip())
            except ValueError:
                return
            with lock:
                with open(peers_file, "a") as f:
                    f.write(self.client_address[0] + "\n")
            for b in blocks(size):
                self.wfile.write(b)

    socketserver.ThreadingTCPServer.allow_reuse_address = True
    socketserver.ThreadingTCPServer.daemon_threads = True
    socketserver.ThreadingTCPServer.request_queue_size = 1024
    with socketserver.ThreadingTCPServer(("0.0.0.0", port), Handler) as srv:
        srv.serve_forever()


def fetch(host, port, size, count, concurrency, timeout):
    expected = []

    def want():
        # Computed once, after the first transfer: connecting must not wait for it.
        with lock:
            if not expected:
                h = hashlib.sha256()
                for b in blocks(size):
                    h.update(b)
                expected.append(h.hexdigest())
            return expected[0]
    results = []
    lock = threading.Lock()
    next_i = [0]

    def one():
        t0 = time.monotonic()
        r = {"ok": False}
        try:
            s = socket.create_connection((host, port), timeout=timeout)
            r["peer"] = s.getpeername()[0]
            s.sendall(b"%d\n" % size)
            h = hashlib.sha256()
            got = 0
            first = None
            while True:
                b = s.recv(1 << 16)
                if not b:
                    break
                if first is None:
                    first = time.monotonic()
                h.update(b)
                got += len(b)
            s.close()
            r.update(ok=(got == size and h.hexdigest() == want()), bytes=got,
                     ttfb=(first - t0) if first else None, total=time.monotonic() - t0)
        except OSError as e:
            r.update(error=str(e), total=time.monotonic() - t0)
        with lock:
            results.append(r)

    def worker():
        while True:
            with lock:
                if next_i[0] >= count:
                    return
                next_i[0] += 1
            one()

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = [r for r in results if r["ok"]]
    print(json.dumps({
        "count": len(results),
        "ok": len(ok),
        "mismatched": sum(1 for r in results if "error" not in r and not r["ok"]),
        "errors": sorted({r["error"] for r in results if "error" in r}),
        "peers": sorted({r.get("peer") for r in results if r.get("peer")}),
        "ttfb_min": min((r["ttfb"] for r in ok if r["ttfb"] is not None), default=None),
        "total_max": max((r["total"] for r in results), default=None),
    }))


def hold_serve(port):
    import selectors
    sel = selectors.DefaultSelector()
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("0.0.0.0", port))
    lsock.listen(4096)
    lsock.setblocking(False)
    sel.register(lsock, selectors.EVENT_READ)
    held = []
    while True:
        for key, _ in sel.select():
            if key.fileobj is lsock:
                try:
                    while True:
                        c, _ = lsock.accept()
                        held.append(c)
                except BlockingIOError:
                    pass


def hold(host, port, n, seconds):
    socks, errors = [], set()
    t0 = time.monotonic()
    for _ in range(n):
        try:
            socks.append(socket.create_connection((host, port), timeout=10))
        except OSError as e:
            errors.add(str(e))
    opened = time.monotonic() - t0
    print(json.dumps({"opened": len(socks), "errors": sorted(errors), "seconds": opened}),
          flush=True)
    time.sleep(seconds)
    for s in socks:
        s.close()


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(int.from_bytes(b[i:i + 2], "big") for i in range(0, len(b), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def syn_flood(src, dst, port, n):
    import struct
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    s4, d4 = socket.inet_aton(src), socket.inet_aton(dst)
    sent = 0
    for i in range(n):
        sport = 1024 + i % 64000
        seq = (i * 2654435761) & 0xFFFFFFFF
        tcp = struct.pack("!HHIIBBHHH", sport, port, seq, 0, 5 << 4, 0x02, 64240, 0, 0)
        pseudo = s4 + d4 + struct.pack("!BBH", 0, 6, len(tcp))
        tcp = tcp[:16] + struct.pack("!H", checksum(pseudo + tcp)) + tcp[18:]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40, i & 0xFFFF, 0, 64, 6, 0, s4, d4)
        ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
        try:
            sock.sendto(ip + tcp, (dst, 0))
            sent += 1
        except OSError:
            time.sleep(0.001)
    print(json.dumps({"sent": sent}))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3])
    elif sys.argv[1] == "hold-serve":
        hold_serve(int(sys.argv[2]))
    elif sys.argv[1] == "hold":
        hold(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    elif sys.argv[1] == "syn-flood":
        syn_flood(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        a = sys.argv
        fetch(a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6]),
              float(a[7]) if len(a) > 7 else 60.0)
