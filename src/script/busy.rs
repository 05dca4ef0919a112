//! Long-running scripts: an instruction-count hook that, once a script runs
//! past `busy-reply-threshold`, polls the other clients' sockets itself (the
//! data thread is stuck inside Lua, so their tasks cannot run), answers
//! `BUSY` to their commands, and runs the few commands allowed while busy
//! (SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE, MULTI, ...), like Redis's
//! `processEventsWhileBlocked`. The dataset loaders use the same poller
//! (`persist::loading`), where the gate answers `LOADING` instead.
//!
//! Input read here that does not form a complete command is handed back to
//! the connection task through `Client::pending_input`; replies are written
//! straight to the socket (what does not fit stays in `Client::reply` for the
//! task to flush). Clients with a partial command already buffered in their
//! task, blocked clients and the caller are left alone until the script ends.

use std::cell::RefCell;
use std::ffi::c_int;
use std::io::{Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd};
use std::rc::Rc;

use super::lua::{self, ffi, State};
use super::{run_ctx, RunCtx};
use crate::command::args::Args;
use crate::command::dispatch;
use crate::command::gate::{self, Caller, Verdict};
use crate::net::listener::accept_client_borrowed;
use crate::resp::decode::{Decoder, Limits, Parsed};
use crate::server::client::{Client, ConnKind};
use crate::server::Server;

/// Instructions between two hook calls.
const HOOK_EVERY: c_int = 100_000;
/// How often (microseconds) sockets are polled once the script is busy.
const POLL_EVERY_US: i64 = 10_000;
/// At most this much input is read from one client per poll.
const MAX_READ: usize = 1 << 20;

pub const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

pub unsafe fn install_hook(l: State) {
    ffi::lua_sethook(l, Some(hook), ffi::LUA_MASKCOUNT, HOOK_EVERY);
}

pub unsafe fn remove_hook(l: State) {
    ffi::lua_sethook(l, None, 0, 0);
}

/// Fires the hook on every line from now on, so a pcall cannot swallow the
/// error that stops the script.
pub unsafe fn stop_on_every_line(l: State) {
    ffi::lua_sethook(l, Some(hook), ffi::LUA_MASKLINE, 0);
}

unsafe extern "C-unwind" fn hook(l: State, _ar: *mut ffi::lua_Debug) {
    if super::function::load_timed_out() {
        super::redis_lib::push_error(l, b"FUNCTION LOAD timeout");
        lua::raise(l);
    }
    let Some(run) = run_ctx() else {
        return;
    };
    let run: *mut RunCtx = run;
    if (*run).panic.is_some() {
        // Server code panicked under this script (see `no_unwind`): stop it.
        super::redis_lib::push_error(l, b"Script stopped: the server hit an internal error");
        lua::raise(l);
        return;
    }
    let now = crate::clock::system_us();
    if !(*run).busy {
        let ms = ((now - (*run).start_us) / 1000).max(0) as u64;
        let threshold = *(*run).threshold_ms.get_or_insert_with(|| {
            (*(*run).srv).config.get_i64("busy-reply-threshold").max(0) as u64
        });
        if ms < threshold {
            return;
        }
        (*run).busy = true;
        crate::log::warning(&format!(
            "Slow script detected: still in execution after {ms} milliseconds. You can try killing the script using the {} command. Script name is: {}.",
            if (*run).is_function { "FUNCTION KILL" } else { "SCRIPT KILL" },
            (*run).name
        ));
    }
    if now - (*run).last_poll_us >= POLL_EVERY_US {
        (*run).last_poll_us = now;
        let (srv, caller, is_function) = ((*run).srv, (*run).caller_id, (*run).is_function);
        let as_caller = Caller::WhileBusy {
            function: is_function,
        };
        if super::no_unwind(l, || poll(&mut *srv, Some(caller), as_caller)).is_none() {
            return;
        }
    }
    let shutting_down = (*(*run).srv).shutdown.is_some();
    if (*run).killed || shutting_down {
        crate::log::warning("Lua script killed by user with SCRIPT KILL.");
        stop_on_every_line(l);
        super::redis_lib::push_error(l, b"Script killed by user with SCRIPT KILL...");
        lua::raise(l);
    }
}

/// Remembers the listening sockets so connections can be accepted while busy.
pub fn register_listeners(
    srv: &Rc<RefCell<Server>>,
    tcp: &[tokio::net::TcpListener],
    unix: Option<&tokio::net::UnixListener>,
) {
    let mut s = srv.borrow_mut();
    let path = s.config.unixsocket.clone();
    let mut list: Vec<_> = tcp.iter().map(|l| (l.as_raw_fd(), None)).collect();
    if let Some(u) = unix {
        list.push((u.as_raw_fd(), Some(path.unwrap_or_default())));
    }
    s.script.listeners = list;
    s.script.server = Some(Rc::downgrade(srv));
}

