#!/usr/bin/env python3
"""Snapshot benchmark: Oxidis vs a real redis-server, same machine, same run, same settings.

For each server (release oxidis-server, then redis-server; both `--save "" --appendonly no`,
each in its own temp --dir), with the same dataset (N string keys `key:%012d` = 16-byte value,
the names redis-benchmark's `-r N` uses, so its SETs overwrite and its GETs hit; plus H hashes
of 10 small fields; loaded with `redis-cli --pipe`):

  save_s       SAVE wall time seen by the client
  rdb_bytes    size of dump.rdb (and the Oxidis/Redis ratio)
  load_s       start-up load time, from the server's own log line "DB loaded from disk: X seconds"
  p99 GET/SET  redis-benchmark (-c 50, -P 1, random keys over the N), one run per command,
               while exactly --bgsaves BGSAVEs run back to back from its start (the same
               number for both servers: a server whose BGSAVE is faster does not fork more
               often), and the same run with no BGSAVE, for reference
  peak_pss     peak Pss of server + child (from /proc/PID/smaps_rollup, sampled every 20 ms)
               during one BGSAVE; Pss splits pages shared copy-on-write between the two

Example:
  nice python3 compat/bench_persist.py                  # 1M strings + 100k hashes
  nice python3 compat/bench_persist.py --strings 200000 --hashes 20000 --requests 100000
"""
import argparse
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time

from bench import ROOT, free_port
from netutil import enc


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True,
                          text=True, check=True).stdout.strip()


def info(port, field):
    out = cli(port, "INFO", "persistence")
    m = re.search(r"^%s:(.*)$" % re.escape(field), out, re.M)
    return m.group(1).strip() if m else None


def start(binary, d, port, extra=()):
    log = os.path.join(d, "server.log")
    p = subprocess.Popen([binary, "--port", str(port), "--dir", d, "--save", "",
                          "--appendonly", "no", "--logfile", log, *extra],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.time()
    while time.time() - t0 < 600:
        try:
            if cli(port, "PING") == "PONG":
                return p
        except subprocess.CalledProcessError:
            pass
        time.sleep(0.05)
    raise RuntimeError("server did not start: " + binary)


def stop(p, port):
    try:
        cli(port, "SHUTDOWN", "NOSAVE")
    except subprocess.CalledProcessError:
        pass
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def dataset(path, strings, hashes):
    with open(path, "wb") as f:
        for i in range(strings):
            f.write(enc("SET", "key:%012d" % i, "value:%010d" % i))
        for i in range(hashes):
            args = ["HSET", "hash:%d" % i]
            for j in range(10):
                args += ["f%d" % j, "v%d" % (i * 10 + j)]
            f.write(enc(*args))


def fill(port, path):
    with open(path, "rb") as f:
        subprocess.run(["redis-cli", "-p", str(port), "--pipe"], stdin=f,
                       stdout=subprocess.DEVNULL, check=True)


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def pss_kb(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def wait_bgsave_done(port, saves_before):
    while True:
        if info(port, "rdb_bgsave_in_progress") == "0" and int(info(port, "rdb_saves")) > saves_before:
            return info(port, "rdb_last_bgsave_status")
        time.sleep(0.02)


def bgsave_peak(p, port):
    """One BGSAVE; the peak Pss of server + children while it runs, in MiB, and its duration."""
    saves = int(info(port, "rdb_saves"))
    t0 = time.time()
    cli(port, "BGSAVE")
    peak = 0
    while True:
        total = pss_kb(p.pid) + sum(pss_kb(c) for c in children(p.pid))
        peak = max(peak, total)
        if info(port, "rdb_bgsave_in_progress") == "0" and int(info(port, "rdb_saves")) > saves:
            break
        time.sleep(0.02)
    return peak / 1024.0, time.time() - t0


def benchmark(port, keys, requests, tests="get,set"):
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-t", tests, "-n", str(requests),
                          "-c", "50", "-r", str(keys), "--csv"], capture_output=True, text=True,
                         check=True).stdout
    res = {}
    for line in out.splitlines()[1:]:
        cols = [c.strip('"') for c in line.split(",")]
        # test,rps,avg,min,p50,p95,p99,max
        res[cols[0]] = (float(cols[1]), float(cols[6]))
    return res


def under_bgsave(port, keys, requests, bgsaves):
    """redis-benchmark for SET, then for GET, each while exactly `bgsaves` BGSAVEs run back
    to back from its start; how many of them had completed when each benchmark ended."""
    res, done = {}, {}
    for test in ("set", "get"):
        finished = [0]

        def saver():
            for _ in range(bgsaves):
                saves = int(info(port, "rdb_saves"))
                cli(port, "BGSAVE")
                wait_bgsave_done(port, saves)
                finished[0] += 1

        t = threading.Thread(target=saver)
        t.start()
        res.update(benchmark(port, keys, requests, test))
        done[test.upper()] = finished[0]
        t.join()
    return res, done


