//! Handing memory freed by large, passing work back to the system.

/// Free heap below which nothing is handed back: trimming costs system
/// calls now and page faults when the heap grows again, which for a small
/// file cost more than opening it.
const WORTH_TRIMMING: usize = 8 << 20;

/// Returns the allocator's free memory to the system when there is enough
/// of it to matter. Parsing a large file or rendering a large file needs
/// hundreds of megabytes for a moment; the allocator keeps what they free
/// for reuse, which would show as the resident memory of a daemon that has
/// long been idle.
pub fn release_free() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallinfo2 and malloc_trim take no pointers and only read or
    // rearrange the allocator's own free lists, under the allocator's
    // locks; they may be called at any time from any thread.
    unsafe {
        if libc::mallinfo2().fordblks >= WORTH_TRIMMING {
            libc::malloc_trim(0);
        }
    }
}
