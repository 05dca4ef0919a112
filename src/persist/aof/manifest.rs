//! The AOF manifest (`<appendfilename>.manifest`): which base, history and incr files make up the AOF, in Redis 7's text format.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A manifest line's `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Base,
    History,
    Incr,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Kind::Base => 'b',
            Kind::History => 'h',
            Kind::Incr => 'i',
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub name: String,
    pub seq: i64,
    pub kind: Kind,
}

/// The files of the AOF. Invariants (Redis's): at most one base, always
/// written first; incr files in increasing `seq`, the last one the file
/// being appended to; history files are deleted once the manifest that
/// no longer needs them is on disk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<FileInfo>,
    pub history: Vec<FileInfo>,
    pub incr: Vec<FileInfo>,
    pub base_seq: i64,
    pub incr_seq: i64,
    /// Changed since it was last written.
    pub dirty: bool,
}

/// Why a manifest could not be read: Redis's log lines (it then exits).
#[derive(Debug)]
pub struct ParseError {
    pub lines: Vec<String>,
}

/// The longest manifest line Redis reads (`MANIFEST_MAX_LINE`).
const MAX_LINE: usize = 1024;

/// Redis's `sdsneedsrepr`: a name with these bytes is written quoted.
fn needs_repr(s: &str) -> bool {
    s.bytes().any(|c| {
        matches!(c, b'\\' | b'"' | b'\n' | b'\r' | b'\t' | 7 | 8)
            || !(c.is_ascii_graphic() || c == b' ')
            || crate::resp::inline::is_space(c)
    })
}

