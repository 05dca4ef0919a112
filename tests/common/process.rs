//! The oxidis-server binary as its own process (the allocator's count is process-wide: an in-process server would also count the test).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::real_redis::{free_port, temp_dir};

const BIN: &str = env!("CARGO_BIN_EXE_oxidis-server");

/// An oxidis-server process in its own temporary directory, killed on drop.
pub struct Oxidis {
    pub child: Child,
    pub port: u16,
}

impl Drop for Oxidis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Oxidis {
    /// Starts one with persistence off and waits until it accepts connections.
    pub fn start() -> Oxidis {
        Oxidis::start_in(&temp_dir("proc"), &[])
    }

    /// As [`Oxidis::start`], with `--dir dir` and extra flags after the
    /// defaults (so they win).
    pub fn start_in(dir: &std::path::Path, extra: &[&str]) -> Oxidis {
        let port = free_port();
        let child = Command::new(BIN)
            .args([
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(dir)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn oxidis-server");
        let end = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < end, "oxidis-server did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        Oxidis { child, port }
    }
}
