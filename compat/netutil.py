"""Helpers shared by the connection scripts (bench_conns.py, soak.py): file limit, RSS, RESP."""

import resource


def raise_nofile(want):
    """Raises the open-file limit toward `want` (up to the hard limit); returns the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    new = min(hard, max(soft, want)) if hard != resource.RLIM_INFINITY else max(soft, want)
    resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    return new


def rss_kb(pid):
    """The process's resident set (VmRSS) in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def enc(*args):
    """A request as a RESP multibulk."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out
