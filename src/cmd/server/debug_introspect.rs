//! DEBUG subcommands that show internals: SDSLEN, LISTPACK, QUICKLIST, HTSTATS, HTSTATS-KEY, STRUCTSIZE, CLIENT-EVICTION, MALLCTL, MALLCTL-STR.
//!
//! Replies have Redis's shape and fields; the figures are Oxidis's own
//! structures' (compat/KNOWN_DIFFS.md lists where they differ).

use std::io::Write;

use crate::command::Args;
use crate::db::{Entry, Value};
use crate::error::{text, CmdResult, Error};
use crate::server::alloc::size_class;
use crate::server::Ctx;
use crate::types::string::Str;

/// Runs `DEBUG <sub> ...` when `sub` is one of these; None otherwise.
pub fn run(ctx: &mut Ctx, sub: &[u8], args: &Args) -> Option<CmdResult> {
    let is = |name: &str| sub.eq_ignore_ascii_case(name.as_bytes());
    let n = args.len();
    Some(if is("sdslen") && n == 3 {
        sdslen(ctx, args.at(2))
    } else if is("listpack") && n == 3 {
        listpack(ctx, args.at(2))
    } else if is("quicklist") && (n == 3 || n == 4) {
        let full = n == 4 && super::debug_more::atoi(args.at(3)) != 0;
        quicklist(ctx, args.at(2), full)
    } else if is("htstats") && n == 3 {
        htstats(ctx, args.at(2))
    } else if is("htstats-key") && n == 3 {
        htstats_key(ctx, args.at(2))
    } else if is("structsize") && n == 2 {
        structsize(ctx)
    } else if is("client-eviction") && n == 2 {
        client_eviction(ctx)
    } else if cfg!(feature = "alloc-jemalloc") && is("mallctl") && n >= 3 {
        mallctl::int(ctx, args)
    } else if cfg!(feature = "alloc-jemalloc") && is("mallctl-str") && n >= 3 {
        mallctl::string(ctx, args)
    } else {
        return None;
    })
}

/// Redis's `objectCommandLookupOrReply`: the live entry (an expired key is
/// deleted), no access recorded; `no such key` otherwise.
fn lookup<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Result<&'a Entry, Error> {
    ctx.db().lookup_no_touch(key).ok_or(Error::NoSuchKey)
}

/// ```text
/// DEBUG SDSLEN key
/// ```
/// Status: the key's and the value's length, spare room and allocation.
/// The key is read as stored (not expired). Integer values are refused.
fn sdslen(ctx: &mut Ctx, key: &[u8]) -> CmdResult {
    let db = &ctx.srv.ks.dbs[ctx.client.db];
    let Some(e) = db.peek_entry(key) else {
        return Err(Error::NoSuchKey);
    };
    let Value::Str(s) = &e.val else {
        return Err(Error::msg(text::DEBUG_NOT_SDS));
    };
    // embstr forms live in one block with their header (as Redis's embstr
    // shares the robj's allocation); raw ones in a growable buffer.
    let (len, avail, alloc) = match s {
        Str::Int(_) => return Err(Error::msg(text::DEBUG_NOT_SDS)),
        Str::Small { len, .. } | Str::Emb { len, .. } => {
            let len = *len as usize;
            (len, 0, size_class(ROBJ + 3 + len + 1) - ROBJ)
        }
        Str::Raw(v) => (
            v.len(),
            v.capacity() - v.len(),
            super::memory::sds_size(v.capacity()),
        ),
    };
    let text = format!(
        "key_sds_len:{}, key_sds_avail:0, key_zmalloc: {}, val_sds_len:{len}, val_sds_avail:{avail}, val_zmalloc: {alloc}",
        key.len(),
        super::memory::sds_size(key.len()),
    );
    ctx.out().simple(&text);
    Ok(())
}

/// Size of Redis's `robj` header, which an embstr shares its block with.
const ROBJ: usize = 16;

