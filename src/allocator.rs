//! Handing memory freed by large, passing work back to the system.

/// Returns the allocator's free memory to the system. Parsing a large file
/// or rendering a large file needs hundreds of megabytes for a moment;
/// the allocator keeps what they free for reuse, which would show as the
/// resident memory of a daemon that has long been idle.
pub fn release_free() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers and only rearranges the
    // allocator's own free lists, under the allocator's locks; it may be
    // called at any time from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}