impl Manifest {
    /// The manifest as Redis writes it: base, then history, then incr files.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let all = self.base.iter().chain(&self.history).chain(&self.incr);
        for f in all {
            let name = if needs_repr(&f.name) {
                crate::config::quote(f.name.as_bytes())
            } else {
                f.name.clone()
            };
            out.push_str(&format!(
                "file {} seq {} type {}\n",
                name,
                f.seq,
                f.kind.letter()
            ));
        }
        out
    }

    /// Parses a manifest with Redis's checks (`aofLoadManifestFromFile`).
    pub fn parse(text: &[u8]) -> Result<Manifest, ParseError> {
        let mut m = Manifest::default();
        let mut max_seq = 0;
        let fail = |linenum: usize, line: Option<&str>, err: &str| {
            let mut lines = vec!["\n*** FATAL AOF MANIFEST FILE ERROR ***\n".to_string()];
            if let Some(l) = line {
                lines.push(format!("Reading the manifest file, at line {linenum}\n"));
                lines.push(format!(">>> '{l}'\n"));
            }
            lines.push(format!("{err}\n"));
            ParseError { lines }
        };
        if text.is_empty() {
            return Err(fail(0, None, "Found an empty AOF manifest"));
        }
        let mut rest = text;
        let mut linenum = 0;
        while !rest.is_empty() {
            // fgets: up to MAX_LINE bytes or through the newline.
            let cut = rest
                .iter()
                .take(MAX_LINE)
                .position(|&c| c == b'\n')
                .map_or(rest.len().min(MAX_LINE), |i| i + 1);
            let raw = &rest[..cut];
            rest = &rest[cut..];
            linenum += 1;
            if raw[0] == b'#' {
                continue;
            }
            if !raw.contains(&b'\n') {
                return Err(fail(
                    linenum,
                    None,
                    "The AOF manifest file contains too long line",
                ));
            }
            let trimmed = String::from_utf8_lossy(raw)
                .trim_matches([' ', '\t', '\r', '\n'])
                .to_string();
            let invalid = |m: &str| fail(linenum, Some(&trimmed), m);
            if trimmed.is_empty() {
                return Err(invalid("Invalid AOF manifest file format"));
            }
            let argv = match crate::resp::inline::split(trimmed.as_bytes()) {
                Some(v) if v.len() >= 6 && v.len() % 2 == 0 => v,
                _ => return Err(invalid("Invalid AOF manifest file format")),
            };
            let (mut name, mut seq, mut kind) = (None, 0i64, 0u8);
            for pair in argv.chunks(2) {
                let key = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
                match key.as_str() {
                    "file" => {
                        let n = String::from_utf8_lossy(&pair[1]).into_owned();
                        if n.contains(['/', '\\']) {
                            return Err(invalid("File can't be a path, just a filename"));
                        }
                        name = Some(n);
                    }
                    "seq" => seq = atoll(&pair[1]),
                    "type" => kind = pair[1].first().copied().unwrap_or(0),
                    _ => {}
                }
            }
            let (Some(name), true, true) = (name, seq != 0, kind != 0) else {
                return Err(invalid("Invalid AOF manifest file format"));
            };
            match kind {
                b'b' => {
                    if m.base.is_some() {
                        return Err(invalid("Found duplicate base file information"));
                    }
                    m.base_seq = seq;
                    m.base = Some(FileInfo {
                        name,
                        seq,
                        kind: Kind::Base,
                    });
                }
                b'h' => m.history.push(FileInfo {
                    name,
                    seq,
                    kind: Kind::History,
                }),
                b'i' => {
                    if seq <= max_seq {
                        return Err(invalid("Found a non-monotonic sequence number"));
                    }
                    max_seq = seq;
                    m.incr_seq = seq;
                    m.incr.push(FileInfo {
                        name,
                        seq,
                        kind: Kind::Incr,
                    });
                }
                _ => return Err(invalid("Unknown AOF file type")),
            }
        }
        Ok(m)
    }

    /// A new base name (`<filename>.<seq>.base.rdb|aof`); the previous base
    /// becomes history.
    pub fn new_base(&mut self, filename: &str, rdb: bool) -> String {
        if let Some(mut b) = self.base.take() {
            b.kind = Kind::History;
            self.history.insert(0, b);
        }
        self.base_seq += 1;
        let ext = if rdb { "rdb" } else { "aof" };
        let name = format!("{filename}.{}.base.{ext}", self.base_seq);
        self.base = Some(FileInfo {
            name: name.clone(),
            seq: self.base_seq,
            kind: Kind::Base,
        });
        self.dirty = true;
        name
    }

    /// A new incr name (`<filename>.<seq>.incr.aof`), added last.
    pub fn new_incr(&mut self, filename: &str) -> String {
        self.incr_seq += 1;
        let name = format!("{filename}.{}.incr.aof", self.incr_seq);
        self.incr.push(FileInfo {
            name: name.clone(),
            seq: self.incr_seq,
            kind: Kind::Incr,
        });
        self.dirty = true;
        name
    }

    /// The incr file to append to: the last one, or a new one.
    pub fn last_incr(&mut self, filename: &str) -> String {
        match self.incr.last() {
            Some(f) => f.name.clone(),
            None => self.new_incr(filename),
        }
    }

    /// After a rewrite: every incr file but the one being appended to
    /// (when `keep_last`) is covered by the new base and becomes history.
    pub fn mark_rewritten_incr_as_history(&mut self, keep_last: bool) {
        let keep = usize::from(keep_last && !self.incr.is_empty());
        let n = self.incr.len() - keep;
        // Redis walks from the tail, adding each at the head of history.
        for mut f in self.incr.drain(..n) {
            f.kind = Kind::History;
            self.history.insert(0, f);
        }
        self.dirty = true;
    }

    /// Writes the manifest if it changed: to a temp name, fsynced, renamed,
    /// then the directory fsynced (Redis's `persistAofManifest`). The error
    /// is what Redis logs.
    pub fn persist(&mut self, dir: &Path, filename: &str) -> Result<(), String> {
        if !self.dirty {
            return Ok(());
        }
        write_file(dir, filename, self.to_text().as_bytes())?;
        self.dirty = false;
        Ok(())
    }

    /// Files loaded at start-up: the base, then the incr files.
    pub fn loaded_files(&self) -> impl Iterator<Item = &FileInfo> {
        self.base.iter().chain(&self.incr)
    }
}

