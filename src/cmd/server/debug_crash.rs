//! DEBUG SEGFAULT, PANIC, ASSERT, OOM: Redis's crash report in the log, then the process dies as Redis's does.
//!
//! A report is Redis's bug report (start banner, what happened, with
//! `crash-log-enabled` the stack trace, INFO, CLIENT LIST, the current
//! client, the modules and config sections, end banner), then SEGFAULT dies
//! by SIGSEGV and the others abort (SIGABRT), or `_exit(1)` with
//! `use-exit-on-panic yes`. RESTART and CRASH-AND-RECOVER are in
//! `debug_restart`.

use crate::command::Args;
use crate::error::CmdResult;
use crate::log;
use crate::server::Ctx;

/// Runs `DEBUG <sub> ...` when `sub` is one of these; None otherwise.
/// (Every one takes any number of arguments, as in Redis.)
pub fn run(ctx: &mut Ctx, sub: &[u8], args: &Args) -> Option<CmdResult> {
    let is = |name: &str| sub.eq_ignore_ascii_case(name.as_bytes());
    if is("segfault") {
        segfault(ctx, args)
    } else if is("panic") {
        let now = crate::clock::real_now_us() / 1_000_000;
        panic(
            ctx,
            args,
            &format!("DEBUG PANIC called at Unix time {now}"),
            line!(),
        )
    } else if is("assert") {
        assert_failed(ctx, args)
    } else if is("oom") {
        return Some(oom(ctx, args));
    } else if is("restart") || is("crash-and-recover") {
        return Some(super::debug_restart::restart(ctx, args, is("restart")));
    }
    None
}

fn config_yes(ctx: &Ctx, name: &str) -> bool {
    ctx.srv.config.get(name) == Some("yes")
}

/// Redis's `bugReportStart` banner.
fn report_start() {
    log::raw_warning("\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===\n");
}

/// Redis's `bugReportEnd` banner.
fn report_end() {
    log::raw_warning(concat!(
        "\n=== REDIS BUG REPORT END. Make sure to include from START to END. ===\n\n",
        "       Please report the crash by opening an issue on github:\n\n",
        "           http://github.com/redis/redis/issues\n\n",
        "  If a Redis module was involved, please open in the module's repo instead.\n\n",
        "  Suspect RAM error? Use redis-server --test-memory to verify it.\n\n",
        "  Some other issues could be detected by redis-server --check-system\n",
    ));
}

/// The stack of this thread, one frame a line (Redis's `logStackTrace`).
fn stack_trace() {
    let bt = std::backtrace::Backtrace::force_capture().to_string();
    let mut text = String::from("\n------ STACK TRACE ------\n\nBacktrace:\n");
    // Frames are "N: symbol" (their "at file:line" lines are skipped);
    // frame 0 is this function. The runtime's frames below the command
    // dispatch say little: at most 24 frames.
    let frames = bt.lines().filter_map(|line| {
        let (n, sym) = line.trim().split_once(": ")?;
        n.parse::<u32>().ok().map(|_| sym.to_string())
    });
    for sym in frames.skip(1).take(24) {
        text.push_str(&format!("oxidis-server({sym})\n"));
    }
    log::raw_warning(&text);
}

/// Redis's `printCrashReport` sections: INFO, CLIENT LIST, the current
/// client, modules, config (no memory test: `crash-memcheck-enabled` is
/// accepted but the test is not run).
fn crash_report(ctx: &mut Ctx, args: &Args) {
    let info = super::info::render(ctx, |_, _| true);
    log::raw_warning(&format!("\n------ INFO OUTPUT ------\n{info}"));
    let argv_mem: usize = args.from(0).map(|a| a.len()).sum();
    ctx.client.last_cmd = ctx.spec.name;
    let mut clients = String::new();
    super::client::each_client(ctx.srv, ctx.client, |c, cur| {
        clients.push_str(&super::client::describe(c, cur, argv_mem));
        clients.push('\n');
    });
    log::raw_warning(&format!("\n------ CLIENT LIST OUTPUT ------\n{clients}"));
    let mut current = format!(
        "\n------ CURRENT CLIENT INFO ------\n{}\n",
        super::client::describe(ctx.client, true, argv_mem)
    );
    for (j, a) in args.from(0).enumerate() {
        let mut r = Vec::new();
        crate::server::monitor::repr(&mut r, &a[..a.len().min(128)]);
        current.push_str(&format!("argv[{j}]: '{}'\n", String::from_utf8_lossy(&r)));
    }
    log::raw_warning(&current);
    if args.len() > 1 {
        let key = args.at(1);
        if let Some(v) = ctx.srv.ks.dbs[ctx.client.db].peek(key) {
            log::warning(&format!(
                "key '{}' found in DB containing the following object:",
                String::from_utf8_lossy(key)
            ));
            let (ty, enc) = type_and_encoding(v);
            log_object(ty, enc);
        }
    }
    log::raw_warning("\n------ MODULES INFO OUTPUT ------\n");
    let mut config = String::from("\n------ CONFIG DEBUG OUTPUT ------\n");
    for name in DEBUG_CONFIGS {
        let Some(p) = crate::config::find_param(name) else {
            continue;
        };
        let raw = ctx.srv.config.get_bytes(name).unwrap_or_default();
        // Under the name Redis prints (an alias: slave-read-only).
        for l in crate::config::rewrite::option_lines(name, p.kind, raw) {
            config.push_str(&l);
            config.push('\n');
        }
    }
    log::raw_warning(&config);
}

