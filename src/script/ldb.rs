//! The Lua debugger (LDB, `SCRIPT DEBUG`): a session around one EVAL, driven from a line hook that talks to the client's socket directly.
//!
//! While a session runs the data thread is inside Lua, so the debugger does
//! its own blocking I/O on the debugging client's descriptor, as Redis's
//! does (`connBlock`): each stop sends the pending log lines as one array of
//! status replies and reads debugger commands until one resumes the script.
//! The session state lives behind the thread-local `SESSION` pointer while
//! the session's EVAL is on the stack; no borrow of it is held across a Lua
//! call that can raise (Lua errors `longjmp` over Rust frames).

use std::cell::Cell;
use std::ffi::{c_int, CStr};

use super::ldb_fmt::{self, atoi, Parsed};
use super::lua::{self, ffi, push_bytes, State};

/// What SCRIPT DEBUG set for a client's next EVAL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    #[default]
    Off,
    /// YES: the session runs in a forked child.
    Fork,
    /// SYNC: the session blocks the server.
    Sync,
}

const MAX_BREAKPOINTS: usize = 64;
const MAX_LEN_DEFAULT: i64 = 256;
/// Input past this ends the script (a client cannot grow it without bound).
const MAX_INPUT: usize = 1 << 20;
/// How long a write to the debugging client may wait (Redis's `connSendTimeout`).
const SEND_TIMEOUT_MS: c_int = 5000;

/// One debugging session (Redis's `ldbState`).
pub struct Session {
    fd: i32,
    logs: Vec<Vec<u8>>,
    breakpoints: Vec<i32>,
    /// Stop at the next line whatever the breakpoints say.
    step: bool,
    /// redis.breakpoint() was called: stop at the next line.
    lua_bp: bool,
    src: Vec<Vec<u8>>,
    current_line: i32,
    input: Vec<u8>,
    /// Dumps and replies are cut at this many bytes (0: never).
    max_len: i64,
    max_len_hint_sent: bool,
    /// When the script last resumed, for the timeout stop (microseconds).
    resumed_us: i64,
    /// `busy-reply-threshold`, or 5 seconds when it is 0.
    timeout_ms: i64,
}

thread_local! {
    static SESSION: Cell<*mut Session> = const { Cell::new(std::ptr::null_mut()) };
}

/// The running session, if any.
///
/// # Safety
/// Data thread only; the reference must not outlive the C function or hook
/// that asked for it.
unsafe fn session<'a>() -> Option<&'a mut Session> {
    let p = SESSION.with(|c| c.get());
    (!p.is_null()).then(|| &mut *p)
}

/// True while a debugging session runs.
pub fn active() -> bool {
    !SESSION.with(|c| c.get()).is_null()
}

/// Redis's `ldbIsEnabled`: a session runs and is stepping, so `redis.call`
/// logs its command and reply.
pub fn logging() -> bool {
    // SAFETY: read and dropped at once, on the data thread.
    unsafe { session().is_some_and(|s| s.step) }
}

/// Adds a log line to the session, if one runs.
pub fn log(line: Vec<u8>) {
    // SAFETY: as `logging`.
    if let Some(s) = unsafe { session() } {
        s.logs.push(line);
    }
}

/// Logs a `redis.call` command line (at most ten arguments shown).
pub fn log_command(args: &crate::command::args::Args) {
    if !logging() {
        return;
    }
    let mut line = b"<redis>".to_vec();
    for (j, a) in args.from(0).enumerate() {
        if j == 10 {
            line.extend_from_slice(format!(" ... ({} more)", args.len() - j - 1).as_bytes());
            break;
        }
        line.push(b' ');
        line.extend_from_slice(a);
    }
    log(line);
}

/// Logs a `redis.call` reply (RESP) in the debugger's human form.
pub fn log_reply(reply: &[u8]) {
    // SAFETY: as `logging`.
    if let Some(s) = unsafe { session() }.filter(|s| s.step) {
        let mut line = b"<reply> ".to_vec();
        ldb_fmt::cat_reply(&mut line, reply);
        s.log_max_len(line);
    }
}