/// ```text
/// DEBUG LISTPACK key
/// ```
/// Prints the entries of a listpack-encoded value (small hashes and sorted
/// sets) on stdout and answers `Listpack structure printed on stdout`.
fn listpack(ctx: &mut Ctx, key: &[u8]) -> CmdResult {
    let e = lookup(ctx, key)?;
    if e.val.encoding() != "listpack" {
        return Err(Error::msg(text::DEBUG_NOT_LISTPACK));
    }
    let mut entries: Vec<Vec<u8>> = Vec::new();
    match &e.val {
        Value::Hash(h) => h.iter().for_each(|(f, v)| {
            entries.push(f.to_vec());
            entries.push(v.to_vec());
        }),
        Value::ZSet(z) => z.iter().for_each(|(m, score)| {
            entries.push(m.to_vec());
            entries.push(crate::types::number::fmt_g(score, 17).into_bytes());
        }),
        _ => {}
    }
    let mut out = String::new();
    repr_entries(&mut out, entries.iter().map(Vec::as_slice), entries.len());
    print_stdout(&out);
    ctx.out().simple("Listpack structure printed on stdout");
    Ok(())
}

/// Appends Redis's `lpRepr` layout for `entries`: a header, one block per
/// entry (index and up to 40 bytes of it), `{end}`.
fn repr_entries<'a>(out: &mut String, entries: impl Iterator<Item = &'a [u8]>, count: usize) {
    let mut body = String::new();
    let mut total = 0;
    for (i, e) in entries.enumerate() {
        total += crate::types::pack::entry_size(e.len());
        let shown = String::from_utf8_lossy(&e[..e.len().min(40)]);
        let more = if e.len() > 40 { "..." } else { "" };
        body.push_str(&format!(
            "{{\n\tindex: {i:2},\n\tpayload: {}\n\t[str]{shown}{more}\n}}\n",
            e.len()
        ));
    }
    out.push_str(&format!(
        "{{total bytes {total}}} {{num entries {count}}}\n"
    ));
    out.push_str(&body);
    out.push_str("{end}\n\n");
}

