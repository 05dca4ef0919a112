#!/usr/bin/env python3
"""Differential fuzzer for the Lua libraries scripts see (struct, cmsgpack,
cjson, bit): the same random calls go to Oxidis and to a real redis-server,
and every reply that differs is printed (addresses masked).

Usage: python3 compat/fuzz_lua_libs.py OXIDIS_PORT REDIS_PORT [ROUNDS] [SEED]
Both servers must be running. Standard library only.
"""
import random
import re
import socket
import sys

# A deterministic dump of any Lua value (sorted keys, %.17g numbers), so
# results compare byte for byte whatever Redis's reply conversion drops.
SER = r"""
local function ser(v, d)
  d = d or 0
  if d > 20 then return '...' end
  local t = type(v)
  if t == 'number' then
    if v ~= v then return 'nan' end
    return string.format('%.17g', v)
  elseif t == 'string' then return string.format('%q', v)
  elseif t == 'table' then
    local ks = {}
    for k in pairs(v) do ks[#ks + 1] = k end
    table.sort(ks, function(a, b)
      if type(a) == type(b) and (type(a) == 'number' or type(a) == 'string') then return a < b end
      return type(a) < type(b)
    end)
    local out = {}
    for _, k in ipairs(ks) do out[#out + 1] = ser(k, d + 1) .. '=' .. ser(v[k], d + 1) end
    return '{' .. table.concat(out, ',') .. '}'
  else return t .. ':' .. tostring(v ~= nil and v ~= false and t ~= 'userdata' and t ~= 'function') end
end
local function run(f, ...)
  local r = {pcall(f, ...)}
  local n = select('#', unpack(r))
  local out = {}
  for i = 1, #r do out[i] = ser(r[i]) end
  if not r[1] then
    local e = r[2]
    if type(e) == 'table' then e = e.err end
    return 'ERR ' .. tostring(e)
  end
  return table.concat(out, ' ')
end
"""


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n + 2:]
        return out

    def read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-", b":"):
            return line
        if t == b"$":
            n = int(rest)
            return line if n < 0 else self._exact(n)
        if t == b"*":
            n = int(rest)
            return [self.read() for _ in range(max(n, 0))]
        raise ValueError(line)

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.read()


def rbytes(r, n):
    pool = [0, 1, 0x7f, 0x80, 0xff, 0xc0, 0xc1, 0xc2, 0xc3, 0xca, 0xcb, 0xcc, 0xcd, 0xce,
            0xcf, 0xd0, 0xd1, 0xd2, 0xd3, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0x90,
            0x91, 0x81, 0xa1, 0x41, 0x30, 0x39, ord('"'), ord('['), ord('{'), ord(','),
            ord(':'), ord('\\'), ord('u')]
    return bytes(r.choice(pool) if r.random() < 0.6 else r.randrange(256) for _ in range(n))


NUMS = ["0", "1", "-1", "255", "256", "-129", "65535", "2147483647", "-2147483648",
        "4294967295", "4294967296", "9007199254740993", "9223372036854775807",
        "-9223372036854775808", "18446744073709551615", "1e30", "-1e30", "0.5", "-0.5",
        "1.5", "nan", "inf", "-inf", "3.14159", "0x10", "1e308", "5e-324"]


def struct_case(r):
    alpha = "bBhHlLTiIfdxcs<>!0123456789 cc00"
    fmt = "".join(r.choice(alpha) for _ in range(r.randrange(1, 9)))
    kind = r.randrange(3)
    if kind == 0:
        data = rbytes(r, r.randrange(0, 24))
        pos = r.choice(["", ", -1", ", 0", ", 1", ", 2", ", 5", ", 100", ", 1e30", ", 'x'", ", 2.7"])
        return "return run(struct.unpack, ARGV[1], ARGV[2]%s)" % pos, [fmt, data]
    if kind == 1:
        args = [r.choice(NUMS + ["abc", "", "\0x"]) for _ in range(r.randrange(0, 5))]
        conv = ", ".join("(tonumber(ARGV[%d]) or ARGV[%d])" % (i + 2, i + 2) for i in range(len(args)))
        return "return run(struct.pack, ARGV[1]%s)" % ((", " + conv) if conv else ""), [fmt] + args
    return "return run(struct.size, ARGV[1])", [fmt]


