#!/usr/bin/env python3
"""Connection soak test: idle crowds, slow subscribers, and clients that vanish mid-way.

Starts the server itself on loopback (no persistence) and runs CYCLES cycles,
each bounded in count and time:

  1. N idle connections are opened (and kept open for the cycle);
  2. SUBS subscribers SUBSCRIBE and never read while MSGS messages of SIZE
     bytes are published (the server runs with a pubsub output limit of
     2 MB: it must close them, not grow memory);
  3. K clients disconnect mid-frame (a partial multibulk, a declared big bulk
     half sent), K mid-MULTI (commands queued, no EXEC), K while blocked in
     BLPOP/BRPOP/BZPOPMIN;
  4. everything is closed.

After each cycle it waits for connected_clients to come back to 1 and prints
RSS (VmRSS) before, at the peak, and after, with blocked_clients and the
channel count; a PING must be answered all along. It fails (exit 1) when
clients do not come back, the server stops answering, or it dies.

    python3 compat/soak.py [--server target/release/oxidis-server] [--port 6428]
        [--cycles 3] [--n 10000] [--subs 50] [--msgs 20000] [--size 1024]
        [--k 2000] [--max-seconds 600]

Run it against redis-server for comparison with --server /usr/bin/redis-server.
"""

import argparse
import os
import socket
import subprocess
import sys
import time

from netutil import enc, raise_nofile, rss_kb


def parse(buf, i=0):
    """One RESP2 reply at buf[i:]: (value, next index), or None if incomplete."""
    end = buf.find(b"\r\n", i)
    if end < 0:
        return None
    kind, line = buf[i:i + 1], buf[i + 1:end]
    if kind in (b"+", b"-", b":"):
        return line, end + 2
    if kind == b"$":
        n = int(line)
        if n < 0:
            return None, end + 2
        if len(buf) < end + 2 + n + 2:
            return None
        return buf[end + 2:end + 2 + n], end + 4 + n
    if kind == b"*":
        items, j = [], end + 2
        for _ in range(max(int(line), 0)):
            r = parse(buf, j)
            if r is None:
                return None
            items.append(r[0])
            j = r[1]
        return items, j
    raise RuntimeError(f"bad reply {buf[i:i + 40]!r}")


