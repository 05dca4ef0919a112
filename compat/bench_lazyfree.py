#!/usr/bin/env python3
"""Lazy free benchmark: GET latency while a big value or a big dataset is freed, Oxidis vs a real redis-server, same run.

For each server (release oxidis-server, then redis-server; both `--save "" --appendonly no`,
each in its own temp --dir, one at a time so their memory does not add up) and each scenario:

  zset DEL         DEL of a sorted set of Z members (lazyfree-lazy-user-del no: freed inline)
  zset DEL lazy    the same DEL with lazyfree-lazy-user-del yes
  zset UNLINK      UNLINK of the same sorted set
  FLUSHALL ASYNC   of K string keys (DEBUG POPULATE K)
  FLUSHALL SYNC    the same, freed inline, for reference
  idle             (only when asked for) a PING: nothing is freed

a prober connection sends GET probe (one request at a time) from just before the deleting
command is sent until the server has nothing left to free (the command answered and INFO's
lazyfree_pending_objects is 0) and at least --min-window seconds passed (`idle`: a PING, so
the GETs over that window with nothing freed, the machine's noise floor), and the script
reports those GETs' p50 / p99 / max latency in ms, how many there were, how long the deleting
command took to answer, and how long until the memory was freed. The set is filled with ZADD batches through `redis-cli --pipe` from one file
written once per run; the keys with DEBUG POPULATE (hence `--enable-debug-command yes`).

Each round ends with the p99 ratio (Oxidis / Redis, lower is better) per scenario, and a run of
several rounds with the median of those ratios and how many rounds Oxidis's p99 was at most
Redis's. The load average is printed before each round.

Example:
  nice python3 compat/bench_lazyfree.py                      # Z = 10M, K = 5M, 1 round
  nice python3 compat/bench_lazyfree.py --rounds 3
  nice python3 compat/bench_lazyfree.py --zset 1000000 --keys 500000
  nice python3 compat/bench_lazyfree.py --scenarios unlink,flushall-async --rounds 5
  nice python3 compat/bench_lazyfree.py --scenarios idle,unlink,flushall-async --min-window 10
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time

from bench import add_binary_args, free_port, oxidis_binary
from bench_persist import cli, start, stop
from netutil import enc


def zset_file(path, members, batch=1000):
    with open(path, "wb") as f:
        for start_i in range(0, members, batch):
            args = ["ZADD", "big"]
            for i in range(start_i, min(members, start_i + batch)):
                args += [str(i), "member:%d" % i]
            f.write(enc(*args))


def fill_zset(port, path, members):
    with open(path, "rb") as f:
        subprocess.run(["redis-cli", "-p", str(port), "--pipe"], stdin=f,
                       stdout=subprocess.DEVNULL, check=True)
    got = int(cli(port, "ZCARD", "big"))
    assert got == members, got


class Conn:
    """A raw RESP connection that reads one simple reply per request."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def call(self, *args):
        self.s.sendall(enc(*args))
        buf = b""
        while True:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
            if self.complete(buf):
                return buf

    @staticmethod
    def complete(buf):
        if not buf.endswith(b"\r\n"):
            return False
        if buf[:1] == b"$":
            n = int(buf[1:buf.index(b"\r\n")])
            return n < 0 or len(buf) >= buf.index(b"\r\n") + 2 + n + 2
        return True

    def close(self):
        self.s.close()


def probe(port, stop_flag, lat):
    c = Conn(port)
    try:
        while not stop_flag.is_set():
            t0 = time.perf_counter()
            c.call("GET", "probe")
            lat.append(time.perf_counter() - t0)
    finally:
        c.close()


