//! The Python and Node packages (packages/) run their own suites with the
//! real clients (redis-py via the pytest plugin, ioredis via startServer)
//! against the `oxidis-server` this `cargo test` built (OXIDIS_SERVER_BIN,
//! which both packages honour, so nothing here builds the crate again).
//! The tools are needed: a missing python3, venv, node or npm fails the test
//! with what to install (`.ci/run` installs them). redis-py, pytest and
//! ioredis are installed once into target/tmp/packages and reused.
//! `pip install ./packages/python` itself (the maturin wheel that carries
//! the binary) is exercised by `.ci/run`: it builds the crate in release.

mod common;

use std::process::Command;

use common::clients::{node_project, repo, run, text, venv, work, BIN};

/// True when this build has the test controls (issue 17): then the
/// packages' control tests must run, not skip. Nothing starts: the config
/// is read line by line, so a build without the switch names it in its
/// fatal error, and one with it names the unknown directive after it.
fn has_test_controls() -> bool {
    let o = run(
        Command::new(BIN).args(["--enable-test-controls", "yes", "--no-such-directive", "1"]),
        "",
    );
    let out = text(&o);
    assert!(
        !o.status.success() && out.contains("Bad directive"),
        "{out}"
    );
    !out.contains("enable-test-controls")
}

/// Runs a package's suite (with the test controls required when this build
/// has them); returns its output, failing with it when the suite fails.
fn run_suite(cmd: &mut Command, missing: &str) -> String {
    cmd.env("OXIDIS_SERVER_BIN", BIN);
    if has_test_controls() {
        cmd.env("OXIDIS_TEST_CONTROLS_REQUIRED", "1");
    }
    let o = run(cmd, missing);
    let out = text(&o);
    assert!(o.status.success(), "{cmd:?} failed:\n{out}");
    out
}

#[test]
fn python_package_suite_with_redis_py() {
    let python = venv();
    let pkg = repo().join("packages/python");
    let out = run_suite(
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"])
            // From the source tree: the plugin by name (pip's entry point in .ci/run).
            .args(["-p", "oxidis.pytest_plugin"])
            .arg(pkg.join("tests"))
            .current_dir(work("pytest"))
            .env("PYTHONPATH", pkg.join("python"))
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        "",
    );
    assert!(out.contains(" passed"), "{out}");
}

#[test]
fn node_package_suite_with_ioredis() {
    let dir = node_project();
    let test = repo().join("packages/node/test/oxidis.test.js");
    let out = run_suite(
        Command::new("node")
            .arg("--test")
            .arg(&test)
            .current_dir(&dir)
            .env("NODE_PATH", dir.join("node_modules")),
        "node is needed (Debian: apt-get install nodejs)",
    );
    assert!(out.contains("# fail 0"), "{out}");
}
