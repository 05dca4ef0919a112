//! The master client: the master's stream run through the gate and `call` as Redis's `CLIENT_MASTER` (no replies, nothing refused), its offsets, and the ACKs.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::handshake::{multibulk, Conn};
use super::{ids, link_of, Outcome};
use crate::command::args::Args;
use crate::command::dispatch;
use crate::command::gate::{self, Caller, Verdict};
use crate::db::{ClientId, ReplicaExpiry};
use crate::log;
use crate::resp::decode::{Decoder, Limits, Parsed};
use crate::server::client::{Client, ClientCell, ConnKind, ReplRole};
use crate::server::Server;

/// Registers the master client (flags `M` in CLIENT LIST), its offsets
/// starting at `reploff`.
pub(super) fn create_master_client(
    srv: &mut Server,
    stream: &TcpStream,
    reploff: i64,
) -> Rc<ClientCell> {
    let id = srv.next_client_id;
    srv.next_client_id += 1;
    let peer = stream
        .peer_addr()
        .map(crate::server::client::Peer::from)
        .unwrap_or_default();
    let local = stream
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let mut client = Client::new(id, peer, local, ConnKind::Tcp, false);
    client.repl_role = ReplRole::Master;
    // A resurrected master continues in the database it had selected.
    client.db = srv
        .replica
        .link
        .as_deref()
        .and_then(|l| l.master.as_ref())
        .map_or(0, |p| p.db);
    let cell = Rc::new(ClientCell {
        state: RefCell::new(client),
        wake: Default::default(),
        kill: std::cell::Cell::new(false),
    });
    srv.clients.insert(id, cell.clone());
    if let Some(p) = srv
        .replica
        .link
        .as_deref_mut()
        .and_then(|l| l.master.as_mut())
    {
        p.reploff = reploff;
        p.read_reploff = reploff;
    }
    cell
}

/// Unregisters the master client (its transaction in progress dropped).
pub(super) fn free_master_client(srv: &mut Server, id: ClientId) {
    let Some(cell) = srv.clients.get(&id).cloned() else {
        return;
    };
    let Ok(mut c) = cell.state.try_borrow_mut() else {
        srv.clients.remove(&id);
        return;
    };
    if c.multi.is_some() {
        crate::cmd::txn::discard_transaction(srv, &mut c);
    }
    // Cached for a partial resync: the stream goes on in this database.
    if let Some(p) = srv
        .replica
        .link
        .as_deref_mut()
        .and_then(|l| l.master.as_mut())
    {
        p.db = c.db;
    }
    crate::net::listener::remove_client(srv, &mut c);
    cell.kill.set(true);
    cell.wake.notify_one();
}

/// `REPLCONF ACK <offset>`.
fn ack(offset: i64) -> Vec<u8> {
    multibulk(&[b"REPLCONF", b"ACK", offset.to_string().as_bytes()])
}

/// Reads and runs the master's stream until the link drops (or is
/// replaced), acknowledging the offset every second.
pub(super) async fn run(
    srv: &Rc<RefCell<Server>>,
    generation: u64,
    conn: Conn,
    cell: Rc<ClientCell>,
    ack_now: bool,
) -> Outcome {
    let Conn { mut stream, buf } = conn;
    let mut input = Input {
        pending: buf,
        parsed: 0,
        decoder: Decoder::default(),
    };
    let mut out = Vec::new();
    if ack_now {
        out.extend(ack(super::slave_offset(&srv.borrow())));
    }
    let mut chunk = vec![0u8; 16 * 1024];
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::now() + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    // What arrived with the end of the RDB (or the +CONTINUE) runs first.
    let mut n = 0;
    let why = loop {
        {
            let s = &mut *srv.borrow_mut();
            let mut c = cell.state.borrow_mut();
            if !input.run(s, generation, &mut c, n, &mut out) {
                break "protocol error";
            }
        }
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                break "write error";
            }
            out.clear();
        }
        n = 0;
        tokio::select! {
            r = stream.read(&mut chunk) => match r {
                Ok(0) | Err(_) => break "connection lost",
                Ok(k) => {
                    input.pending.extend_from_slice(&chunk[..k]);
                    n = k;
                }
            },
            _ = tick.tick() => {
                let s = &mut *srv.borrow_mut();
                let timeout = super::task::repl_timeout(s);
                let Some(l) = link_of(s, generation) else {
                    return Outcome::Gone;
                };
                if l.last_interaction.elapsed() > timeout {
                    log::warning("MASTER timeout: no data nor PING received...");
                    break "timeout";
                }
                out.extend(ack(super::slave_offset(s)));
            },
            _ = cell.wake.notified() => {
                if cell.kill.get() {
                    break "killed";
                }
            }
        }
    };
    let _ = why;
    let s = &mut *srv.borrow_mut();
    let Some(l) = link_of(s, generation) else {
        return Outcome::Gone;
    };
    log::warning("Connection with master lost.");
    log::notice("Caching the disconnected master state.");
    if let Some(p) = l.master.as_mut() {
        p.read_reploff = p.reploff;
    }
    if let Some(id) = l.master_client.take() {
        free_master_client(s, id);
    }
    Outcome::Dropped
}

