//! `oxidis-server`: takes `redis-server`'s arguments (config file, `--name value` flags).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("-v") | Some("--version") => {
            println!(
                "Redis server v={} sha=00000000:0 malloc={} bits=64 build=oxidis-{}",
                oxidis::REDIS_VERSION,
                oxidis::server::memory::ALLOCATOR,
                env!("CARGO_PKG_VERSION")
            );
            return;
        }
        Some("-h") | Some("--help") => {
            eprintln!("Usage: ./oxidis-server [/path/to/redis.conf] [options] [-]");
            eprintln!("       ./oxidis-server - (read config from stdin)");
            eprintln!("       ./oxidis-server -v or --version");
            eprintln!("       ./oxidis-server -h or --help");
            eprintln!();
            eprintln!("Examples:");
            eprintln!("       ./oxidis-server (run the server with default conf)");
            eprintln!("       ./oxidis-server /etc/redis/6379.conf");
            eprintln!("       ./oxidis-server --port 7777");
            eprintln!("       ./oxidis-server /etc/myredis.conf --loglevel verbose -");
            return;
        }
        _ => {}
    }
    let config = match oxidis::config::from_args(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    if config.daemonize && std::env::var_os("OXIDIS_DAEMON_CHILD").is_none() {
        daemonize();
        return;
    }
    if let Err(e) = oxidis::run_main(config) {
        eprintln!("Could not start: {e}");
        std::process::exit(1);
    }
}

/// Starts a detached copy of this process (same arguments) and returns.
fn daemonize() {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().expect("current exe");
    let mut cmd = std::process::Command::new(exe);
    cmd.args(std::env::args().skip(1))
        .env("OXIDIS_DAEMON_CHILD", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    if let Err(e) = cmd.spawn() {
        eprintln!("Could not daemonize: {e}");
        std::process::exit(1);
    }
}