def measure(port, min_window, *command):
    """GET latencies from just before `command` until nothing is left to free (and at least
    `min_window` seconds)."""
    lat = []
    stop_flag = threading.Event()
    t = threading.Thread(target=probe, args=(port, stop_flag, lat))
    t.start()
    time.sleep(0.3)
    lat.clear()
    c = Conn(port)
    t0 = time.perf_counter()
    c.call(*command)
    answered = time.perf_counter() - t0
    # Poll from the deleting connection, so the prober's GETs are the only
    # measured requests; 1 ms between polls.
    while True:
        pending = None
        for line in c.call("INFO", "memory").decode().split("\r\n"):
            if line.startswith("lazyfree_pending_objects:"):
                pending = int(line.split(":")[1])
        if pending == 0 and time.perf_counter() - t0 >= min_window:
            break
        time.sleep(0.001)
    freed = time.perf_counter() - t0
    stop_flag.set()
    t.join()
    c.close()
    lat = sorted(lat)
    ms = lambda x: x * 1000.0
    return {
        "gets": len(lat),
        "p50": ms(lat[len(lat) // 2]) if lat else None,
        "p99": ms(lat[min(len(lat) - 1, int(len(lat) * 0.99))]) if lat else None,
        "max": ms(lat[-1]) if lat else None,
        "answer_ms": ms(answered),
        "freed_ms": ms(freed),
    }


# (--scenarios name, title, data, CONFIG SETs, command)
SCENARIOS = [
    ("del", "zset DEL", "zset", [], ("DEL", "big")),
    ("del-lazy", "zset DEL lazy-user-del", "zset", [("lazyfree-lazy-user-del", "yes")], ("DEL", "big")),
    ("unlink", "zset UNLINK", "zset", [], ("UNLINK", "big")),
    ("flushall-async", "FLUSHALL ASYNC", "keys", [], ("FLUSHALL", "ASYNC")),
    ("flushall-sync", "FLUSHALL SYNC", "keys", [], ("FLUSHALL", "SYNC")),
    # The noise floor: the same GETs over the minimum window, nothing freed.
    ("idle", "idle (PING)", "none", [], ("PING",)),
]


def run_server(name, binary, zpath, args, scenarios):
    d = tempfile.mkdtemp(prefix="bench-lazyfree-%s-" % name)
    port = free_port()
    out = {}
    p = start(binary, d, port, ["--enable-debug-command", "yes"])
    try:
        cli(port, "SET", "probe", "x" * 16)
        for _, title, data, configs, command in scenarios:
            if data == "zset":
                fill_zset(port, zpath, args.zset)
            elif data == "keys":
                cli(port, "DEBUG", "POPULATE", str(args.keys))
                cli(port, "SET", "probe", "x" * 16)
            for k, v in configs:
                cli(port, "CONFIG", "SET", k, v)
            r = measure(port, args.min_window, *command)
            for k, _ in configs:
                cli(port, "CONFIG", "SET", k, "no")
            cli(port, "SET", "probe", "x" * 16)
            out[title] = r
    finally:
        stop(p, port)
        shutil.rmtree(d, ignore_errors=True)
    return out


def fmt(v):
    return "-" if v is None else ("%.2f" % v if isinstance(v, float) else str(v))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zset", type=int, default=10_000_000, help="sorted set members")
    ap.add_argument("--keys", type=int, default=5_000_000, help="keys for FLUSHALL")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--min-window", type=float, default=0.0, metavar="SECONDS",
                    help="measure GETs for at least that long, so a server that frees faster is "
                         "not judged on fewer GETs (the idle scenario lasts exactly that)")
    ap.add_argument("--scenarios", default=",".join(x[0] for x in SCENARIOS if x[0] != "idle"),
                    help="comma separated, of: " + ", ".join(x[0] for x in SCENARIOS))
    add_binary_args(ap)
    args = ap.parse_args()
    oxidis = oxidis_binary(args)
    wanted = args.scenarios.split(",")
    unknown = set(wanted) - {x[0] for x in SCENARIOS}
    if unknown:
        ap.error("unknown scenario(s): " + ", ".join(sorted(unknown)))
    scenarios = [x for x in SCENARIOS if x[0] in wanted]
    work = tempfile.mkdtemp(prefix="bench-lazyfree-data-")
    zpath = os.path.join(work, "zset.resp")
    try:
        if any(x[2] == "zset" for x in scenarios):
            zset_file(zpath, args.zset)
        print("zset %d members, %d keys, %d round(s); GET latency in ms while freeing"
              % (args.zset, args.keys, args.rounds))
        hdr = "%-6s %-24s %6s %8s %8s %8s %10s %10s" % (
            "round", "scenario", "server", "gets", "p50", "p99", "max", "answer_ms")
        print(hdr + " %10s" % "freed_ms")
        ratios = {x[1]: [] for x in scenarios}
        for rnd in range(1, args.rounds + 1):
            print("round %d: load average %s" % (rnd, " ".join(open("/proc/loadavg").read().split()[:3])),
                  flush=True)
            # Alternate which server goes first, so neither always runs on the fresher machine.
            order = [("oxidis", oxidis), ("redis", args.redis)]
            if rnd % 2 == 0:
                order.reverse()
            res = {name: run_server(name, binary, zpath, args, scenarios) for name, binary in order}
            for _, title, _, _, _ in scenarios:
                for srv in ("oxidis", "redis"):
                    r = res[srv][title]
                    print("%-6d %-24s %6s %8d %8s %8s %10s %10s %10s" % (
                        rnd, title, srv, r["gets"], fmt(r["p50"]), fmt(r["p99"]), fmt(r["max"]),
                        fmt(r["answer_ms"]), fmt(r["freed_ms"])), flush=True)
                o, r = res["oxidis"][title]["p99"], res["redis"][title]["p99"]
                if o is not None and r:
                    ratios[title].append(o / r)
                    print("%-6d %-24s p99 oxidis/redis %.2fx" % (rnd, title, o / r), flush=True)
        if args.rounds > 1:
            for title, rs in ratios.items():
                if rs:
                    print("%-24s p99 oxidis/redis over %d rounds: median %.2fx [%.2f..%.2f], "
                          "oxidis <= redis in %d" % (title, len(rs), statistics.median(rs), min(rs),
                                                     max(rs), sum(1 for x in rs if x <= 1.0)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