def msgpack_case(r):
    kind = r.randrange(3)
    if kind == 0:
        return "return run(cmsgpack.unpack, ARGV[1])", [rbytes(r, r.randrange(0, 20))]
    if kind == 1:
        # A valid packing, then a few bytes changed or cut.
        vals = r.choice(["1", "-1", "300", "-40000", "1e10", "0.5", "'abc'", "string.rep('x', 40)",
                         "{1,2,3}", "{a=1}", "true", "false", "{{}}", "{1,{2,{3}}}",
                         "4294967296", "-4294967297", "string.rep('y', 300)"])
        return ("local s = cmsgpack.pack(%s) local b = {s:byte(1, -1)} "
                "local i = tonumber(ARGV[1]) %% (#b + 1) + 1 "
                "if ARGV[2] == 'cut' then s = s:sub(1, i - 1) elseif b[i] then b[i] = tonumber(ARGV[3]) "
                "s = string.char(unpack(b)) end return run(cmsgpack.unpack, s)" % vals,
                [str(r.randrange(100)), r.choice(["cut", "set"]), str(r.randrange(256))])
    vals = r.choice(["1", "-1", "1.5", "0/0", "1/0", "2^53", "-2^63", "2^64", "'a'", "{1,nil,3}",
                     "{[1]=1,[3]=3}", "{a={b={c={}}}}", "true", "nil", "{[1.5]=1}", "{[-1]=1}",
                     "{1,2,a=3}", "string.rep('z', 70000)"])
    return "return run(function() return cmsgpack.unpack(cmsgpack.pack(%s)) end)" % vals, []


def cjson_case(r):
    kind = r.randrange(2)
    if kind == 0:
        pieces = ['{', '}', '[', ']', ',', ':', '"a"', '"\\u00e9"', '"\\ud83d\\ude00"', '"\\ud800"',
                  '1', '-0', '1e400', '-1e-400', '0x10', '01', '1.', '.5', 'true', 'false', 'null',
                  'nul', '"\\x"', '"\t"', ' ', '"\\/"', 'NaN', 'Infinity', '-Infinity', '1e5',
                  '123456789012345678901234567890', '"', '\\', '"\\u12"']
        text = "".join(r.choice(pieces) for _ in range(r.randrange(1, 10)))
        return "return run(cjson.decode, ARGV[1])", [text]
    vals = r.choice(["1", "-1", "1.5", "0/0", "1/0", "-1/0", "2^53", "1e300", "0.1", "1/3",
                     "'a\\0b'", "'\\1\\127\\128\\255'", "{1,nil,3}", "{[1]=1,[3]=3}",
                     "{[1]=1,[100]=1}", "{a={b={c={}}}}", "true", "nil", "{[1.5]=1}", "{[-1]=1}",
                     "{1,2,a=3}", "{[true]=1}", "function() end", "{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}"])
    return "return run(cjson.encode, %s)" % vals, []


def bit_case(r):
    f = r.choice(["tobit", "tohex", "bnot", "band", "bor", "bxor", "lshift", "rshift", "arshift",
                  "rol", "ror", "bswap"])
    args = [r.choice(NUMS + ["'12'", "'x'", "nil", "{}"]) for _ in range(r.randrange(0, 4))]
    args = [a if a.startswith("'") or a in ("nil", "{}") else "tonumber('%s')" % a for a in args]
    return "return run(bit.%s%s)" % (f, "".join(", " + a for a in args)), []


def main():
    ox, rd = int(sys.argv[1]), int(sys.argv[2])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    r = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    a, b = Conn(ox), Conn(rd)
    mask = re.compile(rb"0x[0-9a-f]{6,}")
    diffs = 0
    gens = [struct_case, msgpack_case, cjson_case, bit_case]
    for i in range(rounds):
        body, argv = r.choice(gens)(r)
        script = SER + body
        cmd = ["EVAL", script, "0"] + argv
        try:
            ra = a.call(*cmd)
        except EOFError:
            print("OXIDIS CLOSED THE CONNECTION on", body, argv)
            return 1
        rb = b.call(*cmd)
        fa, fb = mask.sub(b"0x?", repr(ra).encode()), mask.sub(b"0x?", repr(rb).encode())
        if fa != fb:
            diffs += 1
            print("--- %s %r\n  oxidis: %s\n  redis:  %s" % (body, argv, fa[:400], fb[:400]))
    print("%d rounds, %d differences" % (rounds, diffs))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
