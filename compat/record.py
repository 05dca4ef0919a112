#!/usr/bin/env python3
"""Records golden replies for compat/cases/**/*.case from a real redis-server.

Usage: python3 compat/record.py [case files...]   (default: every case)
Standard library only. See compat/README.md for the case syntax.
"""
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def find_redis():
    path = shutil.which("redis-server")
    if path:
        return path
    print("redis-server not found; installing Debian's redis-server", file=sys.stderr)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "redis-server"], check=True, env=env)
    subprocess.run(["service", "redis-server", "stop"], env=env, stderr=subprocess.DEVNULL)
    return shutil.which("redis-server")


def split_args(line):
    """sdssplitargs: words, "double quoted" with escapes, 'single quoted'."""
    out, i, n = [], 0, len(line)
    while True:
        while i < n and line[i].isspace():
            i += 1
        if i >= n:
            return out
        word = bytearray()
        if line[i] == '"':
            i += 1
            while True:
                if i >= n:
                    raise ValueError("unbalanced quotes: " + line)
                c = line[i]
                if c == "\\" and i + 3 < n and line[i + 1] == "x" and all(
                        ch in "0123456789abcdefABCDEF" for ch in line[i + 2:i + 4]):
                    word.append(int(line[i + 2:i + 4], 16))
                    i += 4
                elif c == "\\" and i + 1 < n:
                    word += {"n": b"\n", "r": b"\r", "t": b"\t", "b": b"\b", "a": b"\a"}.get(
                        line[i + 1], line[i + 1].encode())
                    i += 2
                elif c == '"':
                    i += 1
                    break
                else:
                    word += c.encode()
                    i += 1
        elif line[i] == "'":
            i += 1
            while True:
                if i >= n:
                    raise ValueError("unbalanced quotes: " + line)
                if line[i] == "\\" and i + 1 < n and line[i + 1] == "'":
                    word += b"'"
                    i += 2
                elif line[i] == "'":
                    i += 1
                    break
                else:
                    word += line[i].encode()
                    i += 1
        else:
            while i < n and not line[i].isspace():
                word += line[i].encode()
                i += 1
        out.append(bytes(word))


def parse_case(path):
    """Returns (server_args, protocols, steps). A step is a dict."""
    args, protocols, steps = [], [2, 3], []
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            if s.startswith("!args "):
                args = [a.decode() for a in split_args(s[6:])]
                continue
            if s.startswith("!protocols "):
                protocols = [int(p) for p in s[11:].split()]
                continue
            if s.startswith("!sleep "):
                steps.append({"sleep": int(s[7:]), "line": lineno})
                continue
            client, mods = 1, set()
            if s.startswith("["):
                end = s.index("]")
                client = int(s[1:end])
                s = s[end + 1:].strip()
            while s.startswith("~"):
                word, _, s = s.partition(" ")
                mods.add(word[1:])
                s = s.strip()
            steps.append({"client": client, "mods": mods, "argv": split_args(s) if s else [],
                          "line": lineno, "text": line})
    return args, protocols, steps


def frame_len(buf, pos=0):
    """Length of the complete RESP frame at buf[pos:], or None if incomplete."""
    if pos >= len(buf):
        return None
    end = buf.find(b"\r\n", pos)
    if end < 0:
        return None
    kind = buf[pos:pos + 1]
    head = buf[pos + 1:end]
    nxt = end + 2
    if kind in (b"$", b"=", b"!"):
        n = int(head)
        if n < 0:
            return nxt - pos
        if len(buf) < nxt + n + 2:
            return None
        return nxt + n + 2 - pos
    if kind in (b"*", b"~", b">", b"%", b"|"):
        n = int(head)
        if n < 0:
            return nxt - pos
        if kind in (b"%", b"|"):
            n *= 2
        cur = nxt
        for _ in range(n):
            m = frame_len(buf, cur)
            if m is None:
                return None
            cur += m
        if kind == b"|":  # attribute, followed by the real reply
            m = frame_len(buf, cur)
            if m is None:
                return None
            cur += m
        return cur - pos
    return nxt - pos


