//! One connection: read what is available, run every complete request, write the replies in one burst with the round's others.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::client::{Client, ClientCell};
use super::{blocking, Server};
use crate::command::args::{Args, Argv};
use crate::command::dispatch::dispatch;
use crate::resp::decode::{self, Limits, Parsed};

const READ_CHUNK: usize = 16 * 1024;
/// Buffers above this size are released once empty, so one big request or
/// reply does not pin memory for the life of the connection.
const KEEP_CAPACITY: usize = 1024 * 1024;
/// Replies up to this size wait for the round's burst (see `serve`).
const BURST_MAX: usize = 16 * 1024;

/// Serves one client until it quits, is killed, or the socket closes.
pub async fn serve<S>(srv: Rc<RefCell<Server>>, cell: Rc<ClientCell>, mut stream: S)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut inbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut ranges: Vec<(usize, usize)> = Vec::with_capacity(16);
    let mut need = 1usize;
    let mut outbuf = BytesMut::new();
    loop {
        let (close, deadline_ms, idle_secs, blocked) = {
            let mut s = srv.borrow_mut();
            let mut c = cell.state.borrow_mut();
            c.unblocked = false;
            c.postponed = false;
            if !c.pending_input.is_empty() {
                // Input the busy-script poller read off the socket (see script::busy).
                inbuf.extend_from_slice(&c.pending_input);
                c.pending_input.clear();
            }
            if !cell.kill.get() {
                process(&mut s, &mut c, &mut inbuf, &mut ranges, &mut need);
                s.activity.notify_one();
            }
            super::tracking::before_sleep(&mut s, &mut c);
            c.qbuf = inbuf.len();
            let idle = if c.blocked.is_none()
                && c.subscription_count() == 0
                && c.shard_channels.is_empty()
            {
                s.config.timeout_secs
            } else {
                0
            };
            // A request held back by CLIENT PAUSE waits like a blocked one,
            // until the pause ends (or CLIENT UNPAUSE wakes the task).
            let pause_end = s.pause.filter(|_| c.postponed).map(|p| p.until_ms);
            (
                c.close_after_reply || cell.kill.get(),
                c.blocked.as_ref().and_then(|b| b.deadline_ms).or(pause_end),
                idle,
                c.blocked.is_some() || c.postponed,
            )
        };
        let pending = cell.state.borrow().reply.buf.len();
        if pending > 0 && pending < BURST_MAX {
            // Let every other connection that is ready run its requests
            // first, so replies go out in one burst after the whole round,
            // as Redis writes in beforeSleep. A reply sent between two
            // clients' processing wakes a client that has just gone back to
            // sleep; in a burst, the first send wakes it and the rest find it
            // awake (P16 EVALSHA: +30%, half the kernel time per send).
            // Big replies go at once: held back, a round's worth of them
            // leaves the cache before it is copied out (P16 ZRANGE 0 99 lost 10%).
            tokio::task::yield_now().await;
        }
        if flush(&srv, &cell, &mut stream, &mut outbuf).await.is_err() {
            break;
        }
        if close {
            break;
        }
        if !blocked && inbuf.len() >= need && need > 0 && !inbuf.is_empty() {
            // Woken with requests still buffered (e.g. after being unblocked).
            continue;
        }
        if inbuf.is_empty() && inbuf.capacity() > KEEP_CAPACITY {
            inbuf = BytesMut::with_capacity(READ_CHUNK);
        }
        let want = need
            .saturating_sub(inbuf.len())
            .clamp(READ_CHUNK, KEEP_CAPACITY);
        if inbuf.capacity() - inbuf.len() < want {
            inbuf.reserve(want);
        }
        let sleep_deadline = async {
            match deadline_ms {
                Some(at) => {
                    let ms = (at - crate::clock::real_now_us() / 1000).max(0) as u64;
                    tokio::time::sleep(Duration::from_millis(ms)).await
                }
                None => std::future::pending().await,
            }
        };
        let idle = async {
            if idle_secs > 0 {
                tokio::time::sleep(Duration::from_secs(idle_secs)).await
            } else {
                std::future::pending().await
            }
        };
        tokio::select! {
            r = stream.read_buf(&mut inbuf) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut s = srv.borrow_mut();
                    s.stats.net_input_bytes += n as u64;
                    cell.state.borrow_mut().net_in += n as u64;
                }
            },
            _ = cell.wake.notified() => {}
            _ = sleep_deadline => {
                let mut s = srv.borrow_mut();
                let mut c = cell.state.borrow_mut();
                crate::clock::begin_command();
                blocking::time_out(&mut s, &mut c);
            }
            _ = idle => {
                break;
            }
        }
    }
    let _ = stream.shutdown().await;
    let mut s = srv.borrow_mut();
    let mut c = cell.state.borrow_mut();
    super::listener::remove_client(&mut s, &mut c);
}

