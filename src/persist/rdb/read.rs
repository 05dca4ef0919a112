//! The RDB decoder: lengths, strings and every value type and encoding Redis 1.x–7.4 wrote, into our values.
//!
//! Values come out in the encoding Redis 7.0 would give them after the same
//! load (`rdbLoadObject`): compact forms are kept when the file has them and
//! the entry count fits the `*-max-*-entries` limits (element sizes are not
//! checked then, as in Redis), plain forms become compact when they fit.
//! Malformed input is an error, never a panic: every length is checked
//! against the bytes that are left before anything is allocated for it.

use std::borrow::Cow;

use super::consts::*;
use super::listpack::{self, Elem};
use super::{intset, lzf, ziplist};
use crate::db::dict::Dict;
use crate::db::Value;
use crate::types::hash::{self, Hash};
use crate::types::list::{End, List};
use crate::types::number::parse_i64;
use crate::types::pack;
use crate::types::set::Set;
use crate::types::string::Str;
use crate::types::zset::{self, ZSet};

/// Why a value could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bad {
    /// The data ends early (Redis: a short read).
    Eof,
    /// The data is malformed; the text says how (Redis's `rdbReportCorruptRDB` reason).
    Corrupt(String),
    /// A valid value this server cannot hold (module types, streams, hash field TTLs).
    Unsupported(String),
    /// A collection with no elements: skipped at load, refused by RESTORE.
    EmptyKey,
}

fn corrupt<T>(why: &str) -> Result<T, Bad> {
    Err(Bad::Corrupt(why.into()))
}

/// The configuration that decides encodings at load.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub list_fill: i64,
    pub hash: hash::Limits,
    pub set_ints: usize,
    pub zset: zset::Limits,
}

impl Limits {
    pub fn from_config(c: &crate::config::Config) -> Limits {
        Limits {
            list_fill: c.list_max_listpack_size,
            hash: hash::Limits {
                entries: c.hash_max_listpack_entries,
                value: c.hash_max_listpack_value,
            },
            set_ints: c.set_max_intset_entries,
            zset: zset::Limits {
                entries: c.zset_max_listpack_entries,
                value: c.zset_max_listpack_value,
            },
        }
    }
}

/// Name of a module type from its 64-bit id (`moduleTypeNameByID`).
pub fn module_type_name(id: u64) -> String {
    const CSET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut id = id >> 10;
    let mut name = [0u8; 9];
    for j in (0..9).rev() {
        name[j] = CSET[(id & 63) as usize];
        id >>= 6;
    }
    String::from_utf8_lossy(&name).into_owned()
}