class Conn:
    def __init__(self, port, proto):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""
        if proto == 3:
            self.send([b"HELLO", b"3"])
            self.read_frames(first_timeout=5)

    def send(self, argv):
        out = b"*%d\r\n" % len(argv)
        for a in argv:
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)

    def _fill(self, timeout):
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 20)
        except (socket.timeout, BlockingIOError):
            return False
        except ConnectionError:
            return False
        if not data:
            return False
        self.buf += data
        return True

    def read_frames(self, first_timeout=10.0, drain=0.02):
        frames = []
        deadline = time.time() + first_timeout
        while not frames:
            n = frame_len(self.buf)
            if n is not None:
                frames.append(self.buf[:n])
                self.buf = self.buf[n:]
                break
            left = deadline - time.time()
            if left <= 0 or not self._fill(left):
                if frame_len(self.buf) is None:
                    return frames
        while True:
            n = frame_len(self.buf)
            if n is not None:
                frames.append(self.buf[:n])
                self.buf = self.buf[n:]
                continue
            if not self._fill(drain):
                return frames


def escape(b):
    out = []
    for c in b:
        if c == 13:
            out.append("\\r")
        elif c == 10:
            out.append("\\n")
        elif c == 92:
            out.append("\\\\")
        elif 32 <= c < 127:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    return "".join(out)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_redis(redis, extra):
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="oxidis-compat-")
    cmd = [redis, "--port", str(port), "--save", "", "--appendonly", "no",
           "--dir", tmp, "--logfile", os.path.join(tmp, "log")] + extra
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return proc, port, tmp
        except OSError:
            time.sleep(0.01)
    proc.kill()
    raise RuntimeError("redis-server did not start: " + " ".join(cmd))


def redis_version(port):
    """The server's redis_version (INFO server)."""
    probe = Conn(port, 2)
    probe.send([b"INFO", b"server"])
    version = "?"
    for l in probe.read_frames()[0].split(b"\r\n"):
        if l.startswith(b"redis_version:"):
            version = l.split(b":")[1].decode()
    probe.sock.close()
    return version


def stop_redis(proc, tmp):
    proc.kill()
    proc.wait()
    shutil.rmtree(tmp, ignore_errors=True)


def record_all(subdir, run_case):
    """Records the files named on the command line, or every case under subdir."""
    redis = find_redis()
    files = sys.argv[1:] or sorted(glob.glob(os.path.join(HERE, subdir, "**", "*.case"), recursive=True))
    for path in files:
        n = run_case(redis, path)
        print("recorded %s (%d steps)" % (os.path.relpath(path), n))


def run_steps(port, proto, steps, path):
    """Runs a case's steps; yields each command step with its reply frames
    (None for `~noreply`). Clients connect on first use."""
    conns = {}
    for st in steps:
        if "sleep" in st:
            time.sleep(st["sleep"] / 1000)
            continue
        c = conns.get(st["client"])
        if c is None:
            c = conns[st["client"]] = Conn(port, proto)
        if st["argv"]:
            c.send(st["argv"])
        if "noreply" in st["mods"]:
            yield st, None
            continue
        frames = c.read_frames()
        if not frames:
            raise RuntimeError("%s:%d: no reply to %s" % (path, st["line"], st["text"]))
        yield st, frames


def run_case(redis, path):
    args, protocols, steps = parse_case(path)
    lines = []
    version = None
    for proto in (2, 3):
        lines.append("@resp%d" % proto)
        if proto not in protocols:
            continue
        proc, port, tmp = start_redis(redis, args)
        try:
            if version is None and "--requirepass" not in args:
                version = redis_version(port)
            for st, frames in run_steps(port, proto, steps, path):
                if frames is None:
                    lines.append("")
                    continue
                lines.append("".join(escape(f) for f in frames))
        finally:
            stop_redis(proc, tmp)
    golden = os.path.splitext(path)[0] + ".golden"
    with open(golden, "w", encoding="utf-8") as f:
        f.write("# recorded from redis-server %s by compat/record.py; do not edit\n" % (version or "?"))
        f.write("\n".join(lines) + "\n")
    return len(steps)


if __name__ == "__main__":
    record_all("cases", run_case)
