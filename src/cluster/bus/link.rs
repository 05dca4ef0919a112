//! Bus sockets: the listener on the bus port, outbound connections, and the task that frames messages in and writes them out.
//!
//! A link's task reads and writes at once (a `select!` over both halves),
//! so two nodes sending each other large messages never wait on each
//! other. Framing follows Redis's `clusterReadHandler`: 8 bytes give the
//! signature and total length; a bad signature or a length below the
//! header's closes the link. The buffer grows only as bytes arrive, so a
//! length that lies costs nothing until the bytes are really sent.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd};
use std::rc::Rc;
use std::time::Duration;

use tokio::io::Interest;
use tokio::net::{TcpListener, TcpStream};

use super::{msg, now_ms};
use crate::cluster::node::MEET;
use crate::server::Server;

/// The longest message accepted (a PUBLISH of two 512 MB strings fits).
const MAX_MESSAGE: usize = 1100 << 20;

/// Binds the bus port on every `bind` address (all interfaces by default).
pub fn bind(config: &crate::Config, port: u16) -> Result<Vec<TcpListener>, String> {
    let addrs: Vec<String> = if config.bind.is_empty() {
        vec!["0.0.0.0".into()]
    } else {
        config.bind.clone()
    };
    let mut out = Vec::new();
    for a in addrs {
        let optional = a.starts_with('-');
        let host = match a.trim_start_matches('-') {
            "*" => "0.0.0.0",
            "::*" => "::",
            h => h,
        }
        .to_string();
        match crate::net::listener::listen_on(&host, port) {
            Ok(l) => out.push(l),
            Err(_) if optional || (host == "::" && !out.is_empty()) => {}
            Err(e) => {
                return Err(format!(
                    "Could not bind cluster bus port {host}:{port}: {e}"
                ))
            }
        }
    }
    Ok(out)
}

