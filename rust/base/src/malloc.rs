//! Tuning of the C allocator for a process whose work is serving the control store
//! (`shmemrun`). Process-wide, so it is the host program's call, never the store's: PE 0's
//! store runs inside the application, whose allocator stays as the application set it.

/// Blocks of this many bytes or more are mapped on their own by the C allocator once
/// [`give_back_large_frees`] ran, and unmapped when freed.
pub const OWN_MAPPING_FROM: usize = 1 << 20;

/// For a process that serves the store for a living (`shmemrun`): has the C allocator map
/// every allocation of [`OWN_MAPPING_FROM`] bytes or more on its own, and unmap it when freed.
/// By default glibc raises that threshold after the first large free and then serves large
/// blocks from per-thread arenas, whose free space it keeps; with one thread per store
/// connection, a burst of large frames (within the store's frame budget at any one time) would
/// stay resident in every arena it passed through. Call it before the store starts.
pub fn give_back_large_frees() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tuning parameter of the allocator, under its own lock.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, OWN_MAPPING_FROM as libc::c_int);
    }
}
