"""Oxidis, a Redis-compatible server, started from Python: ``oxidis.Server()``."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time

__all__ = ["Server", "OxidisError", "find_binary"]

BINARY = "oxidis-server"


class OxidisError(RuntimeError):
    """The server could not be found, did not start, or answered an error."""


def find_binary(binary=None):
    """The `oxidis-server` to run: `binary`, then $OXIDIS_SERVER_BIN, then the
    one this package's wheel installed beside the interpreter, then PATH."""
    if binary:
        return str(binary)
    env = os.environ.get("OXIDIS_SERVER_BIN")
    if env:
        return env
    dirs = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    try:
        dirs.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    except KeyError:
        pass
    for d in dirs:
        if d:
            path = os.path.join(d, BINARY)
            if os.access(path, os.X_OK):
                return path
    found = shutil.which(BINARY)
    if found:
        return found
    raise OxidisError(
        f"{BINARY} not found: install this package with pip (it builds the binary), "
        "or set OXIDIS_SERVER_BIN"
    )


class Server:
    """An `oxidis-server` process on a free port, in a temporary directory.

    Use it as a context manager, or call `start()` and `stop()`. Extra
    `args` are redis-server style flags (`"--maxmemory", "10mb"`); later
    flags win, so they can override the defaults here."""

    def __init__(self, *args, binary=None, host="127.0.0.1", test_controls=False,
                 startup_timeout=10.0):
        self.binary = find_binary(binary)
        self.host = host
        self.args = [str(a) for a in args]
        if test_controls:
            self.args += ["--enable-test-controls", "yes"]
        self.startup_timeout = startup_timeout
        self.port = None
        self.proc = None
        self.dir = None

    @property
    def url(self):
        return f"redis://{self.host}:{self.port}"

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def start(self):
        if self.proc is not None:
            return self
        self.dir = tempfile.mkdtemp(prefix="oxidis-")
        port_file = os.path.join(self.dir, "port")
        cmd = [self.binary, "--port", "0", "--bind", self.host, "--port-file", port_file,
               "--dir", self.dir, "--save", "", "--appendonly", "no", *self.args]
        self._log = open(os.path.join(self.dir, "server.log"), "wb")
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log,
                                         stderr=subprocess.STDOUT, cwd=self.dir)
        except OSError as e:
            self._cleanup()
            raise OxidisError(f"cannot run {self.binary}: {e}") from e
        deadline = time.monotonic() + self.startup_timeout
        # The server writes the port file (atomically) once it serves.
        while True:
            try:
                with open(port_file) as f:
                    self.port = int(f.read())
                return self
            except (FileNotFoundError, ValueError):
                pass
            if self.proc.poll() is not None:
                log = self.log()
                self._cleanup()
                raise OxidisError(f"oxidis-server exited at start-up:\n{log}")
            if time.monotonic() > deadline:
                log = self.log()
                self.stop()
                raise OxidisError(f"oxidis-server did not start in {self.startup_timeout}s:\n{log}")
            time.sleep(0.001)

    def log(self):
        """What the server has logged so far."""
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                return f.read()
        except (OSError, TypeError):
            return ""

    def stop(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
        self._cleanup()

    def _cleanup(self):
        if getattr(self, "_log", None):
            self._log.close()
            self._log = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def execute(self, *cmd):
        """Sends one command on a new connection and returns its reply
        (bytes, int, list or None); an error reply raises OxidisError."""
        with socket.create_connection((self.host, self.port)) as s:
            parts = [b"*%d\r\n" % len(cmd)]
            for a in cmd:
                a = a if isinstance(a, bytes) else str(a).encode()
                parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
            s.sendall(b"".join(parts))
            return _read_reply(s.makefile("rb"))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def __del__(self):
        if self.proc is not None:
            self.stop()


def _read_reply(f):
    line = f.readline()
    if not line.endswith(b"\r\n"):
        raise OxidisError("connection closed")
    kind, rest = line[:1], line[1:-2]
    if kind in (b"+",):
        return rest
    if kind == b"-":
        raise OxidisError(rest.decode(errors="replace"))
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise OxidisError(f"unexpected reply {line!r}")
