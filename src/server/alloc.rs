//! The global allocator: the chosen malloc under a counting layer that keeps `used_memory` in one atomic.
//!
//! Every allocation adds, and every free subtracts, the bytes the allocator
//! really hands out for it (its size class, as Redis's zmalloc counts
//! `zmalloc_size`), so reading the total is one relaxed load: cheap enough for
//! the gate before every denyoom command and for eviction's loop. The same
//! layout always counts the same size (a pure function of the layout, or of
//! the block for the system malloc), so the total never drifts.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Bytes currently allocated through the global allocator.
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

/// Bytes allocated now (Redis's `zmalloc_used_memory`).
#[inline]
pub fn allocated() -> usize {
    ALLOCATED.load(Relaxed)
}

#[cfg(feature = "alloc-jemalloc")]
mod inner {
    pub use tikv_jemallocator::Jemalloc as Inner;
    pub const INNER: Inner = tikv_jemallocator::Jemalloc;
    pub const NAME: &str = "jemalloc-5.3.0";

    /// jemalloc's size class for a request (8, 16, 16-byte steps to 128, then
    /// four classes per doubling), which is what `malloc_usable_size` returns.
    #[inline]
    pub fn usable(_: *mut u8, l: std::alloc::Layout) -> usize {
        super::size_class(l.size().max(l.align()))
    }
}

#[cfg(all(feature = "alloc-mimalloc", not(feature = "alloc-jemalloc")))]
mod inner {
    pub use mimalloc::MiMalloc as Inner;
    pub const INNER: Inner = mimalloc::MiMalloc;
    pub const NAME: &str = "mimalloc";

    #[inline]
    pub fn usable(p: *mut u8, _: std::alloc::Layout) -> usize {
        // SAFETY: `p` is a live block from mimalloc.
        unsafe { libmimalloc_sys::mi_usable_size(p.cast()) }
    }
}

#[cfg(not(any(feature = "alloc-jemalloc", feature = "alloc-mimalloc")))]
mod inner {
    pub use std::alloc::System as Inner;
    pub const INNER: Inner = std::alloc::System;
    pub const NAME: &str = "libc";

    #[inline]
    pub fn usable(p: *mut u8, _: std::alloc::Layout) -> usize {
        // SAFETY: `p` is a live block from the system malloc.
        unsafe { libc::malloc_usable_size(p.cast()) }
    }
}

/// Name of the allocator as INFO's `mem_allocator` shows it.
pub const ALLOCATOR: &str = inner::NAME;

/// What a block of `n` bytes holds as `used_memory` counts it (its size
/// class under jemalloc), for buffers whose memory is reported apart from
/// it: a count of capacities alone falls short by up to a quarter, which
/// eviction would take for growth of the dataset. The other allocators'
/// classes are read from the block itself; `n` stands for them here.
#[inline]
pub fn block_size(n: usize) -> usize {
    if n == 0 || !cfg!(feature = "alloc-jemalloc") {
        n
    } else {
        size_class(n)
    }
}

/// Size class of a request in jemalloc's scheme (also MEMORY USAGE's
/// estimate of what Redis allocates): 8, 16-byte steps to 128, then four
/// classes per doubling.
#[inline]
pub fn size_class(n: usize) -> usize {
    if n <= 8 {
        return 8;
    }
    if n <= 128 {
        return n.div_ceil(16) * 16;
    }
    let k = usize::BITS - 1 - (n - 1).leading_zeros(); // 2^k < n <= 2^(k+1)
    let step = 1usize << (k - 2);
    n.div_ceil(step) * step
}

/// The Lua VMs' heap, outside `used_memory`, as in Redis: its Lua calls the
/// C library's allocator directly, not zmalloc, so a VM's memory is
/// reported apart (`used_memory_lua`) and maxmemory does not count it. The
/// same allocator, without the counting layer. (A jemalloc arena of the
/// VMs' own was tried: no denser heap after 50,000 SCRIPT LOADs, and no
/// faster.)
pub mod lua_heap {
    /// Resizes a block the way Lua's `lua_Alloc` asks: `old` is its size
    /// (ignored for a null `p`); `new == 0` frees it and returns null.
    /// Returns null when the memory cannot be had.
    ///
    /// # Safety
    /// `p` is null or a live block from this heap of `old` bytes.
    pub unsafe fn resize(p: *mut u8, old: usize, new: usize) -> *mut u8 {
        imp::resize(p, old, new)
    }

    #[cfg(feature = "alloc-jemalloc")]
    mod imp {
        use tikv_jemalloc_sys as je;

        pub unsafe fn resize(p: *mut u8, old: usize, new: usize) -> *mut u8 {
            if new == 0 {
                if !p.is_null() {
                    je::sdallocx(p.cast(), old, 0);
                }
                std::ptr::null_mut()
            } else if p.is_null() {
                je::malloc(new).cast()
            } else {
                je::realloc(p.cast(), new).cast()
            }
        }
    }

    #[cfg(not(feature = "alloc-jemalloc"))]
    mod imp {
        pub unsafe fn resize(p: *mut u8, _old: usize, new: usize) -> *mut u8 {
            if new == 0 {
                libc::free(p.cast());
                std::ptr::null_mut()
            } else {
                libc::realloc(p.cast(), new).cast()
            }
        }
    }
}

/// The counting layer over the chosen allocator.
pub struct Counting;

// SAFETY: every call is forwarded to the inner allocator unchanged; the
// layer only adds bookkeeping.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = inner::INNER.alloc(l);
        if !p.is_null() {
            ALLOCATED.fetch_add(inner::usable(p, l), Relaxed);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = inner::INNER.alloc_zeroed(l);
        if !p.is_null() {
            ALLOCATED.fetch_add(inner::usable(p, l), Relaxed);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        ALLOCATED.fetch_sub(inner::usable(p, l), Relaxed);
        inner::INNER.dealloc(p, l)
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        let old = inner::usable(p, l);
        let q = inner::INNER.realloc(p, l, new_size);
        if !q.is_null() {
            let nl = Layout::from_size_align_unchecked(new_size, l.align());
            // One update: the difference, wrapping when the block shrank.
            ALLOCATED.fetch_add(inner::usable(q, nl).wrapping_sub(old), Relaxed);
        }
        q
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_follow_jemalloc() {
        let got: Vec<usize> = [1, 8, 9, 17, 128, 129, 160, 161, 257, 1000, 4097]
            .iter()
            .map(|&n| size_class(n))
            .collect();
        assert_eq!(got, [8, 8, 16, 32, 128, 160, 160, 192, 320, 1024, 5120]);
    }

    #[test]
    fn a_large_block_is_counted_while_held() {
        // Other test threads allocate and free at the same time (the
        // counter is process-wide), so only a large block's effect is
        // unambiguous, and one attempt can still overlap another thread
        // freeing a large block: a working counter shows the block within
        // a few attempts, a broken one never does.
        let seen = (0..20).any(|_| {
            let before = allocated();
            let v = vec![1u8; 64 << 20];
            let during = allocated();
            drop(v);
            during >= before + (48 << 20)
        });
        assert!(seen, "a held 64 MiB block never showed in allocated()");
    }
}
