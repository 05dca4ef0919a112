#!/usr/bin/env python3
"""Memory per idle connection, and memory after connect/close rounds, Oxidis beside redis-server.

Starts each server itself (loopback, no persistence, maxclients above N), raises
the open-file limit, then for each server:

  1. RSS with one client connected (the baseline);
  2. opens N connections, each sends one PING and reads the reply (with
     --no-ping: sends nothing), and reads
     RSS at once and after 3 s idle: (RSS - baseline) / N is the memory per idle
     connection;
  3. closes them all, then runs ROUNDS more rounds of N connect / PING / close,
     reading RSS and connected_clients after each.

    python3 compat/bench_conns.py [--oxidis target/release/oxidis-server]
        [--redis /usr/bin/redis-server] [--n 10000] [--rounds 11] [--port 6425]

Figures are RSS (VmRSS of the server process) in MB and bytes per connection.
"""

import argparse
import os
import socket
import subprocess
import time

from netutil import raise_nofile, rss_kb


def cmd(s, line):
    s.sendall(line)
    buf = b""
    while True:
        buf += s.recv(65536)
        if buf.startswith(b"$"):
            head, _, rest = buf.partition(b"\r\n")
            if len(rest) >= int(head[1:]) + 2:
                return rest[: int(head[1:])]
        elif buf.endswith(b"\r\n"):
            return buf


def info_field(s, field):
    for line in cmd(s, b"INFO clients\r\n").decode().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    return "?"


def start(argv, port):
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"PING\r\n")
            if s.recv(16) == b"+PONG\r\n":
                return p, s
        except OSError:
            pass
        time.sleep(0.05)
    p.kill()
    raise SystemExit(f"server on port {port} did not start: {argv}")


def open_many(port, n, ping=True):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        socks.append(s)
    if not ping:
        return socks
    for s in socks:
        s.sendall(b"PING\r\n")
    for s in socks:
        if s.recv(16) != b"+PONG\r\n":
            raise SystemExit("no PONG")
    return socks


def wait_clients(ctl, want, secs=10):
    deadline = time.time() + secs
    while time.time() < deadline:
        if info_field(ctl, "connected_clients") == str(want):
            return True
        time.sleep(0.05)
    return False


def measure(label, argv, port, n, rounds, ping):
    proc, ctl = start(argv, port)
    try:
        time.sleep(0.5)
        base = rss_kb(proc.pid)
        socks = open_many(port, n, ping)
        wait_clients(ctl, n + 1)
        time.sleep(0.2)
        at_once = rss_kb(proc.pid)
        time.sleep(3.0)
        idle = rss_kb(proc.pid)
        print(f"{label:8} baseline {base / 1024:7.1f} MB  with {n} idle conns {idle / 1024:7.1f} MB"
              f"  per conn {(at_once - base) * 1024 / n:7.0f} B at once,"
              f" {(idle - base) * 1024 / n:7.0f} B after 3 s idle")
        for s in socks:
            s.close()
        wait_clients(ctl, 1)
        time.sleep(0.5)
        after = [rss_kb(proc.pid)]
        for _ in range(rounds):
            socks = open_many(port, n)
            for s in socks:
                s.close()
            ok = wait_clients(ctl, 1)
            time.sleep(0.5)
            after.append(rss_kb(proc.pid))
            if not ok:
                print(f"{label:8} connected_clients did not return to 1")
        time.sleep(2.5)
        settled = rss_kb(proc.pid)
        print(f"{label:8} RSS after close and {rounds} connect/close rounds (MB): "
              + " ".join(f"{kb / 1024:.1f}" for kb in after)
              + f"  settled {settled / 1024:.1f}  connected_clients={info_field(ctl, 'connected_clients')}")
        return base, idle, after, settled
    finally:
        ctl.close()
        proc.kill()
        proc.wait()


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--oxidis", default=os.path.join(here, "..", "target", "release", "oxidis-server"))
    ap.add_argument("--redis", default="/usr/bin/redis-server")
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--port", type=int, default=6425, help="redis on PORT, oxidis on PORT+1")
    ap.add_argument("--no-ping", action="store_true",
                    help="the idle connections send nothing (else one PING each)")
    a = ap.parse_args()
    limit = raise_nofile(2 * a.n + 256)
    if limit < a.n + 64:
        raise SystemExit(f"open-file limit {limit} is too low for {a.n} connections")
    common = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
              "--maxclients", str(a.n + 100)]
    print(f"N={a.n} rounds={a.rounds} idle connections {'send nothing' if a.no_ping else 'sent one PING'}"
          f" (ulimit -n {limit})")
    if a.redis:
        measure("redis", [a.redis, "--port", str(a.port)] + common, a.port, a.n, a.rounds,
                not a.no_ping)
    measure("oxidis", [a.oxidis, "--port", str(a.port + 1)] + common, a.port + 1, a.n, a.rounds,
            not a.no_ping)


if __name__ == "__main__":
    main()
