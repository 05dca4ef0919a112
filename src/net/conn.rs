//! One connection: read what is available, run every complete request, write the replies in one burst with the round's others.

use std::cell::{Cell, RefCell};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::time::Sleep;

use crate::command::args::Args;
use crate::resp::decode::{Decoder, Limits, Parsed};
use crate::server::client::{Client, ClientCell};
use crate::server::{blocking, Server};

/// Bytes read from a socket at a time (Redis's `PROTO_IOBUF_LEN`).
const READ_CHUNK: usize = 16 * 1024;
/// The shared read buffer's size: one per thread, so it costs no connection
/// anything, and a pipelined batch a little over 16 KiB (16 SETs of 1 KiB)
/// arrives in one read instead of two rounds of processing. Requests are run
/// from it where they lie; only what is left over is copied.
const SCRATCH_LEN: usize = 64 * 1024;
/// Output buffers above this size are released once written (Redis's
/// per-client reply buffer is 16 KiB).
pub const KEEP_OUTPUT: usize = 16 * 1024;
/// Replies up to this size wait for the round's burst (see `serve`).
const BURST_MAX: usize = 16 * 1024;

/// The sockets a connection runs on (TCP, unix).
pub trait Socket: AsyncRead + AsyncWrite + Unpin {}
impl Socket for tokio::net::TcpStream {}
impl Socket for tokio::net::UnixStream {}

thread_local! {
    /// The read buffer every connection on the data thread shares: empty
    /// (length 0) while here; a connection takes it for a read and puts it
    /// back once those bytes have run (see `Input::fresh`).
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Removes the client from the server when its task ends, however it ends:
/// a return, a panic unwinding out of the task, or the runtime dropping it.
/// Without this a fault left the client in CLIENT LIST and counted against
/// `maxclients` for good.
struct Registered {
    srv: Rc<RefCell<Server>>,
    cell: Rc<ClientCell>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        match (self.srv.try_borrow_mut(), self.cell.state.try_borrow_mut()) {
            (Ok(mut s), Ok(mut c)) => super::listener::remove_client(&mut s, &mut c),
            _ => crate::log::warning(
                "Connection closed while the server state was in use; client not removed",
            ),
        }
    }
}

/// Per-connection parse state the task keeps between reads.
struct Input {
    /// Bytes read and not yet run: a request still arriving, or requests
    /// held back (blocked, paused). Empty, with no allocation, when idle.
    buf: BytesMut,
    /// How many bytes at the front of the shared `SCRATCH` this connection
    /// has just read, to run from there without a copy. Invariant: non-zero
    /// only between a read and the processing that follows it with no wait
    /// in between (so no other connection reads into the scratch
    /// meanwhile), and only when `buf` was empty (these bytes come after
    /// nothing). A length, not the buffer: the task's state is paid by
    /// every idle connection.
    fresh: usize,
    /// Allocated on the first request (the task's state is paid by every
    /// idle connection, a connection that never sends pays nothing).
    decoder: Option<Box<Decoder>>,
    /// Do not parse again before the pending bytes number this many.
    need: usize,
}

impl Input {
    /// Runs the complete requests pending (in `fresh` or `buf`), keeps in
    /// `buf` what is left (a request still arriving, requests held back) and
    /// gives the scratch back.
    fn run(&mut self, srv: &mut Server, c: &mut Client) {
        if self.fresh == 0 {
            let used = process(srv, c, &self.buf, &mut self.decoder, &mut self.need);
            self.buf.advance(used);
            return;
        }
        // Taken for the batch: a command that reads another socket (the
        // busy-script poller) finds it empty and never overwrites it.
        let scratch = SCRATCH.with(|c| c.take());
        let fresh = &scratch[..self.fresh.min(scratch.len())];
        let used = process(srv, c, fresh, &mut self.decoder, &mut self.need);
        self.buf.extend_from_slice(&fresh[used..]);
        SCRATCH.with(|c| c.set(scratch));
        self.fresh = 0;
    }

