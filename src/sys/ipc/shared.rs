//! [`SharedCell`]: one value in memory that a child forked later shares with this process
//! (MAP_SHARED), at the same address in both. The IPC wake methods keep a pair's state and
//! the C objects it blocks on (pthread mutexes, condition variables, semaphores) in such cells,
//! so that the same objects serve a sender thread and a sender process.

use crate::sys::mem::{Sharing, map_anonymous, page_size, unmap};
use std::io;
use std::ops::Deref;

/// A `T` in an anonymous shared mapping of its own, dropped and unmapped with the cell. A
/// forked child's copy of the cell points at the same memory; the child must leave with
/// `_exit` (as [`crate::sys::process::fork_child`] does) so that only the parent drops it.
pub(crate) struct SharedCell<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: the cell owns its T as a Box would; sharing &T needs T: Sync.
unsafe impl<T: Send> Send for SharedCell<T> {}
unsafe impl<T: Sync> Sync for SharedCell<T> {}

impl<T> SharedCell<T> {
    /// Moves `value` into a new shared mapping (whole pages, page-aligned).
    pub(crate) fn new(value: T) -> io::Result<SharedCell<T>> {
        const { assert!(align_of::<T>() <= 4096) };
        let page = page_size();
        let len = size_of::<T>().max(1).div_ceil(page) * page;
        let ptr = map_anonymous(len, Sharing::Shared)?.cast::<T>();
        // SAFETY: fresh, page-aligned (so aligned for T), writable memory of at least size_of T.
        unsafe { ptr.write(value) };
        Ok(SharedCell { ptr, len })
    }
}

impl<T> Deref for SharedCell<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: initialised in new, alive until drop.
        unsafe { &*self.ptr }
    }
}

impl<T> Drop for SharedCell<T> {
    fn drop(&mut self) {
        // SAFETY: the value was written in new and is dropped once; then nothing refers to the
        // mapping (a child that shared it has left with _exit or keeps only its own copy).
        unsafe {
            self.ptr.drop_in_place();
            unmap(self.ptr.cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering::*};

    #[test]
    fn a_forked_child_writes_where_the_parent_reads() {
        let cell = SharedCell::new(AtomicU64::new(1)).unwrap();
        let target = &*cell;
        // SAFETY: the child only stores to an atomic and leaves.
        let pid = unsafe {
            crate::sys::process::fork_child(|| {
                target.store(42, SeqCst);
                0
            })
        }
        .unwrap();
        let reaped = crate::sys::process::wait_for(pid, true).unwrap().unwrap();
        assert_eq!((reaped.status, cell.load(SeqCst)), (0, 42));
    }
}