/// Writes whatever the client has queued, including output other clients
/// added while an earlier write was in flight.
async fn flush<S: AsyncWrite + Unpin>(
    srv: &Rc<RefCell<Server>>,
    cell: &Rc<ClientCell>,
    stream: &mut S,
    outbuf: &mut BytesMut,
) -> std::io::Result<()> {
    loop {
        {
            let mut c = cell.state.borrow_mut();
            if c.reply.buf.is_empty() {
                if c.reply.buf.capacity() > KEEP_CAPACITY {
                    c.reply.buf = BytesMut::with_capacity(READ_CHUNK);
                }
                return Ok(());
            }
            std::mem::swap(&mut c.reply.buf, outbuf);
        }
        // Write without holding up a kill (a slow reader over its output
        // limit): `write` is cancel-safe, so a wake-up loses no progress.
        let mut written = 0;
        let mut rearm = false;
        while written < outbuf.len() {
            tokio::select! {
                // The write first: when it completes at once (the common
                // case) the wake-up future is never registered.
                biased;
                r = stream.write(&outbuf[written..]) => match r? {
                    0 => return Err(std::io::ErrorKind::WriteZero.into()),
                    n => written += n,
                },
                _ = cell.wake.notified() => {
                    if cell.kill.get() {
                        return Err(std::io::Error::other("client killed"));
                    }
                    rearm = true;
                }
            }
        }
        if rearm {
            // Hand the wake-up on to the main loop (unblocked, more output).
            cell.wake.notify_one();
        }
        let n = outbuf.len() as u64;
        srv.borrow_mut().stats.net_output_bytes += n;
        cell.state.borrow_mut().net_out += n;
        outbuf.clear();
        if outbuf.capacity() > KEEP_CAPACITY {
            *outbuf = BytesMut::new();
        }
    }
}

/// Runs every complete request in `inbuf`, stopping early when the client
/// blocks or must close.
fn process(
    srv: &mut Server,
    c: &mut Client,
    inbuf: &mut BytesMut,
    ranges: &mut Vec<(usize, usize)>,
    need: &mut usize,
) {
    // Idle time counts from the last batch of requests read (one clock
    // read per batch, as Redis uses its cached time).
    let mut touched = false;
    // Bytes of this batch already run: Redis trims its query buffer after
    // the batch, so CLIENT LIST's qbuf counts them during a command.
    let mut ran = 0usize;
    loop {
        if c.blocked.is_some()
            || c.postponed
            || c.close_after_reply
            || inbuf.len() < *need
            || inbuf.is_empty()
        {
            return;
        }
        let limits = Limits {
            max_bulk: srv.config.proto_max_bulk_len,
            authenticated: c.authenticated,
        };
        match decode::parse(&inbuf[..], ranges, limits) {
            Parsed::Incomplete { need: n } => {
                *need = n;
                return;
            }
            Parsed::Error(msg) => {
                c.reply.error_line(&format!("ERR Protocol error: {msg}"));
                c.close_after_reply = true;
                crate::log::verbose(&format!(
                    "Protocol error ({msg}) from client: id={} addr={}",
                    c.id, c.addr
                ));
                return;
            }
            Parsed::Command { consumed, inline } => {
                *need = 1;
                if !ranges.is_empty() {
                    if !touched {
                        c.last_interaction = std::time::Instant::now();
                        touched = true;
                    }
                    c.qbuf = ran + inbuf.len();
                    if inline {
                        let argv = inline_argv(inbuf, ranges);
                        dispatch(srv, c, &argv.args());
                    } else {
                        let args = Args::new(&inbuf[..], ranges);
                        dispatch(srv, c, &args);
                    }
                    if c.postponed {
                        // CLIENT PAUSE holds it: it stays in the buffer.
                        return;
                    }
                }
                inbuf.advance(consumed);
                ran += consumed;
            }
        }
    }
}

/// The words of an inline request, unquoted.
fn inline_argv(inbuf: &[u8], ranges: &[(usize, usize)]) -> Argv {
    Argv::from_slices(
        ranges
            .iter()
            .map(|&(s, e)| decode::inline_word(&inbuf[s..e]))
            .collect::<Vec<_>>()
            .iter()
            .map(|v| &v[..]),
    )
}
