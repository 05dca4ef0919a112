//! A sorted-set member stored once: one heap block holding the score and the bytes.
//!
//! Layout of the block: `[score: f64 LE, 8 bytes][len: LEB128 varint][bytes]`.
//! A [`Member`] is a thin pointer to that block, so the order index and the
//! member→score hash set can both refer to the same allocation (8 bytes each)
//! instead of each owning a copy of the bytes. The owning [`super::ZSet`] frees
//! every block exactly once, in its `Drop`.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::ptr::NonNull;

/// Thin pointer to a member block (see the module docs). Copying it does not
/// copy the block: ownership is tracked by the containing `ZSet`.
#[derive(Clone, Copy)]
pub struct Member(NonNull<u8>);

impl Member {
    /// Allocates a block for `bytes` with `score`.
    pub fn alloc(bytes: &[u8], score: f64) -> Member {
        let varint = (usize::BITS - bytes.len().leading_zeros())
            .div_ceil(7)
            .max(1) as usize;
        // Exact capacity: into_boxed_slice then needs no reallocation.
        let mut v = Vec::with_capacity(8 + varint + bytes.len());
        v.extend_from_slice(&score.to_le_bytes());
        let mut n = bytes.len();
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                v.push(b);
                break;
            }
            v.push(b | 0x80);
        }
        v.extend_from_slice(bytes);
        debug_assert_eq!(v.len(), v.capacity());
        let boxed: Box<[u8]> = v.into_boxed_slice();
        let p = Box::into_raw(boxed) as *mut u8;
        // SAFETY: Box::into_raw never returns null.
        Member(unsafe { NonNull::new_unchecked(p) })
    }

    /// (length of the header, length of the bytes).
    #[inline]
    fn header(&self) -> (usize, usize) {
        let mut n = 0usize;
        let mut shift = 0;
        let mut i = 8;
        loop {
            // SAFETY: the varint lies within the block written by `alloc`.
            let b = unsafe { *self.0.as_ptr().add(i) };
            n |= ((b & 0x7f) as usize) << shift;
            i += 1;
            if b & 0x80 == 0 {
                return (i, n);
            }
            shift += 7;
        }
    }

    #[inline]
    pub fn bytes<'a>(&self) -> &'a [u8] {
        let (h, n) = self.header();
        // SAFETY: the block holds `n` bytes after the header; it lives until
        // the owning ZSet frees it, and callers do not keep slices past that.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(h), n) }
    }

    #[inline]
    pub fn score(&self) -> f64 {
        // SAFETY: the first 8 bytes of the block are the score.
        let b = unsafe { std::ptr::read_unaligned(self.0.as_ptr() as *const [u8; 8]) };
        f64::from_le_bytes(b)
    }

    #[inline]
    pub fn set_score(&self, score: f64) {
        // SAFETY: as in `score`; the ZSet holds the only references.
        unsafe { std::ptr::write_unaligned(self.0.as_ptr() as *mut [u8; 8], score.to_le_bytes()) }
    }

    /// Frees the block.
    ///
    /// # Safety
    /// The block must be live and no copy of this pointer may be used afterwards.
    pub unsafe fn free(self) {
        let (h, n) = self.header();
        let total = h + n;
        let raw = std::ptr::slice_from_raw_parts_mut(self.0.as_ptr(), total);
        drop(Box::from_raw(raw));
    }
}

impl PartialEq for Member {
    fn eq(&self, o: &Member) -> bool {
        self.bytes() == o.bytes()
    }
}

impl Eq for Member {}

impl Hash for Member {
    fn hash<H: Hasher>(&self, h: &mut H) {
        // Must hash exactly as `[u8]` does, for `Borrow<[u8]>` lookups.
        self.bytes().hash(h)
    }
}

impl Borrow<[u8]> for Member {
    fn borrow(&self) -> &[u8] {
        self.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for len in [0usize, 1, 127, 128, 300, 20000] {
            let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let m = Member::alloc(&data, 1.5);
            assert_eq!(m.bytes(), &data[..]);
            assert_eq!(m.score(), 1.5);
            m.set_score(-2.0);
            assert_eq!(m.score(), -2.0);
            unsafe { m.free() };
        }
    }
}
