#!/usr/bin/env python3
"""Connection-semantics probes for the kernel split engine's test (kernel_split.rs).

  split_probe.py serve --port P
      A threaded server. Each connection starts with one line naming a test:
        PEER   answers "<ip> <port>" of getpeername(): whom the server sees.
        HALF   reads to EOF (the client's FIN), answers the byte count, waits 300 ms,
               answers "late", closes: the server-to-client direction outlives the FIN.
        RST    closes with SO_LINGER {1, 0}: a RST to the client.
        HOLD   reads until EOF or an error, idle meanwhile.

  split_probe.py peer|half|rst|refused|limit --host H --port P [--hold-port Q] [--count N]
      One probe from the client; prints one JSON object.
"""

import argparse
import json
import os
import socket
import socketserver
import struct
import time


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        s = self.request
        line = self.rfile.readline().strip()
        if line == b"PEER":
            ip, port = s.getpeername()
            s.sendall(f"{ip} {port}".encode())
        elif line == b"HALF":
            n = 0
            while True:
                b = self.rfile.read1(65536)
                if not b:
                    break
                n += len(b)
            s.sendall(str(n).encode())
            time.sleep(0.3)
            s.sendall(b" late")
        elif line == b"RST":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            # Closed here, not by socketserver, which would shut down (a FIN) first.
            os.close(s.detach())
        elif line == b"HOLD":
            try:
                while self.rfile.read1(65536):
                    pass
            except OSError:
                pass


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 128


def recv_all(s):
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            return out
        out += b


def outcome(s):
    """What the next read says: data, EOF or the error's name."""
    try:
        b = s.recv(100)
        return "eof" if not b else b.decode(errors="replace")
    except ConnectionResetError:
        return "reset"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return type(e).__name__


def connect_and_read(host, port):
    """Connect and read: the handshake completes, and a RST right after it shows at the
    first read, or already in connect() when it came before Python looked at SO_ERROR."""
    try:
        c = socket.create_connection((host, port), timeout=5)
    except ConnectionResetError:
        return "reset"
    return outcome(c)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd")
    ap.add_argument("--host", default="")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--hold-port", type=int)
    ap.add_argument("--count", type=int, default=3)
    a = ap.parse_args()
    if a.cmd == "serve":
        Server(("0.0.0.0", a.port), Handler).serve_forever()
        return
    if a.cmd == "limit":
        held = [socket.create_connection((a.host, a.hold_port), timeout=10)
                for _ in range(a.count)]
        for h in held:
            h.sendall(b"HOLD\n")
        time.sleep(0.5)
        beyond = connect_and_read(a.host, a.hold_port)
        print(json.dumps({"held": len(held), "beyond": beyond}), flush=True)
        # Idle: the engine reaps them (both legs reset) after idle_timeout.
        for h in held:
            h.settimeout(15)
        t0 = time.monotonic()
        ends = [outcome(h) for h in held]
        print(json.dumps({"held_end": ends, "after_s": round(time.monotonic() - t0, 1)}))
        return
    if a.cmd == "refused":
        # The engine's fail-open handshake: connect() succeeds, then a RST comes.
        print(json.dumps({"read": connect_and_read(a.host, a.port)}))
        return
    c = socket.create_connection((a.host, a.port), timeout=10)
    if a.cmd == "peer":
        c.sendall(b"PEER\n")
        seen = recv_all(c).decode()
        me = "%s %d" % c.getsockname()
        print(json.dumps({"server_sees": seen, "client_is": me,
                          "client_sees": "%s %d" % c.getpeername()}))
    elif a.cmd == "half":
        body = bytes(range(256)) * 400
        c.sendall(b"HALF\n" + body)
        c.shutdown(socket.SHUT_WR)
        print(json.dumps({"sent": len(body), "answer": recv_all(c).decode()}))
    elif a.cmd == "rst":
        c.sendall(b"RST\n")
        print(json.dumps({"read": outcome(c)}))


if __name__ == "__main__":
    main()