    /// One turn of the connection: runs what is pending (unless the client
    /// was killed), then what Redis does before it sleeps: tracking's
    /// invalidations, the query buffer's figures, and client eviction.
    fn turn(&mut self, s: &mut Server, c: &mut Client, killed: bool) {
        c.unblocked = false;
        c.postponed = false;
        if !c.pending_input.is_empty() {
            // Input the busy-script poller read off the socket (see
            // script::busy): it came before anything read since.
            self.buf.extend_from_slice(&c.pending_input);
            self.keep_fresh();
            c.pending_input = Default::default();
        }
        if !killed {
            self.run(s, c);
            // No busy-polling under `appendfsync always`: replies wait for
            // the sync thread, and a spinning data thread took the core
            // that thread and the clients need (P1 SET: 0.89x Redis).
            if !s.aof.syncs_every_write() {
                s.activity.notify_one();
            }
        }
        self.fresh = 0;
        // An empty buffer is dropped even at capacity 0: a buffer sized
        // exactly for a big argument ends at capacity 0 once the argument
        // is split off, yet still holds a share of that argument's block
        // (BytesMut splits share one allocation), which kept 40 MB alive
        // after `SET big <32 MB>` + `DEL big` until the client left.
        if self.buf.is_empty() {
            self.buf = BytesMut::new();
        }
        #[cfg(test)]
        if c.name.as_deref() == Some(crate::server::fault::PANIC_TASK_NAME) {
            panic!("injected task fault (test build)");
        }
        crate::server::tracking::before_sleep(s, c);
        if !s.prop.repl_fresh.is_empty() {
            // The feeder hands the round's stream to the replicas at once.
            s.repl.feed.notify_one();
        }
        // What is not yet parsed into arguments (Redis moves those out of
        // its query buffer), and what the buffer holds.
        let parsed = self.decoder.as_ref().map_or(0, |d| d.parsed_len());
        c.qbuf = self.buf.len().saturating_sub(parsed);
        c.qbuf_cap = self.buf.capacity();
        // maxmemory-clients, as Redis after a read and before it sleeps:
        // this client counted, clients over the limit closed.
        if s.client_mem.limit != 0 {
            crate::server::client_mem::update_if_limited(s, c);
            crate::server::client_mem::evict(s, c);
        }
    }

    /// Moves the bytes just read to `buf` (behind what it holds).
    fn keep_fresh(&mut self) {
        if self.fresh > 0 {
            SCRATCH.with(|c| {
                let scratch = c.take();
                self.buf
                    .extend_from_slice(&scratch[..self.fresh.min(scratch.len())]);
                c.set(scratch);
            });
            self.fresh = 0;
        }
    }
}

