#!/usr/bin/env python3
"""Regenerates src/config/params.rs: every Redis 7.0 parameter with its kind,
bounds, default and mutability, probed from a real redis-server.

Usage: python3 compat/gen_config.py   (starts its own redis-server; stdlib only)

Mutable parameters are probed with CONFIG SET (a bad word, then huge numbers
for the bounds); immutable ones by starting redis-server with the bad value
and reading the fatal config error.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record import Conn, start_redis, find_redis  # noqa: E402

ALIASES = {
    "slaveof": "replicaof",
    "slave-read-only": "replica-read-only",
    "slave-serve-stale-data": "replica-serve-stale-data",
    "slave-ignore-maxmemory": "replica-ignore-maxmemory",
    "slave-lazy-flush": "replica-lazy-flush",
    "slave-priority": "replica-priority",
    "slave-announce-ip": "replica-announce-ip",
    "slave-announce-port": "replica-announce-port",
    "min-slaves-to-write": "min-replicas-to-write",
    "min-slaves-max-lag": "min-replicas-max-lag",
    "repl-ping-slave-period": "repl-ping-replica-period",
    "cluster-slave-no-failover": "cluster-replica-no-failover",
    "cluster-slave-validity-factor": "cluster-replica-validity-factor",
    "hash-max-ziplist-entries": "hash-max-listpack-entries",
    "hash-max-ziplist-value": "hash-max-listpack-value",
    "zset-max-ziplist-entries": "zset-max-listpack-entries",
    "zset-max-ziplist-value": "zset-max-listpack-value",
    "list-max-ziplist-size": "list-max-listpack-size",
    "lua-time-limit": "busy-reply-threshold",
}

# Parameters CONFIG GET * leaves out (Redis's HIDDEN_CONFIG): only an exact
# name shows them. Redis's test suite sets them (use-exit-on-panic in
# corrupt-dump, watchdog-period in logging, the delays in replication tests).
HIDDEN = ["key-load-delay", "loading-process-events-interval-bytes", "rdb-key-save-delay",
          "use-exit-on-panic", "watchdog-period"]

# Oxidis's own parameters, which no redis-server has: (name, kind, default,
# flags). Hidden, so CONFIG GET * answers the names Redis answers.
OWN = [("enable-test-controls", ("Bool",), "no", "IMMUTABLE | HIDDEN")]

# Parameters whose CONFIG SET value Redis redacts in the slow log and MONITOR
# (SENSITIVE_CONFIG; not observable through CONFIG, so listed by hand).
SENSITIVE = ["masterauth", "masteruser", "requirepass"]

# Defaults that depend on the machine or on how the reference was started.
MACHINE = {"dir": "", "port": "6379", "save": "3600 1 300 100 60 10000",
           "logfile": "", "daemonize": "no", "pidfile": "", "appendonly": "no"}


def cmd(c, *argv):
    c.send([a.encode() if isinstance(a, str) else a for a in argv])
    return c.read_frames()[0]


def err(frame):
    s = frame.decode(errors="replace").strip()
    if s.startswith("-"):
        m = re.match(r"-ERR CONFIG SET failed \(possibly related to argument '[^']*'\) - (.*)", s)
        return m.group(1) if m else s[1:]
    return None


def startup_error(redis, name, value):
    with tempfile.TemporaryDirectory() as d:
        try:
            p = subprocess.run([redis, "--port", "0", "--dir", d, "--" + name, value],
                               capture_output=True, timeout=0.5)
            out = (p.stdout + p.stderr).decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            return None
    lines = out.strip().splitlines()
    if "FATAL CONFIG FILE ERROR" in out:
        return lines[-1]
    return None


def classify(e):
    if e is None:
        return None
    if e == "argument must be 'yes' or 'no'":
        return ("Bool",)
    if e == "argument couldn't be parsed into an integer":
        return ("Int",)
    if e == "argument must be a memory value":
        return ("Memory",)
    if e == "argument must be a memory or percent value":
        return ("MemoryPercent",)
    m = re.match(r"argument\(s\) must be one of the following: (.*)", e)
    if m:
        return ("Enum", m.group(1).split(", "))
    return ("Special", e)


def main():
    redis = find_redis()
    proc, port, tmp = start_redis(redis, [])
    try:
        c = Conn(port, 2)
        c.send([b"CONFIG", b"GET", b"*"])
        # Parse the flat array of bulk strings.
        raw = c.read_frames()[0]
        parts = raw.split(b"\r\n")
        vals = [parts[i].decode() for i in range(2, len(parts) - 1, 2)]
        pairs = dict(zip(vals[0::2], vals[1::2]))
        for name in HIDDEN:
            c.send([b"CONFIG", b"GET", name.encode()])
            got = c.read_frames()[0].split(b"\r\n")
            assert got[2].decode() == name, got
            pairs[name] = got[4].decode()
        rows = []
        for name in sorted(pairs):
            if name in ALIASES:
                continue
            value = pairs[name]
            r = err(cmd(c, "CONFIG", "SET", name, value))
            immutable = r == "can't set immutable config"
            protected = r == "can't set protected config"
            if immutable or protected:
                kind = classify(startup_error(redis, name, "zzz_bad")) or ("Str",)
                if kind[0] == "Int" or kind[0] == "Memory":
                    lo = startup_error(redis, name, "-9000000000000000000")
                    hi = startup_error(redis, name, "9000000000000000000")
                    kind = kind + (lo, hi)
            else:
                kind = classify(err(cmd(c, "CONFIG", "SET", name, "zzz_bad"))) or ("Str",)
                if kind[0] in ("Int", "Memory", "MemoryPercent"):
                    lo = err(cmd(c, "CONFIG", "SET", name, "-9000000000000000000"))
                    hi = err(cmd(c, "CONFIG", "SET", name, "9000000000000000000"))
                    if kind[0] != "Int":
                        # A negative memory value fails as "not a memory value":
                        # 0 finds the real lower bound (client-query-buffer-limit: 1mb).
                        zero = err(cmd(c, "CONFIG", "SET", name, "0"))
                        if zero and "must be between" in zero:
                            lo = zero
                    kind = kind + (lo, hi)
                if kind[0] == "MemoryPercent":
                    kind = kind + (err(cmd(c, "CONFIG", "SET", name, "9000000000000000000%")),)
                cmd(c, "CONFIG", "SET", name, value)
            alias = [a for a, n in ALIASES.items() if n == name]
            flags = "IMMUTABLE" if immutable else ("PROTECTED" if protected else "0")
            for extra, names in (("HIDDEN", HIDDEN), ("SENSITIVE", SENSITIVE)):
                if name in names:
                    flags = extra if flags == "0" else flags + " | " + extra
            rows.append((name, alias[0] if alias else None, kind, MACHINE.get(name, value), flags))
    finally:
        proc.kill()
    rows += [(name, None, kind, default, flags) for name, kind, default, flags in OWN]
    rows.sort(key=lambda r: r[0])
    emit(rows)


def bounds(kind):
    lo, hi = -(2**63), 2**63 - 1
    for e in kind[1:3]:
        if e and (m := re.match(r"argument must be between (-?\d+) and (-?\d+) inclusive", e)):
            lo, hi = int(m.group(1)), int(m.group(2))
    if kind[0] != "Int" and kind[1] and "memory" in kind[1]:
        lo = 0
    if kind[0] != "Int" and kind[1] and (m := re.match(r"argument must be between (-?\d+) and", kind[1])):
        lo = int(m.group(1))
    # Redis keeps a percentage as a negative number: the lower bound is minus
    # the largest percentage.
    if kind[0] == "MemoryPercent" and len(kind) > 3 and kind[3] and (
            m := re.match(r"percentage argument must be less or equal to (\d+)", kind[3])):
        lo = -int(m.group(1))
    return lo, hi


def rust_int(n):
    if n == 2**63 - 1:
        return "i64::MAX"
    if n == -(2**63):
        return "i64::MIN"
    return str(n)


def emit(rows):
    out = ["//! Every Redis 7.0 configuration parameter (and Oxidis's own): kind, bounds, default, flags.",
           "//! Generated by compat/gen_config.py from a real redis-server; do not edit by hand.",
           "", "use super::Kind::*;", "use super::*;", "",
           "pub static GENERATED: &[Param] = &["]
    for name, alias, kind, default, flags in rows:
        if kind[0] == "Bool":
            k = "Bool"
        elif kind[0] in ("Int", "Memory", "MemoryPercent"):
            lo, hi = bounds(kind)
            k = "%s(%s, %s)" % (kind[0], rust_int(lo), rust_int(hi))
        elif kind[0] == "Enum":
            k = "Enum(&[%s])" % ", ".join('"%s"' % w for w in kind[1])
        elif kind[0] == "Special":
            k = "Special"
        else:
            k = "Str"
        out.append("    Param { name: %s, alias: %s, kind: %s, default: %s, flags: %s },"
                   % (q(name), "Some(%s)" % q(alias) if alias else "None", k, q(default), flags))
    out.append("];")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "config",
                        "params.rs")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote", len(rows), "parameters to", path, "(run cargo fmt)")


def q(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


if __name__ == "__main__":
    main()
