//! Counts the bytes this library's Rust code holds, so a sandboxed program
//! can be given a memory limit. Monty checks its limit against the counter
//! it reads (`monty_types::LIVE_MEMORY`) minus a baseline; this allocator
//! keeps that counter, and [`Budget`] sets the baseline while programs run.
//!
//! An allocation that fails aborts the process (Rust's rule), and inside
//! Neovim the process is the editor: the limit must stop a program before
//! the system refuses it. Monty checks a large result (`"x" * 10**11`)
//! before allocating it and the counter at every step of its loop.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use monty_types::{BASELINE_MEMORY, LIVE_MEMORY};

/// The system allocator, counting live bytes.
pub struct Counting;

// SAFETY: every call is forwarded unchanged to `System`; the counter is a
// side effect that never touches the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE_MEMORY.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE_MEMORY.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE_MEMORY.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE_MEMORY.fetch_add(new_size, Ordering::Relaxed);
            LIVE_MEMORY.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

/// Programs running now; the baseline is taken when the first starts.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Held while a program runs: its memory is what the process holds beyond
/// what it held when the first of the programs running now started. (With
/// several at once, each is held to the limit with the others' growth
/// counted too — stricter, never looser.)
pub struct Budget(());

impl Budget {
    pub fn start() -> Self {
        if RUNNING.fetch_add(1, Ordering::SeqCst) == 0 {
            BASELINE_MEMORY.store(LIVE_MEMORY.load(Ordering::Relaxed), Ordering::SeqCst);
        }
        Budget(())
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::SeqCst);
    }
}