/// Logs the text a Lua error table is made of, as given (Redis's
/// `luaPushErrorBuff`).
pub fn log_error(text: &[u8]) {
    if logging() {
        let mut line = b"<error> ".to_vec();
        line.extend_from_slice(text);
        log(line);
    }
}

impl Session {
    fn log_max_len(&mut self, mut line: Vec<u8>) {
        let trimmed = self.max_len > 0 && line.len() as i64 > self.max_len;
        if trimmed {
            line.truncate(self.max_len as usize);
            line.extend_from_slice(b" ...");
        }
        self.logs.push(line);
        if trimmed && !self.max_len_hint_sent {
            self.max_len_hint_sent = true;
            self.logs.push(
                b"<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.".to_vec(),
            );
        }
    }

    fn log_str(&mut self, s: impl Into<String>) {
        self.logs.push(s.into().into_bytes());
    }

    /// Sends the pending log lines as one array of status replies, line
    /// breaks turned into spaces.
    fn send_logs(&mut self) {
        let mut out = format!("*{}\r\n", self.logs.len()).into_bytes();
        for mut line in self.logs.drain(..) {
            for b in line.iter_mut().filter(|b| **b == b'\r' || **b == b'\n') {
                *b = b' ';
            }
            out.push(b'+');
            out.extend_from_slice(&line);
            out.extend_from_slice(b"\r\n");
        }
        // A failed write is noticed by the next read, as in Redis.
        write_all(self.fd, &out);
    }

    fn source_line(&self, line: i32) -> &[u8] {
        let idx = line as i64 - 1;
        if idx < 0 || idx >= self.src.len() as i64 {
            return b"<out of range source code line>";
        }
        &self.src[idx as usize]
    }

    fn is_breakpoint(&self, line: i32) -> bool {
        self.breakpoints.contains(&line)
    }

    fn log_source_line(&mut self, line: i32) {
        let prefix = match (self.current_line == line, self.is_breakpoint(line)) {
            (true, true) => "->#",
            (true, false) => "-> ",
            (false, true) => "  #",
            (false, false) => "   ",
        };
        let mut s = format!("{prefix}{line:<3} ").into_bytes();
        s.extend_from_slice(self.source_line(line));
        self.logs.push(s);
    }

    fn list(&mut self, around: i64, context: i64) {
        for j in 1..=self.src.len() as i64 {
            if around != 0 && (around - j).abs() > context {
                continue;
            }
            self.log_source_line(j as i32);
        }
    }

    fn break_cmd(&mut self, argv: &[Vec<u8>]) {
        if argv.len() == 1 {
            if self.breakpoints.is_empty() {
                self.log_str("No breakpoints set. Use 'b <line>' to add one.");
            } else {
                self.log_str(format!("{} breakpoints set:", self.breakpoints.len()));
                for bp in self.breakpoints.clone() {
                    self.log_source_line(bp);
                }
            }
            return;
        }
        for arg in &argv[1..] {
            let Some(line) = crate::types::number::parse_i64(arg) else {
                let mut s = b"Invalid argument:'".to_vec();
                s.extend_from_slice(arg);
                s.push(b'\'');
                self.logs.push(s);
                continue;
            };
            if line == 0 {
                self.breakpoints.clear();
                self.log_str("All breakpoints removed.");
            } else if line > 0 {
                if self.breakpoints.len() == MAX_BREAKPOINTS {
                    self.log_str("Too many breakpoints set.");
                } else if line <= self.src.len() as i64 && !self.is_breakpoint(line as i32) {
                    self.breakpoints.push(line as i32);
                    self.list(line, 1);
                } else {
                    self.log_str("Wrong line number.");
                }
            } else if let Some(i) = self.breakpoints.iter().position(|&b| b as i64 == -line) {
                self.breakpoints.remove(i);
                self.log_str("Breakpoint removed.");
            } else {
                self.log_str("No breakpoint in the specified line.");
            }
        }
    }