/// The parameters Redis's crash report shows (`DEBUG_CONFIG` ones), in the
/// order redis-server 7.0.15 prints them.
const DEBUG_CONFIGS: &[&str] = &[
    "lazyfree-lazy-user-del",
    "activedefrag",
    "repl-diskless-sync",
    "lazyfree-lazy-user-flush",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-eviction",
    "repl-diskless-load",
    "lazyfree-lazy-server-del",
    "io-threads",
    "proto-max-bulk-len",
    "sanitize-dump-payload",
    "io-threads-do-reads",
    "replica-read-only",
    "slave-read-only",
    "list-compress-depth",
    "client-query-buffer-limit",
];

/// Redis's object type and encoding numbers for a value.
fn type_and_encoding(v: &crate::db::Value) -> (u32, u32) {
    let ty = super::debug_more::redis_type(v);
    let enc = match v.encoding() {
        "raw" => 0,
        "int" => 1,
        "hashtable" => 2,
        "intset" => 6,
        "skiplist" => 7,
        "embstr" => 8,
        "quicklist" => 9,
        "stream" => 10,
        _ => 11, // listpack
    };
    (ty, enc)
}

/// Redis's `serverLogObjectDebugInfo` (Oxidis counts no references: 1).
fn log_object(ty: u32, enc: u32) {
    log::warning(&format!("Object type: {ty}"));
    log::warning(&format!("Object encoding: {enc}"));
    log::warning("Object refcount: 1");
}

/// The end of every report but SEGFAULT's: Redis's `bugReportEnd(0, 0)`.
fn die_after_report(ctx: &Ctx) -> ! {
    report_end();
    if config_yes(ctx, "use-exit-on-panic") {
        // SAFETY: _exit ends the process at once; nothing runs after it.
        unsafe { libc::_exit(1) }
    }
    std::process::abort()
}

/// DEBUG PANIC (and OOM's end): Redis's `_serverPanic`.
fn panic(ctx: &mut Ctx, args: &Args, msg: &str, line: u32) -> ! {
    report_start();
    log::warning("------------------------------------------------");
    log::warning("!!! Software Failure. Press left mouse button to continue");
    log::warning(&format!("Guru Meditation: {msg} #{}:{line}", file_name()));
    if config_yes(ctx, "crash-log-enabled") {
        stack_trace();
        crash_report(ctx, args);
    }
    die_after_report(ctx)
}

fn file_name() -> &'static str {
    file!().rsplit('/').next().unwrap_or(file!())
}

/// DEBUG ASSERT: Redis's `serverAssertWithInfo(c, argv[0], 1 == 2)`.
fn assert_failed(ctx: &mut Ctx, args: &Args) -> ! {
    let line = line!();
    report_start();
    log::warning("=== ASSERTION FAILED CLIENT CONTEXT ===");
    // Redis's client flag bits: a plain client has none; Oxidis keeps no
    // such word, and the commands that set flags cannot reach DEBUG here.
    log::warning("client->flags = 0");
    log::warning(&format!("client->conn = fd={}", ctx.client.fd));
    log::warning(&format!("client->argc = {}", args.len()));
    for (j, a) in args.from(0).enumerate() {
        log::warning(&format!(
            "client->argv[{j}] = \"{}\" (refcount: 1)",
            String::from_utf8_lossy(a)
        ));
    }
    log::warning("=== ASSERTION FAILED OBJECT CONTEXT ===");
    // argv[0] is a string object: embstr up to 44 bytes, raw beyond.
    log_object(0, if args.at(0).len() <= 44 { 8 } else { 0 });
    log::warning("=== ASSERTION FAILED ===");
    log::warning(&format!("==> {}:{line} '1 == 2' is not true", file_name()));
    if config_yes(ctx, "crash-log-enabled") {
        stack_trace();
        crash_report(ctx, args);
    }
    die_after_report(ctx)
}

/// DEBUG OOM: asks the allocator for half the address space; when that
/// fails (it always does), Redis's out-of-memory handler: a log line and a
/// panic. `OK` if the allocator ever granted it.
fn oom(ctx: &mut Ctx, args: &Args) -> CmdResult {
    let size = usize::MAX / 2;
    if let Ok(layout) = std::alloc::Layout::from_size_align(size, 1) {
        // SAFETY: a non-zero size; a granted block is freed with its layout.
        let p = unsafe { std::alloc::alloc(layout) };
        if !p.is_null() {
            unsafe { std::alloc::dealloc(p, layout) };
            ctx.out().ok();
            return Ok(());
        }
    }
    log::warning(&format!("Out Of Memory allocating {size} bytes!"));
    let msg = format!("Redis aborting for OUT OF MEMORY. Allocating {size} bytes!");
    panic(ctx, args, &msg, line!())
}

/// DEBUG SEGFAULT: writes to a read-only page, as Redis does. With
/// `crash-log-enabled` (Redis's SIGSEGV handler) the report comes first,
/// for the fault about to happen; then the default action kills the
/// process with SIGSEGV.
fn segfault(ctx: &mut Ctx, args: &Args) -> ! {
    // SAFETY: a fresh private read-only page; the write below faults.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if config_yes(ctx, "crash-log-enabled") {
        report_start();
        // si_code 2: SEGV_ACCERR, a write to a mapped page it may not write.
        log::warning(&format!(
            "Redis {} crashed by signal: 11, si_code: 2",
            crate::REDIS_VERSION
        ));
        log::warning(&format!("Accessing address: {page:p}"));
        stack_trace();
        crash_report(ctx, args);
        report_end();
    }
    // SAFETY: the default action for SIGSEGV (the runtime's handler only
    // serves stack overflows); then the faulting write.
    unsafe {
        libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        std::ptr::write_volatile(page as *mut u8, b'x');
        // Not reached; if the page were writable, die the same way.
        libc::raise(libc::SIGSEGV);
    }
    std::process::abort()
}
