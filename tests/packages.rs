//! The Python and Node packages (packages/) run their own suites with the
//! real clients (redis-py via the pytest plugin, ioredis via startServer)
//! against the `oxidis-server` this `cargo test` built (OXIDIS_SERVER_BIN,
//! which both packages honour, so nothing here builds the crate again).
//! The tools are needed: a missing python3, venv, node or npm fails the test
//! with what to install (`.ci/run` installs them). redis-py, pytest and
//! ioredis are installed once into target/tmp/packages and reused.
//! `pip install ./packages/python` itself (the maturin wheel that carries
//! the binary) is exercised by `.ci/run`: it builds the crate in release.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_oxidis-server");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where the tools' installs are kept between runs.
fn work(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("packages")
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `cmd`; a program that is not there fails with `missing`.
fn run(cmd: &mut Command, missing: &str) -> Output {
    cmd.stdin(Stdio::null());
    match cmd.output() {
        Ok(o) => o,
        Err(e) => panic!("{cmd:?}: {e}: {missing}"),
    }
}

fn check(cmd: &mut Command, missing: &str) {
    let o = run(cmd, missing);
    assert!(o.status.success(), "{cmd:?} failed:\n{}", text(&o));
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

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

/// A virtualenv with redis-py and pytest, made on the first run.
fn venv() -> PathBuf {
    let dir = work("venv");
    let python = dir.join("bin/python");
    let ready = python.exists()
        && Command::new(&python)
            .args(["-c", "import redis, pytest"])
            .status()
            .is_ok_and(|s| s.success());
    if !ready {
        check(
            Command::new("python3")
                .args(["-m", "venv", "--clear"])
                .arg(&dir),
            "python3 with venv is needed (Debian: apt-get install python3-venv)",
        );
        check(
            Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "redis>=5",
                "pytest>=7",
            ]),
            "pip is needed in the venv (Debian: apt-get install python3-pip)",
        );
    }
    python
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

/// A node project with ioredis and the package (`npm install <folder>`),
/// made once; the package is linked, so its sources are the repository's.
fn node_project() -> PathBuf {
    let dir = work("node");
    let pkg = repo().join("packages/node");
    let npm_missing = "node and npm are needed (Debian: apt-get install nodejs npm)";
    check(Command::new("node").arg("--version"), npm_missing);
    if !dir.join("package.json").exists() {
        std::fs::write(
            dir.join("package.json"),
            "{\"name\": \"oxidis-package-test\", \"private\": true}\n",
        )
        .unwrap();
    }
    let ready =
        dir.join("node_modules/ioredis").exists() && dir.join("node_modules/oxidis").exists();
    if !ready {
        check(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--prefer-offline"])
                .arg("ioredis@5")
                .arg(&pkg)
                .current_dir(&dir)
                // The install script then builds nothing.
                .env("OXIDIS_SERVER_BIN", BIN),
            npm_missing,
        );
    }
    dir
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
