//! The argument cursor handlers parse with: slices of the request, no copies.

use crate::error::Error;
use crate::types::number;

/// A command's arguments (index 0 is the command name) with a read cursor.
pub struct Args<'a> {
    buf: &'a [u8],
    ranges: &'a [(usize, usize)],
    pos: usize,
}

impl<'a> Args<'a> {
    pub fn new(buf: &'a [u8], ranges: &'a [(usize, usize)]) -> Args<'a> {
        Args {
            buf,
            ranges,
            pos: 1,
        }
    }

    /// The same arguments with the cursor at `pos`.
    pub fn new_at(other: &Args<'a>, pos: usize) -> Args<'a> {
        Args {
            buf: other.buf,
            ranges: other.ranges,
            pos,
        }
    }

    /// Number of arguments, the command name included.
    #[inline]
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Argument `i` (0 is the command name).
    #[inline]
    pub fn at(&self, i: usize) -> &'a [u8] {
        let (s, e) = self.ranges[i];
        &self.buf[s..e]
    }

    /// All arguments from `i` on.
    pub fn from(&self, i: usize) -> impl Iterator<Item = &'a [u8]> + '_ {
        (i..self.len()).map(move |j| self.at(j))
    }

    /// Index of the next argument the cursor will read.
    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn set_pos(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// Arguments left after the cursor.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.len().saturating_sub(self.pos)
    }

    pub fn has_more(&self) -> bool {
        self.pos < self.len()
    }

    /// The next argument, or `ERR syntax error` when there is none.
    pub fn next_or_syntax(&mut self) -> Result<&'a [u8], Error> {
        self.next().ok_or(Error::Syntax)
    }

    /// The next argument without consuming it.
    pub fn peek(&self) -> Option<&'a [u8]> {
        (self.pos < self.len()).then(|| self.at(self.pos))
    }

    /// Consumes the next argument when it equals `word`, ignoring case.
    pub fn eat_ci(&mut self, word: &str) -> bool {
        match self.peek() {
            Some(a) if a.eq_ignore_ascii_case(word.as_bytes()) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
    }

    /// The next argument as an integer (`ERR value is not an integer or out of range`).
    pub fn next_i64(&mut self) -> Result<i64, Error> {
        let a = self.next_or_syntax()?;
        number::parse_i64(a).ok_or(Error::NotInteger)
    }

    /// The next argument as a double (`ERR value is not a valid float`).
    pub fn next_f64(&mut self) -> Result<f64, Error> {
        let a = self.next_or_syntax()?;
        number::parse_f64(a).ok_or(Error::NotFloat)
    }

    /// A lowercase copy of argument `i`, for matching option names.
    pub fn lower(&self, i: usize) -> Vec<u8> {
        self.at(i).to_ascii_lowercase()
    }

    /// Copies every argument (for queueing in MULTI, blocking, MONITOR).
    pub fn to_owned(&self) -> Argv {
        // Sized up front: one allocation each for bytes and ranges.
        let bytes = self.ranges.iter().map(|&(s, e)| e - s).sum();
        let mut a = Argv {
            buf: Vec::with_capacity(bytes),
            ranges: Vec::with_capacity(self.len()),
        };
        for it in self.from(0) {
            a.push(it);
        }
        a
    }
}

/// The cursor reads the remaining arguments in order.
impl<'a> Iterator for Args<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.pos < self.len() {
            self.pos += 1;
            Some(self.at(self.pos - 1))
        } else {
            None
        }
    }
}

/// An owned argument vector that can hand out [`Args`] again.
#[derive(Clone, Debug, Default)]
pub struct Argv {
    buf: Vec<u8>,
    ranges: Vec<(usize, usize)>,
}

impl Argv {
    pub fn from_slices<'b>(items: impl IntoIterator<Item = &'b [u8]>) -> Argv {
        let mut a = Argv::default();
        for it in items {
            a.push(it);
        }
        a
    }

    pub fn push(&mut self, arg: &[u8]) {
        let s = self.buf.len();
        self.buf.extend_from_slice(arg);
        self.ranges.push((s, self.buf.len()));
    }

    pub fn args(&self) -> Args<'_> {
        Args::new(&self.buf, &self.ranges)
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn at(&self, i: usize) -> &[u8] {
        let (s, e) = self.ranges[i];
        &self.buf[s..e]
    }

    /// Bytes held (for CLIENT LIST's argv-mem and memory accounting).
    pub fn mem(&self) -> usize {
        self.buf.len()
    }
}
