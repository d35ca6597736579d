//! The QuickJS heap: the allocator the runtime allocates through, which
//! enforces the run's memory limit and keeps its own record of every
//! allocation it refused.
//!
//! Why not `JS_SetMemoryLimit`: QuickJS checks that limit in `js_malloc_rt`
//! and returns NULL without leaving any trace but the value it then throws,
//! `InternalError: out of memory` (or `null`, when the heap is so full that
//! even that error cannot be allocated). A script can throw either of those
//! itself, so a verdict drawn from the thrown value can be forged, and the
//! `null` one says nothing at all. Enforcing the limit here instead means
//! the guest knows, from the allocator's own record, whether memory ran out
//! in this run, what was asked for and how much was held
//! ([`refusal`]); `engine.rs` reports `out-of-memory` only with that record.
//!
//! QuickJS carves small objects out of 4 KiB arenas and asks this allocator
//! only for arenas and for blocks over 512 bytes, so the bookkeeping here
//! runs about once per hundred JS allocations.

use std::cell::Cell;
use std::ptr;

use rquickjs::allocator::{Allocator, RustAllocator};

/// An allocation the heap could not make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// Bytes asked for.
    pub requested: usize,
    /// Bytes the heap held when it refused.
    pub in_use: usize,
    /// The run's limit, in bytes.
    pub limit: usize,
    /// `true` when the limit refused it; `false` when the limit allowed it
    /// but linear memory could not grow (the host's cap on the instance).
    pub by_limit: bool,
}

thread_local! {
    /// Bytes held by QuickJS, as this allocator counts them.
    static IN_USE: Cell<usize> = const { Cell::new(0) };
    /// Bytes QuickJS may hold in this run; none while the snapshot is built.
    static LIMIT: Cell<usize> = const { Cell::new(usize::MAX) };
    /// The first allocation refused in this run (the one that started the
    /// failure; those after it are QuickJS trying to report it).
    static REFUSED: Cell<Option<Refusal>> = const { Cell::new(None) };
}

/// Starts a run: QuickJS may hold `limit` bytes, and nothing was refused yet.
/// (Bytes the snapshot already holds count against the limit.)
pub fn begin(limit: usize) {
    LIMIT.set(limit);
    REFUSED.set(None);
}

/// The first allocation refused since [`begin`], if any.
pub fn refusal() -> Option<Refusal> {
    REFUSED.get()
}

/// The allocator of the QuickJS runtime: Rust's global allocator (through
/// rquickjs's [`RustAllocator`]), under the run's limit.
pub struct Heap;

/// Whether `more` bytes fit under the limit.
fn fits(more: usize) -> bool {
    IN_USE.get().saturating_add(more) <= LIMIT.get()
}

/// Records a refusal (the first one of the run) and returns NULL, which
/// QuickJS turns into its out-of-memory exception.
fn refuse(requested: usize, by_limit: bool) -> *mut u8 {
    if REFUSED.get().is_none() {
        REFUSED.set(Some(Refusal {
            requested,
            in_use: IN_USE.get(),
            limit: LIMIT.get(),
            by_limit,
        }));
    }
    ptr::null_mut()
}

/// Counts a block just allocated (`p` not NULL).
fn held(p: *mut u8) -> *mut u8 {
    // SAFETY: `p` was just returned by `RustAllocator`.
    let size = unsafe { RustAllocator::usable_size(p) };
    IN_USE.set(IN_USE.get() + size);
    p
}

// SAFETY: every block comes from `RustAllocator` (which meets the trait's
// size and alignment contract) and goes back to it; this layer only counts.
unsafe impl Allocator for Heap {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !fits(size) {
            return refuse(size, true);
        }
        let p = RustAllocator.alloc(size);
        if p.is_null() {
            return refuse(size, false);
        }
        held(p)
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            return refuse(usize::MAX, true);
        };
        if !fits(total) {
            return refuse(total, true);
        }
        let p = RustAllocator.calloc(count, size);
        if p.is_null() {
            return refuse(total, false);
        }
        held(p)
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the caller hands back a block of this allocator.
        let size = unsafe { RustAllocator::usable_size(ptr) };
        IN_USE.set(IN_USE.get().saturating_sub(size));
        unsafe { RustAllocator.dealloc(ptr) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.alloc(new_size);
        }
        // SAFETY: the caller hands over a block of this allocator.
        let old = unsafe { RustAllocator::usable_size(ptr) };
        if new_size > old && !fits(new_size - old) {
            return refuse(new_size, true);
        }
        // On failure the old block stays valid and counted.
        let p = unsafe { RustAllocator.realloc(ptr, new_size) };
        if p.is_null() {
            return refuse(new_size, false);
        }
        IN_USE.set(IN_USE.get().saturating_sub(old));
        held(p)
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: the caller hands over a block of this allocator.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}
