//! A base file: the dataset as an RDB preamble, or as commands (Redis's `rewriteAppendOnlyFileRio`), written to a temp name, fsynced and renamed.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::db::Value;
use crate::server::Server;
use crate::types::set::Member;

/// Items per RPUSH / SADD / ZADD / HMSET (`AOF_REWRITE_ITEMS_PER_CMD`).
pub const ITEMS_PER_CMD: usize = 64;

/// Writes a base file at `target`: through `temp-rewriteaof-<pid>.aof` in
/// `dir`, fsynced, then renamed (Redis's
/// `rewriteAppendOnlyFile`). The error is what Redis logs.
pub fn write_base(srv: &Server, target: &Path, rdb_preamble: bool) -> Result<(), String> {
    let tmp = (srv.aof.workdir).join(format!("temp-rewriteaof-{}.aof", std::process::id()));
    let result = (|| -> io::Result<()> {
        let f = std::fs::File::create(&tmp)?;
        let mut w = BufWriter::with_capacity(64 * 1024, &f);
        if rdb_preamble {
            let opts = crate::persist::rdb::SaveOptions {
                aof_base: true,
                ..Default::default()
            };
            crate::persist::rdb::write_dataset_with(srv, &mut w, &opts)?;
        } else {
            write_commands(srv, &mut w)?;
        }
        w.flush()?;
        drop(w);
        f.sync_all()
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "Write error writing append only file on disk: {}",
            super::manifest::os(&e)
        ));
    }
    std::fs::rename(&tmp, target).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!(
            "Error moving temp append only file on the final destination: {}",
            super::manifest::os(&e)
        )
    })
}

/// The dataset as commands: a `#TS:` annotation (with
/// `aof-timestamp-enabled`), FUNCTION LOAD per library, then per non-empty
/// database a SELECT and per key SET / RPUSH / SADD / ZADD / HMSET in
/// batches of [`ITEMS_PER_CMD`], and PEXPIREAT for a key with a TTL.
pub fn write_commands(srv: &Server, w: &mut dyn Write) -> io::Result<()> {
    if srv.config.get("aof-timestamp-enabled") == Some("yes") {
        write!(w, "#TS:{}\r\n", crate::clock::real_now_us() / 1_000_000)?;
    }
    let mut delay = crate::persist::KeyDelay::from_config(srv, "rdb-key-save-delay");
    for lib in &srv.script.functions.libs {
        w.write_all(b"*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n")?;
        bulk(w, &lib.code)?;
    }
    for (i, db) in srv.ks.dbs.iter().enumerate() {
        if db.is_empty() {
            continue;
        }
        w.write_all(b"*2\r\n$6\r\nSELECT\r\n")?;
        bulk_int(w, i as i64)?;
        for (key, val) in db.iter() {
            delay.wait();
            crate::persist::child_info::key_saved();
            write_value(w, key, val)?;
            if let Some(at) = db.expire_at(key) {
                w.write_all(b"*3\r\n$9\r\nPEXPIREAT\r\n")?;
                bulk(w, key)?;
                bulk_int(w, at)?;
            }
        }
    }
    Ok(())
}

fn write_value(w: &mut dyn Write, key: &[u8], val: &Value) -> io::Result<()> {
    match val {
        Value::Str(s) => {
            w.write_all(b"*3\r\n$3\r\nSET\r\n")?;
            bulk(w, key)?;
            bulk(w, &s.as_bytes())
        }
        Value::List(l) => batched(w, b"RPUSH", key, l.len(), 1, l.iter(), |w, e| bulk(w, e)),
        Value::Set(s) => batched(w, b"SADD", key, s.len(), 1, s.iter(), |w, m| match m {
            Member::Int(n) => bulk_int(w, n),
            Member::Bytes(b) => bulk(w, b),
        }),
        Value::ZSet(z) => batched(w, b"ZADD", key, z.len(), 2, z.iter(), |w, (m, score)| {
            bulk(w, crate::types::number::fmt_g(score, 17).as_bytes())?;
            bulk(w, m)
        }),
        Value::Stream(s) => super::stream::rewrite(w, key, s),
        Value::Hash(h) => batched(w, b"HMSET", key, h.len(), 2, h.iter(), |w, (f, v)| {
            bulk(w, f)?;
            bulk(w, v)
        }),
    }
}

/// `name key item...` commands of at most [`ITEMS_PER_CMD`] items, each
/// item `width` arguments.
fn batched<T>(
    w: &mut dyn Write,
    name: &[u8],
    key: &[u8],
    len: usize,
    width: usize,
    items: impl Iterator<Item = T>,
    mut item: impl FnMut(&mut dyn Write, T) -> io::Result<()>,
) -> io::Result<()> {
    let mut left = len;
    let mut count = 0;
    for it in items {
        if count == 0 {
            let n = left.min(ITEMS_PER_CMD);
            write!(w, "*{}\r\n", 2 + n * width)?;
            bulk(w, name)?;
            bulk(w, key)?;
        }
        item(w, it)?;
        count += 1;
        if count == ITEMS_PER_CMD {
            count = 0;
        }
        left = left.saturating_sub(1);
    }
    Ok(())
}

fn bulk(w: &mut dyn Write, b: &[u8]) -> io::Result<()> {
    write!(w, "${}\r\n", b.len())?;
    w.write_all(b)?;
    w.write_all(b"\r\n")
}

fn bulk_int(w: &mut dyn Write, n: i64) -> io::Result<()> {
    let mut buf = itoa::Buffer::new();
    bulk(w, buf.format(n).as_bytes())
}
