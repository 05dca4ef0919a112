//! Oxidis: a Redis-compatible in-memory server.
//!
//! A request flows `net::conn` (socket) → `resp::decode` (frames) →
//! `command::dispatch` → `command::gate` (lookup, arity, auth, MULTI,
//! pub/sub, OOM, pause, ... in Redis's `processCommand` order) → a handler in
//! `cmd::<family>` (parse arguments, then act) → `db` and `types` (keyspace
//! and data structures, no RESP) → `resp::encode` into the client's output
//! buffer → one write back to the socket. Every write's effects leave by
//! `server::propagate` (what a replica or the AOF would replay). One thread
//! owns all data: handlers are synchronous, so MULTI/EXEC and scripts are
//! atomic.
//!
//! [`start`] runs a server on its own thread for tests and embedding; with
//! `enable-test-controls yes` its [`Handle`] also moves the server's clock
//! and saves and restores checkpoints (`testctl_handle`).

// No unwrap in server code: input from clients must never reach a panic.
// Tests may unwrap. Exceptions are `expect` with the invariant stated.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod acl;
pub mod clock;
pub mod cluster;
pub mod cmd;
pub mod command;
pub mod config;
pub mod db;
pub mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod log;
pub mod net;
pub mod persist;
pub mod repl;
pub mod resp;
pub mod script;
pub mod server;
mod testctl_handle;
pub mod types;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use tokio::sync::Notify;

pub use config::Config;

/// The version Oxidis reports as `redis_version`: the Redis it matches.
pub const REDIS_VERSION: &str = "7.0.15";
/// `(major << 16) | (minor << 8) | patch`, as Redis's `REDIS_VERSION_NUM`.
pub const REDIS_VERSION_NUM: i64 = 0x0007_000f;

/// A server running on its own thread.
pub struct Handle {
    tcp: Vec<SocketAddr>,
    unix: Option<String>,
    stop: Arc<Notify>,
    thread: Option<std::thread::JoinHandle<()>>,
    taps: Arc<server::propagate::TapHub>,
}

impl Handle {
    /// The first TCP address (with `port 0` in the config, the OS picks a free port).
    pub fn addr(&self) -> SocketAddr {
        self.tcp[0]
    }

    pub fn tcp_addrs(&self) -> &[SocketAddr] {
        &self.tcp
    }

    pub fn unix_path(&self) -> Option<&str> {
        self.unix.as_deref()
    }

    /// Attaches a consumer of the propagation stream: from now on it receives
    /// every command a replica would, as the bytes a replica reads (RESP
    /// multibulks, with SELECT before the first command and whenever the
    /// database changes). See `server::propagate`.
    pub fn tap_propagation(&self) -> Arc<server::propagate::Tap> {
        self.taps.attach()
    }

    /// Stops the server and waits for its thread.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.stop.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Waits until the server stops by itself (SHUTDOWN).
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Starts a server for tests: listens as configured, except that a `port` of
/// 0 (any free port, as in the binary, unless a unix socket is configured)
/// binds only the loopback address.
pub fn start(mut config: Config) -> std::io::Result<Handle> {
    if config.port == 0 && config.unixsocket.is_none() {
        config.bind = vec!["127.0.0.1".into()];
    }
    run_on_thread(config, false, None)
}

/// Runs the server on its own thread. `announce` runs once the sockets are
/// bound, with the TCP port, before the dataset loads (redis-server's logo
/// and "Server initialized" come before "DB loaded from disk").
fn run_on_thread(
    mut config: Config,
    signals: bool,
    announce: Option<Box<dyn FnOnce(u16) + Send>>,
) -> std::io::Result<Handle> {
    let (tx, rx) = std::sync::mpsc::channel();
    let stop = Arc::new(Notify::new());
    let stop2 = stop.clone();
    let thread = std::thread::Builder::new()
        .name("oxidis".into())
        // Deep enough for Lua replies nested as far as Lua's own stack allows
        // (script::convert recurses once per level); only touched pages count.
        .stack_size(256 << 20)
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .on_thread_park(persist::aof::before_park)
                .build()
                .expect("tokio runtime");
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, async move {
                // With an ephemeral port the bus takes one too (port + 10000
                // of an ephemeral port may be taken or out of range).
                let ephemeral = config.port == 0;
                match net::listener::bind(&config).await {
                    Ok((tcp, unix)) => {
                        let addrs = tcp
                            .iter()
                            .filter_map(|l| l.local_addr().ok())
                            .collect::<Vec<_>>();
                        if let Some(a) = addrs.first() {
                            // An ephemeral port: CONFIG GET and INFO show the real one.
                            let _ = config.set("port", a.port().to_string().as_bytes());
                        }
                        let port = config.port;
                        let path = config.unixsocket.clone();
                        let srv = Rc::new(RefCell::new(server::Server::new(config)));
                        if let Err(e) = acl::file::load_at_startup(&mut srv.borrow_mut()) {
                            let _ = tx.send(Err(std::io::Error::other(e)));
                            return;
                        }
                        server::memory::init();
                        if srv.borrow().config.get("cluster-enabled") == Some("yes") {
                            if let Err(e) = cluster::init(&mut srv.borrow_mut()) {
                                let _ = tx.send(Err(std::io::Error::other(e)));
                                return;
                            }
                        }
                        if let Some(f) = announce {
                            f(port);
                        }
                        // While the dataset loads, the loader accepts
                        // connections and answers them itself (LOADING to
                        // most commands; see persist::loading). A SHUTDOWN
                        // sent meanwhile stops the load, and the listener
                        // loop below then finishes the shutdown at once.
                        script::busy::register_listeners(&srv, &tcp, unix.as_ref());
                        if signals {
                            net::load_signal::install();
                        }
                        let loaded = persist::load_at_startup(&mut srv.borrow_mut());
                        if signals {
                            // A signal in the load's last stretch, after its
                            // last poll: nothing was written since the files
                            // were read, so the same no-save shutdown.
                            if net::load_signal::uninstall() {
                                persist::loading::shutdown_on_signal(&mut srv.borrow_mut());
                            }
                        }
                        if let Err(e) = loaded {
                            if srv.borrow().shutdown.is_none() {
                                let _ = tx.send(Err(std::io::Error::other(e)));
                                return;
                            }
                        }
                        if srv.borrow().cluster.is_some() {
                            if let Err(e) = cluster::verify_with_data(&mut srv.borrow_mut()) {
                                let _ = tx.send(Err(std::io::Error::other(e)));
                                return;
                            }
                            if let Err(e) = cluster::bus::start(&srv, ephemeral) {
                                let _ = tx.send(Err(std::io::Error::other(e)));
                                return;
                            }
                        }
                        let taps = srv.borrow().prop.hub();
                        let _ = tx.send(Ok((addrs, path, taps)));
                        net::listener::run(srv, tcp, unix, stop2, signals).await;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            });
        })?;
    let (tcp, unix, taps) = rx
        .recv()
        .map_err(|_| std::io::Error::other("server thread exited"))??;
    Ok(Handle {
        tcp,
        unix,
        stop,
        thread: Some(thread),
        taps,
    })
}

