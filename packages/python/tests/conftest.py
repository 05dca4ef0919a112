"""The package's own tests: real redis-py against the fixtures and Server."""

import os
from importlib import metadata

import pytest

import oxidis

pytest_plugins = ["pytester"]


def _installed():
    eps = metadata.entry_points()
    group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    return any(ep.value == "oxidis.pytest_plugin" for ep in group)


# Run from the source tree (cargo test), the plugin is named with -p;
# installed with pip, its entry point loads it.
PLUGIN_ARGS = [] if _installed() else ["-p", "oxidis.pytest_plugin"]


@pytest.fixture
def plugin_args():
    return PLUGIN_ARGS


@pytest.fixture(scope="session")
def controlled():
    """A server with the test controls, or a skip when this build has none."""
    try:
        srv = oxidis.Server(test_controls=True).start()
    except oxidis.OxidisError as e:
        # cargo test sets OXIDIS_TEST_CONTROLS_REQUIRED when its build has them.
        if "enable-test-controls" in str(e) and not os.environ.get("OXIDIS_TEST_CONTROLS_REQUIRED"):
            pytest.skip("this oxidis-server has no test controls yet")
        raise
    yield srv
    srv.stop()
