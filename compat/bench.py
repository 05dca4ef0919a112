#!/usr/bin/env python3
"""Side-by-side benchmark: Oxidis vs a real redis-server, same machine, same run.

Starts a release oxidis-server and a redis-server (both `--save "" --appendonly no`)
on free loopback ports, then for each workload runs redis-benchmark against them in
alternating rounds and prints each server's median throughput and p99 latency and
the Oxidis/Redis ratio. An absolute number on a shared machine means little; the
ratio, measured in the same run, is what we report. Each round runs every server once
(the order reversed every other round, so neither always runs first); "rounds" is the
median of the per-round ratios and their range [min..max], a paired figure that the
machine's load drifting between rounds disturbs less than the ratio of the medians.
The servers' directories are on the file system of $TMPDIR (printed first).

Examples:
  python3 compat/bench.py                               # SET GET INCR MSET, P1 and P16, + 1 KiB values
  python3 compat/bench.py --tests lpush,rpop,lrange_100 -P 1,16
  python3 compat/bench.py --raw "EVALSHA {sha:lock} 1 lock" --raw "INCR counter"
  python3 compat/bench.py --mem hashes --mem lists        # resident memory after the same fill
  python3 compat/bench.py --fill stream1m --raw "XRANGE s - + COUNT 10"   # on a loaded data set
  python3 compat/bench.py --startup                       # start-up to 'Ready to accept connections'
  python3 compat/bench.py --tests get,set --setup "ACL SETUSER u on >pw ~key:* -@all +get +set" \
      --bench-args "--user u -a pw"                     # as an ACL user with a key pattern
  python3 compat/bench.py --tests set --server-args "--appendonly yes --appendfsync always"
  python3 compat/bench.py --tests set,incr --with-replica      # each master feeding a redis-server replica
  python3 compat/bench.py --tests set,get --cluster            # each server a one-node cluster
  python3 compat/bench.py --tests set,get --cluster 2          # two nodes each, redis-benchmark --cluster

Workloads for --raw are redis-benchmark custom commands (`__rand_int__` works with -r).
`{sha:NAME}` in a --raw command is replaced by the SHA of lua/fixtures/NAME.lua, loaded
into both servers with SCRIPT LOAD first. --setup "CMD ..." runs a command on both first.
--baseline-bin PATH adds a third server (an earlier oxidis-server build) to every round and
prints the new build's ratio to it too: a before/after comparison in the same run.
--cluster --standalone-baseline makes that third server this build in standalone mode: the
cost of cluster mode, measured in the same run.
"""
import argparse
import itertools
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def add_binary_args(ap):
    """--no-build, --redis, --oxidis: the binaries a script that starts both servers runs."""
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--redis", default=shutil.which("redis-server"))
    ap.add_argument("--oxidis", help="oxidis-server binary (default: this tree's release build)")


def oxidis_binary(args):
    """The oxidis-server to run: --oxidis, or this tree's release build (built first unless
    --no-build)."""
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    return args.oxidis or os.path.join(target, "release", "oxidis-server")


