//! Loading the AOF (start-up, DEBUG LOADAOF): the manifest, the base (RDB preamble or commands), the incr files, replayed through the gate by an internal client.

use std::path::Path;
use std::time::Instant;

use super::manifest::{self, Manifest};
use super::{Aof, State};
use crate::command::args::Args;
use crate::command::dispatch;
use crate::command::gate::{self, Caller, Verdict};
use crate::error::Rejection;
use crate::server::client::{Client, ConnKind};
use crate::server::Server;

/// Redis's `AOF_*` load results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loaded {
    Ok,
    NotExist,
    Empty,
    OpenErr,
    Failed,
    Truncated,
}

/// The AOF could not be loaded and the server must not start (the reason
/// was logged with Redis's text).
#[derive(Debug)]
pub struct Refused;

/// fgets' buffer in Redis's loader (`AOF_ANNOTATION_LINE_MAX_LEN`).
const LINE_MAX: usize = 1024;

/// Start-up (Redis's `aofLoadManifestFromDisk`, `loadDataFromDisk` for the
/// AOF, `aofOpenIfNeededOnServerStart`, `aofDelHistoryFiles`). The manifest
/// is read whatever `appendonly` says (a later CONFIG SET continues its
/// numbering); with `appendonly yes` the AOF is loaded, then opened for
/// appending (a base written first when there is none). Err: the server
/// must not start (the reason is logged).
/// True when the AOF is on (and loaded): the RDB file is then not read.
pub fn load_at_startup(srv: &mut Server) -> Result<bool, Refused> {
    startup(srv).map_err(|()| Refused)
}

fn startup(srv: &mut Server) -> Result<bool, ()> {
    srv.aof.configure(&srv.config);
    srv.aof.manifest = read_manifest(&srv.aof)?;
    if srv.config.get("appendonly") != Some("yes") {
        return Ok(false);
    }
    let start = Instant::now();
    match load_files(srv)? {
        Loaded::NotExist => {}
        _ => crate::log::notice(&format!(
            "DB loaded from append only file: {:.3} seconds",
            start.elapsed().as_secs_f64()
        )),
    }
    srv.aof.state = State::On;
    open_on_startup(srv)?;
    super::bgrewrite::delete_history(&mut srv.aof);
    super::bgrewrite::start_feeding(srv);
    Ok(true)
}

/// The manifest on disk, or an empty one when the directory or the file is
/// missing (an old-style AOF, or none yet).
fn read_manifest(aof: &Aof) -> Result<Manifest, ()> {
    let path = aof.path(&manifest::manifest_name(&aof.filename));
    if !aof.dirname.is_dir() || !path.exists() {
        return Ok(Manifest::default());
    }
    let text = std::fs::read(&path).map_err(|e| {
        crate::log::warning(&format!(
            "Fatal error: can't open the AOF manifest file {} for reading: {}",
            path.display(),
            manifest::os(&e)
        ))
    })?;
    Manifest::parse(&text).map_err(|e| {
        for l in e.lines {
            crate::log::warning(&l);
        }
    })
}

/// Loads the base and incr files the manifest lists (Redis's
/// `loadAppendOnlyFiles`), upgrading an old single-file AOF first.
fn load_files(srv: &mut Server) -> Result<Loaded, ()> {
    upgrade_if_needed(&mut srv.aof)?;
    let m = srv.aof.manifest.clone();
    let files: Vec<_> = m.loaded_files().cloned().collect();
    if files.is_empty() {
        return Ok(Loaded::NotExist);
    }
    let mut total = 0;
    for f in &files {
        match super::file_size(&srv.aof, &f.name) {
            Ok(n) => total += n,
            Err(_) => return Err(()),
        }
    }
    if total == 0 {
        return Ok(Loaded::Empty);
    }
    crate::persist::loading::start(srv, total);
    let ret = load_listed(srv, &m, &files);
    crate::persist::loading::stop(srv);
    if ret.is_ok() {
        srv.aof.current_size = total;
    }
    ret
}