/// Accepts pending connections; their commands are then answered by `poll`.
fn accept_new(srv: &mut Server) {
    let Some(rc) = srv.script.server.as_ref().and_then(|w| w.upgrade()) else {
        return;
    };
    let listeners = srv.script.listeners.clone();
    for (fd, unix_path) in listeners {
        for _ in 0..64 {
            // SAFETY: the listener fds stay open while the server runs;
            // ManuallyDrop keeps them from being closed here.
            if let Some(path) = &unix_path {
                let l =
                    ManuallyDrop::new(unsafe { std::os::unix::net::UnixListener::from_raw_fd(fd) });
                let Ok((st, _)) = l.accept() else { break };
                let _ = st.set_nonblocking(true);
                if let Ok(t) = tokio::net::UnixStream::from_std(st) {
                    accept_client_borrowed(
                        &rc,
                        srv,
                        t,
                        format!("{path}:0").into(),
                        path.clone().into(),
                        ConnKind::Unix,
                    );
                }
            } else {
                let l = ManuallyDrop::new(unsafe { std::net::TcpListener::from_raw_fd(fd) });
                let Ok((st, peer)) = l.accept() else { break };
                let _ = st.set_nonblocking(true);
                let _ = st.set_nodelay(true);
                let laddr = st.local_addr().map(|a| a.to_string()).unwrap_or_default();
                if let Ok(t) = tokio::net::TcpStream::from_std(st) {
                    accept_client_borrowed(&rc, srv, t, peer.into(), laddr.into(), ConnKind::Tcp);
                }
            }
        }
    }
}

/// Reads and answers every client but `skip` once, their commands checked
/// by the gate as coming from `caller` (Redis's `processEventsWhileBlocked`).
/// A client whose socket reached its end is freed.
pub fn poll(srv: &mut Server, skip: Option<crate::db::ClientId>, caller: Caller) {
    accept_new(srv);
    let ids: Vec<_> = srv
        .clients
        .keys()
        .copied()
        .filter(|&id| Some(id) != skip)
        .collect();
    for id in ids {
        let Some(cell) = srv.clients.get(&id).cloned() else {
            continue;
        };
        let Ok(mut c) = cell.state.try_borrow_mut() else {
            continue;
        };
        let fd = c.fd;
        if fd < 0 {
            continue;
        }
        if c.qbuf > 0 || c.blocked.is_some() || c.close_after_reply || cell.kill.get() {
            continue;
        }
        // SAFETY: the fd belongs to the client's socket, open while the
        // client is registered; ManuallyDrop keeps it from being closed here.
        let mut sock = ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
        let before = c.pending_input.len();
        let mut buf = [0u8; 16 * 1024];
        let mut closed = false;
        while c.pending_input.len() < MAX_READ {
            match sock.read(&mut buf) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => {
                    closed = e.kind() != std::io::ErrorKind::Interrupted;
                    break;
                }
                Err(_) => break,
                Ok(n) => c.pending_input.extend_from_slice(&buf[..n]),
            }
        }
        let got = c.pending_input.len() - before;
        if closed {
            // Gone (Redis frees it at once): its task ends when it next runs.
            cell.kill.set(true);
            crate::net::listener::remove_client(srv, &mut c);
            drop(c);
            srv.wake(id);
            continue;
        }
        if got == 0 && c.reply.buf.is_empty() {
            continue;
        }
        srv.stats.net_input_bytes += got as u64;
        c.net_in += got as u64;
        answer(srv, &mut c, caller);
        while !c.reply.buf.is_empty() {
            match sock.write(&c.reply.buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let _ = c.reply.buf.split_to(n);
                    srv.stats.net_output_bytes += n as u64;
                    c.net_out += n as u64;
                }
            }
        }
        drop(c);
        srv.wake(id);
    }
}

/// Runs the complete commands in `c.pending_input` as Redis does while blocked.
fn answer(srv: &mut Server, c: &mut Client, caller: Caller) {
    let mut decoder = Decoder::default();
    let mut input = c.pending_input.take();
    let mut used = 0;
    while used < input.len() && !c.close_after_reply {
        let limits = Limits {
            max_bulk: srv.config.proto_max_bulk_len,
            authenticated: c.authenticated,
        };
        match decoder.parse(&input[used..], limits) {
            Parsed::Command { consumed } => {
                let (buf, ranges) = decoder.request(&input[used..used + consumed]);
                if !ranges.is_empty() && !run_one(srv, c, &Args::new(buf, ranges), caller) {
                    break;
                }
                used += consumed;
            }
            // An incomplete command waits for the task; a protocol error is
            // left for the task to answer and close on.
            Parsed::Incomplete { .. } | Parsed::Error(_) => break,
        }
    }
    input.drain(..used);
    c.pending_input = input.into();
}

/// One command while blocked, through the gate (which answers BUSY unless
/// the command is flagged allow-busy, or LOADING unless it is flagged
/// loading). False when CLIENT PAUSE holds it: it stays unread, for the
/// connection task.
fn run_one(srv: &mut Server, c: &mut Client, args: &Args, caller: Caller) -> bool {
    match gate::check(srv, c, args, caller) {
        Verdict::Run(cmd) => {
            dispatch::call(srv, c, cmd, args, false);
        }
        Verdict::Queue(cmd) => dispatch::queue(c, cmd, args),
        Verdict::Reject(cmd, r) => dispatch::reject(srv, c, cmd, &r),
        Verdict::Postpone => return false,
    }
    true
}

/// The running script (true: a FUNCTION) once it has passed
/// `busy-reply-threshold`, or None: what SHUTDOWN without NOSAVE refuses.
pub fn busy_script() -> Option<bool> {
    // SAFETY: read on the data thread; the reference does not outlive this call.
    unsafe { run_ctx() }
        .filter(|r| r.busy)
        .map(|r| r.is_function)
}
