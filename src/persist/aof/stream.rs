//! A stream as commands in an AOF base file (Redis's `rewriteStreamObject`): XADDs, XSETID, then each group's XGROUP CREATE and XCLAIMs.

use std::io::{self, Write};

use crate::types::stream::{Stream, StreamId};

fn cmd(w: &mut dyn Write, args: &[&[u8]]) -> io::Result<()> {
    write!(w, "*{}\r\n", args.len())?;
    for a in args {
        write!(w, "${}\r\n", a.len())?;
        w.write_all(a)?;
        w.write_all(b"\r\n")?;
    }
    Ok(())
}

pub fn rewrite(w: &mut dyn Write, key: &[u8], s: &Stream) -> io::Result<()> {
    let mut i1 = itoa::Buffer::new();
    let mut i2 = itoa::Buffer::new();
    if !s.is_empty() {
        for e in s.range(StreamId::MIN, StreamId::MAX, false) {
            let mut tmp = Vec::with_capacity(e.len() * 2);
            for (f, v) in e.fields() {
                tmp.push(f.bytes(&mut i1).to_vec());
                tmp.push(v.bytes(&mut i2).to_vec());
            }
            let id = e.id.to_bytes();
            let mut args: Vec<&[u8]> = vec![b"XADD", key, &id];
            args.extend(tmp.iter().map(|x| &x[..]));
            cmd(w, &args)?;
        }
    } else {
        // An empty stream: XADD MAXLEN 0 creates it (and trims the entry).
        cmd(w, &[b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"])?;
    }
    let last = s.last_id.to_bytes();
    let added = i1.format(s.entries_added).as_bytes().to_vec();
    let maxdel = s.max_deleted.to_bytes();
    cmd(
        w,
        &[
            b"XSETID",
            key,
            &last,
            b"ENTRIESADDED",
            &added,
            b"MAXDELETEDID",
            &maxdel,
        ],
    )?;
    for (name, g) in &s.groups {
        let last = g.last_id.to_bytes();
        let read = i1.format(g.entries_read).as_bytes().to_vec();
        cmd(
            w,
            &[
                b"XGROUP",
                b"CREATE",
                key,
                name,
                &last,
                b"ENTRIESREAD",
                &read,
            ],
        )?;
        for (cname, c) in &g.consumers {
            if c.pel.is_empty() {
                cmd(w, &[b"XGROUP", b"CREATECONSUMER", key, name, cname])?;
                continue;
            }
            for id in &c.pel {
                let Some(n) = g.pel.get(id) else { continue };
                let idb = id.to_bytes();
                let time = i1.format(n.delivery_time).as_bytes().to_vec();
                let count = i2.format(n.delivery_count).as_bytes().to_vec();
                cmd(
                    w,
                    &[
                        b"XCLAIM",
                        key,
                        name,
                        cname,
                        b"0",
                        &idb,
                        b"TIME",
                        &time,
                        b"RETRYCOUNT",
                        &count,
                        b"JUSTID",
                        b"FORCE",
                    ],
                )?;
            }
        }
    }
    Ok(())
}
