"""pytest plugin (entry point `pytest11`): fixtures `oxidis` and `redis_url`."""

import pytest

from . import Server

ISOLATIONS = ("flushall", "checkpoint", "none")
CHECKPOINT = "oxidis-pytest"


def pytest_addoption(parser):
    group = parser.getgroup("oxidis")
    group.addoption("--oxidis-arg", action="append", default=[], dest="oxidis_arg",
                    help="extra oxidis-server flag (repeat for each word)")
    group.addoption("--oxidis-isolation", choices=ISOLATIONS, default=None,
                    help="how redis_url resets the data set before each test")
    group.addoption("--oxidis-test-controls", action="store_true", default=False,
                    help="start the server with --enable-test-controls yes")
    parser.addini("oxidis_args", "extra oxidis-server flags", type="args", default=[])
    parser.addini("oxidis_isolation", "flushall (default), checkpoint or none",
                  default="flushall")


def _isolation(config):
    mode = config.getoption("oxidis_isolation") or config.getini("oxidis_isolation")
    if mode not in ISOLATIONS:
        raise pytest.UsageError(f"oxidis_isolation must be one of {', '.join(ISOLATIONS)}")
    return mode


@pytest.fixture(scope="session")
def oxidis(pytestconfig):
    """One oxidis-server for the whole session, on a free port."""
    args = list(pytestconfig.getini("oxidis_args")) + pytestconfig.getoption("oxidis_arg")
    controls = (pytestconfig.getoption("oxidis_test_controls")
                or _isolation(pytestconfig) == "checkpoint")
    with Server(*args, test_controls=controls) as srv:
        srv.checkpoint_saved = False
        yield srv


@pytest.fixture
def redis_url(oxidis, pytestconfig):
    """The server's URL, its data set reset first (see --oxidis-isolation):
    FLUSHALL, or a restore of the checkpoint taken of the data set the first
    test found (what session fixtures loaded once)."""
    mode = _isolation(pytestconfig)
    if mode == "flushall":
        oxidis.execute("FLUSHALL")
    elif mode == "checkpoint":
        if oxidis.checkpoint_saved:
            oxidis.execute("OXIDIS", "CHECKPOINT", "RESTORE", CHECKPOINT)
        else:
            oxidis.execute("OXIDIS", "CHECKPOINT", "SAVE", CHECKPOINT)
            oxidis.checkpoint_saved = True
    return oxidis.url