def wait_port(port, proc, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError("server exited with %s" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return
        except OSError:
            time.sleep(0.005)
    raise RuntimeError("server on port %d did not start" % port)


class Server:
    def __init__(self, name, argv, port, tmp):
        self.name, self.port = name, port
        self.proc = subprocess.Popen(PIN_SERVER + argv, cwd=tmp, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        wait_port(port, self.proc)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def rss_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def read_reply(sock, buf):
    """Reads one reply; returns (reply bytes, rest). Simple parser for setup commands."""
    def need(n):
        nonlocal buf
        while len(buf) < n:
            d = sock.recv(1 << 20)
            if not d:
                raise RuntimeError("connection closed")
            buf += d

    def parse(pos):
        while b"\r\n" not in buf[pos:]:
            need(len(buf) + 1)
        end = buf.index(b"\r\n", pos)
        kind, head = buf[pos:pos + 1], buf[pos + 1:end]
        if kind == b"$":
            n = int(head)
            if n < 0:
                return end + 2
            need(end + 2 + n + 2)
            return end + 2 + n + 2
        if kind == b"*":
            cur = end + 2
            for _ in range(max(int(head), 0)):
                cur = parse(cur)
            return cur
        return end + 2

    n = parse(0)
    return buf[:n], buf[n:]


def command(port, *args):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(resp(*args))
    r, _ = read_reply(s, b"")
    s.close()
    return r


def pipeline_fill(port, gen, batch=1000):
    """Sends every command from gen, pipelined, and reads all replies."""
    s = socket.create_connection(("127.0.0.1", port))
    buf = b""
    pending = []
    for cmd in gen:
        pending.append(resp(*cmd))
        if len(pending) >= batch:
            s.sendall(b"".join(pending))
            for _ in pending:
                _, buf = read_reply(s, buf)
            pending = []
    if pending:
        s.sendall(b"".join(pending))
        for _ in pending:
            _, buf = read_reply(s, buf)
    s.close()


# --pin: servers on CPU 0, redis-benchmark on CPU 1 (taskset), so on a two-core
# machine neither waits for the other's core and the scheduler adds less noise.
PIN_SERVER, PIN_CLIENT = [], []


def bench_once(port, args):
    out = subprocess.run(PIN_CLIENT + ["redis-benchmark", "-p", str(port), "--csv"] + args,
                         capture_output=True, text=True, timeout=600)
    # (--cluster prints the masters it found before the CSV rows)
    rows = [l for l in out.stdout.splitlines() if l.startswith('"') and not l.startswith('"test"')]
    res = []
    for r in rows:
        cols = [c.strip('"') for c in r.split('","')]
        # test, rps, avg, min, p50, p95, p99, max
        res.append((cols[0], float(cols[1]), float(cols[6])))
    if not res:
        raise RuntimeError("redis-benchmark gave no result: %s %s" % (out.stdout, out.stderr))
    return res


FILLS = {
    # 100,000 hashes of 10 fields (issue 3)
    "hashes": lambda: (["HSET", "h:%d" % i] + sum([["field%d" % f, "value%d" % f] for f in range(10)], [])
                       for i in range(100000)),
    # 1,000 lists of 1,000 elements (issue 3)
    "lists": lambda: (["RPUSH", "l:%d" % i] + ["element-%d" % e for e in range(j * 100, j * 100 + 100)]
                      for i in range(1000) for j in range(10)),
    # one sorted set of 1,000,000 members (issue 4)
    "zset": lambda: (["ZADD", "z"] + sum([[str((i * 7919) % 1000003), "member:%d" % i]
                                           for i in range(k, k + 100)], [])
                     for k in range(0, 1000000, 100)),
    # 1,000,000 small strings
    "strings": lambda: (["SET", "key:%d" % i, "value:%d" % i] for i in range(1000000)),
    # one stream of 1,000,000 small entries, the same two fields in each (issues 13 and 14)
    "streams": lambda: (["XADD", "s", "*", "sensor", str(i % 100), "reading", str(i)] for i in range(1000000)),
    # --fill: stream s of 1,000,000 entries with ids 1-1 .. 1000000-1 and group g on it from the
    # start, so XREADGROUP ... > delivers real entries and "XACK s g __rand_int__-1" (with
    # -r 1000000) finds ids XREADGROUP delivered
    "stream1m": lambda: itertools.chain(
        (["XADD", "s", "%d-1" % i, "sensor", str(i % 100), "reading", str(i)] for i in range(1, 1000001)),
        [["XGROUP", "CREATE", "s", "g", "0"]]),
    # --fill: geo set g of 10,000 points around Rome (for GEOSEARCH BYRADIUS)
    "geo10k": lambda: (["GEOADD", "g"] + sum([[str(12.0 + (i * 37 % 1000) / 1000.0),
                                              str(41.5 + (i * 91 % 1000) / 1000.0), "p%d" % i]
                                             for i in range(k, k + 100)], [])
                       for k in range(0, 10000, 100)),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", default=None, help="redis-benchmark -t list (default set,get,incr,mset)")
    ap.add_argument("--raw", action="append", default=[], help="custom command workload (repeatable)")
    ap.add_argument("--setup", action="append", default=[], help="command run on both servers first")
    ap.add_argument("-P", "--pipelines", default="1,16")
    ap.add_argument("-c", "--clients", type=int, default=50)
    ap.add_argument("-n", "--requests", type=int, default=200000)
    ap.add_argument("-d", "--size", type=int, default=3)
    ap.add_argument("-r", "--keyspace", type=int, default=0, help="redis-benchmark -r")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bench-args", default="",
                    help="more redis-benchmark flags, e.g. '--user u -a pw' (with --setup "
                         "'ACL SETUSER u on >pw ~* +@all' to benchmark as an ACL user)")
    ap.add_argument("--fill", action="append", default=[], choices=sorted(FILLS),
                    help="a data set loaded into every server before the workloads")
    ap.add_argument("--mem", action="append", default=[], choices=sorted(FILLS), help="memory comparison")
    ap.add_argument("--startup", action="store_true", help="measure start-up time")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--pin", action="store_true",
                    help="servers on CPU 0 and redis-benchmark on CPU 1 (taskset)")
    ap.add_argument("--baseline-bin", default=None, help="an earlier oxidis-server to compare with")
    ap.add_argument("--standalone-baseline", action="store_true",
                    help="with --cluster 1: the third server is this oxidis-server in standalone mode, "
                         "so 'vs before' is the cost of cluster mode (the slot check) in the same run")
    ap.add_argument("--with-replica", action="store_true",
                    help="every server gets a redis-server replica (REPLICAOF) before the workloads")
    ap.add_argument("--cluster", type=int, nargs="?", const=1, default=0, metavar="NODES",
                    help="every server a cluster-enabled node owning all 16384 slots (state ok before "
                         "the first round): every request goes through the slot check and is served "
                         "there (redis-benchmark --cluster refuses a one-node cluster); with 2, each "
                         "server gets a second node of its kind, the slots split in halves (Redis's "
                         "nodes meet, Oxidis's learn each other from nodes.conf), driven by "
                         "redis-benchmark --cluster")
    ap.add_argument("--server-args", default="--appendonly no",
                    help="persistence flags given to every server (each runs in its own dir), "
                         "e.g. '--appendonly yes --appendfsync always'")
    a = ap.parse_args()
    if a.pin:
        PIN_SERVER[:], PIN_CLIENT[:] = ["taskset", "-c", "0"], ["taskset", "-c", "1"]

    if not shutil.which("redis-benchmark"):
        sys.exit("redis-benchmark not found: apt-get install redis-server redis-tools")
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    oxidis_bin = os.path.join(target, "release", "oxidis-server")
    redis_bin = shutil.which("redis-server")

    if a.startup:
        startup(oxidis_bin, redis_bin)
        return

    tmp = tempfile.mkdtemp(prefix="oxidis-bench-")
    fs = subprocess.run(["findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", "--target", tmp],
                        capture_output=True, text=True).stdout.strip()
    print("server dirs in %s (%s); load average %s" % (tmp, fs or "?", " ".join(
        open("/proc/loadavg").read().split()[:3])))
    common = ["--save", "", "--bind", "127.0.0.1"] + a.server_args.split()
    if a.cluster:
        common += ["--cluster-enabled", "yes"]
    if a.cluster > 2:
        sys.exit("--cluster takes 1 or 2 nodes")
    if a.cluster == 2:
        a.bench_args += " --cluster"

    def own_dir(name):
        d = os.path.join(tmp, name)
        os.makedirs(d)
        return ["--dir", d]

    rp, op = (node_port(), node_port()) if a.cluster else (free_port(), free_port())
    second = {}  # a server's second cluster node (--cluster 2)
    if a.cluster == 2:
        ports = [op, node_port()]
        for i in (0, 1):
            os.makedirs(os.path.join(tmp, ["oxidis", "oxidis2"][i]))
            with open(os.path.join(tmp, ["oxidis", "oxidis2"][i], "nodes.conf"), "w") as f:
                f.write(nodes_conf(ports, i))
    redis = Server("redis", [redis_bin, "--port", str(rp)] + common + own_dir("redis"), rp, tmp)
    oxidis = Server("oxidis", [oxidis_bin, "--port", str(op), "--dir", os.path.join(tmp, "oxidis")]
                    + common if a.cluster == 2 else
                    [oxidis_bin, "--port", str(op)] + common + own_dir("oxidis"), op, tmp)
    servers = [redis, oxidis]
    if a.cluster == 2:
        p = node_port()
        second["redis"] = Server("redis2", [redis_bin, "--port", str(p)] + common + own_dir("redis2"), p, tmp)
        second["oxidis"] = Server("oxidis2", [oxidis_bin, "--port", str(ports[1]), "--dir",
                                              os.path.join(tmp, "oxidis2")] + common, ports[1], tmp)
    if a.standalone_baseline:
        if a.cluster != 1 or a.baseline_bin:
            sys.exit("--standalone-baseline goes with --cluster 1 and without --baseline-bin")
        a.baseline_bin = oxidis_bin
    if a.baseline_bin:
        bp = free_port()
        flags = common[:-2] if a.standalone_baseline else common  # without --cluster-enabled yes
        servers.append(Server("before", [a.baseline_bin, "--port", str(bp)] + flags + own_dir("before"),
                              bp, tmp))
    replicas = []
    try:
        if a.with_replica:
            for s in servers:
                port = free_port()
                replicas.append(Server("replica-" + s.name, [redis_bin, "--port", str(port), "--replicaof",
                                                            "127.0.0.1", str(s.port)] + common
                                       + own_dir("replica-" + s.name), port, tmp))
            for r in replicas:
                deadline = time.time() + 60
                while b"master_link_status:up" not in command(r.port, "INFO", "replication"):
                    if time.time() > deadline:
                        raise RuntimeError("replica %s did not sync" % r.name)
                    time.sleep(0.1)
        if a.mem:
            memory(a.mem, redis, oxidis)
            return
        for s in servers:
            for name in a.fill:
                pipeline_fill(s.port, FILLS[name]())
            for cmd in a.setup:
                command(s.port, *cmd.split())
            if a.cluster == 1 and not (a.standalone_baseline and s.name == "before"):
                one_node_cluster(s)
            elif a.cluster == 2:
                two_node_cluster(s, second[s.name])
        shas = {}
        for raw in a.raw:
            for part in raw.split():
                if part.startswith("{sha:"):
                    name = part[5:-1]
                    src = open(os.path.join(ROOT, "lua", "fixtures", name + ".lua")).read()
                    for s in servers:
                        r = command(s.port, "SCRIPT", "LOAD", src)
                        shas[part] = r.split(b"\r\n")[1].decode()
        workloads = []
        tests = a.tests if a.tests is not None else ("" if a.raw else "set,get,incr,mset")
        for p in a.pipelines.split(","):
            base = ["-n", str(a.requests), "-c", str(a.clients), "-P", p, "-d", str(a.size)]
            base += a.bench_args.split()
            if a.keyspace:
                base += ["-r", str(a.keyspace)]
            if tests:
                workloads.append(("P%s" % p, base + ["-t", tests]))
            for raw in a.raw:
                words = [shas.get(w, w) for w in raw.split()]
                workloads.append(("P%s %s" % (p, raw), base + words))
        if a.tests is None and not a.raw:  # the default suite adds 1 KiB values
            for p in a.pipelines.split(","):
                workloads.append(("P%s 1KiB" % p, ["-n", str(a.requests), "-c", str(a.clients), "-P", p,
                                                  "-d", "1024", "-t", "set,get"]))
        print("%-34s %14s %14s %7s %9s %9s  %s" % ("workload", "redis rps", "oxidis rps", "ratio",
                                                   "redis p99", "oxi p99", "rounds: median [min..max]")
              + ("   %12s %7s  %s" % ("before rps", "vs before", "paired [min..max]")
                 if a.baseline_bin else ""))
        for label, args in workloads:
            results = {s.name: {} for s in servers}
            for i in range(a.rounds):
                for s in (servers if i % 2 == 0 else servers[::-1]):
                    for test, rps, p99 in bench_once(s.port, args):
                        results[s.name].setdefault(test, []).append((rps, p99))
            for test in results["redis"]:
                r = results["redis"][test]
                o = results["oxidis"].get(test, [(0, 0)])
                rr, orr = statistics.median(x[0] for x in r), statistics.median(x[0] for x in o)
                rp99, op99 = statistics.median(x[1] for x in r), statistics.median(x[1] for x in o)
                name = (label + " " + test)[:34]
                paired = sorted(x[0] / y[0] for x, y in zip(o, r) if y[0])
                line = "%-34s %14.0f %14.0f %6.2fx %8.3fms %8.3fms  %.2fx [%.2f..%.2f]" % (
                    name, rr, orr, orr / rr if rr else 0, rp99, op99,
                    statistics.median(paired) if paired else 0, paired[0] if paired else 0,
                    paired[-1] if paired else 0)
                if a.baseline_bin:
                    b = results["before"].get(test, [(0, 0)])
                    br = statistics.median(x[0] for x in b)
                    pb = sorted(x[0] / y[0] for x, y in zip(o, b) if y[0])
                    line += "   %12.0f %6.2fx  %.2fx [%.2f..%.2f]" % (
                        br, orr / br if br else 0, statistics.median(pb) if pb else 0,
                        pb[0] if pb else 0, pb[-1] if pb else 0)
                print(line)
                sys.stdout.flush()
    finally:
        for s in servers + replicas + list(second.values()):
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def one_node_cluster(s):
    """Gives the cluster node every slot and waits until it says its state is ok
    (Redis turns a master ok 2 s after its start at the earliest)."""
    command(s.port, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    deadline = time.time() + 30
    while b"cluster_state:ok" not in command(s.port, "CLUSTER", "INFO"):
        if time.time() > deadline:
            raise RuntimeError("%s: the cluster state never turned ok" % s.name)
        time.sleep(0.1)


def node_port():
    """A free port whose cluster bus port (+10000) is free too."""
    while True:
        p = free_port()
        if p + 10000 < 65536:
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", p + 10000))
                return p
            except OSError:
                pass
            finally:
                s.close()


def nodes_conf(ports, me):
    """Node `me`'s nodes.conf for two Oxidis masters at `ports`, half the slots each
    (Oxidis nodes learn each other from it: there is no MEET without the bus)."""
    ids, slots, lines = ["a" * 40, "b" * 40], ["0-8191", "8192-16383"], ""
    for n in (me, 1 - me):
        lines += "%s 127.0.0.1:%d@%d %s - 0 0 %d %s %s\n" % (
            ids[n], ports[n], ports[n] + 10000, "myself,master" if n == me else "master",
            2 - n, "connected" if n == me else "disconnected", slots[n])
    return lines + "vars currentEpoch 2 lastVoteEpoch 0\n"


def two_node_cluster(s, other):
    """Redis: the nodes meet and each takes half the slots; Oxidis: nodes.conf did it.
    Waits until both say ok and list both ranges."""
    if s.name == "redis":
        command(other.port, "CLUSTER", "MEET", "127.0.0.1", str(s.port))
        command(s.port, "CLUSTER", "ADDSLOTSRANGE", "0", "8191")
        command(other.port, "CLUSTER", "ADDSLOTSRANGE", "8192", "16383")
    deadline = time.time() + 60
    for n in (s, other):
        while (b"cluster_state:ok" not in command(n.port, "CLUSTER", "INFO")
               or not command(n.port, "CLUSTER", "SLOTS").startswith(b"*2\r\n")):
            if time.time() > deadline:
                raise RuntimeError("%s: the two-node cluster never turned ok" % n.name)
            time.sleep(0.1)


def memory(fills, redis, oxidis):
    for s in (redis, oxidis):
        s.base = s.rss_kb()
    for name in fills:
        for s in (redis, oxidis):
            command(s.port, "FLUSHALL")
            pipeline_fill(s.port, FILLS[name]())
        time.sleep(0.5)
        r, o = redis.rss_kb(), oxidis.rss_kb()
        print("%-8s redis rss %8.1f MiB   oxidis rss %8.1f MiB   ratio %.2fx" % (name, r / 1024, o / 1024,
                                                                           o / r if r else 0))
        sys.stdout.flush()


def startup(oxidis_bin, redis_bin, runs=20):
    def measure(binary):
        times = []
        for _ in range(runs):
            port = free_port()
            t0 = time.perf_counter()
            p = subprocess.Popen([binary, "--port", str(port), "--save", "", "--appendonly", "no"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for line in p.stdout:
                if "Ready to accept connections" in line:
                    times.append((time.perf_counter() - t0) * 1000)
                    break
            p.terminate()
            p.wait()
        return statistics.median(times)
    r, o = measure(redis_bin), measure(oxidis_bin)
    print("start-up to 'Ready to accept connections' (median of %d): redis %.1f ms, oxidis %.1f ms" % (runs, r, o))


if __name__ == "__main__":
    main()
