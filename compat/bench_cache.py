#!/usr/bin/env python3
"""Cache quality: hit rate under maxmemory with allkeys-lru / allkeys-lfu, Oxidis vs a real redis-server, same run.

For each policy (and each maxmemory-samples value) both servers start fresh with the same
`--maxmemory`, `--maxmemory-policy` and `--maxmemory-samples` (`--save "" --appendonly no`,
each in its own temp --dir) and are driven in lockstep by one deterministic access trace, so
both see the same requests at the same wall-clock times (the LRU clock has 1 s resolution,
the LFU decay a 1 min one):

  cache workload   keys drawn as `redis-cli --lru-test N` draws them (powerLawRand(1, N, 6.2):
                   80% of accesses go to 20% of the keys), in batches of 250 pipelined GETs;
                   each miss is then SET (5-byte value, as redis-cli's). The first --warm
                   accesses fill the cache; hits are counted over the next --ops accesses.

Per server it prints the hit rate, the keys held at the end (DBSIZE), evicted_keys and
used_memory, and two references computed on the same trace for that many keys: an exact LRU
cache and the best static cache (the most popular keys held: 1-(1-C/N)^7.2). The ratio
column is Oxidis's hit rate over Redis's. At the same maxmemory a server whose keys take less
memory holds more of them: "keys" says how much of a difference comes from that, and
"vs exact LRU" (hit rate over the exact LRU's at the server's own key count) compares the
eviction policies alone.

--lru-test SECONDS also runs `redis-cli --lru-test N` itself (50% SET, 50% GET of the same
power-law keys, pipelined by 250, one line of hit rate per second) against a fresh pair of
servers at the same time for that long, and prints the mean hit rate of the second half of
its lines for each server. It is time based (a faster server does more requests, so fills
sooner), hence second to the trace above.

Examples:
  nice python3 compat/bench_cache.py                       # N = 1M, 20mb, samples 5, both policies
  nice python3 compat/bench_cache.py --samples 5,10 --lru-test 30
  nice python3 compat/bench_cache.py --keys 200000 --maxmemory 5mb --warm 300000 --ops 300000
  nice python3 compat/bench_cache.py --oxidis-maxmemory 15mb   # about as many keys as Redis in 20mb
"""
import argparse
import collections
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from bench import add_binary_args, free_port, oxidis_binary
from bench_persist import cli, start, stop

BATCH = 250
ALPHA = 6.2


def power_law(rng, lo, hi, alpha=ALPHA):
    """redis-cli's powerLawRand(lo, hi, alpha): an integer in [lo, hi], biased to lo."""
    hi += 1
    r = rng.random()
    a1 = alpha + 1
    pl = ((hi ** a1 - lo ** a1) * r + lo ** a1) ** (1.0 / a1)
    return (hi - 1 - int(pl)) + lo


def trace(n_keys, total, seed):
    rng = random.Random(seed)
    return [power_law(rng, 1, n_keys) for _ in range(total)]