/// [`load_files`] once the total size is known: each file in turn.
fn load_listed(srv: &mut Server, m: &Manifest, files: &[manifest::FileInfo]) -> Result<Loaded, ()> {
    let mut base_size = 0;
    let mut ret = Loaded::Ok;
    for (i, f) in files.iter().enumerate() {
        let last = i + 1 == files.len();
        let is_base = m.base.as_ref() == Some(f);
        if is_base {
            base_size = super::file_size(&srv.aof, &f.name).unwrap_or(0);
        }
        let start = Instant::now();
        ret = load_single(srv, &f.name);
        crate::persist::loading::file_done(srv, super::file_size(&srv.aof, &f.name).unwrap_or(0));
        if ret == Loaded::Ok || (ret == Loaded::Truncated && last) {
            crate::log::notice(&format!(
                "DB loaded from {} file {}: {:.3} seconds",
                if is_base { "base" } else { "incr" },
                f.name,
                start.elapsed().as_secs_f64()
            ));
        }
        if ret == Loaded::Empty && !is_base {
            ret = Loaded::Ok;
        }
        if ret == Loaded::Truncated && !last {
            crate::log::warning("Fatal error: the truncated file is not the last file");
            return Err(());
        }
        if matches!(ret, Loaded::OpenErr | Loaded::Failed) {
            return Err(());
        }
    }
    srv.aof.rewrite_base_size = base_size;
    Ok(ret)
}

/// An `appendonly.aof` in the working directory, with no manifest that
/// lists files (or one that lists only it, not yet moved): it becomes the
/// base of a new AOF directory (Redis's `aofUpgradePrepare`).
fn upgrade_if_needed(aof: &mut Aof) -> Result<(), ()> {
    let old = Path::new(&aof.filename);
    if !old.is_file() {
        return Ok(());
    }
    let m = &aof.manifest;
    let only_old_base = m.incr.is_empty()
        && m.base.as_ref().is_some_and(|b| b.name == aof.filename)
        && !aof.path(&aof.filename).exists();
    let nothing = m.base.is_none() && m.incr.is_empty();
    if !(aof.dirname.is_dir() && !nothing && !only_old_base) {
        create_dir(aof)?;
        let m = &mut aof.manifest;
        m.base = Some(manifest::FileInfo {
            name: aof.filename.clone(),
            seq: 1,
            kind: manifest::Kind::Base,
        });
        m.base_seq = 1;
        m.dirty = true;
        m.persist(&aof.dirname, &aof.filename)
            .map_err(|e| crate::log::warning(&e))?;
        std::fs::rename(old, aof.path(&aof.filename)).map_err(|e| {
            crate::log::warning(&format!(
                "Error trying to move the old AOF file {} into dir {}: {}",
                aof.filename,
                aof.dirname_shown(),
                manifest::os(&e)
            ))
        })?;
        crate::log::notice(&format!(
            "Successfully migrated an old-style AOF file ({}) into the AOF directory ({}).",
            aof.filename,
            aof.dirname_shown()
        ));
    }
    Ok(())
}

/// Creates `appenddirname` when missing.
pub(super) fn create_dir(aof: &Aof) -> Result<(), ()> {
    match std::fs::create_dir(&aof.dirname) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => {
            crate::log::warning(&format!(
                "Can't open or create append-only dir {}: {}",
                aof.dirname_shown(),
                manifest::os(&e)
            ));
            Err(())
        }
    }
}

/// After loading: a base written when the AOF has no file yet, the last
/// incr file opened for appending (a new one when there is none), the
/// manifest persisted (Redis's `aofOpenIfNeededOnServerStart`).
fn open_on_startup(srv: &mut Server) -> Result<(), ()> {
    create_dir(&srv.aof)?;
    let had_incr = !srv.aof.manifest.incr.is_empty();
    if srv.aof.manifest.base.is_none() && !had_incr {
        let rdb = srv.config.get("aof-use-rdb-preamble") == Some("yes");
        let name = srv.aof.manifest.new_base(&srv.aof.filename, rdb);
        let target = srv.aof.path(&name);
        super::rewrite::write_base(srv, &target, rdb).map_err(|e| crate::log::warning(&e))?;
        crate::log::notice(&format!("Creating AOF base file {name} on server start"));
    }
    let aof = &mut srv.aof;
    let name = aof.manifest.last_incr(&aof.filename);
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(aof.path(&name))
        .map_err(|e| {
            crate::log::warning(&format!(
                "Can't open the append-only file {name}: {}",
                manifest::os(&e)
            ))
        })?;
    aof.manifest
        .persist(&aof.dirname, &aof.filename)
        .map_err(|e| crate::log::warning(&e))?;
    let size = super::file_size(aof, &name).unwrap_or(0);
    aof.switch_file(file, size);
    crate::log::notice(&format!(
        "{} AOF incr file {name} on server start",
        if had_incr { "Opening" } else { "Creating" }
    ));
    Ok(())
}

