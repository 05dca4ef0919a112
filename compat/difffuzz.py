#!/usr/bin/env python3
"""Differential fuzzer: the same random command sequences to Oxidis and to a real redis-server.

Usage: python3 compat/difffuzz.py [--sequences N] [--seconds S] [--seed X]
                                  [--port P] [--oxidis PATH] [--redis PATH]

Starts redis-server on --port (default 6440) and Oxidis on --port+1, both on
127.0.0.1, and sends each random sequence (a grammar of commands over a small
key set: every type, random options, extreme numbers, binary arguments) to
both, one command at a time, after FLUSHALL, in RESP2 or RESP3. The first
reply that differs ends the sequence; the sequence is then shrunk (commands
dropped while the difference stays) and reported. Replies known to differ
(compat/KNOWN_DIFFS.md: random picks, hashtable and SCAN order) are compared
by shape or as unordered collections. A server that stops answering or drops
the connection is reported as a crash and restarted. Ends after N sequences
or S seconds with a summary; exit status 1 when anything differed.
Standard library only.
"""
import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ---------------------------------------------------------------- RESP client


class Gone(Exception):
    """The server closed the connection or stopped answering."""


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, argv):
        out = [b"*%d\r\n" % len(argv)]
        for a in argv:
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        try:
            self.sock.sendall(b"".join(out))
        except OSError as e:
            raise Gone(str(e))

    def _fill(self):
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise Gone("no reply within 10 s")
        except OSError as e:
            raise Gone(str(e))
        if not chunk:
            raise Gone("connection closed")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            self._fill()

    def _take(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        """One reply as a tree of (type, value) tuples; scalars keep their bytes."""
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-", b":", b",", b"(", b"#", b"_"):
            return (t, rest)
        if t in (b"$", b"=", b"!"):
            n = int(rest)
            if n < 0:
                return (b"_", b"")
            return (t, self._take(n))
        if t in (b"*", b"~", b">"):
            n = int(rest)
            if n < 0:
                return (b"*-1", b"")
            return (t, [self.read() for _ in range(n)])
        if t == b"%" or t == b"|":
            n = int(rest)
            return (t, [(self.read(), self.read()) for _ in range(n)])
        raise Gone("bad reply line %r" % line)

    def call(self, argv):
        self.send(argv)
        return self.read()


# ---------------------------------------------------------------- servers


def find_redis(path):
    path = path or shutil.which("redis-server")
    if not path:
        sys.exit("redis-server not found (apt-get install redis-server)")
    return path


def find_oxidis(path):
    if path:
        return path
    exe = os.path.join(ROOT, "target", "release", "oxidis-server")
    if not os.path.exists(exe):
        subprocess.run(["cargo", "build", "--release", "--bin", "oxidis-server"],
                       cwd=ROOT, check=True)
    return exe


class Server:
    def __init__(self, name, exe, port):
        self.name, self.exe, self.port = name, exe, port
        self.proc = None
        self.dir = tempfile.mkdtemp(prefix="difffuzz-%s-" % name)
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            [self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "stderr"), "ab"))
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                c = Conn(self.port)
                if c.call([b"PING"]) == (b"+", b"PONG"):
                    c.close()
                    return
            except (OSError, Gone):
                time.sleep(0.05)
        self.stop()
        sys.exit("%s did not start on port %d" % (self.name, self.port))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def restart(self):
        self.stop()
        self.start()

    def stderr_tail(self):
        try:
            with open(os.path.join(self.dir, "stderr"), "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""


# ---------------------------------------------------------------- grammar

KEYS = [b"k1", b"k2", b"k3", b"{k}4", b"\xff\x00k"]
NUMS = [b"0", b"1", b"-1", b"2", b"3", b"5", b"10", b"-3", b"100", b"-100", b"1000",
        b"9223372036854775807", b"-9223372036854775808", b"9223372036854775808",
        b"-9223372036854775809", b"18446744073709551615", b"4294967295", b"4294967296",
        b"2147483647", b"-2147483648", b"2147483648", b"4611686018427387903",
        b"-4611686018427387904", b"1e3", b"1.5", b"-0", b"0.1", b"1e308", b"1e309",
        b"-1e309", b"inf", b"-inf", b"+inf", b"nan", b"0x10", b" 1", b"1 ", b"01", b"+1",
        b"3.0e", b".5", b"5.", b"1e-320", b"17179869184", b"-0.0", b"1.7976931348623157e308",
        b"2.5e-5", b"123456789012345678", b"", b"abc"]
SMALL = [b"0", b"1", b"-1", b"2", b"3", b"-2", b"5", b"10", b"-10", b"100"]


def rnd_value(r):
    c = r.random()
    if c < 0.35:
        return r.choice([b"a", b"b", b"c", b"foo", b"bar", b"x y", b""])
    if c < 0.6:
        return r.choice(NUMS)
    if c < 0.75:
        return str(r.randint(-1000, 1000)).encode()
    if c < 0.85:
        return bytes(r.randrange(256) for _ in range(r.randint(0, 12)))
    if c < 0.95:
        return b"v" * r.choice([63, 64, 65, 100, 300])
    return rnd_float(r)


def rnd_float(r):
    """A float written the many ways clients write them."""
    x = r.uniform(-10, 10) * 10 ** r.randint(-25, 25)
    fmt = r.choice(["%r", "%.17g", "%e", "%.3f", "%g", "%.1f"])
    return (fmt % x).encode()


def num(r, small=0.6):
    if r.random() < small:
        return r.choice(SMALL)
    return r.choice(NUMS)


def tiered(r, n, second, third):
    """A small integer (-n..n) half the time, else `second`, `third(r)` or an edge number."""
    c = r.random()
    if c < 0.5:
        return str(r.randint(-n, n)).encode()
    if c < 0.7:
        return r.choice(second)
    if c < 0.85:
        return third(r)
    return r.choice(NUMS)


def score(r):
    return tiered(r, 5, [b"1.5", b"-2.25", b"inf", b"-inf", b"+inf", b"0.1", b"1e300"], rnd_float)


def range_bound(r):
    return tiered(r, 4, [b"(1", b"(-1", b"-inf", b"+inf", b"(inf", b"(2.5", b"0.5"],
                  lambda r: r.choice([b"-", b"+", b"[a", b"(b", b"[", b"(", b"a"]))


def field(r):
    return r.choice([b"f1", b"f2", b"f3", b"a", b"b", b"1", b"2", b"-1", b"", b"\x00"])


def member(r):
    return r.choice([b"a", b"b", b"c", b"d", b"1", b"2", b"3", b"-5", b"10", b"x" * 70, b""])


def key(r):
    return r.choice(KEYS)


def keys(r, lo=1, hi=3):
    return [key(r) for _ in range(r.randint(lo, hi))]


def opt(r, p, *words):
    return list(words) if r.random() < p else []


def pick(r, *alts):
    return [r.choice(alts)] if alts else []


def ttl(r):
    """A relative time that cannot run out while a sequence runs (or is no time at all)."""
    return r.choice([b"0", b"-1", b"100000", b"999999", b"x", b"1.5", b"-100"] + NUMS[11:24])


def expire_opts(r):
    return r.choice([[], [], [b"EX", ttl(r)], [b"PX", ttl(r)], [b"EXAT", num(r, 0.2)],
                     [b"PXAT", num(r, 0.2)], [b"KEEPTTL"], [b"PERSIST"]])


def bitfield_ops(r):
    out = []
    for _ in range(r.randint(1, 3)):
        t = r.choice([b"i8", b"u8", b"i16", b"u1", b"i64", b"u63", b"u64", b"i65", b"x8"])
        off = r.choice([b"0", b"1", b"7", b"#1", b"#-1", b"100", b"-1", b"4294967296"])
        c = r.random()
        if c < 0.25:
            out += [b"OVERFLOW", r.choice([b"WRAP", b"SAT", b"FAIL", b"XX"])]
        elif c < 0.5:
            out += [b"GET", t, off]
        elif c < 0.75:
            out += [b"SET", t, off, num(r)]
        else:
            out += [b"INCRBY", t, off, num(r)]
    return out


def zrange_opts(r):
    out = []
    if r.random() < 0.4:
        out.append(r.choice([b"BYSCORE", b"BYLEX"]))
    if r.random() < 0.3:
        out.append(b"REV")
    if r.random() < 0.3:
        out += [b"LIMIT", num(r), num(r)]
    if r.random() < 0.4:
        out.append(b"WITHSCORES")
    r.shuffle(out) if r.random() < 0.1 else None
    return out


def zstore_opts(r, n):
    out = []
    if r.random() < 0.4:
        out += [b"WEIGHTS"] + [r.choice([b"1", b"2", b"-1", b"0.5", b"inf", b"nan", b"x"])
                               for _ in range(n)]
    if r.random() < 0.4:
        out += [b"AGGREGATE", r.choice([b"SUM", b"MIN", b"MAX", b"AVG"])]
    return out


def nkeys(r):
    ks = keys(r)
    n = len(ks)
    if r.random() < 0.1:
        n = r.choice([0, -1, n + 1, 2147483648])
    return [str(n).encode()] + ks


# Each entry: (weight, generator returning argv). Generators are lambdas over r.
G = [
    # strings
    (6, lambda r: [b"SET", key(r), rnd_value(r)] + expire_opts(r) + opt(r, 0.2, r.choice([b"NX", b"XX"])) + opt(r, 0.15, b"GET")),
    (4, lambda r: [b"GET", key(r)]),
    (1, lambda r: [b"GETEX", key(r)] + expire_opts(r)),
    (1, lambda r: [b"GETDEL", key(r)]),
    (1, lambda r: [b"GETSET", key(r), rnd_value(r)]),
    (1, lambda r: [b"MSET"] + sum([[key(r), rnd_value(r)] for _ in range(r.randint(1, 3))], [])),
    (1, lambda r: [b"MSETNX"] + sum([[key(r), rnd_value(r)] for _ in range(r.randint(1, 2))], [])),
    (2, lambda r: [b"MGET"] + keys(r)),
    (1, lambda r: [b"SETNX", key(r), rnd_value(r)]),
    (1, lambda r: [r.choice([b"SETEX", b"PSETEX"]), key(r), ttl(r), rnd_value(r)]),
    (2, lambda r: [b"APPEND", key(r), rnd_value(r)]),
    (1, lambda r: [b"STRLEN", key(r)]),
    (3, lambda r: [r.choice([b"INCR", b"DECR"]), key(r)]),
    (3, lambda r: [r.choice([b"INCRBY", b"DECRBY"]), key(r), num(r, 0.4)]),
    (3, lambda r: [b"INCRBYFLOAT", key(r), r.choice([num(r, 0.3), score(r)])]),
    (2, lambda r: [b"SETRANGE", key(r), r.choice([b"0", b"1", b"3", b"10", b"-1", b"536870912", b"x"]), rnd_value(r)]),
    (2, lambda r: [r.choice([b"GETRANGE", b"SUBSTR"]), key(r), num(r), num(r)]),
    (1, lambda r: [b"LCS", key(r), key(r)] + opt(r, 0.3, b"LEN") + opt(r, 0.3, b"IDX") + opt(r, 0.2, b"MINMATCHLEN", num(r)) + opt(r, 0.2, b"WITHMATCHLEN")),
    # keyspace
    (2, lambda r: [r.choice([b"DEL", b"UNLINK", b"EXISTS", b"TOUCH"])] + keys(r)),
    (2, lambda r: [b"TYPE", key(r)]),
    (2, lambda r: ([r.choice([b"EXPIRE", b"PEXPIRE"]), key(r), ttl(r)] if r.random() < 0.5 else [r.choice([b"EXPIREAT", b"PEXPIREAT"]), key(r), num(r, 0.5)]) + opt(r, 0.3, r.choice([b"NX", b"XX", b"GT", b"LT", b"YY"]))),
    (2, lambda r: [r.choice([b"TTL", b"PTTL", b"EXPIRETIME", b"PEXPIRETIME"]), key(r)]),
    (1, lambda r: [b"PERSIST", key(r)]),
    (1, lambda r: [r.choice([b"RENAME", b"RENAMENX"]), key(r), key(r)]),
    (1, lambda r: [b"COPY", key(r), key(r)] + opt(r, 0.3, b"REPLACE") + opt(r, 0.2, b"DB", r.choice([b"0", b"1", b"16", b"-1"]))),
    (2, lambda r: [b"OBJECT", b"ENCODING", key(r)]),
    (1, lambda r: [b"DBSIZE"]),
    (1, lambda r: [b"KEYS", r.choice([b"*", b"k*", b"k[12]", b"*4", b"\\*", b"[", b"k?"])]),
    (2, lambda r: [b"SORT", key(r)] + opt(r, 0.2, b"BY", r.choice([b"nosort", b"w_*", b"h_*->f"])) + opt(r, 0.2, b"LIMIT", num(r), num(r)) + opt(r, 0.2, b"GET", r.choice([b"#", b"w_*"])) + opt(r, 0.3, r.choice([b"ASC", b"DESC"])) + opt(r, 0.4, b"ALPHA") + opt(r, 0.1, b"STORE", key(r))),
    (1, lambda r: [b"SORT_RO", key(r)] + opt(r, 0.4, b"ALPHA")),
    (1, lambda r: [b"SELECT", r.choice([b"0", b"1", b"15", b"16", b"-1", b"x"])]),
    (1, lambda r: [b"MOVE", key(r), r.choice([b"0", b"1", b"16", b"x"])]),
    (1, lambda r: [b"SWAPDB", r.choice([b"0", b"1"]), r.choice([b"0", b"1", b"16"])]),
    (1, lambda r: [b"RANDOMKEY"]),
    (1, lambda r: [r.choice([b"ECHO", b"PING"]), rnd_value(r)]),
    (1, lambda r: [b"PUBLISH", rnd_value(r), rnd_value(r)]),
    (1, lambda r: [b"OBJECT", r.choice([b"FREQ", b"HELP", b"NOPE"]), key(r)]),
    (2, lambda r: [b"SCAN", r.choice([b"0", b"x", b"-1", b"18446744073709551615"])] + opt(r, 0.4, b"MATCH", r.choice([b"k*", b"*", b"[", b"\\"])) + opt(r, 0.4, b"COUNT", num(r)) + opt(r, 0.4, b"TYPE", r.choice([b"string", b"list", b"set", b"zset", b"hash", b"nope"]))),
    (2, lambda r: [r.choice([b"HSCAN", b"SSCAN", b"ZSCAN"]), key(r), r.choice([b"0", b"x", b"-1"])] + opt(r, 0.4, b"MATCH", r.choice([b"a*", b"*", b"[", b"f?"])) + opt(r, 0.4, b"COUNT", num(r))),
    # lists
    (5, lambda r: [r.choice([b"LPUSH", b"RPUSH", b"LPUSHX", b"RPUSHX"]), key(r)] + [member(r) for _ in range(r.randint(1, 5))]),
    (3, lambda r: [r.choice([b"LPOP", b"RPOP"]), key(r)] + opt(r, 0.4, num(r))),
    (3, lambda r: [b"LRANGE", key(r), num(r), num(r)]),
    (1, lambda r: [b"LINDEX", key(r), num(r)]),
    (1, lambda r: [b"LSET", key(r), num(r), member(r)]),
    (1, lambda r: [b"LINSERT", key(r), r.choice([b"BEFORE", b"AFTER", b"MIDDLE"]), member(r), member(r)]),
    (1, lambda r: [b"LREM", key(r), num(r), member(r)]),
    (1, lambda r: [b"LTRIM", key(r), num(r), num(r)]),
    (1, lambda r: [b"LLEN", key(r)]),
    (1, lambda r: [b"LPOS", key(r), member(r)] + opt(r, 0.3, b"RANK", num(r)) + opt(r, 0.3, b"COUNT", num(r)) + opt(r, 0.3, b"MAXLEN", num(r))),
    (1, lambda r: [b"LMOVE", key(r), key(r), r.choice([b"LEFT", b"RIGHT"]), r.choice([b"LEFT", b"RIGHT", b"UP"])]),
    (1, lambda r: [b"RPOPLPUSH", key(r), key(r)]),
    (1, lambda r: [b"LMPOP"] + nkeys(r) + [r.choice([b"LEFT", b"RIGHT"])] + opt(r, 0.4, b"COUNT", num(r))),
    (1, lambda r: [r.choice([b"BLPOP", b"BRPOP"])] + keys(r) + [r.choice([b"0.01", b"-1", b"x"])]),
    (1, lambda r: [b"BLMOVE", key(r), key(r), r.choice([b"LEFT", b"RIGHT"]), r.choice([b"LEFT", b"RIGHT"]), r.choice([b"0.01", b"-1", b"x"])]),
    (1, lambda r: [b"BRPOPLPUSH", key(r), key(r), r.choice([b"0.01", b"-1", b"x"])]),
    (1, lambda r: [b"BLMPOP", r.choice([b"0.01", b"-1"])] + nkeys(r) + [r.choice([b"LEFT", b"RIGHT"])] + opt(r, 0.4, b"COUNT", num(r))),
    (1, lambda r: [b"BZMPOP", r.choice([b"0.01", b"-1"])] + nkeys(r) + [r.choice([b"MIN", b"MAX"])] + opt(r, 0.4, b"COUNT", num(r))),
    # hashes
    (5, lambda r: [r.choice([b"HSET", b"HMSET"]), key(r)] + sum([[field(r), rnd_value(r)] for _ in range(r.randint(1, 4))], [])),
    (2, lambda r: [b"HGET", key(r), field(r)]),
    (1, lambda r: [b"HMGET", key(r)] + [field(r) for _ in range(r.randint(1, 3))]),
    (1, lambda r: [b"HDEL", key(r)] + [field(r) for _ in range(r.randint(1, 3))]),
    (1, lambda r: [r.choice([b"HLEN", b"HKEYS", b"HVALS", b"HGETALL"]), key(r)]),
    (1, lambda r: [r.choice([b"HSTRLEN", b"HEXISTS"]), key(r), field(r)]),
    (2, lambda r: [b"HINCRBY", key(r), field(r), num(r, 0.4)]),
    (2, lambda r: [b"HINCRBYFLOAT", key(r), field(r), score(r)]),
    (1, lambda r: [b"HSETNX", key(r), field(r), rnd_value(r)]),
    (1, lambda r: [b"HRANDFIELD", key(r)] + opt(r, 0.7, r.choice(SMALL + [b"-20", b"20"])) + opt(r, 0.3, b"WITHVALUES")),
    # sets
    (5, lambda r: [b"SADD", key(r)] + [member(r) for _ in range(r.randint(1, 5))]),
    (1, lambda r: [b"SREM", key(r)] + [member(r) for _ in range(r.randint(1, 3))]),
    (1, lambda r: [r.choice([b"SCARD", b"SMEMBERS"]), key(r)]),
    (1, lambda r: [b"SISMEMBER", key(r), member(r)]),
    (1, lambda r: [b"SMISMEMBER", key(r)] + [member(r) for _ in range(r.randint(1, 3))]),
    (2, lambda r: [r.choice([b"SINTER", b"SUNION", b"SDIFF"])] + keys(r)),
    (1, lambda r: [r.choice([b"SINTERSTORE", b"SUNIONSTORE", b"SDIFFSTORE"]), key(r)] + keys(r)),
    (1, lambda r: [b"SINTERCARD"] + nkeys(r) + opt(r, 0.4, b"LIMIT", num(r))),
    (1, lambda r: [b"SMOVE", key(r), key(r), member(r)]),
    (1, lambda r: [b"SPOP", key(r), r.choice([b"1000", b"-1", b"0", b"x"])]),
    (1, lambda r: [b"SRANDMEMBER", key(r)] + opt(r, 0.8, r.choice(SMALL + [b"-20", b"20"]))),
    # sorted sets
    (5, lambda r: [b"ZADD", key(r)] + opt(r, 0.2, r.choice([b"NX", b"XX"])) + opt(r, 0.2, r.choice([b"GT", b"LT"])) + opt(r, 0.2, b"CH") + opt(r, 0.1, b"INCR") + sum([[score(r), member(r)] for _ in range(r.randint(1, 4))], [])),
    (2, lambda r: [b"ZINCRBY", key(r), score(r), member(r)]),
    (2, lambda r: [b"ZSCORE", key(r), member(r)]),
    (1, lambda r: [b"ZMSCORE", key(r)] + [member(r) for _ in range(r.randint(1, 3))]),
    (4, lambda r: [b"ZRANGE", key(r), range_bound(r), range_bound(r)] + zrange_opts(r)),
    (2, lambda r: [r.choice([b"ZRANGEBYSCORE", b"ZREVRANGEBYSCORE", b"ZRANGEBYLEX", b"ZREVRANGEBYLEX"]), key(r), range_bound(r), range_bound(r)] + opt(r, 0.3, b"WITHSCORES") + opt(r, 0.3, b"LIMIT", num(r), num(r))),
    (1, lambda r: [b"ZREVRANGE", key(r), num(r), num(r)] + opt(r, 0.4, b"WITHSCORES")),
    (1, lambda r: [b"ZRANGESTORE", key(r), key(r), range_bound(r), range_bound(r)] + zrange_opts(r)),
    (2, lambda r: [r.choice([b"ZRANK", b"ZREVRANK"]), key(r), member(r)]),
    (1, lambda r: [b"ZREM", key(r)] + [member(r) for _ in range(r.randint(1, 3))]),
    (1, lambda r: [r.choice([b"ZREMRANGEBYSCORE", b"ZREMRANGEBYRANK", b"ZREMRANGEBYLEX"]), key(r), range_bound(r), range_bound(r)]),
    (2, lambda r: [r.choice([b"ZCOUNT", b"ZLEXCOUNT"]), key(r), range_bound(r), range_bound(r)]),
    (1, lambda r: [b"ZCARD", key(r)]),
    (2, lambda r: [r.choice([b"ZPOPMIN", b"ZPOPMAX"]), key(r)] + opt(r, 0.5, num(r))),
    (1, lambda r: [r.choice([b"BZPOPMIN", b"BZPOPMAX"])] + keys(r) + [b"0.01"]),
    (2, lambda r: (lambda ks: [r.choice([b"ZUNIONSTORE", b"ZINTERSTORE", b"ZDIFFSTORE"]), key(r), str(len(ks)).encode()] + ks + zstore_opts(r, len(ks)))(keys(r))),
    (2, lambda r: (lambda ks: [r.choice([b"ZUNION", b"ZINTER", b"ZDIFF"]), str(len(ks)).encode()] + ks + zstore_opts(r, len(ks)) + opt(r, 0.4, b"WITHSCORES"))(keys(r))),
    (1, lambda r: [b"ZINTERCARD"] + nkeys(r) + opt(r, 0.3, b"LIMIT", num(r))),
    (1, lambda r: [b"ZMPOP"] + nkeys(r) + [r.choice([b"MIN", b"MAX"])] + opt(r, 0.4, b"COUNT", num(r))),
    (1, lambda r: [b"ZRANDMEMBER", key(r)] + opt(r, 0.8, r.choice(SMALL + [b"-20", b"20"])) + opt(r, 0.3, b"WITHSCORES")),
    # bitmaps
    (2, lambda r: [b"SETBIT", key(r), r.choice([b"0", b"1", b"7", b"100", b"-1", b"4294967296", b"x"]), r.choice([b"0", b"1", b"2"])]),
    (1, lambda r: [b"GETBIT", key(r), num(r)]),
    (2, lambda r: [b"BITCOUNT", key(r)] + opt(r, 0.6, num(r), num(r)) + opt(r, 0.3, r.choice([b"BYTE", b"BIT", b"WORD"]))),
    (2, lambda r: [b"BITPOS", key(r), r.choice([b"0", b"1", b"2"])] + opt(r, 0.5, num(r)) + opt(r, 0.3, num(r)) + opt(r, 0.2, r.choice([b"BYTE", b"BIT"]))),
    (1, lambda r: [b"BITOP", r.choice([b"AND", b"OR", b"XOR", b"NOT", b"NAND"]), key(r)] + keys(r)),
    (2, lambda r: [b"BITFIELD", key(r)] + bitfield_ops(r)),
    (1, lambda r: [b"BITFIELD_RO", key(r), b"GET", r.choice([b"u8", b"i5", b"u64"]), num(r)]),
    # hyperloglog
    (2, lambda r: [b"PFADD", key(r)] + [member(r) for _ in range(r.randint(0, 4))]),
    (1, lambda r: [b"PFCOUNT"] + keys(r)),
    (1, lambda r: [b"PFMERGE", key(r)] + keys(r, 0, 2)),
    # transactions
    (1, lambda r: [b"MULTI"]),
    (1, lambda r: [b"EXEC"]),
    (1, lambda r: [b"DISCARD"]),
    (1, lambda r: [b"WATCH"] + keys(r)),
    # scripting
    (1, lambda r: [b"EVAL", r.choice([b"return redis.call('get', KEYS[1])",
                                      b"return redis.pcall('incr', KEYS[1])",
                                      b"return {1, 2.5, 'x', false, true, {err='e'}}",
                                      b"return redis.call('zrange', KEYS[1], 0, -1, 'withscores')",
                                      b"return cjson.encode(redis.call('lrange', KEYS[1], 0, -1))",
                                      b"return tonumber(ARGV[1])"]), b"1", key(r), rnd_value(r)]),
]

# Replies compared as unordered collections (hashtable order, KNOWN_DIFFS.md).
UNORDERED = {b"SMEMBERS", b"SINTER", b"SUNION", b"SDIFF", b"KEYS", b"HKEYS", b"HVALS", b"SPOP"}
UNORDERED_PAIRS = {b"HGETALL"}
# Random picks: only the reply's type and length are compared.
SHAPE = {b"HRANDFIELD", b"SRANDMEMBER", b"ZRANDMEMBER", b"RANDOMKEY"}
# Cursors and orders differ; a scan finished in one call compares its items.
SCANS = {b"SCAN", b"HSCAN", b"SSCAN", b"ZSCAN"}
# Time-dependent: positive values are compared as "positive".
TIMES = {b"TTL", b"PTTL", b"EXPIRETIME", b"PEXPIRETIME"}

TOTAL_WEIGHT = sum(w for w, _ in G)


def gen_command(r):
    x = r.uniform(0, TOTAL_WEIGHT)
    for w, g in G:
        x -= w
        if x <= 0:
            return g(r)
    return G[-1][1](r)


def gen_sequence(r, n):
    seq = [gen_command(r) for _ in range(n)]
    if r.random() < 0.2:
        # Small encoding limits, so a few elements convert encodings.
        limit = r.choice([b"1", b"2", b"3"])
        seq.insert(0, [b"CONFIG", b"SET", b"hash-max-listpack-entries", limit,
                       b"zset-max-listpack-entries", limit, b"set-max-intset-entries", limit,
                       b"list-max-listpack-size", limit])
    return seq


# ---------------------------------------------------------------- comparison


def sort_key(v):
    return repr(v)


def normalize(argv, reply, multi_queue):
    name = argv[0].upper()
    t, v = reply
    if multi_queue and reply == (b"+", b"QUEUED"):
        return reply
    if name in (b"SORT", b"SORT_RO") and b"BY" in argv:
        # Elements that sort equal (BY a missing weight) come in the order
        # of Redis's unstable qsort over the set's hashtable order.
        name = b"SMEMBERS"
    if name in SHAPE:
        if isinstance(v, list):
            return (t, len(v))
        return (t, "scalar")
    if name in SCANS and isinstance(v, list) and len(v) == 2:
        cursor, items = v
        if argv[1 if name == b"SCAN" else 2] != b"0":
            return (t, "scan from another cursor")  # cursor numbers differ
        if cursor == (b"$", b"0") and isinstance(items[1], list):
            if name == b"HSCAN" or name == b"ZSCAN":
                pairs = [(items[1][i], items[1][i + 1]) for i in range(0, len(items[1]) - 1, 2)]
                return (t, [(b"$", b"0"), sorted(pairs, key=sort_key)])
            return (t, [(b"$", b"0"), sorted(items[1], key=sort_key)])
        return (t, "scan in progress")
    if name in TIMES and t == b":" and int(v) > 0:
        return (t, "positive")
    if name in UNORDERED and isinstance(v, list):
        return (t, sorted(v, key=sort_key))
    if name in UNORDERED_PAIRS and isinstance(v, list):
        if t == b"%":
            return (t, sorted(v, key=sort_key))
        pairs = [(v[i], v[i + 1]) for i in range(0, len(v) - 1, 2)]
        return (t, sorted(pairs, key=sort_key))
    return reply


def normalize_exec(queued, reply):
    """EXEC's array: each element normalised by the command that was queued."""
    t, v = reply
    if t not in (b"*",) or not isinstance(v, list) or len(v) != len(queued):
        return reply
    return (t, [normalize(a, x, False) for a, x in zip(queued, v)])


class Pair:
    def __init__(self, redis, oxidis):
        self.servers = [redis, oxidis]
        self.conns = [Conn(s.port) for s in self.servers]

    def reconnect(self):
        for c in self.conns:
            c.close()
        for s in self.servers:
            if s.proc.poll() is not None:
                s.start()
        self.conns = [Conn(s.port) for s in self.servers]

    def reset(self, proto):
        # New connections: no MULTI, WATCH or protocol left from the last sequence.
        for c in self.conns:
            c.close()
        self.conns = [Conn(s.port) for s in self.servers]
        for c in self.conns:
            c.call([b"FLUSHALL"])
            c.call([b"CONFIG", b"SET", b"hash-max-listpack-entries", b"128",
                    b"zset-max-listpack-entries", b"128", b"set-max-intset-entries", b"512",
                    b"list-max-listpack-size", b"-2"])
            c.call([b"HELLO", proto])

    def run(self, seq, proto):
        """Runs `seq` on both; returns None or (index, redis reply, oxidis reply)."""
        self.reset(proto)
        queued = None
        for i, argv in enumerate(seq):
            replies = []
            for side, c in enumerate(self.conns):
                try:
                    replies.append(c.call(argv))
                except Gone as e:
                    replies.append(("GONE", str(e)))
            name = argv[0].upper()
            if queued is not None and name not in (b"EXEC", b"DISCARD", b"MULTI", b"WATCH"):
                queued.append(argv)
            if name == b"EXEC" and queued is not None:
                a = normalize_exec(queued, replies[0])
                b = normalize_exec(queued, replies[1])
            else:
                a = normalize(argv, replies[0], queued is not None)
                b = normalize(argv, replies[1], queued is not None)
            if name in SCANS and a[0] == b[0] and "scan in progress" in (a[1], b[1]):
                continue  # COUNT is a hint: one side may finish in fewer calls
            if a != b:
                return i, replies[0], replies[1]
            if name == b"MULTI" and replies[0] == (b"+", b"OK"):
                queued = []
            elif name in (b"EXEC", b"DISCARD") and replies[0][0] != b"-":
                queued = None
        return None


def shrink(pair, seq, proto, diff):
    """Drops commands while the sequence still ends in a difference at its last command."""
    i = diff[0]
    seq = seq[:i + 1]
    changed = True
    while changed and len(seq) > 1:
        changed = False
        for j in range(len(seq) - 2, -1, -1):
            trial = seq[:j] + seq[j + 1:]
            d = pair.run(trial, proto)
            if d is not None and d[0] == len(trial) - 1:
                seq = trial
                changed = True
    return seq


def show_word(a):
    if a and all(33 <= b < 127 and b not in b"\"'\\" for b in a):
        return a.decode()
    return '"' + "".join(chr(b) if 32 <= b < 127 and b not in b"\"\\" else "\\x%02x" % b
                         for b in a) + '"'


def show_cmd(argv):
    return " ".join(show_word(a) for a in argv)


def show_reply(rep):
    t, v = rep
    if isinstance(v, list):
        inner = ", ".join(show_reply(x) if not isinstance(x, tuple) or len(x) != 2 or not isinstance(x[0], tuple)
                          else "%s => %s" % (show_reply(x[0]), show_reply(x[1])) for x in v)
        return "%s[%s]" % (t.decode() if isinstance(t, bytes) else t, inner)
    if isinstance(v, bytes):
        return (t.decode() if isinstance(t, bytes) else t) + show_word(v)
    return "%s%s" % (t, v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sequences", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--length", type=int, default=20, help="commands per sequence")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--port", type=int, default=6440)
    ap.add_argument("--oxidis", default=None, help="oxidis-server binary (default target/release)")
    ap.add_argument("--redis", default=None, help="redis-server binary (default from PATH)")
    ap.add_argument("--max-reports", type=int, default=30)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    redis = Server("redis", find_redis(args.redis), args.port)
    oxidis = Server("oxidis", find_oxidis(args.oxidis), args.port + 1)
    reports = {}
    crashes = []
    sent = 0
    n = 0
    started = time.time()
    try:
        pair = Pair(redis, oxidis)
        while n < args.sequences and time.time() - started < args.seconds:
            r = random.Random(seed * 1000003 + n)
            seq = gen_sequence(r, r.randint(1, args.length))
            proto = r.choice([b"2", b"3"])
            n += 1
            sent += len(seq)
            try:
                d = pair.run(seq, proto)
            except Gone as e:
                d = (len(seq) - 1, ("GONE", str(e)), ("GONE", str(e)))
            if d is None:
                continue
            gone = [s.name for s, rep in zip(pair.servers, d[1:]) if rep[0] == "GONE"]
            if gone:
                crashes.append((n, proto, seq[:d[0] + 1], gone,
                                [s.stderr_tail() for s in pair.servers if s.name in gone]))
                pair.reconnect()
                continue
            sig = (seq[d[0]][0].upper(), show_reply(d[1])[:40], show_reply(d[2])[:40])
            if sig in reports:
                reports[sig][0] += 1
                continue
            small = shrink(pair, seq, proto, d)
            final = pair.run(small, proto) or d
            reports[sig] = [1, n, proto, small, final[1], final[2]]
            if len(reports) >= args.max_reports:
                break
    finally:
        for s in (redis, oxidis):
            s.stop()
    elapsed = time.time() - started
    print("difffuzz: seed %d, %d sequences, %d commands, %.0f s" % (seed, n, sent, elapsed))
    print("differences: %d kinds, crashes/hangs: %d" % (len(reports), len(crashes)))
    for sig, (count, no, proto, seq, a, b) in reports.items():
        print("\n== %s (seen %d times; sequence #%d, RESP%s)" % (sig[0].decode(errors="replace"), count, no, proto.decode()))
        for argv in seq:
            print("   " + show_cmd(argv))
        print("   redis : " + show_reply(a)[:300])
        print("   oxidis: " + show_reply(b)[:300])
    for no, proto, seq, gone, tails in crashes:
        print("\n== CRASH/HANG of %s (sequence #%d, RESP%s)" % (", ".join(gone), no, proto.decode()))
        for argv in seq:
            print("   " + show_cmd(argv))
        for t in tails:
            print("   stderr: " + t.strip().replace("\n", "\n           ")[-800:])
    for s in (redis, oxidis):
        s.cleanup()
    return 1 if reports or crashes else 0


if __name__ == "__main__":
    sys.exit(main())
