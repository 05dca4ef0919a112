#!/usr/bin/env python3
"""A big multibulk request sent in pieces, and the PING latency another client sees meanwhile.

One client sends `*N` then N one-byte arguments (`$1\\r\\na\\r\\n`) in chunks; a
second client sends PING every few milliseconds and times each reply until the
first client's request is answered. A server that parses the request again from
its first byte on every read spends O(N^2) time and the PINGs wait behind it.

    python3 compat/bench_reparse.py 6379:redis 6380:oxidis [--args 3000000] [--chunk 16384] [--pause-ms 1]

Each PORT:LABEL is a server already running on 127.0.0.1. Prints, per server,
the upload time and the PING latency median / p99 / max in milliseconds.
"""

import argparse
import socket
import statistics
import threading
import time


def ping_loop(port, stop, lat):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while not stop.is_set():
        t = time.perf_counter()
        s.sendall(b"PING\r\n")
        buf = b""
        while not buf.endswith(b"\r\n"):
            buf += s.recv(64)
        lat.append((time.perf_counter() - t) * 1000)
        time.sleep(0.005)
    s.close()


def run(port, nargs, chunk, pause):
    lat = []
    stop = threading.Event()
    pinger = threading.Thread(target=ping_loop, args=(port, stop, lat))
    big = socket.create_connection(("127.0.0.1", port))
    pinger.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    payload = b"$1\r\na\r\n" * (chunk // 7)
    per = chunk // 7
    big.sendall(b"*%d\r\n" % nargs)
    sent = 0
    while sent < nargs:
        n = min(per, nargs - sent)
        big.sendall(payload if n == per else b"$1\r\na\r\n" * n)
        sent += n
        if pause:
            time.sleep(pause)
    reply = b""
    while not reply.endswith(b"\r\n"):
        d = big.recv(4096)
        if not d:
            break
        reply += d
    elapsed = time.perf_counter() - t0
    stop.set()
    pinger.join()
    big.close()
    return elapsed, lat, reply[:40]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("servers", nargs="+", help="PORT:LABEL")
    ap.add_argument("--args", type=int, default=3_000_000)
    ap.add_argument("--chunk", type=int, default=16384)
    ap.add_argument("--pause-ms", type=float, default=1.0,
                    help="pause between chunks, so the server reads the request in pieces")
    a = ap.parse_args()
    for spec in a.servers:
        port, label = spec.split(":", 1)
        elapsed, lat, reply = run(int(port), a.args, a.chunk, a.pause_ms / 1000)
        lat.sort()
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan")
        print(f"{label:10} args={a.args} upload+reply {elapsed:7.2f} s  "
              f"PING n={len(lat)} median {statistics.median(lat):8.3f} ms  "
              f"p99 {p99:8.3f} ms  max {lat[-1]:8.3f} ms  reply {reply!r}")


if __name__ == "__main__":
    main()