/// Serves one client until it quits, is killed, or the socket closes.
///
/// Not an `async fn`: one would keep a second copy of its arguments in the
/// task's state, which every idle connection pays for (the guard holds the
/// only references, and there is no output buffer between writes).
pub fn serve<S: Socket>(
    srv: Rc<RefCell<Server>>,
    cell: Rc<ClientCell>,
    mut stream: S,
) -> impl std::future::Future<Output = ()> {
    let registered = Registered { srv, cell };
    async move {
        let (srv, cell) = (&registered.srv, &registered.cell);
        let mut input = Input {
            buf: BytesMut::new(),
            fresh: 0,
            decoder: None,
            need: 1,
        };
        loop {
            let (close, deadline_ms, idle_at, blocked, hold) = {
                let mut s = srv.borrow_mut();
                let mut c = cell.state.borrow_mut();
                input.turn(&mut s, &mut c, cell.kill.get());
                // `timeout`: closed once idle that long on the server's clock.
                // Replicas and the master are never idle-closed (Redis
                // exempts them from `timeout`; repl-timeout covers them).
                let idle_at = (s.config.timeout_secs > 0
                    && c.blocked.is_none()
                    && c.subscription_count() == 0
                    && c.shard_channels.is_empty()
                    && c.repl_role == crate::server::client::ReplRole::None)
                    .then(|| c.last_interaction + s.config.timeout_secs as i64 * 1000);
                // A request held back by CLIENT PAUSE waits like a blocked one,
                // until the pause ends (or CLIENT UNPAUSE wakes the task).
                let pause_end = s.pause.filter(|_| c.postponed).map(|p| p.until_ms);
                (
                    c.close_after_reply || cell.kill.get(),
                    c.blocked.as_ref().and_then(|b| b.deadline_ms).or(pause_end),
                    idle_at,
                    c.blocked.is_some() || c.postponed,
                    crate::cmd::testctl::fault::take_hold(&mut s, c.id),
                )
            };
            if let Some(until) = hold {
                // OXIDIS FAULT ... DELAY: the reply waits, the server does not.
                tokio::time::sleep_until(until.into()).await;
            }
            if cell.kill.get() {
                // Killed (CLIENT KILL, output limit, client eviction): closed
                // at once, its pending output dropped, as Redis frees it.
                break;
            }
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
            if flush(srv, cell, &mut stream, &mut input).await.is_err() {
                break;
            }
            if close {
                break;
            }
            if !blocked && input.buf.len() >= input.need && !input.buf.is_empty() {
                // Woken with requests still buffered (e.g. after being unblocked).
                continue;
            }
            // The timers live on the heap, and only while armed: they would
            // otherwise take room in every idle connection's task.
            // Both are on the server's clock, which a test may move or
            // freeze: a timer that fires early is checked against it, and
            // moving the clock wakes every connection to re-arm (see
            // `cmd::testctl::clock`).
            let until = |at: i64| {
                let ms = (at - crate::clock::real_now_us() / 1000).max(0) as u64;
                Box::pin(tokio::time::sleep(Duration::from_millis(ms)))
            };
            let mut deadline = deadline_ms.map(until);
            let mut idle = idle_at.map(|at| until(at + 1));
            tokio::select! {
                r = std::future::poll_fn(|cx| poll_read(cx, &mut stream, &mut input)) => {
                    match r {
                        Ok(0) => break,
                        Ok(n) => {
                            if !took_input(srv, cell, &input, n) {
                                break;
                            }
                        }
                        Err(_) => break,
                    }
                },
                _ = cell.wake.notified() => {}
                _ = armed(&mut deadline) => {
                    let mut s = srv.borrow_mut();
                    let mut c = cell.state.borrow_mut();
                    crate::clock::begin_command();
                    if blocking::deadline_passed(&c) {
                        blocking::time_out(&mut s, &mut c);
                    }
                }
                _ = armed(&mut idle) => {
                    // Looked at again: the reply written since counts.
                    let timeout_ms = srv.borrow().config.timeout_secs as i64 * 1000;
                    let last = cell.state.borrow().last_interaction;
                    if timeout_ms > 0 && crate::clock::real_now_us() / 1000 > last + timeout_ms {
                        break;
                    }
                }
            }
        }
        let _ = stream.shutdown().await;
    }
}

/// Waits for a timer that may not be set (then forever).
async fn armed(timer: &mut Option<Pin<Box<Sleep>>>) {
    match timer {
        Some(t) => t.as_mut().await,
        None => std::future::pending().await,
    }
}

/// Reads what the socket has: into the buffer shared by every connection,
/// where the requests are then run (most reads hold whole requests; what is
/// left over is copied to the connection's buffer), or straight into the
/// connection's buffer while a big argument or a split request arrives. The
/// wait itself keeps no buffer: an idle connection holds none. (tokio's
/// `poll_read` also knows a short read drained the socket, so no extra
/// read is needed to find out.)
fn poll_read<S: Socket>(
    cx: &mut Context<'_>,
    stream: &mut S,
    input: &mut Input,
) -> Poll<std::io::Result<usize>> {
    let want = input.need.saturating_sub(input.buf.len());
    // A big argument, or a request still arriving (bytes already pending):
    // read straight into the connection's buffer (no copy), up to the
    // scratch's size, so the query-buffer check after the read never sees
    // more unparsed bytes than one argument or one read can bring. A big
    // argument gets its whole room at once, as Redis sizes its query
    // buffer to the announced length (so the client's memory shows it, for
    // `maxmemory-clients`, from its header on; the length is within
    // `proto-max-bulk-len`, and far smaller before AUTH).
    if want > READ_CHUNK || !input.buf.is_empty() {
        let room = if want > READ_CHUNK { want } else { SCRATCH_LEN };
        let spare = input.buf.capacity() - input.buf.len();
        if want > READ_CHUNK && spare < want {
            // Exactly what the argument needs (`reserve` may double).
            let mut exact = BytesMut::with_capacity(input.buf.len() + want);
            exact.extend_from_slice(&input.buf);
            input.buf = exact;
        } else if spare < want.max(1) {
            // (With room for what is awaited, none is added: the end of a
            // big argument fits where it was sized for.)
            input.buf.reserve(room);
        }
        let len = input.buf.len();
        let spare = input.buf.spare_capacity_mut();
        let lim = spare.len().min(room);
        let mut rb = ReadBuf::uninit(&mut spare[..lim]);
        let r = Pin::new(stream).poll_read(cx, &mut rb);
        let n = rb.filled().len();
        // SAFETY: `poll_read` initialised the `n` bytes it reports filled,
        // right after the buffer's length.
        unsafe { input.buf.set_len(len + n) };
        return r.map_ok(|()| n);
    }
    let mut scratch = SCRATCH.with(|c| c.take());
    scratch.clear();
    scratch.reserve(SCRATCH_LEN);
    let mut rb = ReadBuf::uninit(&mut scratch.spare_capacity_mut()[..SCRATCH_LEN]);
    let r = Pin::new(stream).poll_read(cx, &mut rb);
    let n = rb.filled().len();
    // SAFETY: `poll_read` initialised the `n` bytes it reports filled, from
    // the start of the (emptied) scratch's spare room.
    unsafe { scratch.set_len(n) };
    SCRATCH.with(|c| c.set(scratch));
    input.fresh = n;
    r.map_ok(|()| n)
}

