#!/usr/bin/env python3
"""Side-by-side benchmarks for pub/sub and transactions: Oxidis vs redis-server.

Uses compat/bench.py's servers (release oxidis-server and redis-server started
on free ports, `--save ""`), alternating rounds, medians and the Oxidis/Redis ratio.

  python3 compat/bench_pubsub.py                       # both workloads
  python3 compat/bench_pubsub.py --only publish -P 1,16
  python3 compat/bench_pubsub.py --only multi --txn "SET k v;INCR counter"

publish: N subscribers (`redis-cli SUBSCRIBE`, default 50) on one channel, then
         redis-benchmark `PUBLISH chan <3 bytes>` with -c 50.
multi:   C connections each pipelining batches of MULTI / <txn commands> / EXEC
         (default `SET key v` and `INCR counter`), driven by this script;
         reported as transactions per second.
"""
import argparse
import os
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def subscribers(port, n, channel):
    procs = [subprocess.Popen(["redis-cli", "-p", str(port), "SUBSCRIBE", channel],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(n)]
    # Wait until all are registered.
    for _ in range(1000):
        r = bench.command(port, "PUBSUB", "NUMSUB", channel)
        if r.endswith(b":%d\r\n" % n):
            return procs
        time.sleep(0.01)
    raise RuntimeError("subscribers did not register: %r" % r)


def multi_round(port, conns, batch, txn_cmds, seconds):
    """Pipelines `batch` transactions per connection repeatedly for `seconds`;
    returns transactions per second."""
    one = bench.resp("MULTI") + b"".join(bench.resp(*c.split()) for c in txn_cmds) + bench.resp("EXEC")
    payload = one * batch
    # Replies per transaction: +OK, +QUEUED per command, then the EXEC array
    # header and one line per command (all replies here are one line).
    lines_per = 1 + len(txn_cmds) + 1 + len(txn_cmds)
    want = lines_per * batch
    sel = selectors.DefaultSelector()
    state = {}
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        state[s] = [0, b""]
        sel.register(s, selectors.EVENT_READ)
        s.sendall(payload)
    done = 0
    start = time.time()
    end = start + seconds
    while True:
        for key, _ in sel.select(timeout=1):
            s = key.fileobj
            data = s.recv(1 << 20)
            if not data:
                raise RuntimeError("server closed the connection")
            st = state[s]
            if b"-" in data[:1] or b"\r\n-" in data:
                raise RuntimeError("error reply: %r" % data[:200])
            st[0] += data.count(b"\r\n")
            if st[0] >= want:
                st[0] -= want
                done += batch
                if time.time() < end:
                    s.setblocking(True)
                    s.sendall(payload)
                    s.setblocking(False)
                else:
                    sel.unregister(s)
                    s.close()
                    state.pop(s)
        if not state:
            break
    return done / (time.time() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["publish", "multi"], default=None)
    ap.add_argument("-P", "--pipelines", default="1,16")
    ap.add_argument("--subscribers", type=int, default=50)
    ap.add_argument("-n", "--requests", type=int, default=200000)
    ap.add_argument("--conns", type=int, default=50, help="connections for the multi workload")
    ap.add_argument("--batch", type=int, default=16, help="transactions pipelined per round trip")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--txn", default="SET key v;INCR counter", help="commands inside MULTI, ';'-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()

    root = bench.ROOT
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=root, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    oxidis_bin = os.path.join(target, "release", "oxidis-server")
    tmp = tempfile.mkdtemp(prefix="oxidis-bench-")
    common = ["--save", "", "--appendonly", "no", "--bind", "127.0.0.1"]
    rp, op = bench.free_port(), bench.free_port()
    redis = bench.Server("redis", [shutil.which("redis-server"), "--port", str(rp)] + common, rp, tmp)
    oxidis = bench.Server("oxidis", [oxidis_bin, "--port", str(op)] + common, op, tmp)
    subs = []
    try:
        print("%-40s %14s %14s %7s" % ("workload", "redis", "oxidis", "ratio"))
        if a.only in (None, "publish"):
            for s in (redis, oxidis):
                subs += subscribers(s.port, a.subscribers, "chan")
            for p in a.pipelines.split(","):
                args = ["-n", str(a.requests), "-c", "50", "-P", p, "PUBLISH", "chan", "msg"]
                res = {"redis": [], "oxidis": []}
                for _ in range(a.rounds):
                    for s in (redis, oxidis):
                        res[s.name].append(bench.bench_once(s.port, args)[0][1])
                r, o = statistics.median(res["redis"]), statistics.median(res["oxidis"])
                print("%-40s %14.0f %14.0f %6.2fx" % ("PUBLISH to %d subs P%s (rps)" % (a.subscribers, p), r, o, o / r))
                sys.stdout.flush()
        if a.only in (None, "multi"):
            cmds = [c.strip() for c in a.txn.split(";") if c.strip()]
            res = {"redis": [], "oxidis": []}
            for _ in range(a.rounds):
                for s in (redis, oxidis):
                    res[s.name].append(multi_round(s.port, a.conns, a.batch, cmds, a.seconds))
            r, o = statistics.median(res["redis"]), statistics.median(res["oxidis"])
            label = "MULTI/%s/EXEC x%d (txn/s)" % ("/".join(c.split()[0] for c in cmds), a.batch)
            print("%-40s %14.0f %14.0f %6.2fx" % (label, r, o, o / r))
    finally:
        for p in subs:
            p.terminate()
        redis.stop()
        oxidis.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