    fn max_len_cmd(&mut self, argv: &[Vec<u8>]) {
        if argv.len() == 2 {
            // C's atoi into an int.
            let mut v = atoi(&argv[1]) as i32 as i64;
            self.max_len_hint_sent = true;
            if v != 0 && v <= 60 {
                v = 60;
            }
            self.max_len = v;
        }
        if self.max_len != 0 {
            self.log_str(format!(
                "<value> replies are truncated at {} bytes.",
                self.max_len
            ));
        } else {
            self.log_str("<value> replies are unlimited.");
        }
    }
}

/// Writes all of `b` to the (non-blocking) socket, waiting for room at most
/// `SEND_TIMEOUT_MS` each time; gives up on an error.
pub fn write_all(fd: i32, mut b: &[u8]) {
    while !b.is_empty() {
        // SAFETY: a plain write of our buffer to the client's descriptor.
        let n = unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
        if n > 0 {
            b = &b[n as usize..];
            continue;
        }
        let e = std::io::Error::last_os_error();
        match e.kind() {
            std::io::ErrorKind::Interrupted => {}
            std::io::ErrorKind::WouldBlock if wait(fd, libc::POLLOUT, SEND_TIMEOUT_MS) => {}
            _ => return,
        }
    }
}

/// Waits until `fd` is ready for `events` (-1: no time limit).
fn wait(fd: i32, events: i16, ms: c_int) -> bool {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    loop {
        // SAFETY: one pollfd on the stack.
        let n = unsafe { libc::poll(&mut p, 1, ms) };
        if n >= 0 {
            return n > 0;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
}

/// Reads what the client sent, waiting for it; 0 when the connection ended.
fn read_some(fd: i32, buf: &mut [u8]) -> usize {
    loop {
        // SAFETY: a plain read into our buffer.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return n as usize;
        }
        match std::io::Error::last_os_error().kind() {
            std::io::ErrorKind::Interrupted => {}
            std::io::ErrorKind::WouldBlock if wait(fd, libc::POLLIN, -1) => {}
            _ => return 0,
        }
    }
}

/// The session of an EVAL, set up by [`start`] and ended by [`end`].
pub struct Guard {
    session: Box<Session>,
}

/// Starts a session on the client socket `fd` for `body` (Redis's
/// `ldbStartSession`, the part after a fork).
pub fn start(fd: i32, body: &[u8], busy_threshold_ms: i64) -> Guard {
    let mut body = body;
    while let Some((&last, rest)) = body.split_last() {
        if last != b'\n' && last != b'\r' {
            break;
        }
        body = rest;
    }
    let src = if body.is_empty() {
        Vec::new()
    } else {
        body.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
    };
    let mut session = Box::new(Session {
        fd,
        logs: Vec::new(),
        breakpoints: Vec::new(),
        step: true,
        lua_bp: false,
        src,
        current_line: 0,
        input: Vec::new(),
        max_len: MAX_LEN_DEFAULT,
        max_len_hint_sent: false,
        resumed_us: crate::clock::system_us(),
        timeout_ms: if busy_threshold_ms > 0 {
            busy_threshold_ms
        } else {
            5000
        },
    });
    SESSION.with(|c| c.set(&mut *session as *mut Session));
    Guard { session }
}

/// Ends the session: the pending logs and `<endsession>` are sent.
pub fn end(mut g: Guard) {
    SESSION.with(|c| c.set(std::ptr::null_mut()));
    g.session.logs.push(b"<endsession>".to_vec());
    g.session.send_logs();
}

impl Drop for Guard {
    fn drop(&mut self) {
        SESSION.with(|c| c.set(std::ptr::null_mut()));
    }
}

/// Installs the debugger's hook: every line, and every 100,000
/// instructions for the timeout stop.
pub unsafe fn install_hook(l: State) {
    ffi::lua_sethook(
        l,
        Some(hook),
        ffi::LUA_MASKLINE | ffi::LUA_MASKCOUNT,
        100_000,
    );
}

/// How the command loop ended.
enum Resume {
    Run,
    /// The client went away: the script goes on without stops.
    Gone,
    /// The script is to fail with this error.
    Fail(&'static [u8]),
}

unsafe extern "C-unwind" fn hook(l: State, ar: *mut ffi::lua_Debug) {
    let Some(s) = session() else { return };
    let event = (*ar).event;
    ffi::lua_getstack(l, 0, ar);
    ffi::lua_getinfo(l, c"Sl".as_ptr(), ar);
    s.current_line = (*ar).currentline;
    let bp = s.is_breakpoint(s.current_line) || s.lua_bp;
    if !CStr::from_ptr((*ar).short_src.as_ptr())
        .to_bytes()
        .windows(11)
        .any(|w| w == b"user_script")
    {
        return;
    }
    let mut timeout = false;
    if event == ffi::LUA_HOOKCOUNT && !s.step && !bp {
        let elapsed_ms = (crate::clock::system_us() - s.resumed_us) / 1000;
        if elapsed_ms < s.timeout_ms {
            return;
        }
        timeout = true;
        s.step = true;
    }
    if !(s.step || bp) {
        return;
    }
    let reason = if bp {
        if s.lua_bp {
            "redis.breakpoint() called"
        } else {
            "break point"
        }
    } else if timeout {
        "timeout reached, infinite loop?"
    } else {
        "step over"
    };
    s.step = false;
    s.lua_bp = false;
    s.log_str(format!(
        "* Stopped at {}, stop reason = {reason}",
        s.current_line
    ));
    s.log_source_line(s.current_line);
    s.send_logs();
    let fail = match repl(l) {
        Resume::Fail(msg) => Some(msg),
        Resume::Gone if timeout => {
            Some(&b"timeout during Lua debugging with client closing connection"[..])
        }
        _ => None,
    };
    if let Some(msg) = fail {
        super::redis_lib::push_error(l, msg);
        lua::raise(l);
        return;
    }
    if let Some(s) = session() {
        s.resumed_us = crate::clock::system_us();
    }
}

/// Reads and runs debugger commands until one resumes the script (Redis's `ldbRepl`).
unsafe fn repl(l: State) -> Resume {
    loop {
        let Some(s) = session() else {
            return Resume::Run;
        };
        let argv = loop {
            match ldb_fmt::parse_command(&s.input) {
                Parsed::Command(argv) => break argv,
                Parsed::Error => return Resume::Fail(b"protocol error"),
                Parsed::Incomplete => {}
            }
            let mut buf = [0u8; 1024];
            let n = read_some(s.fd, &mut buf);
            if n == 0 {
                s.step = false;
                s.breakpoints.clear();
                return Resume::Gone;
            }
            s.input.extend_from_slice(&buf[..n]);
            if s.input.len() > MAX_INPUT {
                s.input = Vec::new();
                return Resume::Fail(b"max client buffer reached");
            }
        };
        s.input.clear();
        // Commands are compared as C strings.
        let name = &argv[0][..argv[0]
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(argv[0].len())];
        let is = |short: &str, long: &str| {
            name.eq_ignore_ascii_case(short.as_bytes())
                || name.eq_ignore_ascii_case(long.as_bytes())
        };
        if is("h", "help") {
            for line in HELP {
                s.log_str(*line);
            }
        } else if is("s", "step") || is("n", "next") {
            s.step = true;
            return Resume::Run;
        } else if is("c", "continue") {
            return Resume::Run;
        } else if is("t", "trace") {
            trace(l, s);
        } else if is("m", "maxlen") {
            s.max_len_cmd(&argv);
        } else if is("b", "break") {
            s.break_cmd(&argv);
        } else if is("e", "eval") {
            eval(l, &argv);
        } else if is("a", "abort") {
            return Resume::Fail(b"script aborted for user request");
        } else if argv.len() > 1 && is("r", "redis") {
            redis(l, &argv);
        } else if is("p", "print") {
            if argv.len() == 2 {
                print(l, s, &argv[1]);
            } else {
                print_all(l, s);
            }
        } else if is("l", "list") {
            let mut around = s.current_line as i64;
            let mut context = 5;
            if argv.len() > 1 {
                let n = atoi(&argv[1]) as i32 as i64;
                if n > 0 {
                    around = n;
                }
            }
            if argv.len() > 2 {
                context = atoi(&argv[2]) as i32 as i64;
            }
            s.list(around, context);
        } else if is("w", "whole") {
            s.list(1, 1_000_000);
        } else {
            s.log_str("<error> Unknown Redis Lua debugger command or wrong number of arguments.");
        }
        if let Some(s) = session() {
            s.send_logs();
        }
    }
}

/// Calls `f` with each local of the frame at `level`, its value on top of
/// the stack (popped after), until `f` returns true; false when there is
/// no such frame or `f` never did.
unsafe fn find_local(l: State, level: c_int, mut f: impl FnMut(&[u8]) -> bool) -> Option<bool> {
    let mut ar: ffi::lua_Debug = std::mem::zeroed();
    if ffi::lua_getstack(l, level, &mut ar) == 0 {
        return None;
    }
    let mut i = 1;
    loop {
        let n = ffi::lua_getlocal(l, &ar, i);
        if n.is_null() {
            return Some(false);
        }
        i += 1;
        let done = f(CStr::from_ptr(n).to_bytes());
        ffi::lua_pop(l, 1);
        if done {
            return Some(true);
        }
    }
}

/// The local variable `name` from the innermost frame out, else the
/// globals KEYS and ARGV.
unsafe fn print(l: State, s: &mut Session, name: &[u8]) {
    let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
    let mut level = 0;
    while let Some(found) = find_local(l, level, |n| {
        let hit = n == name;
        if hit {
            log_value(l, s, b"<value> ".to_vec());
        }
        hit
    }) {
        if found {
            return;
        }
        level += 1;
    }
    if name == b"ARGV" || name == b"KEYS" {
        push_bytes(l, name);
        ffi::lua_gettable(l, ffi::LUA_GLOBALSINDEX);
        log_value(l, s, b"<value> ".to_vec());
        ffi::lua_pop(l, 1);
    } else {
        s.log_str("No such variable.");
    }
}

/// Every local of the current frame.
unsafe fn print_all(l: State, s: &mut Session) {
    let mut vars = 0;
    find_local(l, 0, |name| {
        if !name.windows(12).any(|w| w == b"(*temporary)") {
            let mut prefix = b"<value> ".to_vec();
            prefix.extend_from_slice(name);
            prefix.extend_from_slice(b" = ");
            log_value(l, s, prefix);
            vars += 1;
        }
        false
    });
    if vars == 0 {
        s.log_str("No local variables in the current context.");
    }
}

/// Logs the value on top of the stack after `prefix`, cut at maxlen.
unsafe fn log_value(l: State, s: &mut Session, mut prefix: Vec<u8>) {
    ldb_fmt::cat_value(&mut prefix, l, -1);
    s.log_max_len(prefix);
}

unsafe fn trace(l: State, s: &mut Session) {
    let mut ar: ffi::lua_Debug = std::mem::zeroed();
    let mut level = 0;
    while ffi::lua_getstack(l, level, &mut ar) != 0 {
        ffi::lua_getinfo(l, c"Snl".as_ptr(), &mut ar);
        let src = CStr::from_ptr(ar.short_src.as_ptr()).to_bytes();
        if src.windows(11).any(|w| w == b"user_script") {
            let name = if ar.name.is_null() {
                "top level".to_string()
            } else {
                CStr::from_ptr(ar.name).to_string_lossy().into_owned()
            };
            s.log_str(format!(
                "{} {name}:",
                if level == 0 { "In" } else { "From" }
            ));
            s.log_source_line(ar.currentline);
        }
        level += 1;
    }
    if level == 0 {
        s.log_str("<error> Can't retrieve Lua stack.");
    }
}

/// `eval <code>`: the code as an expression (`return ...`), else as a
/// statement, run in its own frame; its result or error is logged.
unsafe fn eval(l: State, argv: &[Vec<u8>]) {
    let code = argv[1..].join(&b' ');
    let mut expr = b"return ".to_vec();
    expr.extend_from_slice(&code);
    let mut loaded = super::load::load_chunk(l, &expr, "@ldb_eval") == 0;
    if !loaded {
        ffi::lua_pop(l, 1);
        loaded = super::load::load_chunk(l, &code, "@ldb_eval") == 0;
    }
    drop((code, expr));
    let ok = loaded && ffi::lua_pcall(l, 0, 1, 0) == 0;
    let Some(s) = session() else {
        ffi::lua_pop(l, 1);
        return;
    };
    if ok {
        log_value(l, s, b"<retval> ".to_vec());
    } else {
        let mut line = b"<error> ".to_vec();
        line.extend_from_slice(&error_text(l));
        s.logs.push(line);
    }
    ffi::lua_pop(l, 1);
}

/// The error value on top of the stack as text (a table's `err` field).
unsafe fn error_text(l: State) -> Vec<u8> {
    if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
        lua::get_field(l, -1, "err");
        let t = lua::to_bytes(l, -1).unwrap_or(b"(null)").to_vec();
        ffi::lua_pop(l, 1);
        return t;
    }
    lua::to_bytes(l, -1).unwrap_or(b"(null)").to_vec()
}

/// `redis <cmd>`: runs the command through `redis.call` with stepping on,
/// so that the call logs its command and reply.
unsafe fn redis(l: State, argv: &[Vec<u8>]) {
    if ffi::lua_checkstack(l, argv.len() as c_int + 1) == 0 {
        log(b"<reply> ".to_vec());
        return;
    }
    ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, c"redis".as_ptr());
    ffi::lua_getfield(l, -1, c"call".as_ptr());
    for a in &argv[1..] {
        push_bytes(l, a);
    }
    if let Some(s) = session() {
        s.step = true;
    }
    ffi::lua_pcall(l, argv.len() as c_int - 1, 1, 0);
    if let Some(s) = session() {
        s.step = false;
    }
    ffi::lua_pop(l, 2);
}

