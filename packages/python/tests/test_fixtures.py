"""The pytest plugin's fixtures and oxidis.Server with real redis-py."""

import socket
import threading

import pytest
import redis

import oxidis


def test_set_get(redis_url, oxidis):
    r = redis.Redis.from_url(redis_url)
    assert redis_url == f"redis://127.0.0.1:{oxidis.port}"
    assert r.set("greeting", "hello")
    assert r.get("greeting") == b"hello"
    r.set("left-behind", "1")


def test_each_test_starts_empty(redis_url):
    # The previous test's keys were flushed (default isolation: flushall).
    r = redis.Redis.from_url(redis_url)
    assert r.dbsize() == 0


def test_expiry(redis_url):
    r = redis.Redis.from_url(redis_url)
    r.set("short", "v", px=20)
    assert 0 < r.pttl("short") <= 20
    # Polled, not timed: the key goes once its 20 ms pass.
    for _ in range(10_000):
        if r.get("short") is None:
            break
        threading.Event().wait(0.001)
    assert r.get("short") is None
    assert r.exists("short") == 0


def test_pubsub(redis_url):
    r = redis.Redis.from_url(redis_url)
    p = r.pubsub()
    p.subscribe("news")
    assert p.get_message(timeout=10)["type"] == "subscribe"
    assert r.publish("news", "hello") == 1
    msg = p.get_message(timeout=10)
    assert (msg["type"], msg["channel"], msg["data"]) == ("message", b"news", b"hello")
    p.close()


def test_server_reports_its_port():
    with oxidis.Server() as a, oxidis.Server() as b:
        assert a.port != b.port
        for srv in (a, b):
            r = redis.Redis.from_url(srv.url)
            assert r.config_get("port") == {"port": str(srv.port)}
            assert r.ping()
        port = a.port
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=10).close()


def test_server_extra_args():
    with oxidis.Server("--maxmemory", "10mb", "--databases", "4") as srv:
        r = redis.Redis.from_url(srv.url)
        assert r.config_get("maxmemory") == {"maxmemory": "10485760"}
        assert srv.execute("CONFIG", "GET", "databases") == [b"databases", b"4"]


def test_server_that_cannot_start_says_why():
    with pytest.raises(oxidis.OxidisError, match="Bad directive"):
        oxidis.Server("--no-such-option", "1").start()


def test_isolation_modes(pytester, plugin_args):
    pytester.makepyfile(
        """
        import redis

        def test_load(redis_url):
            redis.Redis.from_url(redis_url).set("k", "1")

        def test_sees(redis_url):
            assert redis.Redis.from_url(redis_url).get("k") == EXPECTED
        """.replace("EXPECTED", "None")
    )
    pytester.runpytest_subprocess(*plugin_args).assert_outcomes(passed=2)
    pytester.runpytest_subprocess(*plugin_args, "--oxidis-isolation=none").assert_outcomes(
        passed=1, failed=1
    )