class Ctl:
    """The control connection: one request, one reply."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.settimeout(10)

    def call(self, *args):
        self.s.sendall(enc(*args))
        buf = b""
        while True:
            d = self.s.recv(1 << 16)
            if not d:
                raise RuntimeError("control connection closed")
            buf += d
            r = parse(buf)
            if r is not None:
                return r[0]

    def info(self, field):
        for line in self.call("INFO").decode().splitlines():
            if line.startswith(field + ":"):
                return line.split(":", 1)[1]
        return "?"


def rss_mb(pid):
    return rss_kb(pid) / 1024


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    return s


def wait_clients(ctl, want, secs):
    deadline = time.time() + secs
    last = "?"
    while time.time() < deadline:
        last = ctl.info("connected_clients")
        if last == str(want):
            return True, last
        time.sleep(0.1)
    return False, last


def ping_ok(port):
    s = connect(port)
    s.settimeout(10)
    s.sendall(b"PING\r\n")
    ok = s.recv(16) == b"+PONG\r\n"
    s.close()
    return ok


def cycle(port, pid, a, deadline, ctl):
    idle = [connect(port) for _ in range(a.n)]
    peak = rss_mb(pid)

    # Slow subscribers: subscribe, then never read.
    subs = []
    for _ in range(a.subs):
        s = connect(port)
        s.sendall(enc("SUBSCRIBE", "soak"))
        subs.append(s)
    time.sleep(0.2)
    pub = connect(port)
    payload = b"x" * a.size
    batch = enc("PUBLISH", "soak", payload) * 100
    sent = 0
    while sent < a.msgs and time.time() < deadline:
        pub.sendall(batch)
        sent += 100
        # Read the publisher's replies so only the subscribers lag.
        got = 0
        while got < 100:
            got += pub.recv(1 << 16).count(b"\n")
    peak = max(peak, rss_mb(pid))
    if not ping_ok(port):
        raise RuntimeError("no PONG while subscribers lag")
    time.sleep(0.2)
    lagging = int(ctl.call("PUBSUB", "NUMSUB", "soak")[1])

    # Clients that vanish mid-frame, mid-MULTI, while blocked.
    gone = []
    for i in range(a.k):
        s = connect(port)
        kind = i % 5
        if kind == 0:
            s.sendall(b"*3\r\n$3\r\nSET\r\n$4\r\nsoak")
        elif kind == 1:
            s.sendall(b"*3\r\n$3\r\nSET\r\n$4\r\nsoak\r\n$1000000\r\n" + b"y" * 50000)
        elif kind == 2:
            s.sendall(enc("MULTI") + enc("SET", "m%d" % i, "v") + enc("INCR", "c"))
        elif kind == 3:
            s.sendall(enc("BLPOP", "soak:list%d" % (i % 7), 0))
        else:
            s.sendall(enc("BRPOP", "soak:a", "soak:b", 100)
                      if i % 2 else enc("BZPOPMIN", "soak:z", 0))
        gone.append(s)
    time.sleep(0.5)
    peak = max(peak, rss_mb(pid))
    blocked_peak = ctl.info("blocked_clients")
    for s in gone:
        s.close()
    for s in subs:
        s.close()
    pub.close()
    for s in idle:
        s.close()
    return peak, sent, blocked_peak, a.subs - lagging


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--server", default=os.path.join(here, "..", "target", "release", "oxidis-server"))
    ap.add_argument("--port", type=int, default=6428)
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--subs", type=int, default=50)
    ap.add_argument("--msgs", type=int, default=20000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--k", type=int, default=2000)
    ap.add_argument("--max-seconds", type=float, default=600)
    a = ap.parse_args()
    total = a.n + a.subs + a.k + 64
    limit = raise_nofile(total + 256)
    if limit < total:
        raise SystemExit(f"open-file limit {limit} is too low for {total} connections")
    argv = [a.server, "--port", str(a.port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--maxclients", str(total),
            # Slow subscribers pass this within a cycle and must be closed.
            "--client-output-buffer-limit", "pubsub 2mb 1mb 60"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + a.max_seconds
    failed = False
    ctl = None
    try:
        for _ in range(100):
            try:
                ctl = Ctl(a.port)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("server did not start")
        time.sleep(0.5)
        base = rss_mb(proc.pid)
        print(f"{os.path.basename(a.server)}: baseline RSS {base:.1f} MB, "
              f"{a.n} idle + {a.subs} slow subscribers x {a.msgs} msgs of {a.size} B + "
              f"{a.k} vanishing clients per cycle")
        for c in range(a.cycles):
            if time.time() > deadline:
                print("time limit reached")
                break
            t0 = time.time()
            peak, sent, blocked_peak, cut = cycle(a.port, proc.pid, a, deadline, ctl)
            ok, clients = wait_clients(ctl, 1, 30)
            time.sleep(2.5)
            after = rss_mb(proc.pid)
            blocked = ctl.info("blocked_clients")
            chans = ctl.call("PUBSUB", "NUMSUB", "soak")[1].decode()
            alive = proc.poll() is None and ping_ok(a.port)
            print(f"cycle {c + 1}: {time.time() - t0:5.1f} s  RSS peak {peak:7.1f} MB  after {after:6.1f} MB"
                  f"  connected_clients={clients} blocked_clients={blocked} (peak {blocked_peak})"
                  f"  subscribers cut by the output limit={cut}/{a.subs} left={chans}"
                  f"  published={sent}  alive={alive}")
            if not ok or not alive or blocked != "0" or chans != "0":
                failed = True
                break
        print(f"final RSS {rss_mb(proc.pid):.1f} MB (baseline {base:.1f} MB)")
    finally:
        proc.kill()
        proc.wait()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