def run_one(name, binary, data, args):
    d = tempfile.mkdtemp(prefix="bench-persist-%s-" % name)
    port = free_port()
    r = {}
    try:
        p = start(binary, d, port)
        fill(port, data)
        r["keys"] = int(cli(port, "DBSIZE"))
        t0 = time.time()
        assert cli(port, "SAVE") == "OK"
        r["save_s"] = time.time() - t0
        r["rdb_bytes"] = os.path.getsize(os.path.join(d, "dump.rdb"))
        r["peak_pss_mib"], r["bgsave_s"] = bgsave_peak(p, port)
        stats = cli(port, "INFO", "stats")
        r["fork_ms"] = int(re.search(r"latest_fork_usec:(\d+)", stats).group(1)) / 1000.0
        r["idle_rss_mib"] = pss_kb(p.pid) / 1024.0
        r["bench_idle"] = benchmark(port, args.strings, args.requests)
        r["bench_bgsave"], r["bgsaves"] = under_bgsave(port, args.strings, args.requests,
                                                       args.bgsaves)
        # Save what is there now (the benchmark's SETs changed values), load that.
        assert cli(port, "SAVE") == "OK"
        r["keys_saved"] = int(cli(port, "DBSIZE"))
        stop(p, port)
        t0 = time.time()
        p = start(binary, d, port)
        r["start_to_ping_s"] = time.time() - t0
        with open(os.path.join(d, "server.log")) as f:
            m = re.findall(r"DB loaded from disk: ([0-9.]+) seconds", f.read())
        r["load_s"] = float(m[-1]) if m else None
        assert int(cli(port, "DBSIZE")) == r["keys_saved"]
        stop(p, port)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strings", type=int, default=1_000_000)
    ap.add_argument("--hashes", type=int, default=100_000)
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--bgsaves", type=int, default=3,
                    help="BGSAVEs run during each benchmark (same number for both servers)")
    ap.add_argument("--oxidis", default=os.path.join(ROOT, "target", "release", "oxidis-server"))
    ap.add_argument("--redis", default=shutil.which("redis-server"))
    args = ap.parse_args()
    data = tempfile.mktemp(prefix="bench-persist-data-")
    dataset(data, args.strings, args.hashes)
    try:
        res = {}
        for name, binary in (("oxidis", args.oxidis), ("redis", args.redis)):
            res[name] = run_one(name, binary, data, args)
    finally:
        os.unlink(data)
    o, r = res["oxidis"], res["redis"]
    print("dataset: %d strings + %d hashes x 10 fields (%d keys); redis-benchmark -t get,set -n %d -c 50 -r %d"
          % (args.strings, args.hashes, o["keys"], args.requests, args.strings))
    rows = [
        ("SAVE (s)", "save_s", "%.3f"),
        ("dump.rdb bytes", "rdb_bytes", "%d"),
        ("load at start-up (s, log)", "load_s", "%.3f"),
        ("start to first PING (s)", "start_to_ping_s", "%.3f"),
        ("one BGSAVE (s)", "bgsave_s", "%.3f"),
        ("fork (ms, latest_fork_usec)", "fork_ms", "%.2f"),
        ("peak Pss server+child during BGSAVE (MiB)", "peak_pss_mib", "%.1f"),
        ("Pss after (MiB)", "idle_rss_mib", "%.1f"),
    ]
    print("%-44s %14s %14s %8s" % ("", "oxidis", "redis", "ox/redis"))
    for label, key, fmt in rows:
        a, b = o[key], r[key]
        print("%-44s %14s %14s %8.2f" % (label, fmt % a, fmt % b, a / b if b else float("nan")))
    for kind in ("bench_idle", "bench_bgsave"):
        for test in ("SET", "GET"):
            a, b = o[kind][test], r[kind][test]
            label = "%s p99 ms %s" % (test, "during BGSAVE" if kind == "bench_bgsave" else "no BGSAVE")
            print("%-44s %14.3f %14.3f %8.2f" % (label, a[1], b[1], a[1] / b[1] if b[1] else float("nan")))
            label = "%s rps %s" % (test, "during BGSAVE" if kind == "bench_bgsave" else "no BGSAVE")
            print("%-44s %14.0f %14.0f %8.2f" % (label, a[0], b[0], a[0] / b[0]))
    print("BGSAVEs started per benchmark: %d; completed before it ended: oxidis SET %d GET %d, "
          "redis SET %d GET %d" % (args.bgsaves, o["bgsaves"]["SET"], o["bgsaves"]["GET"],
                                   r["bgsaves"]["SET"], r["bgsaves"]["GET"]))


if __name__ == "__main__":
    main()
