//! The allocator's freed pages handed back to the system on demand: a
//! start reads and parses every session's row (megabytes for 10,000
//! sessions) and frees most of it at once; jemalloc would return those
//! pages only as its decay (1 s) runs, so the process would hold them
//! through its first answers.

use std::ffi::c_char;

/// jemalloc's name for every arena at once (`MALLCTL_ARENAS_ALL`).
const PURGE_ALL_ARENAS: &[u8] = b"arena.4096.purge\0";

/// Return every freed page of every arena to the system now. Harmless when
/// jemalloc is not the process's allocator (it then holds nothing).
pub fn return_freed_pages() {
    // SAFETY: `mallctl` with a NUL-terminated name of a "void" control and
    // no old or new value (all null, length 0) reads and writes no memory
    // of ours; jemalloc documents `arena.<i>.purge` as such a control.
    let rc = unsafe {
        tikv_jemalloc_sys::mallctl(
            PURGE_ALL_ARENAS.as_ptr() as *const c_char,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        tracing::debug!(error = rc, "the allocator's freed pages were not purged");
    }
}
