//! Listening sockets (TCP and unix), the accept loop, the cron, and shutdown.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use tokio::net::{TcpListener, UnixListener};
use tokio::sync::Notify;

use crate::config::Config;
use crate::log;
use crate::server::client::{Client, ClientCell, ConnKind, Peer};
use crate::server::Server;

/// What the listener reports once it accepts connections.
#[derive(Clone, Debug)]
pub struct Bound {
    pub tcp: Vec<SocketAddr>,
    pub unix: Option<String>,
}

/// Redis's log line (and exit) when neither a TCP address nor a unix
/// socket is configured.
const NOWHERE: &str = "Configured to not listen anywhere, exiting.";

/// Binds the configured sockets, as Redis does: each `bind` address on
/// `port` plus the unix socket. With `port 0` Redis listens on no TCP port
/// (and exits when there is no unix socket either); Oxidis keeps that with a
/// unix socket and otherwise binds one ephemeral port the OS picks, on every
/// `bind` address (see `bind_ephemeral`).
pub async fn bind(config: &Config) -> std::io::Result<(Vec<TcpListener>, Option<UnixListener>)> {
    let tcp = if config.port == 0 && config.unixsocket.is_none() {
        bind_ephemeral(config)?
    } else {
        bind_tcp(config)?
    };
    let unix = match &config.unixsocket {
        Some(path) => {
            let _ = std::fs::remove_file(path);
            let l = UnixListener::bind(path)?;
            if config.unixsocketperm != 0 {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(
                    path,
                    std::fs::Permissions::from_mode(config.unixsocketperm),
                )?;
            }
            Some(l)
        }
        None => None,
    };
    if tcp.is_empty() && unix.is_none() {
        crate::log::warning(NOWHERE);
        return Err(std::io::Error::other(NOWHERE));
    }
    Ok((tcp, unix))
}

/// Binds the TCP listeners for `bind` and `port` without awaiting, so CONFIG
/// SET port/bind can re-bind from a command handler. `-`-prefixed addresses
/// are optional, as is `::` once an IPv4 wildcard is bound (dual stack).
pub fn bind_tcp(config: &Config) -> std::io::Result<Vec<TcpListener>> {
    if config.port == 0 {
        return Ok(Vec::new());
    }
    bind_addrs(config, config.port)
}

/// Binds every `bind` address on one port the OS picks: the first address
/// that binds chooses it, the others take the same one.
pub fn bind_ephemeral(config: &Config) -> std::io::Result<Vec<TcpListener>> {
    bind_addrs(config, 0)
}

/// Binds every `bind` address on `port`; a `port` of 0 becomes the port the
/// first bound address got.
fn bind_addrs(config: &Config, mut port: u16) -> std::io::Result<Vec<TcpListener>> {
    let mut tcp = Vec::new();
    // `bind ""` (or `--bind` with no address) listens on no TCP address,
    // as Redis's listenToPort.
    for a in config.bind.iter() {
        let optional = a.starts_with('-');
        let host = a.trim_start_matches('-');
        let host = match host {
            "*" => "0.0.0.0",
            "::*" => "::",
            h => h,
        };
        match listen_on(host, port) {
            Ok(l) => {
                if port == 0 {
                    port = l.local_addr()?.port();
                }
                tcp.push(l)
            }
            Err(e) if optional || (host == "::" && !tcp.is_empty()) => {
                log::verbose(&format!("Skipping optional address {host}:{port}: {e}"));
            }
            Err(e) => {
                log::warning(&format!(
                    "Warning: Could not create server TCP listening socket {host}:{port}: {e}"
                ));
                return Err(e);
            }
        }
    }
    Ok(tcp)
}

/// One listening socket with SO_REUSEADDR and Redis's default backlog.
pub fn listen_on(host: &str, port: u16) -> std::io::Result<TcpListener> {
    use std::net::ToSocketAddrs;
    let addr = (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other("no address"))?;
    let sock = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    sock.set_reuseaddr(true)?;
    sock.bind(addr)?;
    sock.listen(511)
}

/// A TCP accept loop (CONFIG SET port/bind replaces them).
pub struct Accepting {
    task: tokio::task::AbortHandle,
    /// The listening socket, owned by the task (open until the task is dropped).
    fd: std::os::fd::RawFd,
}

impl Accepting {
    /// Stops accepting and frees the address at once, as Redis closes its
    /// listeners before it binds the new ones (`changeBindAddr`): the socket
    /// is shut down here, which takes it out of the listening state (an
    /// address it had can be bound again with SO_REUSEADDR), while the
    /// aborted task closes it later.
    pub fn stop(self) {
        // SAFETY: the fd belongs to the listener the task still owns: the
        // accept loop never ends by itself, and it is aborted only here,
        // after the shutdown.
        unsafe {
            libc::shutdown(self.fd, libc::SHUT_RDWR);
        }
        self.task.abort();
    }
}