/// Counts `n` bytes just read and checks the query buffer limit; false when
/// the client must close.
fn took_input(srv: &Rc<RefCell<Server>>, cell: &ClientCell, input: &Input, n: usize) -> bool {
    let mut s = srv.borrow_mut();
    let mut c = cell.state.borrow_mut();
    s.stats.net_input_bytes += n as u64;
    c.net_in += n as u64;
    !over_query_limit(&s, &mut c, input)
}

/// What a wait in [`flush`] ended with.
enum Io {
    Wrote(std::io::Result<usize>),
    Read(std::io::Result<usize>),
}

/// Redis's `client-query-buffer-limit` check after a read: input not yet
/// parsed into arguments (a request still arriving, or everything a blocked
/// or paused client keeps sending) past the limit closes the client, with a
/// log line and no reply, as Redis's `readQueryFromClient` does.
fn over_query_limit(s: &Server, c: &mut Client, input: &Input) -> bool {
    let parsed = input.decoder.as_ref().map_or(0, |d| d.parsed_len());
    if input.fresh > 0 {
        // Read into the scratch, so at most its size, and into an empty
        // buffer: never over the limit's least value (1 MB).
        return false;
    }
    let unparsed = &input.buf[parsed..];
    if (unparsed.len() as u64) <= s.config.client_query_buffer_limit {
        return false;
    }
    c.qbuf = unparsed.len();
    let mut head = Vec::new();
    crate::server::monitor::repr(&mut head, &unparsed[..unparsed.len().min(64)]);
    crate::log::warning(&format!(
        "Closing client that reached max query buffer length: {} (qbuf initial bytes: {})",
        crate::cmd::server::client::describe(c, false, 0),
        String::from_utf8_lossy(&head)
    ));
    true
}

