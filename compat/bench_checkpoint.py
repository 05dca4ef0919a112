#!/usr/bin/env python3
"""OXIDIS CHECKPOINT RESTORE against FLUSHALL plus reloading the fixtures, on one Oxidis.

Starts oxidis-server itself (loopback, no persistence, --enable-test-controls
yes), loads N fixture keys (`SET fixture:<i> value-<i, 32 digits>`) with
`redis-cli --pipe`, saves a checkpoint, then ROUNDS times, alternating:
changes two keys and times `OXIDIS CHECKPOINT RESTORE base` (one round trip);
changes a key and times `FLUSHALL` plus the same `redis-cli --pipe` reload.
Prints both medians and their ratio.

    python3 compat/bench_checkpoint.py [--oxidis target/release/oxidis-server]
        [--n 100000] [--rounds 7] [--port 24020]
"""
import argparse
import os
import socket
import statistics
import subprocess
import tempfile
import time


def cmd(s, *args):
    req = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    s.sendall(req)
    buf = b""
    while not buf.endswith(b"\r\n"):
        buf += s.recv(65536)
    return buf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--oxidis", default="target/release/oxidis-server")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--port", type=int, default=24020)
    o = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        fixtures = os.path.join(d, "fixtures.resp")
        with open(fixtures, "wb") as f:
            for i in range(o.n):
                k, v = b"fixture:%d" % i, b"value-%032d" % i
                f.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
        srv = subprocess.Popen([o.oxidis, "--port", str(o.port), "--save", "", "--appendonly", "no",
                                "--enable-test-controls", "yes", "--dir", d],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(500):
                try:
                    s = socket.create_connection(("127.0.0.1", o.port))
                    break
                except OSError:
                    time.sleep(0.01)

            def load():
                with open(fixtures, "rb") as f:
                    subprocess.run(["redis-cli", "-p", str(o.port), "--pipe"], stdin=f,
                                   check=True, capture_output=True)

            load()
            size = b":%d\r\n" % o.n
            assert cmd(s, b"DBSIZE") == size
            assert cmd(s, b"OXIDIS", b"CHECKPOINT", b"SAVE", b"base") == b"+OK\r\n"
            restore, reload = [], []
            for _ in range(o.rounds):
                cmd(s, b"SET", b"extra", b"x")
                cmd(s, b"DEL", b"fixture:1")
                t = time.perf_counter()
                assert cmd(s, b"OXIDIS", b"CHECKPOINT", b"RESTORE", b"base") == b"+OK\r\n"
                restore.append(time.perf_counter() - t)
                assert cmd(s, b"DBSIZE") == size
                cmd(s, b"SET", b"extra", b"x")
                t = time.perf_counter()
                cmd(s, b"FLUSHALL")
                load()
                reload.append(time.perf_counter() - t)
                assert cmd(s, b"DBSIZE") == size
        finally:
            srv.kill()
            srv.wait()
    ms = lambda v: "%.1f ms" % (statistics.median(v) * 1000)
    print("%d keys: CHECKPOINT RESTORE median %s, FLUSHALL + redis-cli --pipe reload median %s, %.1fx"
          % (o.n, ms(restore), ms(reload), statistics.median(reload) / statistics.median(restore)))


if __name__ == "__main__":
    main()