/// The stream's bytes read and not yet applied.
struct Input {
    /// From the first byte not yet applied (a transaction in progress is
    /// applied at its EXEC) to the last byte read.
    pending: Vec<u8>,
    /// Bytes of `pending` already parsed (the commands of an open MULTI).
    parsed: usize,
    decoder: Decoder,
}

impl Input {
    /// Counts `read` new bytes, then runs every complete command. The
    /// offset (`reploff`) moves past a command once it ran outside a
    /// transaction, as Redis's `commandProcessed`. False on a protocol error.
    fn run(
        &mut self,
        s: &mut Server,
        generation: u64,
        c: &mut Client,
        read: usize,
        out: &mut Vec<u8>,
    ) -> bool {
        let Some(l) = link_of(s, generation) else {
            return true;
        };
        if read > 0 {
            l.last_interaction = Instant::now();
            c.last_interaction = crate::clock::real_now_us() / 1000;
            c.net_in += read as u64;
        }
        let Some(pos) = l.master.as_mut() else {
            return true;
        };
        pos.read_reploff += read as i64;
        let limits = Limits {
            max_bulk: i64::MAX,
            authenticated: true,
        };
        loop {
            let rest = &self.pending[self.parsed..];
            if rest.is_empty() {
                break;
            }
            match self.decoder.parse(rest, limits) {
                Parsed::Incomplete { .. } => break,
                Parsed::Error(e) => {
                    log::warning(&format!(
                        "Protocol error ({}) from client: id={} addr={}",
                        e.reason(),
                        c.id,
                        c.addr
                    ));
                    return false;
                }
                Parsed::Command { consumed } => {
                    let (buf, ranges) = self.decoder.request(&rest[..consumed]);
                    if !ranges.is_empty() {
                        let args = Args::new(buf, ranges);
                        run_command(s, generation, c, &args, out);
                    }
                    self.parsed += consumed;
                    if c.multi.is_none() {
                        self.applied(s, generation);
                    }
                }
            }
        }
        true
    }

    /// Everything parsed so far is applied: the offsets move past it.
    fn applied(&mut self, s: &mut Server, generation: u64) {
        let done: Vec<u8> = self.pending.drain(..self.parsed).collect();
        self.parsed = 0;
        if let Some(p) = link_of(s, generation).and_then(|l| l.master.as_mut()) {
            p.reploff += done.len() as i64;
        }
        ids::applied(s, &done);
    }
}

/// Runs one command of the master's stream as the master client.
fn run_command(s: &mut Server, generation: u64, c: &mut Client, args: &Args, out: &mut Vec<u8>) {
    if args.at(0).eq_ignore_ascii_case(b"replconf") {
        // REPLCONF GETACK *: the only reply a master gets, with the offset
        // before this command (Redis's `replicationSendAck`).
        if args.len() >= 2 && args.at(1).eq_ignore_ascii_case(b"getack") {
            let off = link_of(s, generation)
                .and_then(|l| l.master.as_ref())
                .map_or(0, |p| p.reploff);
            out.extend(ack(off));
        }
        return;
    }
    crate::db::set_replica_expiry(ReplicaExpiry::Applying);
    let cmd_name = match gate::check(s, c, args, Caller::Internal) {
        Verdict::Run(cmd) => {
            dispatch::call(s, c, cmd, args, false);
            dispatch::after_command(s, c);
            cmd.spec.full_name()
        }
        Verdict::Queue(cmd) => {
            dispatch::queue(c, cmd, args);
            cmd.spec.full_name()
        }
        Verdict::Reject(cmd, r) => {
            dispatch::reject(s, c, cmd, &r);
            cmd.map_or("<unknown>", |c| c.spec.full_name())
        }
        Verdict::Postpone => "<unknown>",
    };
    crate::db::set_replica_expiry(ReplicaExpiry::Replica);
    if c.reply.buf.first() == Some(&b'-') {
        // Never sent to the master, but it hints at a divergence.
        crate::repl::unexpected_error(s, "replica", "master", &c.reply.buf, cmd_name);
    }
    c.reply.buf.clear();
}
