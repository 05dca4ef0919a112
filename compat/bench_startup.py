#!/usr/bin/env python3
"""Start-up to the first PONG: Oxidis vs a real redis-server, in one run (issue 17).

Each round starts every server once (the order reversed every other round):
the clock runs from the spawn until a PING on a new connection answers
+PONG (connection attempts every 0.2 ms until the port listens). Each
server runs in its own empty directory with `--save "" --appendonly no`
and its log to /dev/null. Printed: each server's median and range, the
ratio of the medians, and the median of the per-round ratios.

Servers measured:
  redis            redis-server --port P (a free port picked first)
  oxidis           oxidis-server --port P, the same way
  oxidis port 0    oxidis-server --port 0 --port-file F, as the Python and Node
                   packages start it: the clock stops at the PONG on the port
                   read from F (skip with --no-port0)

Examples:
  python3 compat/bench_startup.py                 # 20 starts each (builds release first)
  python3 compat/bench_startup.py --runs 50 --no-build --pin
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ROOT, free_port  # noqa: E402

PONG_TIMEOUT = 10.0


def ping_until_pong(port, deadline):
    """Connects and PINGs until +PONG; False when the deadline passes."""
    while time.perf_counter() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(64).startswith(b"+PONG"):
                    return True
        except OSError:
            pass
        time.sleep(0.0002)
    return False


def wait_port_file(path, proc, deadline):
    while time.perf_counter() < deadline:
        try:
            with open(path) as f:
                return int(f.read())
        except (FileNotFoundError, ValueError):
            pass
        if proc.poll() is not None:
            return None
        time.sleep(0.0002)
    return None


def start_once(binary, port0, pin):
    """Milliseconds from spawn to the first PONG (None if it never came)."""
    d = tempfile.mkdtemp(prefix="oxidis-startup-")
    try:
        if port0:
            pf = os.path.join(d, "port")
            args = ["--port", "0", "--bind", "127.0.0.1", "--port-file", pf]
        else:
            port = free_port()
            args = ["--port", str(port)]
        cmd = pin + [binary, *args, "--save", "", "--appendonly", "no", "--dir", d]
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, cwd=d)
        deadline = t0 + PONG_TIMEOUT
        if port0:
            port = wait_port_file(pf, p, deadline)
        ok = port is not None and ping_until_pong(port, deadline)
        ms = (time.perf_counter() - t0) * 1000
        p.terminate()
        p.wait()
        return ms if ok else None
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-port0", action="store_true")
    ap.add_argument("--redis", default=shutil.which("redis-server"))
    ap.add_argument("--oxidis", help="oxidis-server binary (default: this tree's release build)")
    ap.add_argument("--pin", action="store_true", help="every server on CPU 0 (taskset)")
    a = ap.parse_args()
    if not a.redis:
        sys.exit("redis-server not found: apt-get install redis-server")
    if not a.oxidis and not a.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    oxidis = a.oxidis or os.path.join(target, "release", "oxidis-server")
    pin = ["taskset", "-c", "0"] if a.pin else []
    servers = [("redis", a.redis, False), ("oxidis", oxidis, False)]
    if not a.no_port0:
        servers.append(("oxidis port 0", oxidis, True))
    times = {name: [] for name, _, _ in servers}
    ratios = []
    for r in range(a.runs):
        order = servers if r % 2 == 0 else servers[::-1]
        got = {}
        for name, binary, port0 in order:
            ms = start_once(binary, port0, pin)
            if ms is None:
                sys.exit(f"{name}: no PONG within {PONG_TIMEOUT}s")
            got[name] = ms
            times[name].append(ms)
        ratios.append(got["oxidis"] / got["redis"])
    print(f"start-up to first PONG, {a.runs} starts each (alternating), ms:")
    for name, _, _ in servers:
        t = times[name]
        print(f"  {name:14s} median {statistics.median(t):6.2f}  [{min(t):.2f}..{max(t):.2f}]")
    red = statistics.median(times["redis"])
    for name, _, _ in servers[1:]:
        print(f"  {name} / redis: {statistics.median(times[name]) / red:.2f}x (ratio of medians)")
    print(f"  oxidis / redis per round: median {statistics.median(ratios):.2f}x "
          f"[{min(ratios):.2f}..{max(ratios):.2f}]")


if __name__ == "__main__":
    main()