/// Starts accepting on `l`; the returned handle stops it (CONFIG SET port/bind).
pub fn spawn_tcp_accept(srv: &Rc<RefCell<Server>>, l: TcpListener) -> Accepting {
    let srv = srv.clone();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&l);
    let task = tokio::task::spawn_local(async move {
        // Clients of one listener share one local address text.
        let mut local: Option<(SocketAddr, Rc<str>)> = None;
        loop {
            match l.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let laddr = match (stream.local_addr().ok(), &local) {
                        (Some(a), Some((b, text))) if a == *b => text.clone(),
                        (Some(a), _) => {
                            let text: Rc<str> = a.to_string().into();
                            local = Some((a, text.clone()));
                            text
                        }
                        (None, _) => "".into(),
                    };
                    accept_client(&srv, stream, peer.into(), laddr, ConnKind::Tcp);
                }
                Err(e) => {
                    log::warning(&format!("Accepting client connection: {e}"));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    })
    .abort_handle();
    Accepting { task, fd }
}

/// Registers a new client and spawns its connection task.
fn accept_client<S>(
    srv: &Rc<RefCell<Server>>,
    stream: S,
    addr: Peer,
    laddr: Rc<str>,
    kind: ConnKind,
) where
    S: super::conn::Socket + std::os::fd::AsRawFd + 'static,
{
    accept_client_borrowed(srv, &mut srv.borrow_mut(), stream, addr, laddr, kind);
}

/// As `accept_client`, for a connection accepted while the server state is
/// already borrowed (by the busy-script poller, `script::busy`).
pub fn accept_client_borrowed<S>(
    srv: &Rc<RefCell<Server>>,
    s: &mut Server,
    stream: S,
    addr: Peer,
    laddr: Rc<str>,
    kind: ConnKind,
) where
    S: super::conn::Socket + std::os::fd::AsRawFd + 'static,
{
    let cell = register_client(s, stream.as_raw_fd(), addr, laddr, kind);
    // The connection's future itself, not wrapped in another that would
    // hold a second copy of its arguments (see `conn::serve`).
    tokio::task::spawn_local(super::conn::serve(srv.clone(), cell, stream));
}

/// Creates a client's state and adds it to the registry.
fn register_client(
    s: &mut Server,
    fd: std::os::fd::RawFd,
    addr: Peer,
    laddr: Rc<str>,
    kind: ConnKind,
) -> Rc<ClientCell> {
    let id = s.next_client_id;
    s.next_client_id += 1;
    let need_auth = !s.acl.starts_authenticated();
    let mut client = Client::new(id, addr, laddr, kind, need_auth);
    client.fd = fd;
    if s.clients.len() >= s.config.maxclients {
        s.stats.rejected_connections += 1;
        client
            .reply
            .error_line(&crate::error::Error::MaxClients.text());
        client.close_after_reply = true;
    } else if protected_mode_refuses(s, &client) {
        s.stats.rejected_connections += 1;
        client.reply.error_line(PROTECTED_MODE_ERROR);
        client.close_after_reply = true;
    } else {
        // Redis counts only the connections it keeps (`stat_numconnections`).
        s.stats.connections_received += 1;
    }
    let cell = Rc::new(ClientCell {
        state: RefCell::new(client),
        wake: Default::default(),
        kill: Cell::new(false),
    });
    s.clients.insert(id, cell.clone());
    cell
}

/// Protected mode, as redis-server 7.0.15 decides it (`clientAcceptHandler`):
/// `protected-mode yes` and a default user without a password (`nopass`)
/// refuse every client that is not local (see `cmd::server::is_local`:
/// unix sockets, 127.0.0.1 and ::1 only). An explicit `bind` changes
/// nothing in 7.0.15, although the comment there says so.
fn protected_mode_refuses(s: &Server, c: &Client) -> bool {
    s.config.protected_mode && s.acl.default.nopass && !crate::cmd::server::is_local(c)
}

/// Redis 7.0.15's text, typo included ("Setup a an").
const PROTECTED_MODE_ERROR: &str = "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.";

/// Forgets a client that is gone: subscriptions, watches, blocking, monitors.
pub fn remove_client(srv: &mut Server, c: &mut Client) {
    crate::server::blocking::unregister(srv, c);
    crate::cmd::txn::unwatch_all(srv, c);
    crate::cmd::pubsub::unsubscribe_all(srv, c);
    crate::server::tracking::disable(srv, c);
    srv.monitors.retain(|&id| id != c.id);
    crate::server::client_mem::forget(srv, c);
    crate::repl::client_gone(srv, c.id);
    srv.clients.remove(&c.id);
}