/// Runs `oxidis-server` as a process: logs like redis-server, handles
/// SIGTERM/SIGINT, and returns when the server shuts down.
pub fn run_main(mut config: Config) -> std::io::Result<()> {
    cmd::server::debug_restart::allow();
    // The process runs in `dir` as Redis does (relative `logfile`, `pidfile`
    // and `unixsocket` are found there), and follows later CONFIG SET dir.
    config.chdir = true;
    if let Some(dir) = config.get_bytes("dir") {
        std::env::set_current_dir(config::bytes_path(dir))?;
    }
    log::configure(config.loglevel, config.logfile.clone());
    log::notice("oO0OoO0OoO0Oo Oxidis is starting oO0OoO0OoO0Oo");
    log::notice(&format!(
        "Oxidis {} (Redis version={REDIS_VERSION}, bits=64), pid={}, just started",
        env!("CARGO_PKG_VERSION"),
        std::process::id()
    ));
    if config.config_file.is_none() {
        log::warning("Warning: no config file specified, using the default config. In order to specify a config file use oxidis-server /path/to/redis.conf");
    } else {
        log::notice("Configuration loaded");
    }
    for w in &config.warnings {
        log::warning(w);
    }
    for (name, value) in config.inert_settings() {
        log::warning(&format!(
            "Oxidis accepts '{name} {}' but does not act on it yet",
            config::quote(&value)
        ));
    }
    let _ = server::oom::apply(&config);
    if let Some(pid) = &config.pidfile {
        let _ = std::fs::write(pid, format!("{}\n", std::process::id()));
    }
    let ephemeral = config.port == 0 && config.unixsocket.is_none();
    let port_file = config.port_file.clone();
    let unix = config.unixsocket.clone();
    let show_logo = config.get("always-show-logo") == Some("yes")
        || (config.logfile.as_deref().unwrap_or("").is_empty()
            && std::io::IsTerminal::is_terminal(&std::io::stdout()));
    let modules = (config.loadmodules.clone(), config.module_configs);
    let mode = if config.get("cluster-enabled") == Some("yes") {
        "cluster"
    } else {
        "standalone"
    };
    let announce = Box::new(move |port| {
        if show_logo {
            log::raw_notice(&logo(port, mode));
        } else {
            log::notice(&format!("Running mode={mode}, port={port}."));
        }
        log::notice("Server initialized");
        if !cmd::server::module::load_queued(&modules.0, modules.1) {
            std::process::exit(1);
        }
    });
    let handle = run_on_thread(config, true, Some(announce))?;
    let port = handle.tcp.first().map_or(0, |a| a.port());
    if ephemeral {
        // Redis logs no port here; a harness that asked for any free port
        // (`port 0`) greps this line or reads `port-file`.
        log::notice(&format!(
            "The server is now ready to accept connections on port {port}"
        ));
    }
    if let Some(u) = unix {
        log::notice(&format!(
            "The server is now ready to accept connections at {u}"
        ));
    }
    if let Some(path) = port_file {
        if let Err(e) = net::port_file::write(&path, port) {
            log::warning(&format!("Failed to write port file '{path}': {e}"));
        }
    }
    log::notice("Ready to accept connections");
    handle.wait();
    Ok(())
}

/// The start-up banner Redis shows with `always-show-logo yes` (or on a
/// terminal). Its ` Port: ` and ` PID: ` lines are part of the interface:
/// Redis's own test harness waits for ` PID: <pid>` before it talks to a
/// server it started.
fn logo(port: u16, mode: &str) -> String {
    let version = env!("CARGO_PKG_VERSION");
    let pid = std::process::id();
    format!(
        "\n\
         \x20   ___       _     _ _\n\
         \x20  / _ \\__  _(_) __| (_)___      Oxidis {version} (Redis {REDIS_VERSION} compatible) 64 bit\n\
         \x20 | | | \\ \\/ / |/ _` | / __|\n\
         \x20 | |_| |>  <| | (_| | \\__ \\      Running in {mode} mode\n\
         \x20  \\___//_/\\_\\_|\\__,_|_|___/      Port: {port}\n\
         \x20                                 PID: {pid}\n\n"
    )
}