class Conn:
    """A pipelining RESP connection for GET (5-byte or nil) and SET replies."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.pos = 0
        self.errors = 0

    def line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                out = self.buf[self.pos:i]
                self.pos = i + 2
                return out
            self.buf = self.buf[self.pos:]
            self.pos = 0
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk

    def reply_hit(self):
        """Reads one reply; True for a bulk string, False for nil (an error counts apart)."""
        head = self.line()
        if head[:1] == b"$":
            if head == b"$-1":
                return False
            self.line()  # values never hold CRLF
            return True
        if head[:1] == b"-":
            self.errors += 1
        return False

    def send(self, data):
        self.s.sendall(data)

    def close(self):
        self.s.close()


def get_cmd(k):
    key = b"lru:%d" % k
    return b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key)


def set_cmd(k, val):
    key = b"lru:%d" % k
    return b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$5\r\n%s\r\n" % (len(key), key, val)


def info_fields(port, *names):
    out = cli(port, "INFO")
    got = {}
    for line in out.splitlines():
        k, _, v = line.partition(":")
        if k in names:
            got[k] = v.strip()
    return got


def run_pair(servers, keys, warm, rng_vals):
    """Drives every server with the same trace in lockstep; returns hits per server."""
    conns = [Conn(s["port"]) for s in servers]
    hits = [0] * len(servers)
    for start_i in range(0, len(keys), BATCH):
        batch = keys[start_i:start_i + BATCH]
        gets = b"".join(get_cmd(k) for k in batch)
        for c in conns:
            c.send(gets)
        for si, c in enumerate(conns):
            missed = []
            for j, k in enumerate(batch):
                if c.reply_hit():
                    if start_i + j >= warm:
                        hits[si] += 1
                else:
                    missed.append(k)
            c.missed = missed
        for c in conns:
            if c.missed:
                c.send(b"".join(set_cmd(k, rng_vals[k % len(rng_vals)]) for k in c.missed))
        for c in conns:
            for _ in c.missed:
                c.reply_hit()
    for s, c in zip(servers, conns):
        s["errors"] = c.errors
        c.close()
    return hits


def exact_lru_hits(keys, warm, capacity):
    """Hits of an exact LRU cache of `capacity` keys (GET, then SET on a miss) on the trace."""
    cache = collections.OrderedDict()
    hits = 0
    for i, k in enumerate(keys):
        if k in cache:
            cache.move_to_end(k)
            if i >= warm:
                hits += 1
        else:
            cache[k] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return hits


def best_static(n_keys, capacity):
    """Hit rate of a cache holding the `capacity` most popular keys (the trace's distribution)."""
    return 1.0 - (1.0 - min(capacity, n_keys) / n_keys) ** (ALPHA + 1)


def server_args(a, name, policy, samples):
    mm = a.oxidis_maxmemory if name == "oxidis" and a.oxidis_maxmemory else a.maxmemory
    return ["--maxmemory", mm, "--maxmemory-policy", policy,
            "--maxmemory-samples", str(samples), "--bind", "127.0.0.1"]


def start_pair(a, policy, samples, tmp, tag):
    servers = []
    for name, binary in (("oxidis", a.oxidis), ("redis", a.redis)):
        d = tempfile.mkdtemp(prefix="bench-cache-%s-%s-" % (name, tag), dir=tmp)
        port = free_port()
        p = start(binary, d, port, server_args(a, name, policy, samples))
        servers.append({"name": name, "proc": p, "port": port, "dir": d})
    return servers


def stop_pair(servers):
    for s in servers:
        stop(s["proc"], s["port"])
        shutil.rmtree(s["dir"], ignore_errors=True)


def cache_workload(a, policy, samples, keys, tmp, vals):
    servers = start_pair(a, policy, samples, tmp, policy)
    try:
        t0 = time.time()
        hits = run_pair(servers, keys, a.warm, vals)
        secs = time.time() - t0
        for s, h in zip(servers, hits):
            s["hits"] = h
            s["keys"] = int(cli(s["port"], "DBSIZE"))
            f = info_fields(s["port"], "evicted_keys", "used_memory")
            s["evicted"] = int(f.get("evicted_keys", 0))
            s["used"] = int(f.get("used_memory", 0))
    finally:
        stop_pair(servers)
    return servers, secs


def lru_test(a, policy, samples, tmp):
    """`redis-cli --lru-test N` against both servers at once for a.lru_test seconds."""
    servers = start_pair(a, policy, samples, tmp, "lrutest")
    try:
        procs = [subprocess.Popen(
            ["timeout", str(a.lru_test), "stdbuf", "-oL", "redis-cli", "-p", str(s["port"]),
             "--lru-test", str(a.keys)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for s in servers]
        outs = [p.communicate()[0] for p in procs]
        res = []
        for s, out in zip(servers, outs):
            rates, gets = [], []
            for line in out.splitlines():
                # "<n> Gets/sec | Hits: <h> (<p>%) | Misses: <m> (<q>%)"
                if "Gets/sec" in line:
                    gets.append(int(line.split()[0]))
                    rates.append(float(line.split("(")[1].split("%")[0]))
            tail = rates[len(rates) // 2:]
            tail_gets = gets[len(gets) // 2:]
            res.append((s["name"], sum(tail) / len(tail) if tail else float("nan"),
                        sum(tail_gets) / len(tail_gets) if tail_gets else 0, len(rates),
                        int(cli(s["port"], "DBSIZE"))))
    finally:
        stop_pair(servers)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=1_000_000, help="keyspace (redis-cli --lru-test N)")
    ap.add_argument("--maxmemory", default="20mb")
    ap.add_argument("--oxidis-maxmemory", default=None,
                    help="a different maxmemory for Oxidis, to compare the policies at about the "
                         "same number of keys held (see the keys column)")
    ap.add_argument("--policies", default="allkeys-lru,allkeys-lfu")
    ap.add_argument("--samples", default="5", help="maxmemory-samples values, comma separated")
    ap.add_argument("--warm", type=int, default=1_000_000, help="accesses before counting")
    ap.add_argument("--ops", type=int, default=1_000_000, help="accesses counted")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lru-test", type=int, default=0, metavar="SECONDS",
                    help="also run redis-cli --lru-test for that long")
    add_binary_args(ap)
    a = ap.parse_args()
    a.oxidis = oxidis_binary(a)

    print("keyspace %d, maxmemory %s%s, %d warm + %d counted accesses, seed %d; load average %s"
          % (a.keys, a.maxmemory,
             " (oxidis %s)" % a.oxidis_maxmemory if a.oxidis_maxmemory else "",
             a.warm, a.ops, a.seed,
             " ".join(open("/proc/loadavg").read().split()[:3])), flush=True)
    keys = trace(a.keys, a.warm + a.ops, a.seed)
    vrng = random.Random(a.seed + 1)
    vals = [bytes(65 + vrng.randrange(57) for _ in range(5)) for _ in range(4096)]
    tmp = tempfile.mkdtemp(prefix="bench-cache-")
    hdr = "%-12s %7s %6s %8s %8s %9s %10s %9s %11s %11s %7s" % (
        "policy", "samples", "server", "hit%", "ratio", "keys", "evicted", "used_mb",
        "exactLRU%", "bestStatic%", "vsLRU")
    try:
        print(hdr, flush=True)
        for samples in [int(x) for x in a.samples.split(",")]:
            for policy in a.policies.split(","):
                servers, secs = cache_workload(a, policy, samples, keys, tmp, vals)
                redis_rate = servers[1]["hits"] / a.ops
                for s in servers:
                    rate = s["hits"] / a.ops
                    lru = exact_lru_hits(keys, a.warm, s["keys"]) / a.ops
                    print("%-12s %7d %6s %8.2f %7.3fx %9d %10d %9.1f %11.2f %11.2f %6.3fx%s" % (
                        policy, samples, s["name"], 100 * rate,
                        rate / redis_rate if redis_rate else 0, s["keys"], s["evicted"],
                        s["used"] / 1048576, 100 * lru, 100 * best_static(a.keys, s["keys"]),
                        rate / lru if lru else 0,
                        "  (%d errors)" % s["errors"] if s["errors"] else ""), flush=True)
                print("%-12s %7d  (%.0f s for the pair)" % (policy, samples, secs), flush=True)
                if a.lru_test:
                    res = lru_test(a, policy, samples, tmp)
                    base = res[1][1]
                    for name, rate, gps, lines, held in res:
                        print("%-12s %7d %6s %8.2f %7.3fx %9d   redis-cli --lru-test %d for %d s: "
                              "mean of last %d of %d lines, %.0f gets/s" % (
                                  policy, samples, name, rate, rate / base if base else 0, held,
                                  a.keys, a.lru_test, lines - lines // 2, lines, gps), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