/// A cursor over RDB bytes.
pub struct Reader<'a> {
    pub data: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0 }
    }

    #[inline]
    fn left(&self) -> usize {
        self.data.len() - self.pos
    }

    #[inline]
    pub fn byte(&mut self) -> Result<u8, Bad> {
        let b = *self.data.get(self.pos).ok_or(Bad::Eof)?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Bad> {
        if n > self.left() {
            return Err(Bad::Eof);
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Bad> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// A length or, with `true`, a special string encoding number.
    #[inline]
    fn len_or_enc(&mut self) -> Result<(u64, bool), Bad> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => ((b & 0x3f) as u64, false),
            1 => ((((b & 0x3f) as u64) << 8) | self.byte()? as u64, false),
            3 => ((b & 0x3f) as u64, true),
            _ => match b {
                LEN_32BIT => (u32::from_be_bytes(self.array()?) as u64, false),
                LEN_64BIT => (u64::from_be_bytes(self.array()?), false),
                _ => return corrupt(&format!("Unknown length encoding {b} in rdbLoadLen()")),
            },
        })
    }

    /// `rdbLoadLen`.
    pub fn length(&mut self) -> Result<u64, Bad> {
        match self.len_or_enc()? {
            (n, false) => Ok(n),
            _ => corrupt("Unexpected string encoding where a length was expected"),
        }
    }

    /// A count of items that each take at least `min_bytes`: bounded by the
    /// bytes left, so that a forged count cannot make us allocate.
    fn count(&mut self, min_bytes: usize) -> Result<usize, Bad> {
        let n = self.length()?;
        if n > (self.left() / min_bytes.max(1)) as u64 {
            return Err(Bad::Eof);
        }
        Ok(n as usize)
    }

    /// `rdbGenericLoadStringObject`: the bytes, borrowed when stored verbatim.
    pub fn string(&mut self) -> Result<Cow<'a, [u8]>, Bad> {
        match self.len_or_enc()? {
            (n, false) => Ok(Cow::Borrowed(
                self.take(usize::try_from(n).map_err(|_| Bad::Eof)?)?,
            )),
            (enc, true) => match self.int_enc(enc as u8)? {
                Some(v) => Ok(Cow::Owned(
                    itoa::Buffer::new().format(v).as_bytes().to_vec(),
                )),
                None => Ok(Cow::Owned(self.lzf_body()?)),
            },
        }
    }

    /// An integer-encoded string's value; `None` for LZF (not read yet).
    fn int_enc(&mut self, enc: u8) -> Result<Option<i64>, Bad> {
        Ok(Some(match enc {
            ENC_INT8 => self.byte()? as i8 as i64,
            ENC_INT16 => i16::from_le_bytes(self.array()?) as i64,
            ENC_INT32 => i32::from_le_bytes(self.array()?) as i64,
            ENC_LZF => return Ok(None),
            _ => return corrupt(&format!("Unknown RDB string encoding type {enc}")),
        }))
    }

    fn lzf_body(&mut self) -> Result<Vec<u8>, Bad> {
        let clen = self.length()?;
        let ulen = self.length()?;
        let c = self.take(usize::try_from(clen).map_err(|_| Bad::Eof)?)?;
        let ulen = usize::try_from(ulen).map_err(|_| Bad::Eof)?;
        lzf::decompress(c, ulen).ok_or_else(|| Bad::Corrupt("Invalid LZF compressed string".into()))
    }

    /// A string value as `SET` would store it (`tryObjectEncoding`).
    fn str_value(&mut self) -> Result<Str, Bad> {
        match self.len_or_enc()? {
            (n, false) => Ok(Str::from_bytes(
                self.take(usize::try_from(n).map_err(|_| Bad::Eof)?)?,
            )),
            (enc, true) => match self.int_enc(enc as u8)? {
                Some(v) => Ok(Str::Int(v)),
                None => Ok(Str::from_vec(self.lzf_body()?)),
            },
        }
    }

    /// `rdbLoadDoubleValue`: the text form of old sorted sets.
    fn text_double(&mut self) -> Result<f64, Bad> {
        let n = self.byte()?;
        Ok(match n {
            253 => f64::NAN,
            254 => f64::INFINITY,
            255 => f64::NEG_INFINITY,
            // `sscanf("%lg")` must convert something, or the load fails.
            _ => strtod(self.take(n as usize)?).ok_or(Bad::Eof)?,
        })
    }

    /// Reads one value of RDB type `t` (`rdbLoadObject`).
    pub fn object(&mut self, t: u8, lim: &Limits) -> Result<Value, Bad> {
        Ok(match t {
            TYPE_STRING => Value::Str(self.str_value()?),
            TYPE_LIST => {
                let n = self.count(1)?;
                let mut l = List::new();
                for _ in 0..n {
                    l.push(End::Tail, &self.string()?, lim.list_fill);
                }
                Value::List(nonempty_list(l)?)
            }
            TYPE_LIST_ZIPLIST => {
                let blob = self.string()?;
                let items = ziplist::read(&blob).ok_or_else(|| Bad::Corrupt("List ziplist integrity check failed.".into()))?;
                let mut l = List::new();
                let mut tmp = itoa::Buffer::new();
                for e in &items {
                    l.push(End::Tail, e.bytes(&mut tmp), lim.list_fill);
                }
                Value::List(nonempty_list(l)?)
            }
            TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => Value::List(self.quicklist(t == TYPE_LIST_QUICKLIST_2)?),
            TYPE_SET => self.plain_set(lim)?,
            TYPE_SET_INTSET => {
                let blob = self.string()?;
                let v = intset::read(&blob).ok_or_else(|| Bad::Corrupt("Intset integrity check failed.".into()))?;
                if v.is_empty() {
                    return Err(Bad::EmptyKey);
                }
                Value::Set(Box::new(ints_or_table(v, lim.set_ints)))
            }
            TYPE_SET_LISTPACK => {
                let blob = self.string()?;
                let items = listpack::collect(&blob).map_err(|_| Bad::Corrupt("Set listpack integrity check failed.".into()))?;
                if items.is_empty() {
                    return Err(Bad::EmptyKey);
                }
                Value::Set(Box::new(set_from_elems(&items, lim.set_ints)?))
            }
            TYPE_ZSET | TYPE_ZSET_2 => self.plain_zset(t == TYPE_ZSET_2, lim)?,
            TYPE_ZSET_ZIPLIST | TYPE_ZSET_LISTPACK => {
                let blob = self.string()?;
                let items = if t == TYPE_ZSET_ZIPLIST {
                    ziplist::read(&blob).ok_or(listpack::Malformed)
                } else {
                    listpack::collect(&blob)
                };
                let what = if t == TYPE_ZSET_ZIPLIST { "ziplist" } else { "listpack" };
                let bad = || Bad::Corrupt(format!("Zset {what} integrity check failed."));
                let items = items.map_err(|_| bad())?;
                if items.len() % 2 != 0 {
                    return Err(bad());
                }
                Value::ZSet(Box::new(packed_zset(&items, lim)?))
            }
            TYPE_HASH => self.plain_hash(lim)?,
            TYPE_HASH_ZIPMAP => {
                let blob = self.string()?;
                // An empty zipmap fails Redis's deep check too.
                let pairs = ziplist::read_zipmap(&blob)
                    .filter(|p| !p.is_empty())
                    .ok_or_else(|| Bad::Corrupt("Zipmap integrity check failed.".into()))?;
                let maxlen = pairs.iter().map(|(f, v)| f.len().max(v.len())).max().unwrap_or(0);
                let elems: Vec<Elem> = pairs.iter().flat_map(|&(f, v)| [Elem::Str(f), Elem::Str(v)]).collect();
                let h = packed_hash(&elems, "Hash zipmap with dup elements")?;
                if h.len() > lim.hash.entries || maxlen > lim.hash.value {
                    Value::Hash(to_table(h))
                } else {
                    Value::Hash(h)
                }
            }
            TYPE_HASH_ZIPLIST | TYPE_HASH_LISTPACK => {
                let blob = self.string()?;
                let what = if t == TYPE_HASH_ZIPLIST { "ziplist" } else { "listpack" };
                let bad = || Bad::Corrupt(format!("Hash {what} integrity check failed."));
                let items = if t == TYPE_HASH_ZIPLIST {
                    ziplist::read(&blob).ok_or(listpack::Malformed)
                } else {
                    listpack::collect(&blob)
                };
                let items = items.map_err(|_| bad())?;
                if items.len() % 2 != 0 {
                    return Err(bad());
                }
                // Duplicate fields fail the integrity check (Redis's
                // `ziplistPairsConvertAndValidateIntegrity`, and
                // `lpPairsValidateIntegrityAndDups` when sanitizing).
                let h = packed_hash(&items, &format!("Hash {what} integrity check failed."))?;
                if h.len() > lim.hash.entries {
                    Value::Hash(to_table(h))
                } else {
                    Value::Hash(h)
                }
            }
            TYPE_HASH_METADATA_PRE_GA | TYPE_HASH_LISTPACK_EX_PRE_GA | TYPE_HASH_METADATA | TYPE_HASH_LISTPACK_EX => {
                return Err(Bad::Unsupported(
                    "The RDB file contains a hash with field expiration (Redis 7.4 HEXPIRE), which this server cannot hold".into(),
                ))
            }
            TYPE_MODULE_PRE_GA | TYPE_MODULE_2 => {
                let id = self.length()?;
                return Err(Bad::Unsupported(format!(
                    "The RDB file contains module data I can't load: no matching module type '{}' (module id {id})",
                    module_type_name(id)
                )));
            }
            TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 => {
                Value::Stream(Box::new(self.stream(t == TYPE_STREAM_LISTPACKS_2)?))
            }
            TYPE_STREAM_LISTPACKS_3 => {
                return Err(Bad::Unsupported(
                    "The RDB file contains a Redis 7.2 stream (consumer active times), which this server cannot load yet".into(),
                ))
            }
            _ => return corrupt(&format!("Unknown RDB encoding type {t}")),
        })
    }

    fn quicklist(&mut self, v2: bool) -> Result<List, Bad> {
        let n = self.count(2)?;
        let mut l = List::new();
        let mut tmp = itoa::Buffer::new();
        for _ in 0..n {
            let container = if v2 { self.length()? } else { QUICKLIST_PACKED };
            if container != QUICKLIST_PACKED && container != QUICKLIST_PLAIN {
                return corrupt("Quicklist integrity check failed.");
            }
            let data = self.string()?;
            if data.is_empty() {
                return corrupt("Quicklist node is empty");
            }
            let mut buf = Vec::with_capacity(data.len());
            if container == QUICKLIST_PLAIN {
                pack::push(&mut buf, &data);
                l.append_node(buf, 1);
                continue;
            }
            let mut count = 0;
            if v2 {
                let it = listpack::iter(&data)
                    .map_err(|_| Bad::Corrupt("Listpack integrity check failed.".into()))?;
                for e in it {
                    let e =
                        e.map_err(|_| Bad::Corrupt("Listpack integrity check failed.".into()))?;
                    pack::push(&mut buf, e.bytes(&mut tmp));
                    count += 1;
                }
            } else {
                let items = ziplist::read(&data)
                    .ok_or_else(|| Bad::Corrupt("Ziplist integrity check failed.".into()))?;
                for e in &items {
                    pack::push(&mut buf, e.bytes(&mut tmp));
                    count += 1;
                }
            }
            // Empty nodes are skipped, as Redis does.
            if count > 0 {
                l.append_node(buf, count);
            }
        }
        nonempty_list(l)
    }

    fn plain_set(&mut self, lim: &Limits) -> Result<Value, Bad> {
        let n = self.count(1)?;
        if n == 0 {
            return Err(Bad::EmptyKey);
        }
        let max_ints = lim.set_ints.min(1 << 30);
        let dup = || Bad::Corrupt("Duplicate set members detected".into());
        let mut ints: Vec<i64> = Vec::new();
        let mut table: Option<Box<Dict<()>>> = (n > max_ints).then(|| Box::new(Dict::new()));
        for _ in 0..n {
            let m = self.string()?;
            if table.is_none() {
                if let Some(v) = parse_i64(&m) {
                    ints.push(v);
                    continue;
                }
                let mut d = Dict::new();
                let mut b = itoa::Buffer::new();
                for &v in &ints {
                    if d.insert(b.format(v).as_bytes(), ()).is_some() {
                        return Err(dup());
                    }
                }
                table = Some(Box::new(d));
            }
            if let Some(d) = table.as_mut() {
                if d.insert(&m, ()).is_some() {
                    return Err(dup());
                }
            }
        }
        Ok(Value::Set(Box::new(match table {
            Some(d) => Set::Table(d),
            None => {
                ints.sort_unstable();
                if ints.windows(2).any(|w| w[0] == w[1]) {
                    return Err(dup());
                }
                Set::Ints(ints)
            }
        })))
    }

    fn plain_zset(&mut self, binary: bool, lim: &Limits) -> Result<Value, Bad> {
        let n = self.count(2)?;
        if n == 0 {
            return Err(Bad::EmptyKey);
        }
        let mut items: Vec<(Cow<'a, [u8]>, f64)> = Vec::with_capacity(n.min(1 << 16));
        let mut maxlen = 0;
        for _ in 0..n {
            let m = self.string()?;
            let s = if binary {
                f64::from_le_bytes(self.array()?)
            } else {
                self.text_double()?
            };
            if s.is_nan() {
                return corrupt("Zset with NAN score detected");
            }
            maxlen = maxlen.max(m.len());
            items.push((m, s));
        }
        // Convert after loading, as Redis: small sets become listpacks.
        let mut z = ZSet::with_hint(n, maxlen, lim.zset);
        let open = zset::Limits {
            entries: usize::MAX,
            value: usize::MAX,
        };
        if z.is_listpack() {
            no_dups(
                items.iter().map(|(m, _)| &m[..]),
                "Duplicate zset fields detected",
            )?;
            for (m, s) in &items {
                z.insert_new(m, *s, open);
            }
        } else {
            for (m, s) in &items {
                if z.score(m).is_some() {
                    return corrupt("Duplicate zset fields detected");
                }
                z.insert_new(m, *s, open);
            }
        }
        Ok(Value::ZSet(Box::new(z)))
    }

    fn plain_hash(&mut self, lim: &Limits) -> Result<Value, Bad> {
        let n = self.count(2)?;
        if n == 0 {
            return Err(Bad::EmptyKey);
        }
        let dup = || Bad::Corrupt("Duplicate hash fields detected".into());
        let mut buf = Vec::new();
        let mut fields: Vec<Cow<'a, [u8]>> = Vec::new();
        let mut table: Option<Box<Dict<Box<[u8]>>>> =
            (n > lim.hash.entries).then(|| Box::new(Dict::new()));
        for _ in 0..n {
            let f = self.string()?;
            let v = self.string()?;
            if table.is_none() {
                if f.len() <= lim.hash.value && v.len() <= lim.hash.value {
                    pack::push(&mut buf, &f);
                    pack::push(&mut buf, &v);
                    fields.push(f);
                    continue;
                }
                no_dups(fields.iter().map(|f| &f[..]), "Hash with dup elements")?;
                table = Some(to_dict(&buf));
            }
            if let Some(d) = table.as_mut() {
                if d.insert(&f, Box::from(&v[..])).is_some() {
                    return Err(dup());
                }
            }
        }
        Ok(Value::Hash(match table {
            Some(d) => Hash::from_table(d),
            None => {
                no_dups(fields.iter().map(|f| &f[..]), "Hash with dup elements")?;
                Hash::from_pack(buf)
            }
        }))
    }
}

