#!/usr/bin/env python3
"""A pytest session of N tests on the `redis_url` fixture (packages/python):
per-test isolation by checkpoint restore vs by FLUSHALL (issue 17).

Every test needs the same fixture data (--keys keys of --value-size bytes,
loaded with one pipeline) and checks it starts from exactly that data set.
  flushall    the plugin FLUSHALLs before each test; the test reloads the data
  checkpoint  the data is loaded once (a session fixture); the plugin restores
              the checkpoint it took of it before each test (OXIDIS CHECKPOINT
              RESTORE; the server runs with --enable-test-controls yes)
The two sessions run in alternating rounds; printed: each mode's median wall
time for the whole pytest run (start-up included) and the ratio.

Needs pytest and redis-py in the Python that runs it (or --python), and an
oxidis-server with the test controls (default: this tree's release build).

Example:
  python3 compat/bench_pytest_isolation.py --tests 1000 --keys 1000 --rounds 3
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFTEST = '''
import os
import pytest
import redis

KEYS = int(os.environ["BENCH_KEYS"])
VALUE = b"x" * int(os.environ["BENCH_VALUE_SIZE"])
MODE = os.environ["BENCH_MODE"]


def load(client):
    p = client.pipeline(transaction=False)
    for i in range(KEYS):
        p.set(f"user:{i}", VALUE)
    p.execute()


@pytest.fixture(scope="session")
def client(oxidis):
    return redis.Redis.from_url(oxidis.url)


@pytest.fixture(scope="session")
def loaded_once(client):
    if MODE == "checkpoint":
        load(client)


@pytest.fixture
def db(loaded_once, redis_url, client):
    if MODE == "flushall":
        load(client)
    return client
'''

TESTS = '''
import os
import pytest

N = int(os.environ["BENCH_TESTS"])
KEYS = int(os.environ["BENCH_KEYS"])


@pytest.mark.parametrize("i", range(N))
def test_isolated(db, i):
    assert db.dbsize() == KEYS
    db.set(f"written-by:{i}", 1)
    db.delete(f"user:{i % KEYS}")
'''


def run(mode, a, work, env):
    env = dict(env, BENCH_MODE=mode)
    cmd = [a.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--oxidis-isolation={mode}",
           *a.plugin_args, "test_bench.py"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{mode}: pytest failed\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", type=int, default=1000)
    ap.add_argument("--keys", type=int, default=1000, help="fixture keys every test needs")
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--python", default=sys.executable, help="a Python with pytest and redis-py")
    ap.add_argument("--oxidis", help="oxidis-server (default: this tree's release build)")
    ap.add_argument("--installed", action="store_true",
                    help="use the pip-installed oxidis package (default: packages/python from this tree)")
    a = ap.parse_args()
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    binary = a.oxidis or os.path.join(target, "release", "oxidis-server")
    env = dict(os.environ, OXIDIS_SERVER_BIN=binary, BENCH_TESTS=str(a.tests), BENCH_KEYS=str(a.keys),
               BENCH_VALUE_SIZE=str(a.value_size), PYTHONDONTWRITEBYTECODE="1")
    a.plugin_args = []
    if not a.installed:
        env["PYTHONPATH"] = os.path.join(ROOT, "packages", "python", "python")
        a.plugin_args = ["-p", "oxidis.pytest_plugin"]
    probe = subprocess.run([binary, "--port", "0", "--enable-test-controls", "yes", "--bogus-x", "1"],
                           capture_output=True, text=True)
    if "enable-test-controls" in probe.stdout + probe.stderr:
        sys.exit(f"{binary} has no test controls (--enable-test-controls): checkpoint mode cannot run")
    work = tempfile.mkdtemp(prefix="oxidis-bench-pytest-")
    try:
        with open(os.path.join(work, "conftest.py"), "w") as f:
            f.write(CONFTEST)
        with open(os.path.join(work, "test_bench.py"), "w") as f:
            f.write(TESTS)
        times = {"flushall": [], "checkpoint": []}
        for r in range(a.rounds):
            for mode in (["flushall", "checkpoint"] if r % 2 == 0 else ["checkpoint", "flushall"]):
                times[mode].append(run(mode, a, work, env))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"pytest session: {a.tests} tests, each needing {a.keys} keys of {a.value_size} bytes "
          f"({a.rounds} rounds, alternating), wall time of the whole run:")
    for mode, t in times.items():
        print(f"  {mode:10s} median {statistics.median(t):6.2f} s  [{min(t):.2f}..{max(t):.2f}]"
              f"  ({statistics.median(t) / a.tests * 1000:.2f} ms/test)")
    print(f"  checkpoint / flushall: {statistics.median(times['checkpoint']) / statistics.median(times['flushall']):.2f}x")


if __name__ == "__main__":
    main()