/// DEBUG LOADAOF: the buffer flushed, the dataset emptied, the AOF loaded
/// back (Redis exits when that fails).
pub fn debug_loadaof(srv: &mut Server) {
    if srv.aof.state != State::Off {
        super::writer::flush(srv, true);
    }
    for db in srv.ks.dbs.iter_mut() {
        db.clear(false);
    }
    srv.script.functions.flush(false);
    let Ok(m) = read_manifest(&srv.aof) else {
        std::process::exit(1);
    };
    srv.aof.manifest = m;
    super::bgrewrite::delete_history(&mut srv.aof);
    let was = std::mem::replace(&mut srv.aof.state, State::Off);
    let feed = srv.prop.aof.take();
    let ret = load_files(srv);
    srv.aof.state = was;
    srv.prop.aof = feed;
    match ret {
        Ok(Loaded::Ok | Loaded::Empty | Loaded::NotExist) => {}
        _ => std::process::exit(1),
    }
    srv.ks.dirty = 0;
    crate::log::warning("Append Only File loaded by DEBUG LOADAOF");
}

/// Replays one file (Redis's `loadSingleAppendOnlyFile`).
fn load_single(srv: &mut Server, name: &str) -> Loaded {
    let path = srv.aof.path(name);
    let data = match std::fs::read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::log::warning(&format!(
                "The append log file {name} doesn't exist: {}",
                manifest::os(&e)
            ));
            return Loaded::NotExist;
        }
        Err(e) => {
            crate::log::warning(&format!(
                "Fatal error: can't open the append log file {name} for reading: {}",
                manifest::os(&e)
            ));
            return Loaded::OpenErr;
        }
    };
    if data.is_empty() {
        return Loaded::Empty;
    }
    let mut pos = 0;
    if data.starts_with(b"REDIS") {
        let old_style = name == srv.aof.filename;
        crate::log::notice(if old_style {
            "Reading RDB preamble from AOF file..."
        } else {
            "Reading RDB base file on AOF loading..."
        });
        let opts = crate::persist::rdb::LoadOptions {
            aof_preamble: true,
            ..Default::default()
        };
        match crate::persist::rdb::load_dataset_with(srv, &data, &opts) {
            Ok(info) => {
                pos = info.consumed;
                if old_style {
                    crate::log::notice("Reading the remaining AOF tail...");
                }
            }
            Err(e) => {
                crate::log::warning(&e.message);
                crate::log::warning(&if old_style {
                    format!("Error reading the RDB preamble of the AOF file {name}, AOF loading aborted")
                } else {
                    format!("Error reading the RDB base file {name}, AOF loading aborted")
                });
                return Loaded::Failed;
            }
        }
    }
    let truncate_ok = srv.config.get("aof-load-truncated") == Some("yes");
    let mut client = Client::new(
        u64::MAX,
        String::new(),
        String::new(),
        ConnKind::Script,
        false,
    );
    let mut replay = Replay {
        data: &data,
        pos,
        valid_up_to: 0,
        valid_before_multi: 0,
        truncate_ok,
    };
    // Inside a load started by `load_files` the flag is on already.
    let was_loading = crate::db::loading();
    crate::db::set_loading(true);
    let end = replay.run(srv, &mut client, name);
    crate::db::set_loading(was_loading);
    let valid_up_to = match end {
        End::Done => return Loaded::Ok,
        End::Failed => return Loaded::Failed,
        End::FormatError => {
            crate::log::warning(&format!("Bad file format reading the append only file {name}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"));
            return Loaded::Failed;
        }
        End::Truncated(at) => at,
    };
    if truncate_ok {
        crate::log::warning(&format!(
            "!!! Warning: short read while loading the AOF file {name}!!!"
        ));
        crate::log::warning(&format!(
            "!!! Truncating the AOF {name} at offset {valid_up_to} !!!"
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(valid_up_to as u64))
        {
            Ok(()) => {
                crate::log::warning(&format!(
                    "AOF {name} loaded anyway because aof-load-truncated is enabled"
                ));
                return Loaded::Truncated;
            }
            Err(e) => crate::log::warning(&format!(
                "Error truncating the AOF file {name}: {}",
                manifest::os(&e)
            )),
        }
    }
    crate::log::warning(&format!("Unexpected end of file reading the append only file {name}. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."));
    Loaded::Failed
}

