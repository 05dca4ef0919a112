"""The test controls through redis-py: the clock and fault injection (skipped
when the oxidis-server in use was built without them)."""

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry


def test_an_hour_ttl_expires_when_the_clock_advances_an_hour(controlled):
    r = redis.Redis.from_url(controlled.url)
    r.set("session", "v", ex=3600)
    r.execute_command("OXIDIS", "CLOCK", "ADVANCE", 3_599_000)
    assert r.get("session") == b"v"
    r.execute_command("OXIDIS", "CLOCK", "ADVANCE", 1_000)
    assert r.get("session") is None


def test_closed_connections_are_retried_by_redis_py(controlled):
    r = redis.Redis.from_url(
        controlled.url,
        retry=Retry(NoBackoff(), 3),
        retry_on_error=[redis.ConnectionError],
    )
    r.set("k", "v")
    before = int(r.info("stats")["total_connections_received"])
    r.execute_command("OXIDIS", "FAULT", "ADD", "COMMAND", "get", "CLOSE", "COUNT", 2)
    # Two closed connections, then the third try answers.
    assert r.get("k") == b"v"
    after = int(r.info("stats")["total_connections_received"])
    assert after - before == 2
    r.execute_command("OXIDIS", "FAULT", "CLEAR")


def test_injected_errors_are_retried_by_redis_py(controlled):
    def client(retries):
        return redis.Redis.from_url(
            controlled.url,
            retry=Retry(NoBackoff(), retries),
            retry_on_error=[redis.exceptions.TryAgainError],
        )

    r = client(2)
    r.set("k", "v")
    # Two TRYAGAIN replies: two retries get through to the third answer...
    r.execute_command("OXIDIS", "FAULT", "ADD", "COMMAND", "get", "ERROR", "TRYAGAIN later", "COUNT", 2)
    assert r.get("k") == b"v"
    # ...one retry does not.
    r.execute_command("OXIDIS", "FAULT", "ADD", "COMMAND", "get", "ERROR", "TRYAGAIN later", "COUNT", 2)
    with pytest.raises(redis.exceptions.TryAgainError, match="later"):
        client(1).get("k")
    assert r.get("k") == b"v"
    r.execute_command("OXIDIS", "FAULT", "CLEAR")


def test_checkpoint_isolation(pytester, plugin_args, controlled):
    pytester.makepyfile(
        """
        import pytest, redis

        @pytest.fixture(scope="session", autouse=True)
        def loaded(oxidis):
            redis.Redis.from_url(oxidis.url).set("fixture", "1")

        def test_a(redis_url):
            r = redis.Redis.from_url(redis_url)
            assert r.get("fixture") == b"1"
            r.set("a", "1")
            r.delete("fixture")

        def test_b(redis_url):
            r = redis.Redis.from_url(redis_url)
            assert r.get("fixture") == b"1"
            assert r.get("a") is None
        """
    )
    pytester.runpytest_subprocess(
        *plugin_args, "--oxidis-isolation=checkpoint"
    ).assert_outcomes(passed=2)