/// `<filename>.manifest`.
pub fn manifest_name(filename: &str) -> String {
    format!("{filename}.manifest")
}

fn write_file(dir: &Path, filename: &str, text: &[u8]) -> Result<(), String> {
    let name = manifest_name(filename);
    let tmp_name = format!("temp-{name}");
    let path = dir.join(&name);
    let tmp = dir.join(&tmp_name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(|e| format!("Can't open the AOF manifest file {tmp_name}: {}", os(&e)))?;
    f.write_all(text).map_err(|e| {
        format!(
            "Error trying to write the temporary AOF manifest file {tmp_name}: {}",
            os(&e)
        )
    })?;
    f.sync_data()
        .map_err(|e| format!("Fail to fsync the temp AOF file {tmp_name}: {}.", os(&e)))?;
    std::fs::rename(&tmp, &path).map_err(|e| {
        format!(
            "Error trying to rename the temporary AOF manifest file {tmp_name} into {name}: {}",
            os(&e)
        )
    })?;
    fsync_dir(dir).map_err(|e| {
        format!(
            "Fail to fsync AOF directory {}: {}.",
            path.display(),
            os(&e)
        )
    })
}

/// Makes a rename or a new file in `dir` durable.
pub fn fsync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// C's `strerror` text of an I/O error (Rust adds " (os error N)").
pub fn os(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// C's `atoll`.
fn atoll(b: &[u8]) -> i64 {
    let s = String::from_utf8_lossy(b);
    let s = s.trim_start();
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let n: i64 = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |n, d| {
            n.wrapping_mul(10).wrapping_add((d - b'0') as i64)
        });
    if neg {
        -n
    } else {
        n
    }
}

/// `dir/name`.
pub fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_in_redis_order() {
        let text = b"file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.1.incr.aof seq 1 type h\nfile appendonly.aof.4.incr.aof seq 4 type i\nfile appendonly.aof.5.incr.aof seq 5 type i\n";
        let m = Manifest::parse(text).unwrap();
        assert_eq!(m.base_seq, 2);
        assert_eq!(m.incr_seq, 5);
        assert_eq!(m.to_text().as_bytes(), text);
    }

    #[test]
    fn rewrite_moves_files_to_history() {
        let mut m = Manifest::default();
        assert_eq!(m.last_incr("appendonly.aof"), "appendonly.aof.1.incr.aof");
        m.new_incr("appendonly.aof");
        assert_eq!(
            m.new_base("appendonly.aof", true),
            "appendonly.aof.1.base.rdb"
        );
        m.mark_rewritten_incr_as_history(true);
        assert_eq!(
            m.to_text(),
            "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type h\nfile appendonly.aof.2.incr.aof seq 2 type i\n"
        );
    }

    #[test]
    fn errors_are_redis_texts() {
        let e = Manifest::parse(b"file a seq 1 type i\nfile b seq 1 type i\n").unwrap_err();
        assert_eq!(e.lines[3], "Found a non-monotonic sequence number\n");
        assert_eq!(e.lines[2], ">>> 'file b seq 1 type i'\n");
        let e = Manifest::parse(b"file a/b seq 1 type i\n").unwrap_err();
        assert_eq!(e.lines[3], "File can't be a path, just a filename\n");
        let e = Manifest::parse(b"").unwrap_err();
        assert_eq!(e.lines[1], "Found an empty AOF manifest\n");
        let e = Manifest::parse(b"file a seq 1 type x\n").unwrap_err();
        assert_eq!(e.lines[3], "Unknown AOF file type\n");
    }

    #[test]
    fn odd_names_are_quoted() {
        let mut m = Manifest::default();
        m.new_incr("my file");
        let text = m.to_text();
        assert_eq!(text, "file \"my file.1.incr.aof\" seq 1 type i\n");
        assert_eq!(
            Manifest::parse(text.as_bytes()).unwrap().incr[0].name,
            "my file.1.incr.aof"
        );
    }
}