/// Runs the server on the current thread until SHUTDOWN, a signal, or `stop`.
pub async fn run(
    srv: Rc<RefCell<Server>>,
    tcp: Vec<TcpListener>,
    unix: Option<UnixListener>,
    stop: std::sync::Arc<Notify>,
    handle_signals: bool,
) {
    // The busy-script poller accepts connections on these while Lua runs.
    crate::script::busy::register_listeners(&srv, &tcp, unix.as_ref());
    let accepts: Vec<_> = tcp.into_iter().map(|l| spawn_tcp_accept(&srv, l)).collect();
    {
        let mut s = srv.borrow_mut();
        s.tcp_accepts = accepts;
        s.tcp_addrs = (s.config.bind.clone(), s.config.port);
    }
    srv.borrow_mut().self_ref = Some(Rc::downgrade(&srv));
    crate::repl::replica::start_from_config(&mut srv.borrow_mut());
    crate::server::evict::apply_config(&srv.borrow());
    {
        let mut s = srv.borrow_mut();
        s.client_mem.limit =
            crate::server::client_mem::limit_of(s.config.maxmemory_clients, s.config.maxmemory);
    }
    if let Some(l) = unix {
        let srv = srv.clone();
        let path = srv.borrow().config.unixsocket.clone().unwrap_or_default();
        let laddr: Rc<str> = path.clone().into();
        // Every client of the socket shows this address.
        let peer = Peer::Text(Rc::new(format!("{path}:0")));
        tokio::task::spawn_local(async move {
            loop {
                match l.accept().await {
                    Ok((stream, _)) => {
                        accept_client(&srv, stream, peer.clone(), laddr.clone(), ConnKind::Unix)
                    }
                    Err(e) => {
                        log::warning(&format!("Accepting client connection: {e}"));
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        });
    }
    {
        let srv = srv.clone();
        tokio::task::spawn_local(async move { crate::server::cron::run(srv).await });
    }
    {
        let srv = srv.clone();
        tokio::task::spawn_local(async move { crate::repl::master::feeder(srv).await });
    }
    {
        let activity = srv.borrow().activity.clone();
        tokio::task::spawn_local(async move { super::spin::run(activity).await });
    }
    let shutdown = srv.borrow().shutdown_signal.clone();
    if handle_signals {
        super::shutdown::install_insist_handler();
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let mut int =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
        loop {
            let term_fut = async {
                match term.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            let int_fut = async {
                match int.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            // SHUTDOWN and an embedding's stop already did (or skip) the
            // preparation; a signal schedules it, and a failed save (the
            // only way it fails) leaves the server running, as in Redis.
            let signal = tokio::select! {
                _ = term_fut => {
                    log::warning("Received SIGTERM scheduling shutdown...");
                    ("shutdown-on-sigterm", "SIGTERM")
                }
                _ = int_fut => {
                    log::warning("Received SIGINT scheduling shutdown...");
                    ("shutdown-on-sigint", "SIGINT")
                }
                _ = shutdown.notified() => break,
                _ = stop.notified() => break,
            };
            // The cron carries it out (`shutdown::cron`), as Redis's
            // serverCron, so SHUTDOWN ABORT can still cancel it.
            super::shutdown::schedule_from_signal(&mut srv.borrow_mut(), signal.1, signal.0);
        }
    } else {
        tokio::select! {
            _ = shutdown.notified() => {}
            _ = stop.notified() => {}
        }
    }
    let mut s = srv.borrow_mut();
    super::shutdown::finish(&mut s);
    if handle_signals {
        // The binary ends here as redis-server does (exit right after
        // prepareForShutdown): the files are synced and closed, and freeing
        // the dataset value by value would only delay the exit (14% of a
        // load-then-shutdown profile with 1M keys). An embedding returns
        // and drops the server normally.
        std::process::exit(0);
    }
}

/// An outgoing connection (a replica to its master), from `source` when
/// `bind-source-addr` names one, as Redis's `connConnect` binds it first.
pub async fn connect_from(
    host: &str,
    port: u16,
    source: Option<&str>,
) -> std::io::Result<tokio::net::TcpStream> {
    let Some(source) = source else {
        return tokio::net::TcpStream::connect((host, port)).await;
    };
    let mut last = std::io::Error::other("no address");
    for addr in tokio::net::lookup_host((host, port)).await? {
        let sock = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        let from = tokio::net::lookup_host((source, 0))
            .await?
            .find(|a| a.is_ipv4() == addr.is_ipv4());
        let Some(from) = from else { continue };
        sock.bind(from)?;
        match sock.connect(addr).await {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}