/// C's `strtod` on a score text: the longest valid prefix, 0 when none.
fn strtod(s: &[u8]) -> Option<f64> {
    // C reads up to the first NUL.
    let s = s.split(|&b| b == 0).next().unwrap_or_default();
    let t = std::str::from_utf8(s).unwrap_or("").trim_start();
    if let Ok(v) = t.parse::<f64>() {
        return Some(v);
    }
    (1..t.len())
        .rev()
        .find_map(|i| t.get(..i)?.parse::<f64>().ok())
}

fn nonempty_list(l: List) -> Result<List, Bad> {
    if l.is_empty() {
        Err(Bad::EmptyKey)
    } else {
        Ok(l)
    }
}

/// Refuses repeated members: sorts a copy of the references (the sets are small).
fn no_dups<'x>(items: impl Iterator<Item = &'x [u8]>, why: &str) -> Result<(), Bad> {
    let mut v: Vec<&[u8]> = items.collect();
    v.sort_unstable();
    if v.windows(2).any(|w| w[0] == w[1]) {
        return corrupt(why);
    }
    Ok(())
}

fn ints_or_table(v: Vec<i64>, max: usize) -> Set {
    if v.len() <= max {
        return Set::Ints(v);
    }
    let mut d = Dict::new();
    let mut b = itoa::Buffer::new();
    for x in v {
        d.insert(b.format(x).as_bytes(), ());
    }
    Set::Table(Box::new(d))
}

