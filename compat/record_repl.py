#!/usr/bin/env python3
"""Records the replication stream a real redis-server sends for compat/repl/**/*.case.

Usage: python3 compat/record_repl.py [case files...]   (default: every case)

For each case: starts redis-server (active expiry off with DEBUG
SET-ACTIVE-EXPIRE 0, so keys expire only when looked up), attaches a raw replica (`SYNC`, skipping
the RDB payload and the newlines sent while it is produced), runs the case's
commands on normal connections (the case syntax of compat/record.py), and
after each command line stores the bytes the replica received (PINGs
dropped) in the `.golden` file beside the case, one line per command line.
`tests/propagation.rs` replays each case against Oxidis with a propagation tap
and compares byte for byte.

Timestamps: Redis propagates relative expiries as absolute unix milliseconds
(SET .. PXAT, PEXPIREAT). A 13-digit number within a day before and a year
after the recording is stored as 13 `T`s; the replay normalises its own the
same way. Cases that want the number compared use absolute times far away
(EXPIREAT k 4000000000).
"""
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record  # noqa: E402  (same directory: case syntax, connections, escaping)

HERE = os.path.dirname(os.path.abspath(__file__))
PING = b"*1\r\n$4\r\nPING\r\n"


def normalise(stream, now_ms):
    """Replaces unix-millisecond timestamps near now_ms with 13 T's."""
    def sub(m):
        v = int(m.group(2))
        if now_ms - 86_400_000 <= v <= now_ms + 366 * 86_400_000:
            return m.group(1) + b"T" * 13 + b"\r\n"
        return m.group(0)
    return re.sub(rb"(\$13\r\n)(\d{13})\r\n", sub, stream)


class Replica:
    """A raw `SYNC` connection that has read past the RDB payload."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""
        self.sock.sendall(b"SYNC\r\n")
        # Newlines keep the link alive while the RDB is produced.
        while True:
            self._fill(10)
            self.buf = self.buf.lstrip(b"\n")
            if b"\r\n" in self.buf:
                break
        head, _, rest = self.buf.partition(b"\r\n")
        if not head.startswith(b"$") or head.startswith(b"$EOF:"):
            raise RuntimeError("unexpected SYNC reply %r (diskless sync must be off)" % head)
        size = int(head[1:])
        while len(rest) < size:
            self.buf = rest
            self._fill(10)
            rest = self.buf
        self.buf = rest[size:]

    def _fill(self, timeout):
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 20)
        except (socket.timeout, BlockingIOError):
            return False
        if not data:
            raise RuntimeError("replica link closed")
        self.buf += data
        return True

    def drain(self, quiet=0.05):
        """Everything that arrives until the link is quiet, PINGs removed."""
        while self._fill(quiet):
            pass
        out, self.buf = self.buf, b""
        frames, pos = [], 0
        while pos < len(out):
            n = record.frame_len(out, pos)
            if n is None:
                self.buf = out[pos:]
                break
            frame = out[pos:pos + n]
            if frame != PING:
                frames.append(frame)
            pos += n
        return b"".join(frames)


def run_case(redis, path):
    args, _protocols, steps = record.parse_case(path)
    # Keys expire only when looked up (active expiry would race the steps).
    extra = ["--repl-diskless-sync", "no", "--repl-ping-replica-period", "3600",
             "--enable-debug-command", "yes"] + args
    proc, port, tmp = record.start_redis(redis, extra)
    lines = []
    try:
        version = record.redis_version(port)
        probe = record.Conn(port, 2)
        probe.send([b"DEBUG", b"SET-ACTIVE-EXPIRE", b"0"])
        probe.read_frames()
        probe.sock.close()
        replica = Replica(port)
        replica.drain()
        for _ in record.run_steps(port, 2, steps, path):
            stream = normalise(replica.drain(), int(time.time() * 1000))
            lines.append(record.escape(stream))
    finally:
        record.stop_redis(proc, tmp)
    golden = os.path.splitext(path)[0] + ".golden"
    with open(golden, "w", encoding="utf-8") as f:
        f.write("# replication stream from redis-server %s by compat/record_repl.py; do not edit\n" % version)
        f.write("\n".join(lines) + "\n")
    return len(lines)


if __name__ == "__main__":
    record.record_all("repl", run_case)
