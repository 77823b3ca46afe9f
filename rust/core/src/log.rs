//! The runtime's logging: [`shmem_base::log`], with the launcher's rank as the PE of lines
//! written before `shmem_init` knows it (`crate::bootstrap::rank_hint`), and the C facade's
//! entry for the program's log callback. Every way into the subscriber here registers that
//! hint first, so a line never misses the PE a launcher gave.

pub use shmem_base::log::*;

/// Registers the launcher's rank as the PE of early lines ([`set_rank_hint`]).
fn register_rank_hint() {
    set_rank_hint(crate::bootstrap::rank_hint);
}

/// Installs the subscriber at `level` ([`shmem_base::log::install`]).
pub fn install(level: &str) {
    register_rank_hint();
    shmem_base::log::install(level);
}

/// Shows lines up to `level` from now on ([`shmem_base::log::set_level`]).
pub fn set_level(level: &str) {
    register_rank_hint();
    shmem_base::log::set_level(level);
}

/// Routes every following line to `sink`, or back to stderr with `None`. Called by the C
/// facade for `aclshmemx_set_extern_logger`; the callback may be called from any thread of the
/// library, one line at a time per thread.
#[no_mangle]
pub extern "C" fn shmemi_log_set_sink(sink: Option<LogSink>) {
    register_rank_hint();
    set_sink(sink);
}