/// How a replay ended.
enum End {
    Done,
    /// A torn tail: the offset of the end of the last whole command.
    Truncated(usize),
    FormatError,
    /// Logged already (an unknown command).
    Failed,
}

/// The reader over one file's bytes, with Redis's rules: `#` lines are
/// annotations, a command is `*<argc>` then `$<len>` + bytes + CRLF per
/// argument; running out of bytes mid-command is a torn tail.
struct Replay<'a> {
    data: &'a [u8],
    pos: usize,
    /// End of the last command run (tracked with `aof-load-truncated`).
    valid_up_to: usize,
    valid_before_multi: usize,
    truncate_ok: bool,
}

impl Replay<'_> {
    /// C's `fgets` with Redis's buffer: through a newline, at most
    /// `LINE_MAX - 1` bytes; None at the end of the data.
    fn line(&mut self) -> Option<&[u8]> {
        let rest = &self.data[self.pos..];
        if rest.is_empty() {
            return None;
        }
        let lim = rest.len().min(LINE_MAX - 1);
        let n = rest[..lim]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(lim, |i| i + 1);
        self.pos += n;
        Some(&rest[..n])
    }

    fn run(&mut self, srv: &mut Server, client: &mut Client, name: &str) -> End {
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        while let Some(line) = self.line() {
            if line[0] == b'#' {
                continue;
            }
            if line[0] != b'*' {
                return End::FormatError;
            }
            if line.len() == 1 {
                return self.torn();
            }
            let argc = atoi(&line[1..]);
            if argc < 1 {
                return End::FormatError;
            }
            ranges.clear();
            for _ in 0..argc {
                let Some(line) = self.line() else {
                    return self.torn();
                };
                if line[0] != b'$' {
                    return End::FormatError;
                }
                let len = atoi(&line[1..]).max(0) as usize;
                let start = self.pos;
                if self.data.len() - start < len + 2 {
                    return self.torn();
                }
                ranges.push((start, start + len));
                self.pos = start + len + 2;
            }
            let args = Args::new(self.data, &ranges);
            if let Err(e) = self.exec(srv, client, &args, name) {
                return e;
            }
            if self.truncate_ok {
                self.valid_up_to = self.pos;
            }
            if crate::persist::loading::command_replayed(srv, self.pos as u64) {
                crate::log::warning("AOF loading interrupted by SHUTDOWN");
                return End::Failed;
            }
        }
        if client.multi.is_some() {
            crate::log::warning(&format!(
                "Revert incomplete MULTI/EXEC transaction in AOF file {name}"
            ));
            client.multi = None;
            return End::Truncated(self.valid_before_multi);
        }
        End::Done
    }

    /// The data ended inside a command.
    fn torn(&self) -> End {
        End::Truncated(self.valid_up_to)
    }

    /// Runs one command as the AOF client (Redis's `mustObeyClient`: the
    /// gate refuses it nothing for the server's state).
    fn exec(
        &mut self,
        srv: &mut Server,
        c: &mut Client,
        args: &Args,
        name: &str,
    ) -> Result<(), End> {
        match gate::check(srv, c, args, Caller::Internal) {
            Verdict::Run(cmd) => {
                if cmd.spec.name == "multi" {
                    self.valid_before_multi = self.valid_up_to;
                }
                dispatch::call(srv, c, cmd, args, false);
                dispatch::after_command(srv, c);
            }
            Verdict::Queue(cmd) => dispatch::queue(c, cmd, args),
            Verdict::Reject(_, Rejection::Unknown(_)) => {
                crate::log::warning(&format!(
                    "Unknown command '{}' reading the append only file {name}",
                    String::from_utf8_lossy(args.at(0))
                ));
                return Err(End::Failed);
            }
            Verdict::Reject(_, r) => {
                crate::log::warning(&format!(
                    "Command refused reading the append only file {name}: {}",
                    r.error().text()
                ));
                return Err(End::FormatError);
            }
            Verdict::Postpone => {}
        }
        c.reply.buf.clear();
        Ok(())
    }
}

/// C's `atoi` (leading digits, optional sign).
fn atoi(b: &[u8]) -> i64 {
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    let n = digits
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .fold(0i64, |n, &d| {
            n.saturating_mul(10).saturating_add((d - b'0') as i64)
        });
    if neg {
        -n
    } else {
        n
    }
}