/// Accepts inbound links: each starts without a node, until its first
/// message names a known sender.
pub fn spawn_accept(srv: &Rc<RefCell<Server>>, l: TcpListener) {
    let srv = srv.clone();
    tokio::task::spawn_local(async move {
        loop {
            match l.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let id = {
                        let mut s = srv.borrow_mut();
                        let Some(c) = s.cluster.as_deref_mut() else {
                            continue;
                        };
                        let id = c.bus.add_link(None, true);
                        if let Some(link) = c.bus.links.get_mut(&id) {
                            link.peer_ip = peer.ip().to_string();
                            link.local_ip = local_ip(&stream);
                        }
                        crate::log::verbose(&format!(
                            "Accepting cluster node connection from {}:{}",
                            peer.ip(),
                            peer.port()
                        ));
                        id
                    };
                    attach(&srv, id, stream);
                }
                Err(e) => {
                    crate::log::warning(&format!("Error accepting cluster node: {e}"));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    });
}

/// The local address of a socket, as text (an IPv4-mapped address shown as IPv4).
fn local_ip(s: &TcpStream) -> String {
    s.local_addr()
        .map(|a| match a.ip() {
            std::net::IpAddr::V6(v6) => v6
                .to_ipv4_mapped()
                .map_or(v6.to_string(), |v4| v4.to_string()),
            ip => ip.to_string(),
        })
        .unwrap_or_default()
}

/// Spawns the serving task of link `id` and records its handle.
fn attach(srv: &Rc<RefCell<Server>>, id: u64, stream: TcpStream) {
    let handle = tokio::task::spawn_local(serve(srv.clone(), id, stream)).abort_handle();
    let mut s = srv.borrow_mut();
    match s
        .cluster
        .as_deref_mut()
        .and_then(|c| c.bus.links.get_mut(&id))
    {
        Some(l) => l.task = Some(handle),
        // Freed before its task started.
        None => handle.abort(),
    }
}

/// Connects link `id` (already registered as its node's link) to
/// `ip:cport`; on success sends the first PING (a MEET to a node met by
/// CLUSTER MEET), on failure frees the link for the cron to retry.
pub fn spawn_connect(
    srv: &Rc<RefCell<Server>>,
    c: &mut crate::cluster::Cluster,
    id: u64,
    ip: String,
    cport: u16,
    timeout: i64,
) {
    let srv2 = srv.clone();
    let task = tokio::task::spawn_local(async move {
        let srv = srv2;
        // An address, never a name to resolve (as Redis's connect).
        let Ok(addr) = ip.parse::<std::net::IpAddr>() else {
            return failed(&srv, id, &ip, cport, "Invalid argument");
        };
        // From bind-source-addr when set, as Redis's clusterCron connects.
        let source = srv
            .borrow()
            .config
            .get("bind-source-addr")
            .filter(|a| !a.is_empty())
            .map(String::from);
        let conn = tokio::time::timeout(
            Duration::from_millis(timeout.max(1) as u64),
            crate::net::listener::connect_from(&addr.to_string(), cport, source.as_deref()),
        )
        .await;
        let stream = match conn {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return failed(&srv, id, &ip, cport, &crate::config::os_error(&e)),
            Err(_) => return failed(&srv, id, &ip, cport, "connection timed out"),
        };
        let _ = stream.set_nodelay(true);
        {
            let mut s = srv.borrow_mut();
            let offset = super::repl_offset(&s);
            let Some(c) = s.cluster.as_deref_mut() else {
                return;
            };
            let Some(l) = c.bus.links.get_mut(&id) else {
                return;
            };
            l.local_ip = local_ip(&stream);
            l.peer_ip = ip.clone();
            let Some(n) = l.node else { return };
            let old_ping = c.nodes[n].ping_sent;
            let kind = if c.nodes[n].flags & MEET != 0 {
                msg::MEET
            } else {
                msg::PING
            };
            super::gossip::send_ping(c, Some(id), kind, offset);
            if old_ping != 0 {
                // An unanswered PING from before keeps its age.
                c.nodes[n].ping_sent = old_ping;
            }
            c.nodes[n].flags &= !MEET;
        }
        serve(srv, id, stream).await
    })
    .abort_handle();
    // The server is borrowed by the caller (the cron): the handle goes in
    // through `c`.
    if let Some(l) = c.bus.links.get_mut(&id) {
        l.task = Some(task);
    }
}

/// A failed connection: the link goes (the cron makes a new one), and a
/// node that had no PING pending counts as pinged now, so a node that
/// cannot be reached at all still times out.
fn failed(srv: &Rc<RefCell<Server>>, id: u64, ip: &str, cport: u16, why: &str) {
    let mut s = srv.borrow_mut();
    let Some(c) = s.cluster.as_deref_mut() else {
        return;
    };
    let Some(n) = c.bus.links.get(&id).and_then(|l| l.node) else {
        c.free_link(id);
        return;
    };
    if c.nodes[n].ping_sent == 0 {
        c.nodes[n].ping_sent = now_ms();
    }
    crate::log::verbose(&format!(
        "Connection with Node {} at {ip}:{cport} failed: {why}",
        c.nodes[n].id
    ));
    // The task ends by itself; no abort of the running task is needed.
    if let Some(l) = c.bus.links.get_mut(&id) {
        l.task = None;
    }
    c.free_link(id);
}

/// The link's loop: reads whole messages and hands them to `gossip`,
/// writes what `Cluster::send` queued. Ends when the link is freed or the
/// connection fails. Its buffers live in the `Link`, so that
/// [`poll_while_blocked`] can go on where the task stopped.
async fn serve(srv: Rc<RefCell<Server>>, id: u64, stream: TcpStream) {
    let wake = {
        let mut s = srv.borrow_mut();
        match s
            .cluster
            .as_deref_mut()
            .and_then(|c| c.bus.links.get_mut(&id))
        {
            Some(l) => {
                l.fd = stream.as_raw_fd();
                l.wake.clone()
            }
            None => return,
        }
    };
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let pending = {
            let s = srv.borrow();
            match s.cluster.as_deref().and_then(|c| c.bus.links.get(&id)) {
                Some(l) => !l.sndbuf.is_empty(),
                None => return,
            }
        };
        let interest = if pending {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        tokio::select! {
            r = stream.ready(interest) => {
                let Ok(ready) = r else { return io_error(&srv, id) };
                if ready.is_readable() {
                    match stream.try_read(&mut chunk) {
                        Ok(0) => return io_error(&srv, id),
                        Ok(n) => {
                            let mut s = srv.borrow_mut();
                            if !received(&mut s, id, &chunk[..n]) {
                                return;
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(_) => return io_error(&srv, id),
                    }
                }
                if ready.is_writable() {
                    let mut s = srv.borrow_mut();
                    let Some(l) = s.cluster.as_deref_mut().and_then(|c| c.bus.links.get_mut(&id)) else {
                        return;
                    };
                    match stream.try_write(&l.sndbuf) {
                        Ok(0) => {
                            drop(s);
                            return io_error(&srv, id);
                        }
                        Ok(n) => written(l, n),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(_) => {
                            drop(s);
                            return io_error(&srv, id);
                        }
                    }
                }
            }
            _ = wake.notified(), if !pending => {}
        }
    }
}

/// `n` bytes of the output went out; an emptied large buffer is given back.
fn written(l: &mut super::Link, n: usize) {
    l.sndbuf.drain(..n);
    if l.sndbuf.is_empty() && l.sndbuf.capacity() > 64 << 10 {
        l.sndbuf = Vec::new();
    }
}

/// Serves the bus while the data thread is held by a load (Redis's
/// `processEventsWhileBlocked` reaching the bus): every link with a socket
/// is read and the messages handled (a PING gets its PONG, carrying the
/// replication offset of a loading replica), and its output written, all
/// without blocking. Nothing is sent on the node's own initiative (the
/// cron waits, as in Redis).
pub fn poll_while_blocked(srv: &mut Server) {
    let ids: Vec<(u64, i32)> = match srv.cluster.as_deref() {
        Some(c) => c
            .bus
            .links
            .iter()
            .filter(|(_, l)| l.fd >= 0)
            .map(|(id, l)| (*id, l.fd))
            .collect(),
        None => return,
    };
    let mut chunk = vec![0u8; 16 * 1024];
    for (id, fd) in ids {
        // SAFETY: the descriptor is the link's socket, open while the link
        // is registered (its task owns it and has not run since the check
        // above); ManuallyDrop keeps it from being closed here.
        let mut sock = ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
        loop {
            match sock.read(&mut chunk) {
                Ok(0) => {
                    free(srv, id);
                    break;
                }
                Ok(n) => {
                    if !received(srv, id, &chunk[..n]) {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    free(srv, id);
                    break;
                }
            }
        }
        let Some(l) = srv
            .cluster
            .as_deref_mut()
            .and_then(|c| c.bus.links.get_mut(&id))
        else {
            continue;
        };
        while !l.sndbuf.is_empty() {
            match sock.write(&l.sndbuf) {
                Ok(0) => break,
                Ok(n) => written(l, n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    }
}

/// Frees link `id` after its connection failed.
fn free(srv: &mut Server, id: u64) {
    if let Some(c) = srv.cluster.as_deref_mut() {
        c.free_link(id);
    }
}

/// Takes `bytes` read from link `id` and handles every whole message they
/// complete; false when the link is gone (freed by a message, or closed
/// for a bad frame).
fn received(s: &mut Server, id: u64, bytes: &[u8]) -> bool {
    let Some(l) = s
        .cluster
        .as_deref_mut()
        .and_then(|c| c.bus.links.get_mut(&id))
    else {
        return false;
    };
    l.rcvbuf.extend_from_slice(bytes);
    let mut rcv = std::mem::take(&mut l.rcvbuf);
    let mut used = 0;
    let alive = loop {
        let rest = &rcv[used..];
        if rest.len() < 8 {
            break true;
        }
        let Some(len) = msg::frame_len(&rest[..8]).filter(|&l| l <= MAX_MESSAGE) else {
            crate::log::warning("Bad message length or signature received from Cluster bus.");
            free(s, id);
            return false;
        };
        if rest.len() < len {
            break true;
        }
        let parsed = msg::parse(&rest[..len]);
        used += len;
        // DEBUG DROP-CLUSTER-PACKET-FILTER <type>: such messages are dropped.
        let filter = s.debug.drop_packet_filter;
        let alive = match parsed {
            Some(m) if filter >= 0 && m.hdr.kind as i64 == filter => {
                crate::log::warning("Dropping packet that matches debug drop filter");
                true
            }
            Some(m) => super::gossip::process(s, id, m),
            // Counted as received, then dropped (Redis's sanity checks).
            None => true,
        };
        super::before_sleep(s);
        let still = s
            .cluster
            .as_deref()
            .is_some_and(|c| c.bus.links.contains_key(&id));
        if !alive || !still {
            return false;
        }
    };
    rcv.drain(..used);
    if let Some(l) = s
        .cluster
        .as_deref_mut()
        .and_then(|c| c.bus.links.get_mut(&id))
    {
        l.rcvbuf = rcv;
    }
    alive
}

/// The connection failed or closed: the link is freed (the cron reconnects
/// an outbound one).
fn io_error(srv: &Rc<RefCell<Server>>, id: u64) {
    let mut s = srv.borrow_mut();
    if let Some(c) = s.cluster.as_deref_mut() {
        if let Some(l) = c.bus.links.get_mut(&id) {
            // This task is ending by itself.
            l.task = None;
        }
        c.free_link(id);
    }
}