/// A 7.2 listpack set: an intset when every member is an integer and the
/// count fits, else a table (Redis 7.0 has no listpack sets).
fn set_from_elems(items: &[Elem], max_ints: usize) -> Result<Set, Bad> {
    let dup = || Bad::Corrupt("Duplicate set members detected".into());
    let mut tmp = itoa::Buffer::new();
    let ints: Option<Vec<i64>> = items
        .iter()
        .map(|e| match *e {
            Elem::Int(v) => Some(v),
            Elem::Str(s) => parse_i64(s),
        })
        .collect();
    if let Some(mut v) = ints.filter(|v| v.len() <= max_ints) {
        v.sort_unstable();
        if v.windows(2).any(|w| w[0] == w[1]) {
            return Err(dup());
        }
        return Ok(Set::Ints(v));
    }
    let mut d = Dict::new();
    for e in items {
        if d.insert(e.bytes(&mut tmp), ()).is_some() {
            return Err(dup());
        }
    }
    Ok(Set::Table(Box::new(d)))
}

/// A hash from alternating field/value elements, packed.
fn packed_hash(items: &[Elem], dup_why: &str) -> Result<Hash, Bad> {
    if items.is_empty() {
        return Err(Bad::EmptyKey);
    }
    let mut buf = Vec::with_capacity(items.iter().map(|e| e.byte_len() + 2).sum());
    let mut tmp = itoa::Buffer::new();
    let mut fields: Vec<Vec<u8>> = Vec::new();
    let mut strs: Vec<&[u8]> = Vec::with_capacity(items.len() / 2);
    for (i, e) in items.iter().enumerate() {
        let b = e.bytes(&mut tmp);
        pack::push(&mut buf, b);
        if i % 2 == 0 {
            match *e {
                Elem::Str(s) => strs.push(s),
                Elem::Int(_) => fields.push(b.to_vec()),
            }
        }
    }
    no_dups(
        strs.into_iter().chain(fields.iter().map(|f| &f[..])),
        dup_why,
    )?;
    Ok(Hash::from_pack(buf))
}