/// Writes a structure dump where Redis's `printf` puts it: stdout.
fn print_stdout(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

/// ```text
/// DEBUG QUICKLIST key [0|1]
/// ```
/// Prints the list's nodes (and with 1 their entries) on stdout and answers
/// `Quicklist structure printed on stdout`.
fn quicklist(ctx: &mut Ctx, key: &[u8], full: bool) -> CmdResult {
    let fill = ctx.srv.config.list_max_listpack_size;
    let compress = ctx.srv.config.get_i64("list-compress-depth");
    let e = lookup(ctx, key)?;
    let Value::List(l) = &e.val else {
        return Err(Error::msg(text::DEBUG_NOT_QUICKLIST));
    };
    let mut out = format!(
        "{{count : {}}}\n{{len : {}}}\n{{fill : {fill}}}\n{{compress : {compress}}}\n{{bookmark_count : 0}}\n",
        l.len(),
        l.node_count()
    );
    for (i, (buf, count)) in l.nodes().enumerate() {
        out.push_str(&format!(
            "{{quicklist node({i})\n{{container : PACKED, encoding: RAW, size: {}, count: {count}, recompress: 0, attempted_compress: 0}}\n",
            buf.len()
        ));
        if full {
            out.push_str("{ listpack:\n");
            repr_entries(&mut out, crate::types::pack::Iter::new(buf), count);
            out.push_str("}\n}\n");
        }
    }
    print_stdout(&out);
    ctx.out().simple("Quicklist structure printed on stdout");
    Ok(())
}

/// ```text
/// DEBUG HTSTATS dbid
/// ```
/// Verbatim text: Redis's statistics of the database's key table and
/// expiry table.
fn htstats(ctx: &mut Ctx, dbid: &[u8]) -> CmdResult {
    let id = crate::types::number::parse_i64(dbid).ok_or(Error::NotInteger)?;
    if id < 0 || id as usize >= ctx.srv.ks.dbs.len() {
        return Err(Error::msg(text::DEBUG_DB_RANGE));
    }
    let (keys, expires) = ctx.srv.ks.dbs[id as usize].tables();
    let mut s = String::from("[Dictionary HT]\n");
    s.push_str(&table_stats(keys.slots(), keys.len(), keys.chain_lengths()));
    s.push_str("[Expires HT]\n");
    s.push_str(&table_stats(
        expires.slots(),
        expires.len(),
        expires.chain_lengths(),
    ));
    ctx.out().verbatim(s.as_bytes());
    Ok(())
}

/// ```text
/// DEBUG HTSTATS-KEY key
/// ```
/// Verbatim text: the statistics of the value's hash table (hashtable sets
/// and hashes, skiplist sorted sets); an error for other encodings.
fn htstats_key(ctx: &mut Ctx, key: &[u8]) -> CmdResult {
    let e = lookup(ctx, key)?;
    let s = match &e.val {
        Value::Set(set) => match &**set {
            crate::types::set::Set::Table(d) => {
                Some(table_stats(d.slots(), d.len(), d.chain_lengths()))
            }
            _ => None,
        },
        Value::Hash(h) => h
            .chain_lengths()
            .map(|c| table_stats(c.len(), c.iter().sum(), c.into_iter())),
        Value::ZSet(z) => z.dict_slots().map(|(slots, used)| {
            let chains = (0..slots).map(|i| usize::from(i < used));
            table_stats(slots, used, chains)
        }),
        _ => None,
    };
    let Some(s) = s else {
        return Err(Error::msg(text::DEBUG_NOT_HT));
    };
    ctx.out().verbatim(s.as_bytes());
    Ok(())
}

/// Redis's `dictGetStats` text for one table of `size` buckets holding
/// `used` entries, chained `chains` per bucket. Oxidis's tables never
/// rehash incrementally: there is no "rehashing target" part.
fn table_stats(size: usize, used: usize, chains: impl Iterator<Item = usize>) -> String {
    const HEAD: &str = "Hash table 0 stats (main hash table):\n";
    if used == 0 {
        return format!("{HEAD}No stats available for empty dictionaries\n");
    }
    // Redis's DICT_STATS_VECTLEN: longer chains count in the last slot.
    let mut vector = [0usize; 50];
    let (mut slots, mut max, mut total) = (0usize, 0usize, 0usize);
    for len in chains {
        vector[len.min(vector.len() - 1)] += 1;
        if len > 0 {
            slots += 1;
            max = max.max(len);
            total += len;
        }
    }
    let mut s = format!(
        "{HEAD} table size: {size}\n number of elements: {used}\n different slots: {slots}\n max chain length: {max}\n avg chain length (counted): {:.2}\n avg chain length (computed): {:.2}\n Chain length distribution:\n",
        total as f32 / slots as f32,
        used as f32 / slots as f32
    );
    for (i, &n) in vector[..vector.len() - 1].iter().enumerate() {
        if n != 0 {
            s.push_str(&format!(
                "   {i}: {n} ({:.2}%)\n",
                n as f32 / size as f32 * 100.0
            ));
        }
    }
    s
}

/// ```text
/// DEBUG STRUCTSIZE
/// ```
/// Bulk: Redis's fields with the sizes of Oxidis's counterparts (`robj`:
/// a keyspace entry's value and access clocks; `dictentry`: a table
/// entry's fixed part; `sdshdr*`: the string headers memory accounting
/// counts).
fn structsize(ctx: &mut Ctx) -> CmdResult {
    let text = format!(
        "bits:{} robj:{} dictentry:{} sdshdr5:1 sdshdr8:3 sdshdr16:5 sdshdr32:9 sdshdr64:17 ",
        usize::BITS,
        std::mem::size_of::<Entry>(),
        crate::db::dict::entry_header_size::<Entry>(),
    );
    ctx.out().bulk(text.as_bytes());
    Ok(())
}

/// Redis's client memory buckets: up to 32 KiB, then one per power of two
/// to 4 GiB and above (`CLIENT_MEM_USAGE_BUCKET_MIN_LOG`..`MAX_LOG`).
const BUCKET_MIN_LOG: u32 = 15;
const BUCKET_MAX_LOG: u32 = 33;
const BUCKETS: usize = (1 + BUCKET_MAX_LOG - BUCKET_MIN_LOG) as usize;

/// ```text
/// DEBUG CLIENT-EVICTION
/// ```
/// Verbatim text: per memory bucket, the memory and number of the clients
/// client eviction may close (not CLIENT NO-EVICT ones).
fn client_eviction(ctx: &mut Ctx) -> CmdResult {
    if ctx.srv.client_mem.limit == 0 {
        return Err(Error::msg(text::DEBUG_NO_CLIENT_EVICTION));
    }
    let mut mem = [0usize; BUCKETS];
    let mut clients = [0usize; BUCKETS];
    super::client::each_client(ctx.srv, ctx.client, |c, _| {
        if c.no_evict {
            return;
        }
        let bits = usize::BITS - c.mem_usage.leading_zeros();
        let i = (bits.clamp(BUCKET_MIN_LOG, BUCKET_MAX_LOG) - BUCKET_MIN_LOG) as usize;
        mem[i] += c.mem_usage;
        clients[i] += 1;
    });
    let mut s = String::new();
    for j in 0..BUCKETS {
        if j == 0 {
            s.push_str("bucket          0");
        } else {
            s.push_str(&format!(
                "bucket {:10}",
                1usize << (j as u32 - 1 + BUCKET_MIN_LOG)
            ));
        }
        if j == BUCKETS - 1 {
            s.push_str("+            : ");
        } else {
            s.push_str(&format!(
                " - {:10}: ",
                (1usize << (j as u32 + BUCKET_MIN_LOG)) - 1
            ));
        }
        s.push_str(&format!(
            "tot-mem: {:10}, clients: {}\n",
            mem[j], clients[j]
        ));
    }
    ctx.out().verbatim(s.as_bytes());
    Ok(())
}

/// MALLCTL and MALLCTL-STR: jemalloc's `mallctl` by name, as Redis's
/// `mallctl_int` and `mallctl_string` call it.
mod mallctl {
    use super::*;

    /// The C library's text for an errno value (Redis replies `strerror`).
    fn strerror(code: i32) -> Error {
        // SAFETY: strerror returns a valid NUL-terminated string.
        let s = unsafe { std::ffi::CStr::from_ptr(libc::strerror(code)) };
        Error::msg(s.to_string_lossy().into_owned())
    }

    fn c_name(b: &[u8]) -> Vec<u8> {
        let mut v: Vec<u8> = b.iter().copied().take_while(|&c| c != 0).collect();
        v.push(0);
        v
    }

    #[cfg(feature = "alloc-jemalloc")]
    unsafe fn ctl(
        name: &[u8],
        old: *mut libc::c_void,
        oldlen: *mut usize,
        new: *mut libc::c_void,
        newlen: usize,
    ) -> i32 {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr() as *const libc::c_char,
            old,
            oldlen,
            new,
            newlen,
        )
    }

    #[cfg(not(feature = "alloc-jemalloc"))]
    unsafe fn ctl(
        _: &[u8],
        _: *mut libc::c_void,
        _: *mut usize,
        _: *mut libc::c_void,
        _: usize,
    ) -> i32 {
        libc::ENOENT
    }

    /// ```text
    /// DEBUG MALLCTL name [value]
    /// ```
    /// Integer: the old value (read as 64, 32, 16 or 8 bits, the first size
    /// jemalloc takes); with a value also writes it (`OK` for write-only names).
    pub fn int(ctx: &mut Ctx, args: &Args) -> CmdResult {
        let name = c_name(args.at(2));
        let write = args.len() > 3;
        let mut val: i64 = 0;
        if write {
            val = crate::types::number::parse_i64(args.at(3)).ok_or(Error::NotInteger)?;
        }
        let mut old: i64 = 0;
        // In and out, as Redis passes it: on a size mismatch jemalloc
        // answers EINVAL and sets it to the bytes it copied, and the next
        // try halves that (so a 4-byte name ends in EINVAL, as in Redis).
        let mut sz = std::mem::size_of::<i64>();
        while sz > 0 {
            let newp = if write {
                &mut val as *mut i64 as *mut libc::c_void
            } else {
                std::ptr::null_mut()
            };
            let newlen = if write { sz } else { 0 };
            // SAFETY: `old` and `val` are 8 bytes, at least what `sz` says.
            let mut ret = unsafe {
                ctl(
                    &name,
                    &mut old as *mut i64 as *mut libc::c_void,
                    &mut sz,
                    newp,
                    newlen,
                )
            };
            if ret == 0 {
                // Little-endian: the low `sz` bytes hold the value.
                let v = if sz >= 8 {
                    old
                } else {
                    old & ((1i64 << (8 * sz)) - 1)
                };
                ctx.out().int(v);
                return Ok(());
            }
            if ret == libc::EPERM && write {
                // A write-only name: write it without reading.
                // SAFETY: as above, no old value asked for.
                ret = unsafe { ctl(&name, std::ptr::null_mut(), std::ptr::null_mut(), newp, sz) };
                if ret == 0 {
                    ctx.out().ok();
                    return Ok(());
                }
            }
            if ret != libc::EINVAL {
                return Err(strerror(ret));
            }
            sz /= 2;
        }
        Err(strerror(libc::EINVAL))
    }

    /// ```text
    /// DEBUG MALLCTL-STR name [value|VOID]
    /// ```
    /// Bulk: the old string value; with a value also writes it (`VOID`: a
    /// call with no value, e.g. `thread.tcache.flush`), `OK` for write-only
    /// names.
    pub fn string(ctx: &mut Ctx, args: &Args) -> CmdResult {
        let name = c_name(args.at(2));
        let mut old: *const libc::c_char = std::ptr::null();
        let mut sz = std::mem::size_of::<*const libc::c_char>();
        // SAFETY: `old` is a pointer slot of `sz` bytes.
        let rret = unsafe {
            ctl(
                &name,
                &mut old as *mut *const libc::c_char as *mut libc::c_void,
                &mut sz,
                std::ptr::null_mut(),
                0,
            )
        };
        if rret != 0 && !(rret == libc::EPERM && args.len() > 3) {
            return Err(strerror(rret));
        }
        let mut wret = 0;
        if args.len() > 3 {
            let given = args.at(3);
            let val = c_name(given);
            let mut ptr = val.as_ptr() as *const libc::c_char;
            // SAFETY: `ptr` points at a NUL-terminated copy alive for the
            // call; VOID passes no value at all.
            wret = unsafe {
                if given == b"VOID" {
                    ctl(
                        &name,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        0,
                    )
                } else {
                    ctl(
                        &name,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        &mut ptr as *mut *const libc::c_char as *mut libc::c_void,
                        std::mem::size_of::<*const libc::c_char>(),
                    )
                }
            };
        }
        if rret == 0 {
            let s = if old.is_null() {
                Vec::new()
            } else {
                // SAFETY: jemalloc returned a NUL-terminated string it owns.
                unsafe { std::ffi::CStr::from_ptr(old) }.to_bytes().to_vec()
            };
            ctx.out().bulk(&s);
        } else if wret != 0 {
            return Err(strerror(wret));
        } else {
            ctx.out().ok();
        }
        Ok(())
    }
}
