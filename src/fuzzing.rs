//! In-process entry points for the fuzz targets in `fuzz/` (cargo feature `fuzzing`, never in a release build).

use std::rc::Rc;

use crate::command::args::Argv;
use crate::command::dispatch::dispatch;
use crate::server::client::ClientCell;
use crate::server::Server;
use crate::Config;

/// A server and one registered client, driven without a socket: each request
/// goes through `dispatch` exactly as `net::conn` sends it there.
pub struct Harness {
    pub srv: Server,
    pub cell: Rc<ClientCell>,
}

impl Default for Harness {
    fn default() -> Self {
        Harness::new(Config::default())
    }
}

impl Harness {
    /// A fresh server, and the thread's state put back as a new process has it:
    /// an input must not see what the previous one left (a crash it finds
    /// must replay alone), and the PRNG is seeded the same every time.
    pub fn new(config: Config) -> Harness {
        reset_thread_state();
        let mut srv = Server::new(config);
        srv.rng = crate::server::Rng::new(0x5eed);
        let cell = srv.add_local_client();
        Harness { srv, cell }
    }

    /// Runs one request and returns its reply bytes (taken out of the
    /// client's buffer), or `None` when the connection would stop reading
    /// requests: blocked, paused, closing or killed.
    ///
    /// Panics when the reply is not a sequence of well-formed RESP frames.
    pub fn run(&mut self, argv: &[&[u8]]) -> Option<Vec<u8>> {
        let argv = Argv::from_slices(argv.iter().copied());
        let mut c = self.cell.state.borrow_mut();
        if c.blocked.is_some() || c.postponed || c.close_after_reply || self.cell.kill.get() {
            return None;
        }
        dispatch(&mut self.srv, &mut c, &argv.args());
        if c.postponed {
            return None; // CLIENT PAUSE holds it, as `net::conn` leaves it buffered
        }
        let out = c.reply.buf.split().to_vec();
        check_frames(&out, c.reply.resp);
        Some(out)
    }
}

/// A BGSAVE or BGREWRITEAOF child an input started is stopped with its
/// harness (no server cron runs here to reap it: unreaped children piled up
/// as zombies, 24,000 in 15 minutes, near `pid_max`). SIGKILL, and the owner
/// told at once (it removes its temp file); the zombie and any other ended
/// child are reaped without waiting, as waiting for each cost the target
/// two thirds of its speed.
impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(running) = self.srv.persist.child.running.take() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(running.pid, libc::SIGKILL) };
            let killed = crate::persist::child::Exit::Killed(libc::SIGKILL);
            crate::persist::child_done(&mut self.srv, running, killed);
        }
        // SAFETY: reaping our own ended children; a null status is allowed.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
    }
}

/// The thread-locals commands set on the one thread that owns the data,
/// as at process start (each is per-server state kept outside `Server`).
fn reset_thread_state() {
    crate::clock::set_offset_ms(0);
    crate::clock::set_snapshot(0);
    crate::db::hold_expiry_until(0); // CLIENT PAUSE
    crate::db::set_no_touch(false); // CLIENT NO-TOUCH
    crate::db::log_expired(false);
    drop(crate::db::take_expired_log());
    crate::db::take_events_pending();
    crate::script::function::forget_load();
}

/// Panics unless `out` is zero or more complete, well-formed RESP frames
/// that a client speaking protocol `resp` may receive (RESP2: only `+ - : $ *`).
pub fn check_frames(out: &[u8], resp: u8) {
    let mut pos = 0;
    while pos < out.len() {
        if let Err(e) = frame(out, &mut pos, resp) {
            panic!(
                "malformed reply at byte {pos}: {e} in {:?}",
                String::from_utf8_lossy(out)
            );
        }
    }
}

/// Checks one frame (an aggregate with everything in it) starting at `pos`
/// and moves `pos` past it. Iterative: elements still owed are counted, so a
/// deep reply cannot overflow the stack. Stricter than `resp::value`'s reader
/// (a test-client parser): every length, number and terminator is checked.
fn frame(out: &[u8], pos: &mut usize, resp: u8) -> Result<(), String> {
    let mut owed: u64 = 1;
    while owed > 0 {
        owed -= 1;
        let kind = *out.get(*pos).ok_or("truncated")?;
        if resp < 3 && !b"+-:$*".contains(&kind) {
            return Err(format!(
                "RESP3 type {:?} sent to a RESP2 client",
                kind as char
            ));
        }
        *pos += 1;
        let rest = out.get(*pos..).unwrap_or_default();
        // The first LF ends the line; it must follow a CR and be the only CR.
        let lf = rest.iter().position(|&b| b == b'\n').ok_or("no LF")?;
        let line = rest[..lf].strip_suffix(b"\r").ok_or("LF without CR")?;
        *pos += lf + 1;
        if line.contains(&b'\r') {
            return Err("CR inside a line".into());
        }
        let len = || -> Result<i64, String> {
            std::str::from_utf8(line)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                .filter(|n| *n >= -1 && line.first() != Some(&b'+'))
                .ok_or_else(|| format!("bad length {:?}", String::from_utf8_lossy(line)))
        };
        match kind {
            // Redis sends a script's `big_number` as given (`(\r\n` included).
            b'+' | b'-' | b'(' => {}
            b':' => {
                // Rust's parser alone would take a leading `+`.
                let ok = line.first() != Some(&b'+')
                    && std::str::from_utf8(line).is_ok_and(|s| s.parse::<i64>().is_ok());
                if !ok {
                    return Err(format!("bad number {:?}", String::from_utf8_lossy(line)));
                }
            }
            b'_' if line.is_empty() => {}
            b'#' if line == b"t" || line == b"f" => {}
            b'_' | b'#' => {
                return Err(format!(
                    "bad null or boolean {:?}",
                    String::from_utf8_lossy(line)
                ))
            }
            b',' => {
                let ok = matches!(line, b"inf" | b"-inf" | b"nan")
                    || std::str::from_utf8(line)
                        .is_ok_and(|s| s.parse::<f64>().is_ok_and(f64::is_finite));
                if !ok {
                    return Err(format!("bad double {:?}", String::from_utf8_lossy(line)));
                }
            }
            b'$' | b'=' | b'!' => {
                let n = len()?;
                if n == -1 && kind == b'$' && resp < 3 {
                    continue; // RESP2's null bulk
                }
                let n = usize::try_from(n).map_err(|_| "negative length")?;
                let body = out.get(*pos..*pos + n).ok_or("truncated body")?;
                if kind == b'=' && body.get(3) != Some(&b':') {
                    return Err("verbatim string without its format".into());
                }
                if out.get(*pos + n..*pos + n + 2) != Some(b"\r\n") {
                    return Err("body not followed by CRLF".into());
                }
                *pos += n + 2;
            }
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let n = len()?;
                if n == -1 && kind == b'*' && resp < 3 {
                    continue; // RESP2's null array
                }
                let n = u64::try_from(n).map_err(|_| "negative length")?;
                owed += match kind {
                    b'%' => 2 * n,
                    b'|' => 2 * n + 1, // an attribute, then the reply it annotates
                    _ => n,
                };
            }
            _ => return Err(format!("bad frame type {:?}", kind as char)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
