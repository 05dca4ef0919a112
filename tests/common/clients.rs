//! Other languages' clients for tests: a venv with redis-py and pytest and a
//! node project with ioredis (and the Node package), installed once into
//! target/tmp/packages and reused. A missing python3, venv, node or npm
//! fails with what to install (`.ci/run` installs them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;

pub const BIN: &str = env!("CARGO_BIN_EXE_oxidis-server");

/// Tests of one binary run in parallel: one install at a time.
static INSTALL: Mutex<()> = Mutex::new(());

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where the tools' installs are kept between runs.
pub fn work(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("packages")
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `cmd`; a program that is not there fails with `missing`.
pub fn run(cmd: &mut Command, missing: &str) -> Output {
    cmd.stdin(Stdio::null());
    match cmd.output() {
        Ok(o) => o,
        Err(e) => panic!("{cmd:?}: {e}: {missing}"),
    }
}

pub fn check(cmd: &mut Command, missing: &str) {
    let o = run(cmd, missing);
    assert!(o.status.success(), "{cmd:?} failed:\n{}", text(&o));
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A virtualenv with redis-py and pytest, made on the first run; its python.
pub fn venv() -> PathBuf {
    let _one = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
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

/// A node project with ioredis and the package (`npm install <folder>`),
/// made once; the package is linked, so its sources are the repository's.
pub fn node_project() -> PathBuf {
    let _one = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
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

/// `node script args...` in the node project (ioredis on NODE_PATH).
pub fn node(project: &Path, script: &Path) -> Command {
    let mut cmd = Command::new("node");
    cmd.arg(script)
        .current_dir(project)
        .env("NODE_PATH", project.join("node_modules"));
    cmd
}
