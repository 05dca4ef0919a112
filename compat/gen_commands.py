#!/usr/bin/env python3
"""Regenerates src/command/meta/{info,docs}.resp: Redis 7.0's `COMMAND INFO` and
`COMMAND DOCS` replies for every command, recorded in RESP3 from a real
redis-server. Oxidis embeds them and serves the entries of the commands its
table has (COMMAND, COMMAND INFO, COMMAND DOCS), and its table test checks every
CommandSpec against them.

Usage: python3 compat/gen_commands.py   (starts its own redis-server; stdlib only)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record import Conn, start_redis, find_redis  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "command", "meta")


def main():
    proc, port, tmp = start_redis(find_redis(), [])
    try:
        c = Conn(port, 3)
        for sub, name in ((b"INFO", "info.resp"), (b"DOCS", "docs.resp")):
            c.send([b"COMMAND", sub])
            frames = c.read_frames(first_timeout=10, drain=0.5)
            assert len(frames) == 1, "expected one reply"
            with open(os.path.join(OUT, name), "wb") as f:
                f.write(frames[0])
            print("wrote", name, len(frames[0]), "bytes")
    finally:
        proc.kill()


if __name__ == "__main__":
    main()