/// Writes whatever the client has queued, including output other clients
/// added while an earlier write was in flight. While a write waits (the
/// client does not read its replies), its requests are still read and run,
/// as Redis does: the output grows, under the output buffer limits and
/// `maxmemory-clients`, instead of the two sides waiting on each other.
/// (Not an `async fn`, which would keep its arguments twice in the
/// connection task's state.)
#[allow(clippy::manual_async_fn)]
fn flush<'a, S: Socket>(
    srv: &'a Rc<RefCell<Server>>,
    cell: &'a Rc<ClientCell>,
    stream: &'a mut S,
    input: &'a mut Input,
) -> impl std::future::Future<Output = std::io::Result<()>> + 'a {
    async move {
        // What is being written; the client's buffer takes new output meanwhile.
        let outbuf = &mut BytesMut::new();
        loop {
            let has_output = {
                let mut c = cell.state.borrow_mut();
                if c.reply.buf.is_empty() {
                    if c.reply.buf.capacity() > KEEP_OUTPUT {
                        c.reply.buf = BytesMut::new();
                    }
                    false
                } else {
                    std::mem::swap(&mut c.reply.buf, outbuf);
                    c.out_inflight = outbuf.capacity();
                    true
                }
            };
            // What the commands so far appended to the AOF reaches the file
            // (and the disk with `appendfsync always`) before this output,
            // taken just now, is sent; output added meanwhile waits for the
            // next turn.
            crate::persist::aof::before_reply(srv, has_output).await;
            if !has_output {
                return Ok(());
            }
            // Write without holding up a kill (a slow reader over its output
            // limit): `write` is cancel-safe, so a wake-up loses no progress.
            let mut written = 0;
            let mut rearm = false;
            let mut reading = !cell.state.borrow().close_after_reply;
            while written < outbuf.len() {
                tokio::select! {
                    // The write first: when it completes at once (the common
                    // case) neither the read nor the wake-up is registered.
                    biased;
                    io = std::future::poll_fn(|cx| {
                        let w = Pin::new(&mut *stream).poll_write(cx, &outbuf[written..]);
                        if let Poll::Ready(r) = w {
                            return Poll::Ready(Io::Wrote(r));
                        }
                        if reading {
                            if let Poll::Ready(r) = poll_read(cx, stream, input) {
                                return Poll::Ready(Io::Read(r));
                            }
                        }
                        Poll::Pending
                    }) => match io {
                        Io::Wrote(r) => match r? {
                            0 => return Err(std::io::ErrorKind::WriteZero.into()),
                            n => written += n,
                        },
                        Io::Read(r) => {
                            let n = r?;
                            if n == 0 || !took_input(srv, cell, input, n) {
                                return Err(std::io::ErrorKind::UnexpectedEof.into());
                            }
                            let mut s = srv.borrow_mut();
                            let mut c = cell.state.borrow_mut();
                            input.turn(&mut s, &mut c, cell.kill.get());
                            if cell.kill.get() {
                                return Err(std::io::Error::other("client killed"));
                            }
                            reading = !c.close_after_reply;
                        }
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
            let mut s = srv.borrow_mut();
            s.stats.net_output_bytes += n;
            outbuf.clear();
            let mut c = cell.state.borrow_mut();
            c.net_out += n;
            c.out_inflight = 0;
            // Output sent is an interaction too (Redis's writeToClient), so a
            // client answered after a long block is not idle-closed at once;
            // except for this server's master, whose ACKs prove nothing.
            if c.repl_role != crate::server::client::ReplRole::Master {
                c.last_interaction = crate::clock::real_now_us() / 1000;
            }
            // One buffer per connection: the written one goes back to the
            // client unless more output arrived during the write.
            if c.reply.buf.is_empty() {
                std::mem::swap(&mut c.reply.buf, outbuf);
            }
            crate::server::client_mem::update_if_limited(&mut s, &mut c);
        }
    }
}

/// Runs every complete request at the front of `batch`, stopping early when
/// the client blocks or must close. Returns the bytes used.
fn process(
    srv: &mut Server,
    c: &mut Client,
    batch: &[u8],
    decoder: &mut Option<Box<Decoder>>,
    need: &mut usize,
) -> usize {
    // Idle time counts from the last batch of requests read (one clock
    // read per batch, as Redis uses its cached time).
    let mut touched = false;
    let mut used = 0;
    loop {
        let rest = &batch[used..];
        if c.blocked.is_some()
            || c.postponed
            || c.close_after_reply
            || rest.is_empty()
            || rest.len() < *need
        {
            return used;
        }
        let limits = Limits {
            max_bulk: srv.config.proto_max_bulk_len,
            authenticated: c.authenticated,
        };
        let decoder = decoder.get_or_insert_with(Default::default);
        match decoder.parse(rest, limits) {
            Parsed::Incomplete { need: n } => {
                *need = n;
                return used;
            }
            Parsed::Error(e) => {
                c.reply.error_bytes(&e.reply());
                c.close_after_reply = true;
                crate::log::verbose(&format!(
                    "Protocol error ({}) from client: id={} addr={}",
                    e.reason(),
                    c.id,
                    c.addr
                ));
                return used;
            }
            Parsed::Command { consumed } => {
                *need = 1;
                let (buf, ranges) = decoder.request(&rest[..consumed]);
                if !ranges.is_empty() {
                    if !touched {
                        c.last_interaction = crate::clock::real_now_us() / 1000;
                        touched = true;
                    }
                    // Redis trims its query buffer after the batch, so
                    // CLIENT LIST's qbuf counts the batch during a command.
                    c.qbuf = batch.len();
                    crate::server::fault::dispatch_guarded(srv, c, &Args::new(buf, ranges));
                    if c.postponed {
                        // CLIENT PAUSE holds it: left in the buffer, parsed
                        // again when the pause ends.
                        return used;
                    }
                }
                used += consumed;
            }
        }
    }
}
