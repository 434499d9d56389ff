//! Memory mappings: anonymous shared or private memory, and the page size.

use std::io;

/// The page size in bytes.
pub fn page_size() -> usize {
    // SAFETY: plain sysconf.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// Whether a mapping is shared with children forked later or private to this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sharing {
    /// MAP_SHARED: children forked later see the same pages.
    Shared,
    /// MAP_PRIVATE: copy-on-write after fork.
    Private,
}

/// Maps `len` bytes of zero-filled, readable and writable anonymous memory.
pub(crate) fn map_anonymous(len: usize, sharing: Sharing) -> io::Result<*mut u8> {
    let share = match sharing {
        Sharing::Shared => libc::MAP_SHARED,
        Sharing::Private => libc::MAP_PRIVATE,
    };
    // SAFETY: a fresh anonymous mapping; no existing memory is touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            share | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p.cast())
}

/// Unmaps a mapping [`map_anonymous`] made.
///
/// # Safety
/// `p` and `len` are those of one mapping, and nothing uses its memory any more.
pub(crate) unsafe fn unmap(p: *mut u8, len: usize) {
    // SAFETY: as the caller promises.
    unsafe { libc::munmap(p.cast(), len) };
}

/// USER_HZ: the ticks per second in which /proc/stat counts CPU time (100 on almost every
/// system); None when the C library cannot say.
pub(crate) fn user_hz() -> Option<u64> {
    // SAFETY: plain sysconf.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then_some(hz as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapping_is_zeroed_writable_and_unmapped() {
        let page = page_size();
        assert!(page >= 4096 && page.is_power_of_two(), "{page}");
        let p = map_anonymous(2 * page, Sharing::Private).unwrap();
        // SAFETY: 2 pages mapped read-write.
        unsafe {
            assert_eq!(*p.add(page + 1), 0);
            *p.add(page + 1) = 42;
            assert_eq!(*p.add(page + 1), 42);
            unmap(p, 2 * page);
        }
    }
}