fn to_dict(buf: &[u8]) -> Box<Dict<Box<[u8]>>> {
    let mut d = Dict::new();
    let mut it = pack::Iter::new(buf);
    while let (Some(f), Some(v)) = (it.next(), it.next()) {
        d.insert(f, Box::from(v));
    }
    Box::new(d)
}

fn to_table(h: Hash) -> Hash {
    h.into_table()
}

/// A zset from alternating member/score elements (ziplist or listpack).
fn packed_zset(items: &[Elem], lim: &Limits) -> Result<ZSet, Bad> {
    let n = items.len() / 2;
    if n == 0 {
        return Err(Bad::EmptyKey);
    }
    let mut z = ZSet::with_hint(n, 0, lim.zset);
    let open = zset::Limits {
        entries: usize::MAX,
        value: usize::MAX,
    };
    let mut tmp = itoa::Buffer::new();
    let mut owned: Vec<Vec<u8>> = Vec::new();
    let mut strs: Vec<&[u8]> = Vec::with_capacity(n);
    for pair in items.chunks_exact(2) {
        let s = match pair[1] {
            Elem::Int(v) => v as f64,
            // `zzlStrtod`: 0 when nothing converts.
            Elem::Str(s) => strtod(s).unwrap_or(0.0),
        };
        if s.is_nan() {
            return corrupt("Zset with NAN score detected");
        }
        let m = pair[0].bytes(&mut tmp);
        match pair[0] {
            Elem::Str(s) => strs.push(s),
            Elem::Int(_) => owned.push(m.to_vec()),
        }
        z.insert_new(m, s, open);
    }
    no_dups(
        strs.into_iter().chain(owned.iter().map(|m| &m[..])),
        "Duplicate zset fields detected",
    )?;
    Ok(z)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::rdb::write::Encoder;
    use crate::persist::rdb::ziplist::build;

    fn lim() -> Limits {
        Limits::from_config(&crate::config::Config::default())
    }

    /// The value of RDB type `t` whose body is `blob` as one RDB string.
    fn load_blob(t: u8, blob: &[u8]) -> Result<Value, Bad> {
        let mut e = Encoder::new(false);
        e.string(blob);
        Reader::new(&e.buf).object(t, &lim())
    }

    fn items(v: &Value) -> Vec<Vec<u8>> {
        match v {
            Value::List(l) => l.iter().map(|x| x.to_vec()).collect(),
            Value::Hash(h) => h
                .iter()
                .flat_map(|(f, v)| [f.to_vec(), v.to_vec()])
                .collect(),
            Value::ZSet(z) => z
                .iter()
                .flat_map(|(m, s)| [m.to_vec(), s.to_string().into_bytes()])
                .collect(),
            _ => panic!("not a collection"),
        }
    }

    fn strs(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    /// Encodings Redis 7.0 no longer writes, built from ziplist.c/zipmap.c's layouts.
    #[test]
    fn old_encodings_load() {
        let zl = build::ziplist(&[b"a", b"12", b"-7", b"hello"]);
        let v = load_blob(TYPE_LIST_ZIPLIST, &zl).unwrap();
        assert_eq!(items(&v), strs(&["a", "12", "-7", "hello"]));
        let v = load_blob(TYPE_HASH_ZIPLIST, &zl).unwrap();
        assert_eq!(v.encoding(), "listpack");
        assert_eq!(items(&v), strs(&["a", "12", "-7", "hello"]));
        let zs = build::ziplist(&[b"m1", b"2.5", b"m2", b"3"]);
        let v = load_blob(TYPE_ZSET_ZIPLIST, &zs).unwrap();
        assert_eq!(items(&v), strs(&["m1", "2.5", "m2", "3"]));
        let zm = build::zipmap(&[(b"f", b"v"), (b"g", b"w")], 2);
        let v = load_blob(TYPE_HASH_ZIPMAP, &zm).unwrap();
        assert_eq!(items(&v), strs(&["f", "v", "g", "w"]));
        // Quicklist v1: a node count, then each node a ziplist.
        let mut e = Encoder::new(false);
        e.len(2);
        e.string(&build::ziplist(&[b"x", b"1"]));
        e.string(&build::ziplist(&[b"y"]));
        let v = Reader::new(&e.buf)
            .object(TYPE_LIST_QUICKLIST, &lim())
            .unwrap();
        assert_eq!(items(&v), strs(&["x", "1", "y"]));
        // Old plain types: a list of strings, a zset with text scores.
        let mut e = Encoder::new(false);
        e.len(2);
        e.string(b"p");
        e.string(b"q");
        let v = Reader::new(&e.buf).object(TYPE_LIST, &lim()).unwrap();
        assert_eq!(items(&v), strs(&["p", "q"]));
        let mut e = Encoder::new(false);
        e.len(2);
        e.string(b"a");
        e.byte(3);
        e.buf.extend_from_slice(b"1.5");
        e.string(b"b");
        e.byte(254); // +inf
        let v = Reader::new(&e.buf).object(TYPE_ZSET, &lim()).unwrap();
        assert_eq!(items(&v), strs(&["a", "1.5", "b", "inf"]));
    }

    #[test]
    fn malformed_values_are_errors() {
        let zl = build::ziplist(&[b"a", b"b"]);
        assert!(matches!(
            load_blob(TYPE_LIST_ZIPLIST, &zl[..zl.len() - 1]),
            Err(Bad::Corrupt(_))
        ));
        let dup = build::ziplist(&[b"f", b"1", b"f", b"2"]);
        assert_eq!(
            load_blob(TYPE_HASH_ZIPLIST, &dup).err(),
            Some(Bad::Corrupt("Hash ziplist integrity check failed.".into()))
        );
        // An empty zipmap fails the check (Redis's zipmapValidateIntegrity).
        assert_eq!(
            load_blob(TYPE_HASH_ZIPMAP, &build::zipmap(&[], 0)).err(),
            Some(Bad::Corrupt("Zipmap integrity check failed.".into()))
        );
        // A text score must convert (`sscanf("%lg")`), up to a NUL.
        for text in [&b"\x00\x1a"[..], b"abc", b""] {
            let mut e = Encoder::new(false);
            e.len(1);
            e.string(b"m");
            e.byte(text.len() as u8);
            e.buf.extend_from_slice(text);
            assert_eq!(
                Reader::new(&e.buf).object(TYPE_ZSET, &lim()).err(),
                Some(Bad::Eof),
                "{text:?}"
            );
        }
        assert_eq!(
            load_blob(TYPE_LIST_ZIPLIST, &build::ziplist(&[])).err(),
            Some(Bad::EmptyKey)
        );
        // A count larger than the bytes left is a short read, not an allocation.
        let mut e = Encoder::new(false);
        e.len(1 << 40);
        assert_eq!(
            Reader::new(&e.buf).object(TYPE_SET, &lim()).err(),
            Some(Bad::Eof)
        );
        assert!(matches!(
            Reader::new(&[0x80, 0x12]).object(TYPE_MODULE_2, &lim()),
            Err(Bad::Eof)
        ));
        let mut e = Encoder::new(false);
        e.len(0x1234_5678 << 10);
        match Reader::new(&e.buf).object(TYPE_MODULE_2, &lim()).err() {
            Some(Bad::Unsupported(m)) => assert!(m.contains("module id"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