/// redis.breakpoint(): true, and a stop at the next line, in a session.
pub fn breakpoint() -> bool {
    // SAFETY: as `logging`.
    match unsafe { session() } {
        Some(s) => {
            s.lua_bp = true;
            true
        }
        None => false,
    }
}

/// redis.debug(v, ...): logs its arguments in a session.
pub unsafe fn debug(l: State) {
    let Some(s) = session() else { return };
    let argc = ffi::lua_gettop(l);
    let mut line = format!("<debug> line {}: ", s.current_line).into_bytes();
    for i in 1..=argc {
        ldb_fmt::cat_value(&mut line, l, i);
        if i != argc {
            line.extend_from_slice(b", ");
        }
    }
    s.logs.push(line);
}

const HELP: &[&str] = &[
    "Redis Lua debugger help:",
    "[h]elp               Show this help.",
    "[s]tep               Run current line and stop again.",
    "[n]ext               Alias for step.",
    "[c]ontinue           Run till next breakpoint.",
    "[l]ist               List source code around current line.",
    "[l]ist [line]        List source code around [line].",
    "                     line = 0 means: current position.",
    "[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    "                     to show before/after [line].",
    "[w]hole              List all source code. Alias for 'list 1 1000000'.",
    "[p]rint              Show all the local variables.",
    "[p]rint <var>        Show the value of the specified variable.",
    "                     Can also show global vars KEYS and ARGV.",
    "[b]reak              Show all breakpoints.",
    "[b]reak <line>       Add a breakpoint to the specified line.",
    "[b]reak -<line>      Remove breakpoint from the specified line.",
    "[b]reak 0            Remove all breakpoints.",
    "[t]race              Show a backtrace.",
    "[e]val <code>        Execute some Lua code (in a different callframe).",
    "[r]edis <cmd>        Execute a Redis command.",
    "[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    "                     Specifying zero as <len> means unlimited.",
    "[a]bort              Stop the execution of the script. In sync",
    "                     mode dataset changes will be retained.",
    "",
    "Debugger functions you can call from Lua scripts:",
    "redis.debug()        Produce logs in the debugger console.",
    "redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    "                     next line of code.",
];
